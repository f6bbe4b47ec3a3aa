#include "hub/progress.h"

#include <chrono>
#include <cmath>

#include "hub/inspect.h"

namespace hark::hub {

void RateMeter::add(double time_s, std::uint64_t bytes) {
  samples_.emplace_back(time_s, bytes);
  while (samples_.size() > 2 && samples_.front().first < time_s - window_s_) samples_.pop_front();
}

double RateMeter::bytes_per_second() const {
  if (samples_.size() < 2) return 0;
  double span = samples_.back().first - samples_.front().first;
  if (span <= 0 || samples_.back().second < samples_.front().second) return 0;
  return static_cast<double>(samples_.back().second - samples_.front().second) / span;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 99 * 3600) return "--:--";
  long total = std::lround(seconds);
  char text[32];
  if (total >= 3600) std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

std::string format_rate(double bytes_per_second) {
  return human_bytes(static_cast<std::uint64_t>(std::max(0.0, bytes_per_second))) + "/s";
}

std::string render_progress_line(const DownloadProgress& progress, double bytes_per_second, int bar_width) {
  std::string line = "[";
  line.append(std::to_string(progress.index)).append("/").append(std::to_string(progress.count)).append("] ");
  line.append(progress.file);
  if (progress.total == 0) return line + "  " + human_bytes(progress.done) + "  " + format_rate(bytes_per_second);
  double fraction = std::min(1.0, static_cast<double>(progress.done) / static_cast<double>(progress.total));
  int filled = static_cast<int>(fraction * bar_width);
  line.append(" [").append(filled, '#').append(bar_width - filled, '-').append("]");
  char percent[16];
  std::snprintf(percent, sizeof percent, " %3d%%", static_cast<int>(fraction * 100));
  line += percent;
  line += "  " + human_bytes(progress.done) + "/" + human_bytes(progress.total);
  if (progress.finished) return line + "  done";
  if (progress.verifying) return line + "  verifying";
  double eta = bytes_per_second > 0 ? static_cast<double>(progress.total - std::min(progress.done, progress.total)) / bytes_per_second : -1;
  return line + "  " + format_rate(bytes_per_second) + "  ETA " + format_duration(eta);
}

double ProgressPrinter::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void ProgressPrinter::update(const DownloadProgress& progress) {
  double now = now_s();
  if (progress.file != current_file_) {
    current_file_ = progress.file;
    meter_.reset();
    last_decile_ = -1;
    last_draw_s_ = -1;
  }
  meter_.add(now, progress.done);
  if (terminal_) {
    bool must_draw = progress.finished || progress.verifying;
    if (!must_draw && last_draw_s_ >= 0 && now - last_draw_s_ < 0.1) return;
    last_draw_s_ = now;
    std::fprintf(out_, "\r%s\033[K", render_progress_line(progress, meter_.bytes_per_second(), 24).c_str());
    bar_visible_ = !progress.finished;
    if (progress.finished) std::fputc('\n', out_);
  } else {
    // Plain lines: every 10 % of a large file, and one line when each file is done.
    int decile = progress.total ? static_cast<int>(10 * progress.done / progress.total) : 0;
    bool small = progress.total < (10u << 20);
    if (!progress.finished && (decile == last_decile_ || decile >= 10 || small)) return;
    last_decile_ = decile;
    std::fprintf(out_, "%s\n", render_progress_line(progress, meter_.bytes_per_second(), 10).c_str());
  }
  std::fflush(out_);
}

void ProgressPrinter::message(const std::string& text) {
  if (bar_visible_) std::fputs("\r\033[K", out_);
  bar_visible_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace hark::hub
