// Counters and histograms for GET /metrics (Prometheus text format 0.0.4) and /stats.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "hark/engine.h"

namespace hark::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends the _bucket/_sum/_count lines for `name` with extra `labels` ("" or `a="b"`).
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  uint64_t count() const;
  double sum() const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound plus +Inf
  double sum_ = 0;
  uint64_t total_ = 0;
};

// Values owned elsewhere (worker, sessions) that the exposition reads at scrape time.
struct LiveGauges {
  size_t queue_depth = 0;
  size_t jobs_running = 0;
  BatchStats batch;  // the batching engine's figures (zeros when it does not batch)
  size_t sessions_open = 0;
  size_t requests_in_flight = 0;
  bool model_resident = false;
  uint64_t model_loads = 0, model_unloads = 0;
  double last_load_ms = 0;
};

class Metrics {
 public:
  Metrics();
  void observe_request(const std::string& route, int status, double seconds);
  void observe_queue_wait(double seconds);
  void observe_load(double seconds);
  void add_audio_seconds(double seconds);
  void count_cancelled();
  std::string render_prometheus(const LiveGauges& live) const;
  double audio_seconds() const;
  uint64_t requests_total() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) → count
  std::map<std::string, Histogram> latency_;                  // route → seconds
  Histogram queue_wait_, load_time_;
  double audio_seconds_ = 0;
  uint64_t cancelled_ = 0;
};

// A low-cardinality route label: session ids become {id}, unknown paths "other".
std::string route_label(const std::string& method, const std::string& path);

}  // namespace hark::serve
