// Internal to src/serve: the state behind hark::serve::Server, shared by the route files.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "serve/api_error.h"
#include "serve/engine_worker.h"
#include "serve/metrics.h"
#include "serve/server.h"
#include "serve/sessions.h"

namespace hark::serve {

struct Server::Impl {
  Impl(ServerOptions o, ServerDeps d);

  ServerOptions options;
  ServerDeps deps;
  std::shared_ptr<spdlog::logger> log;
  Metrics metrics;
  EngineWorker worker;
  SessionRegistry sessions;
  httplib::Server http;
  std::thread listen_thread, janitor_thread;
  std::atomic<int> bound_port{0};
  std::atomic<size_t> in_flight{0};
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();

  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stopping = false, stopped = false;

  void install_routes();
  void install_info_routes();
  void install_transcribe_routes();
  void install_session_routes();
  void stream_transcription(const httplib::Request& req, httplib::Response& res, std::shared_ptr<void> job,
                            std::future<void>& done);
  void open_session(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void feed_session(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void finish_session(const httplib::Request& req, httplib::Response& res);
  void delete_session(const httplib::Request& req, httplib::Response& res);
  void run_janitor();
  void drain();

  // Shared helpers for route handlers.
  std::string read_body(const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& reader) const;
  std::vector<float> decode(std::string_view bytes, const std::string& name_hint,
                            const std::string& content_type) const;
  void send_error(httplib::Response& res, const ApiError& error) const;
  nlohmann::json residency_json(bool unloaded = false) const;
  void log_line(const std::string& event, const nlohmann::json& fields) const;
};

// The request's Content-Type as the client sent it (the pre-routing handler hides
// multipart types from cpp-httplib so hark's own parser reads the raw body).
std::string original_content_type(const httplib::Request& req);

// Waits for a worker job, cancelling it when the client disconnects. Rethrows what the
// job threw (ErrorCode::Cancelled after a disconnect).
void await_job(std::future<void>& done, const httplib::Request& req, std::atomic<bool>& cancel);

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b);

}  // namespace hark::serve
