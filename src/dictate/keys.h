// Hold-to-talk on a terminal key. A terminal in raw mode reports key presses only: no
// key-up. Terminals that speak the kitty keyboard protocol report releases and
// auto-repeats explicitly (enabled after a probe); elsewhere a held key shows up as the
// keyboard's auto-repeat (a first repeat after ~250-660 ms, then one every ~30-40 ms),
// so the release is the moment the repeats stop. Either way a short tap latches: the
// take runs until the next press. Enter always toggles.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hark::dictate {

enum class Key { Talk, Toggle, Quit, Other };  // Space; Enter; q, Ctrl-C or Ctrl-D; anything else
enum class KeyAction { Press, Repeat, Release };

struct KeyEvent {
  Key key = Key::Other;
  KeyAction action = KeyAction::Press;
  bool operator==(const KeyEvent&) const = default;
};

// Turns raw terminal bytes into key events: plain bytes, and kitty's `CSI code;mods:event u`.
// Escape sequences may arrive split across reads; the decoder keeps the unfinished tail.
class KeyDecoder {
 public:
  void feed(std::string_view bytes);
  std::vector<KeyEvent> take_events();
  // Replies to the probe: `CSI ? flags u` (the terminal speaks the kitty protocol) and
  // the primary device attributes `CSI ? … c` that every terminal answers, and answers last.
  bool kitty_reply_seen() const { return kitty_reply_; }
  bool device_attributes_seen() const { return device_attributes_; }

 private:
  void control_sequence(std::string_view params, char final_byte);
  std::string pending_;
  std::vector<KeyEvent> events_;
  bool kitty_reply_ = false, device_attributes_ = false;
};

// Seconds; the defaults cover common keyboard repeat settings with room for a busy machine.
struct HoldTiming {
  double first_repeat_max = 0.8;  // a second Talk byte later than this after the press is a new press
  double repeat_gap = 0.15;       // Talk bytes closer together than this are auto-repeat
  double release_after = 0.3;     // while held, this long without a repeat means released
  double tap_max = 0.35;          // with key-up events: a press shorter than this latches
};

enum class TakeCommand { None, Start, Stop };

// The hold-to-talk state machine, fed key events and the clock (seconds, any origin).
class HoldDetector {
 public:
  explicit HoldDetector(bool key_up_reported, HoldTiming timing = {})
      : key_up_(key_up_reported), timing_(timing) {}
  TakeCommand on_key(const KeyEvent& e, double now);
  TakeCommand tick(double now);  // decisions that are due to silence
  bool recording() const { return state_ != State::Idle && state_ != State::Cooldown; }
  bool latched() const { return state_ == State::Latched; }

 private:
  enum class State { Idle, Pressed, Ambiguous, Holding, Latched, Cooldown };
  TakeCommand stop(double now);
  bool key_up_;
  HoldTiming timing_;
  State state_ = State::Idle;
  double pressed_at_ = 0, last_talk_ = 0;
  bool repeats_after_stop_ = false;
};

}  // namespace hark::dictate
