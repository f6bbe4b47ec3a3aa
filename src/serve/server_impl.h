// Internal to src/serve: the state behind hark::serve::Server, shared by the route files.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  // One engine worker per device (one unless --device lists several GPUs). A
  // transcription goes to the least loaded; a session stays on the one it opened on.
  std::vector<std::unique_ptr<EngineWorker>> workers;
  std::vector<std::string> worker_devices;
  EngineWorker& least_loaded();
  SessionRegistry sessions;
  httplib::Server http;
  std::thread listen_thread, janitor_thread;
  std::atomic<int> bound_port{0};
  int listen_socket = -1;  // the listener, seen by the socket options callback before bind
  std::atomic<size_t> in_flight{0};
  std::string instance_id;  // final once start() has bound the port

  // Drain state (drain.cc). accepted_work counts requests that were let in to do work
  // (transcriptions, sessions) and have not finished writing their response.
  std::atomic<bool> draining{false}, drain_expired{false}, expire_requested{false};
  std::atomic<size_t> accepted_work{0};
  std::mutex running_mutex;
  std::vector<std::weak_ptr<std::atomic<bool>>> running_jobs;  // cancel flags, for an expired drain
  mutable std::atomic<size_t> drain_cancelled{0};  // requests answered drain_timeout
  DrainReport drain_report;
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();

  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool drain_started = false, stopping = false, stopped = false;

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
  DrainReport drain();

  // drain.cc: the pre-routing verdict on a work request, kept for its handler and logger.
  void admit_request(const httplib::Request& req);
  void finish_request();
  bool rejected_for_drain() const;
  // Reads and drops the body (so the client gets the answer, not a reset), then throws
  // 503 server_draining.
  [[noreturn]] void reject_for_drain(const httplib::ContentReader& reader) const;
  void track_job(const std::shared_ptr<std::atomic<bool>>& cancel);
  // A failed job's answer: a cancel caused by an expired drain is 503 drain_timeout, not 499.
  ApiError job_error(std::exception_ptr error) const;
  // False at the deadline, or (until_expired) once expire_drain() was called.
  bool wait_for_accepted_work(std::chrono::steady_clock::time_point deadline, bool until_expired);
  size_t cancel_running_jobs();
  void close_sessions(const std::vector<std::shared_ptr<Session>>& closing);
  // routes_sessions.cc: a worker job that uses the session's run (throws 404 once the
  // session is closing), and the job that closes it.
  std::future<void> session_job(const std::shared_ptr<Session>& s, std::function<void(JobContext&)> fn,
                                bool count_as_request);
  std::future<void> close_session(const std::shared_ptr<Session>& s, bool stop_running_job);
  // Shared helpers for route handlers.
  std::string read_body(const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& reader) const;
  std::vector<float> decode(std::string_view bytes, const std::string& name_hint,
                            const std::string& content_type) const;
  void send_error(httplib::Response& res, const ApiError& error) const;
  nlohmann::json residency_json(bool unloaded = false) const;  // all workers together
  nlohmann::json devices_json() const;                         // per worker
  // Every worker together (routes_info.cc).
  size_t queue_depth() const;
  size_t jobs_running() const;
  BatchStats batch_stats() const;
  // Prometheus lines per device: queue depth, running jobs, open sessions, weights resident.
  std::string device_gauges() const;
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
