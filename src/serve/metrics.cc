#include "serve/metrics.h"

#include <cstdio>
#include <regex>

namespace hark::serve {
namespace {

// Transcription latencies span milliseconds (GPU, short clips) to minutes (CPU, long files).
const std::vector<double> kLatencyBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// The batching engine's queue and occupancy (src/batch/): rows in use against the
// --max-batch budget, what waits for rows and for the encoder, and running totals.
template <class Header>
void render_batch(std::string& out, const BatchStats& b, Header& header) {
  auto gauge = [&](const char* name, const char* help, double value) {
    header(name, "gauge", help);
    out += std::string(name) + " " + number(value) + "\n";
  };
  auto counter = [&](const char* name, const char* help, uint64_t value) {
    header(name, "counter", help);
    out += std::string(name) + " " + std::to_string(value) + "\n";
  };
  gauge("hark_batch_max_rows", "Decoder rows that may be stepped together (--max-batch).", b.max_rows);
  gauge("hark_batch_rows", "Decoder rows held by sequences now.", b.rows_active);
  gauge("hark_batch_row_capacity", "Rows of the batch now (a power of two, free rows included).", b.row_capacity);
  gauge("hark_batch_occupancy", "Rows in use over --max-batch.", b.max_rows > 0 ? double(b.rows_active) / b.max_rows : 0);
  gauge("hark_batch_sequences_waiting", "Sequence groups waiting for decoder rows.", b.groups_waiting);
  gauge("hark_batch_windows_waiting", "Audio windows waiting for the encoder.", b.windows_waiting);
  gauge("hark_batch_windows_encoding", "Audio windows in the encoder lane's call now.", b.windows_encoding);
  gauge("hark_batch_calls_waiting", "Other model calls (STFTs on a GPU, word timings) waiting for a turn between steps.",
        b.calls_waiting);
  counter("hark_batch_steps_total", "Batched decoder steps.", b.steps);
  counter("hark_batch_rows_stepped_total", "Rows advanced by those steps (over steps: the mean batch).", b.rows_stepped);
  counter("hark_batch_rows_computed_total", "Rows those steps computed, free rows within their span included.",
          b.rows_computed);
  counter("hark_batch_prefills_total", "Prompts prefilled between steps.", b.prefills);
  counter("hark_batch_prefill_calls_total", "Decoder passes that prefilled them (merged on a GPU).", b.prefill_calls);
  counter("hark_batch_prompts_stepped_total", "Short prompts fed through the steps instead of a pass (GPU fast path).",
          b.prompts_stepped);
  counter("hark_batch_tokens_fed_back_total", "Greedy tokens the scheduler fed back itself (GPU fast path).",
          b.tokens_fed_back);
  counter("hark_encoder_calls_total", "Encoder calls.", b.encoder_calls);
  counter("hark_encoder_windows_total", "Windows encoded (over calls: the mean encoder batch).", b.windows_encoded);
  counter("hark_encoder_windows_ahead_total",
          "Windows queued for the encoder while the window before them decoded (runs without timestamps).",
          b.windows_ahead);
  counter("hark_encoder_windows_ahead_unused_total", "Of those, windows their run did not use (it ended or moved).",
          b.windows_ahead_unused);
  gauge("hark_encoder_lane", "1 when windows are encoded on a stream of their own beside the steps (GPU).",
        b.encoder_lane ? 1 : 0);
  auto seconds = [&](const char* name, const char* help, double value) {
    header(name, "counter", help);
    out += std::string(name) + " " + number(value) + "\n";
  };
  seconds("hark_batch_step_seconds_total", "Time in batched decoder steps.", b.step_seconds);
  seconds("hark_batch_gather_seconds_total", "Time a step waited for the groups' next tokens.", b.gather_seconds);
  seconds("hark_batch_prefill_seconds_total", "Time in prompt prefills.", b.prefill_seconds);
  seconds("hark_encoder_seconds_total", "Time in encoder calls (on the encoder lane: overlapping the steps).",
          b.encode_seconds);
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++total_;
}

uint64_t Histogram::count() const { return total_; }
double Histogram::sum() const { return sum_; }

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(total_) + "\n";
}

Metrics::Metrics() : queue_wait_(kLatencyBounds), load_time_(kLatencyBounds) {}

void Metrics::observe_request(const std::string& route, int status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
  latency_.try_emplace(route, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::observe_queue_wait(double seconds) {
  std::lock_guard lock(mutex_);
  queue_wait_.observe(seconds);
}

void Metrics::observe_load(double seconds) {
  std::lock_guard lock(mutex_);
  load_time_.observe(seconds);
}

void Metrics::add_audio_seconds(double seconds) {
  std::lock_guard lock(mutex_);
  audio_seconds_ += seconds;
}

void Metrics::count_cancelled() {
  std::lock_guard lock(mutex_);
  ++cancelled_;
}

double Metrics::audio_seconds() const {
  std::lock_guard lock(mutex_);
  return audio_seconds_;
}

uint64_t Metrics::requests_total() const {
  std::lock_guard lock(mutex_);
  uint64_t n = 0;
  for (const auto& [key, count] : requests_) n += count;
  return n;
}

std::string Metrics::render_prometheus(const LiveGauges& live) const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto header = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  header("hark_http_requests_total", "counter", "HTTP requests by route and status.");
  for (const auto& [key, count] : requests_)
    out += "hark_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(count) + "\n";
  header("hark_http_request_duration_seconds", "histogram", "Time from request to response by route.");
  for (const auto& [route, hist] : latency_) hist.render(out, "hark_http_request_duration_seconds", "route=\"" + route + "\"");
  header("hark_queue_wait_seconds", "histogram", "Time jobs waited in the engine queue.");
  queue_wait_.render(out, "hark_queue_wait_seconds", "");
  header("hark_model_load_seconds", "histogram", "Time to page the checkpoint in.");
  load_time_.render(out, "hark_model_load_seconds", "");
  header("hark_audio_seconds_total", "counter", "Seconds of audio transcribed.");
  out += "hark_audio_seconds_total " + number(audio_seconds_) + "\n";
  header("hark_requests_cancelled_total", "counter", "Jobs cancelled because the client went away.");
  out += "hark_requests_cancelled_total " + std::to_string(cancelled_) + "\n";
  header("hark_queue_depth", "gauge", "Jobs waiting for the engine worker.");
  out += "hark_queue_depth " + std::to_string(live.queue_depth) + "\n";
  header("hark_jobs_running", "gauge", "Engine jobs running now (a batching engine runs many at once).");
  out += "hark_jobs_running " + std::to_string(live.jobs_running) + "\n";
  render_batch(out, live.batch, header);
  header("hark_requests_in_flight", "gauge", "Requests being handled now.");
  out += "hark_requests_in_flight " + std::to_string(live.requests_in_flight) + "\n";
  header("hark_sessions_open", "gauge", "Open streaming sessions.");
  out += "hark_sessions_open " + std::to_string(live.sessions_open) + "\n";
  header("hark_model_resident", "gauge", "1 when the checkpoint is loaded.");
  out += "hark_model_resident " + std::to_string(live.model_resident ? 1 : 0) + "\n";
  header("hark_model_loads_total", "counter", "Checkpoint loads.");
  out += "hark_model_loads_total " + std::to_string(live.model_loads) + "\n";
  header("hark_model_unloads_total", "counter", "Checkpoint unloads.");
  out += "hark_model_unloads_total " + std::to_string(live.model_unloads) + "\n";
  header("hark_model_last_load_milliseconds", "gauge", "Duration of the latest load.");
  out += "hark_model_last_load_milliseconds " + number(live.last_load_ms) + "\n";
  return out;
}

std::string route_label(const std::string& method, const std::string& path) {
  static const std::regex session_route(R"(^/v1/audio/sessions/[^/]+(/(audio|finish))?$)");
  static const char* known[] = {"/",       "/v1",     "/v1/models", "/health", "/stats", "/metrics",
                                "/v1/audio/transcriptions", "/v1/audio/translations", "/v1/audio/sessions",
                                "/admin/transcription/unload"};
  std::string route = "other";
  for (const char* k : known)
    if (path == k) route = k;
  if (route == "other" && std::regex_match(path, session_route)) {
    size_t slash = path.find('/', std::string("/v1/audio/sessions/").size());
    route = "/v1/audio/sessions/{id}" + (slash == std::string::npos ? std::string() : path.substr(slash));
  }
  return method + " " + route;
}

}  // namespace hark::serve
