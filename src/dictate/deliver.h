// What happens to a transcript: printed, copied to the clipboard, or typed into the
// focused window, through the desktop's own helpers (wl-copy/xclip/xsel, wtype/xdotool).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hark::dictate {

struct Desktop {
  bool wayland = false;  // WAYLAND_DISPLAY is set
  bool x11 = false;      // DISPLAY is set
  std::function<bool(const std::string&)> has_program;  // on PATH
  static Desktop current();
};

struct Helper {
  std::vector<std::string> argv;  // the text goes to its stdin
};

// The helper to use, or a one-line hark::Error(Unavailable) that names what to install.
Helper clipboard_helper(const Desktop& desktop);
Helper typing_helper(const Desktop& desktop);

// Runs the helper with `text` on its stdin and waits for it; its output is discarded
// (xclip stays behind to serve the selection). Throws when it cannot run or fails.
void run_helper(const Helper& helper, const std::string& text);

}  // namespace hark::dictate
