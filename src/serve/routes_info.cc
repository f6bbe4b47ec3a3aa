// GET /, /v1, /v1/models, /health, /stats, /metrics and POST /admin/transcription/unload.
#include "serve/server_impl.h"
#include "serve/web_page.h"

namespace hark::serve {

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
                         {"transcription", residency_json()}}
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
        {"queue", {{"depth", worker.queue_depth()}, {"in_flight", in_flight.load()}}},
        {"sessions", {{"open", sessions.open_count()}, {"max", options.max_sessions}}},
        {"audio_seconds", metrics.audio_seconds()},
        {"http_requests", metrics.requests_total()}};
    res.set_content(stats.dump(), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto c = worker.counters();
    LiveGauges live{worker.queue_depth(), sessions.open_count(), in_flight.load(), c.resident,
                    c.loads,              c.unloads,             c.last_load_ms};
    res.set_content(metrics.render_prometheus(live), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Post("/admin/transcription/unload", [this](const httplib::Request&, httplib::Response& res) {
    bool unloaded = worker.unload_now();
    res.set_content(residency_json(unloaded).dump(), "application/json");
  });
}

}  // namespace hark::serve
