#include "cli/batch_trace.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace hark::cli {

std::string batch_stats_line(const BatchStats& b) {
  char line[512];
  const double per_step = b.steps ? static_cast<double>(b.rows_stepped) / static_cast<double>(b.steps) : 0;
  const double per_call =
      b.encoder_calls ? static_cast<double>(b.windows_encoded) / static_cast<double>(b.encoder_calls) : 0;
  std::snprintf(line, sizeof line,
                "batch steps=%llu rows_per_step=%.1f prefills=%llu prefill_calls=%llu prompts_stepped=%llu encoder_calls=%llu windows_per_call=%.1f "
                "step_sec=%.2f gather_sec=%.2f prefill_sec=%.2f encode_sec=%.2f encoder_lane=%s",
                static_cast<unsigned long long>(b.steps), per_step, static_cast<unsigned long long>(b.prefills),
                static_cast<unsigned long long>(b.prefill_calls), static_cast<unsigned long long>(b.prompts_stepped),
                static_cast<unsigned long long>(b.encoder_calls), per_call, b.step_seconds, b.gather_seconds,
                b.prefill_seconds, b.encode_seconds, b.encoder_lane ? "yes" : "no");
  return line;
}

std::string batch_trace_line(double seconds, int reading, int running, const BatchStats& b) {
  char line[512];
  std::snprintf(line, sizeof line,
                "batch-trace t=%.2f reading=%d running=%d rows=%d capacity=%d groups_waiting=%d "
                "windows_waiting=%d windows_encoding=%d calls_waiting=%d steps=%llu windows=%llu",
                seconds, reading, running, b.rows_active, b.row_capacity, b.groups_waiting, b.windows_waiting,
                b.windows_encoding, b.calls_waiting, static_cast<unsigned long long>(b.steps),
                static_cast<unsigned long long>(b.windows_encoded));
  return line;
}

BatchTrace::BatchTrace(std::function<BatchStats()> sample, const WorkerCounts& workers,
                       std::function<void(const std::string&)> log) {
  const char* env = std::getenv("HARK_BATCH_TRACE_MS");
  const int ms = env ? std::atoi(env) : 0;
  if (ms <= 0) return;
  thread_ = std::thread([this, sample = std::move(sample), &workers, log = std::move(log), ms] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stop_; })) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log(batch_trace_line(t, workers.reading.load(), workers.running.load(), sample()));
    }
  });
}

BatchTrace::~BatchTrace() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace hark::cli
