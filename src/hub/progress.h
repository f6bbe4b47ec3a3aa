// Download progress for people: a redrawn bar with rate and ETA on a terminal, and a
// few plain lines (every 10 %) when stderr is a pipe or a log file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <utility>

#include "hub/download.h"

namespace hark::hub {

// Transfer rate over a sliding window, so the ETA follows the current speed.
class RateMeter {
 public:
  explicit RateMeter(double window_s = 5.0) : window_s_(window_s) {}
  void add(double time_s, std::uint64_t bytes);
  double bytes_per_second() const;  // 0 until two samples span some time
  void reset() { samples_.clear(); }

 private:
  double window_s_;
  std::deque<std::pair<double, std::uint64_t>> samples_;
};

std::string format_duration(double seconds);  // "0:07", "12:34", "1:02:03", "--:--" when unknown
std::string format_rate(double bytes_per_second);  // "52.3 MB/s"

// "[2/3] model.safetensors [########--------]  50%  755.3 MB/1.5 GB  52.3 MB/s  ETA 0:14"
std::string render_progress_line(const DownloadProgress& progress, double bytes_per_second, int bar_width);

class ProgressPrinter {
 public:
  ProgressPrinter(std::FILE* out, bool terminal) : out_(out), terminal_(terminal) {}
  void update(const DownloadProgress& progress);  // at most ~10 redraws a second
  void message(const std::string& text);          // a full line, clearing the bar first

 private:
  double now_s() const;
  std::FILE* out_;
  bool terminal_;
  RateMeter meter_;
  std::string current_file_;
  double last_draw_s_ = -1;
  int last_decile_ = -1;
  bool bar_visible_ = false;
};

}  // namespace hark::hub
