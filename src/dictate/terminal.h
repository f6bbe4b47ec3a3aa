// The controlling terminal during dictation: raw key input (restored on exit), the
// kitty keyboard protocol when the terminal speaks it, and a status line redrawn in
// place on stderr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dictate/keys.h"

namespace hark::dictate {

class Terminal {
 public:
  // True when stdin is a terminal: keys control the take. Otherwise a take starts at
  // once and stops at the end of the input or on SIGINT/SIGTERM.
  static bool stdin_is_terminal();

  Terminal();  // raw mode on /dev/tty, then the kitty probe (at most ~0.3 s)
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  bool key_up_reported() const { return kitty_; }
  // Key events that arrive within `timeout_ms` (0: only what is already there).
  std::vector<KeyEvent> poll_keys(int timeout_ms);

 private:
  void write_control(const std::string& bytes);
  int fd_ = -1;
  bool kitty_ = false;
  struct Saved;  // the terminal's mode before raw mode
  std::unique_ptr<Saved> saved_;
  KeyDecoder decoder_;
};

// One line on stderr, rewritten in place; silent when stderr is not a terminal.
class StatusLine {
 public:
  StatusLine();
  ~StatusLine() { clear(); }
  bool enabled() const { return enabled_; }
  void show(const std::string& text);  // one line that fits width() (see tail_to_width)
  void clear();
  int width() const;

 private:
  bool enabled_;
  bool shown_ = false;
};

// `text` cut to its last `width` display columns (UTF-8 aware), led by "…" when cut.
std::string tail_to_width(const std::string& text, int width);

}  // namespace hark::dictate
