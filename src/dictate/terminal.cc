#include "dictate/terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "hark/error.h"

namespace hark::dictate {
namespace {

constexpr int kProbeTimeoutMs = 300;
// kitty keyboard protocol flags: 1 disambiguate, 2 report repeats and releases,
// 8 report every key (space included) as an escape code.
constexpr const char* kKittyPush = "\x1b[>11u";
constexpr const char* kKittyPop = "\x1b[<u";
constexpr const char* kKittyProbe = "\x1b[?u\x1b[c";

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

size_t display_columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += !is_continuation(c);
  return n;
}

}  // namespace

struct Terminal::Saved {
  termios mode;
};

bool Terminal::stdin_is_terminal() { return isatty(STDIN_FILENO) == 1; }

Terminal::Terminal() {
  fd_ = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) fd_ = dup(STDIN_FILENO);
  termios mode{};
  if (fd_ < 0 || tcgetattr(fd_, &mode) != 0)
    throw Error(ErrorCode::Io, "[dictate] cannot set up the terminal for keys; run without a terminal on stdin "
                               "(the take then stops at the end of --input or on Ctrl-C)");
  saved_ = std::make_unique<Saved>(Saved{mode});
  mode.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
  mode.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
  mode.c_cc[VMIN] = 0;
  mode.c_cc[VTIME] = 0;
  tcsetattr(fd_, TCSANOW, &mode);

  write_control(kKittyProbe);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kProbeTimeoutMs);
  while (!decoder_.device_attributes_seen() && std::chrono::steady_clock::now() < deadline) poll_keys(20);
  kitty_ = decoder_.kitty_reply_seen();
  if (kitty_) write_control(kKittyPush);
  decoder_.take_events();  // keys typed during the probe are not commands
}

Terminal::~Terminal() {
  if (kitty_) write_control(kKittyPop);
  if (saved_) tcsetattr(fd_, TCSANOW, &saved_->mode);
  if (fd_ >= 0) close(fd_);
}

void Terminal::write_control(const std::string& bytes) {
  [[maybe_unused]] auto n = write(fd_, bytes.data(), bytes.size());
}

std::vector<KeyEvent> Terminal::poll_keys(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN)) {
    char buf[256];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    if (n == 0) decoder_.feed("\x04");  // the terminal went away: treat as Ctrl-D
  }
  return decoder_.take_events();
}

StatusLine::StatusLine() : enabled_(isatty(STDERR_FILENO) == 1) {}

int StatusLine::width() const {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void StatusLine::show(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\x1b[K%s", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void StatusLine::clear() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  shown_ = false;
}

std::string tail_to_width(const std::string& text, int width) {
  if (width <= 0) return "";
  if (display_columns(text) <= static_cast<size_t>(width)) return text;
  size_t start = text.size(), columns = 0;
  while (start > 0 && columns < static_cast<size_t>(width - 1)) {
    --start;
    while (start > 0 && is_continuation(static_cast<unsigned char>(text[start]))) --start;
    ++columns;
  }
  std::string out = "\xe2\x80\xa6";  // "…"
  out.append(text, start, std::string::npos);
  return out;
}

}  // namespace hark::dictate
