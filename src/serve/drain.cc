// Graceful drain (SIGTERM): stop taking new work, finish what was accepted, then release
// the listener and the engine. While draining the server keeps listening, so new work gets
// a 503 with Retry-After (a proxy retries it on another instance) and /health says
// "draining" (load balancers stop sending) instead of a refused connection.
#include <thread>

#include "serve/server_impl.h"

namespace hark::serve {
namespace {

using Clock = std::chrono::steady_clock;

// After --drain-timeout the remaining jobs are cancelled; a cancelled job stops at its
// next window, so the drain waits this much longer for the answers to go out.
constexpr double kCancelGraceSec = 10;

// The pre-routing verdict for the request this HTTP thread is serving.
enum class Work { None, Accepted, Rejected };
thread_local Work t_work = Work::None;

// Requests that start or continue a job: transcriptions, translations, sessions.
bool is_work_route(const httplib::Request& req) {
  const bool audio = req.path.rfind("/v1/audio/", 0) == 0;
  if (req.method == "POST") return audio;
  return req.method == "DELETE" && req.path.rfind("/v1/audio/sessions/", 0) == 0;
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

void Server::Impl::admit_request(const httplib::Request& req) {
  t_work = Work::None;
  if (!is_work_route(req)) return;
  // Count first, then look: a drain that has seen accepted_work == 0 after setting
  // `draining` can no longer miss a request that slipped in.
  ++accepted_work;
  if (draining) {
    --accepted_work;
    t_work = Work::Rejected;
    return;
  }
  t_work = Work::Accepted;
}

void Server::Impl::finish_request() {
  if (t_work == Work::Accepted) --accepted_work;
  t_work = Work::None;
}

bool Server::Impl::rejected_for_drain() const { return t_work == Work::Rejected; }

void Server::Impl::reject_for_drain(const httplib::ContentReader& reader) const {
  // A server that closes a socket with unread bytes makes the kernel send a reset, which
  // can destroy the 503 before the client reads it; bodies up to the upload limit are
  // read and dropped (larger ones end the connection). send_error adds Connection: close.
  const size_t limit = options.max_upload_bytes;
  size_t seen = 0;
  reader([&](const char*, size_t len) { return (seen += len) <= limit; });
  throw ApiError(503, "server_error", "server_draining",
                 "[serve] this instance is shutting down and takes no new work; retry the request "
                 "(behind a load balancer another instance takes it)");
}

void Server::Impl::track_job(const std::shared_ptr<std::atomic<bool>>& cancel) {
  std::lock_guard lock(running_mutex);
  std::erase_if(running_jobs, [](const auto& w) { return w.expired(); });
  running_jobs.push_back(cancel);
  if (drain_expired) cancel->store(true);  // accepted just as the drain gave up
}

size_t Server::Impl::cancel_running_jobs() {
  std::lock_guard lock(running_mutex);
  size_t cancelled = 0;
  for (auto& weak : running_jobs)
    if (auto flag = weak.lock(); flag && !flag->exchange(true)) ++cancelled;
  return cancelled;
}

ApiError Server::Impl::job_error(std::exception_ptr error) const {
  ApiError e = to_api_error(error);
  if (e.code() != "client_closed_request" || !drain_expired) return e;
  ++drain_cancelled;
  return ApiError(503, "server_error", "drain_timeout",
                    "[serve] this instance shut down before the job finished (--drain-timeout " +
                        std::to_string(static_cast<int>(options.drain_timeout_sec)) + " s); send it again");
}

bool Server::Impl::wait_for_accepted_work(Clock::time_point deadline, bool until_expired) {
  while (accepted_work.load() > 0) {
    if (Clock::now() >= deadline || (until_expired && expire_requested)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void Server::Impl::close_sessions(const std::vector<std::shared_ptr<Session>>& closing) {
  // Queued behind the jobs already submitted for these sessions, so an accepted chunk is
  // fed before its session goes.
  for (const auto& s : closing) close_session(s, false);
}

DrainReport Server::Impl::drain() {
  const auto started = Clock::now();
  auto closing = sessions.close_for_drain();
  draining = true;  // after the sessions: a request that sees `draining` also finds them closed
  close_sessions(closing);
  log_line("draining", {{"accepted", accepted_work.load()}, {"sessions_closed", closing.size()},
                        {"timeout_sec", options.drain_timeout_sec}});
  DrainReport report;
  if (!wait_for_accepted_work(after(options.drain_timeout_sec), true)) {
    drain_expired = true;
    log_line("drain_timeout", {{"cancelling", cancel_running_jobs()}, {"accepted", accepted_work.load()}});
    wait_for_accepted_work(after(kCancelGraceSec), false);
  }
  report.cancelled = drain_cancelled;  // counted as the answers go out, so exact
  http.stop();  // nothing accepted is left: close the listener and idle connections
  if (listen_thread.joinable()) listen_thread.join();
  {
    std::lock_guard lock(stop_mutex);
    stopping = true;
  }
  stop_cv.notify_all();
  if (janitor_thread.joinable()) janitor_thread.join();
  close_sessions(sessions.take_all());  // any opened while the drain began
  for (auto& w : workers) w->shutdown();
  report.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  log_line("drained", {{"seconds", std::round(report.seconds * 10) / 10}, {"cancelled", report.cancelled}});
  return report;
}

}  // namespace hark::serve
