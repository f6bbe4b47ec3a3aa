// GET /, /v1, /v1/models, /health, /stats, /metrics and POST /admin/transcription/unload.
#include <algorithm>

#include "serve/server_impl.h"
#include "serve/web_page.h"

namespace hark::serve {

namespace {

nlohmann::json batch_json(const BatchStats& b) {
  return {{"max_rows", b.max_rows},           {"rows", b.rows_active},         {"row_capacity", b.row_capacity},
          {"sequences_waiting", b.groups_waiting}, {"windows_waiting", b.windows_waiting}, {"windows_encoding", b.windows_encoding}, {"calls_waiting", b.calls_waiting}, {"steps", b.steps},
          {"rows_stepped", b.rows_stepped},   {"rows_computed", b.rows_computed}, {"prefills", b.prefills},
          {"prefill_calls", b.prefill_calls}, {"prompts_stepped", b.prompts_stepped}, {"encoder_calls", b.encoder_calls}, {"windows_encoded", b.windows_encoded}, {"windows_ahead", b.windows_ahead}, {"windows_ahead_unused", b.windows_ahead_unused}, {"tokens_fed_back", b.tokens_fed_back},
          {"encoder_lane", b.encoder_lane},
          {"seconds", {{"step", b.step_seconds}, {"gather", b.gather_seconds}, {"prefill", b.prefill_seconds},
                       {"encode", b.encode_seconds}}}};
}

}  // namespace

size_t Server::Impl::queue_depth() const {
  size_t n = 0;
  for (const auto& w : workers) n += w->queue_depth();
  return n;
}

size_t Server::Impl::jobs_running() const {
  size_t n = 0;
  for (const auto& w : workers) n += w->running_jobs();
  return n;
}

BatchStats Server::Impl::batch_stats() const {
  BatchStats sum;
  for (const auto& w : workers) {
    const BatchStats b = w->batch_stats();
    sum.max_rows = std::max(sum.max_rows, b.max_rows);
    sum.row_capacity += b.row_capacity, sum.rows_active += b.rows_active;
    sum.groups_waiting += b.groups_waiting, sum.windows_waiting += b.windows_waiting;
    sum.windows_encoding += b.windows_encoding, sum.calls_waiting += b.calls_waiting;
    sum.steps += b.steps, sum.rows_stepped += b.rows_stepped, sum.prefills += b.prefills;
    sum.prefill_calls += b.prefill_calls, sum.prompts_stepped += b.prompts_stepped;
    sum.rows_computed += b.rows_computed;
    sum.encoder_calls += b.encoder_calls, sum.windows_encoded += b.windows_encoded;
    sum.windows_ahead += b.windows_ahead, sum.windows_ahead_unused += b.windows_ahead_unused;
    sum.tokens_fed_back += b.tokens_fed_back;
    sum.encoder_lane = sum.encoder_lane || b.encoder_lane;
    sum.step_seconds += b.step_seconds, sum.gather_seconds += b.gather_seconds;
    sum.prefill_seconds += b.prefill_seconds, sum.encode_seconds += b.encode_seconds;
  }
  return sum;
}

std::string Server::Impl::device_gauges() const {
  std::string out;
  auto family = [&](const char* name, const char* help, auto value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
    for (size_t i = 0; i < workers.size(); ++i)
      out += std::string(name) + "{device=\"" + worker_devices[i] + "\"} " + std::to_string(value(*workers[i])) + "\n";
  };
  family("hark_device_queue_depth", "Jobs waiting for this device's engine worker.",
         [](const EngineWorker& w) { return w.queue_depth(); });
  family("hark_device_jobs_running", "Jobs running on this device.", [](const EngineWorker& w) { return w.running_jobs(); });
  family("hark_device_sessions_open", "Streaming sessions held by this device.",
         [](const EngineWorker& w) { return w.pinned(); });
  family("hark_device_model_resident", "1 while this device holds the weights.",
         [](const EngineWorker& w) { return w.counters().resident ? 1 : 0; });
  return out;
}

void Server::Impl::install_info_routes() {
  using json = nlohmann::json;
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_page_html(), "text/html; charset=utf-8");
  });
  http.Get("/audio-worklet.js", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_worklet_js(), "text/javascript; charset=utf-8");
  });
  http.Get("/v1", [this](const httplib::Request&, httplib::Response& res) {
    json index = {{"name", "hark"},
                  {"version", "0.1.0"},
                  {"model", options.model_name},
                  {"endpoints",
                   {"POST /v1/audio/transcriptions", "POST /v1/audio/translations", "POST /v1/audio/sessions",
                    "POST /v1/audio/sessions/{id}/audio", "POST /v1/audio/sessions/{id}/finish",
                    "DELETE /v1/audio/sessions/{id}", "POST /admin/transcription/unload", "GET /v1/models",
                    "GET /health", "GET /stats", "GET /metrics", "GET /", "GET /audio-worklet.js"}}};
    res.set_content(index.dump(), "application/json");
  });
  auto model_object = [this] {
    return json{{"id", options.model_name},
                {"object", "model"},
                {"created", std::chrono::duration_cast<std::chrono::seconds>(started_at.time_since_epoch()).count()},
                {"owned_by", "hark"}};
  };
  http.Get("/v1/models", [model_object](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"object", "list"}, {"data", json::array({model_object()})}}.dump(), "application/json");
  });
  http.Get(R"(/v1/models/(.+))", [this, model_object](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != options.model_name)
      return send_error(res, ApiError(404, "invalid_request_error", "model_not_found",
                                      "[serve] this server serves '" + options.model_name + "' only"));
    res.set_content(model_object().dump(), "application/json");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    // 503 while draining, so load balancers and readiness probes stop sending work here.
    if (draining) res.status = 503;
    res.set_content(json{{"status", draining ? "draining" : "ok"},
                         {"instance", instance_id},
                         {"model", options.model_name},
                         {"transcription", residency_json()},
                         {"devices", devices_json()}}
                        .dump(),
                    "application/json");
  });
  http.Get("/stats", [this](const httplib::Request&, httplib::Response& res) {
    auto uptime = std::chrono::duration<double>(std::chrono::system_clock::now() - started_at).count();
    json stats = {
        {"server",
         {{"owner", "serve"},
          {"instance", instance_id},
          {"draining", draining.load()},
          {"model", options.model_name},
          {"started_at", std::chrono::duration_cast<std::chrono::seconds>(started_at.time_since_epoch()).count()},
          {"uptime_sec", uptime}}},
        {"transcription", residency_json()},
        {"queue", {{"depth", queue_depth()}, {"running", jobs_running()}, {"in_flight", in_flight.load()},
                   {"max", options.max_queue}}},
        {"batch", batch_json(batch_stats())},
        {"devices", devices_json()},
        {"sessions", {{"open", sessions.open_count()}, {"max", options.max_sessions}}},
        {"audio_seconds", metrics.audio_seconds()},
        {"http_requests", metrics.requests_total()}};
    res.set_content(stats.dump(), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const json c = residency_json();
    LiveGauges live;
    live.queue_depth = queue_depth();
    live.jobs_running = jobs_running();
    live.batch = batch_stats();
    live.sessions_open = sessions.open_count();
    live.requests_in_flight = in_flight.load();
    live.model_resident = c["resident"].get<bool>();
    live.model_loads = c["loads"].get<uint64_t>();
    live.model_unloads = c["unloads"].get<uint64_t>();
    live.last_load_ms = c["last_load_ms"].get<double>();
    res.set_content(metrics.render_prometheus(live) + device_gauges(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Post("/admin/transcription/unload", [this](const httplib::Request&, httplib::Response& res) {
    bool unloaded = false;
    for (auto& w : workers) unloaded = w->unload_now() || unloaded;
    res.set_content(residency_json(unloaded).dump(), "application/json");
  });
}

}  // namespace hark::serve
