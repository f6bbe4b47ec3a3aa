#include "serve/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "serve/connection_watch.h"
#include "serve/multipart.h"
#include "serve/server_impl.h"

namespace hark::serve {
namespace {

constexpr const char* kHiddenContentType = "X-Hark-Original-Content-Type";
// Multipart framing around the audio (field parts, headers) on top of --max-upload-mb.
constexpr size_t kMultipartOverheadBytes = 64 * 1024;
constexpr size_t kDrainFactor = 4;
// Connections the kernel holds for the server before it accepts them (SOMAXCONN caps it).
constexpr int kListenBacklog = 1024;

thread_local std::chrono::steady_clock::time_point t_request_started;
thread_local bool t_request_open = false;

bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0;
}

std::shared_ptr<spdlog::logger> make_logger(const ServerOptions& o) {
  auto log = std::make_shared<spdlog::logger>("hark.serve", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  if (o.log_format == "json")
    log->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  else
    log->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  log->set_level(spdlog::level::from_str(o.log_level));
  return log;
}

// <short host name>-<port>: unique per instance on a host, and per pod in Kubernetes
// (the host name is the pod name).
std::string default_instance_id(int port) {
  char host[256] = {};
  std::string id;
  if (gethostname(host, sizeof host - 1) == 0)
    for (const char* c = host; *c && *c != '.' && id.size() < 24; ++c)
      id += std::isalnum(static_cast<unsigned char>(*c)) ? static_cast<char>(std::tolower(*c)) : '-';
  return (id.empty() ? std::string("hark") : id) + "-" + std::to_string(port);
}

void validate_instance_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 32;
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-');
  if (!ok)
    throw Error(ErrorCode::InvalidArgument, "[serve] --instance-id '" + id.substr(0, 64) +
                                                "' must be 1-32 letters, digits or '-' (it becomes part of session ids)");
}

// Draining answers that invite a retry elsewhere (a closed session cannot be retried: its
// client opens a new one).
bool is_drain_error(const std::string& code) { return code == "server_draining" || code == "drain_timeout"; }

// A request without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3), but
// cpp-httplib 0.11 reads such a POST until the connection closes: `curl -X POST URL`
// waited for the read timeout and got 400. Saying so explicitly makes the body empty.
void mark_empty_body(httplib::Request& req) {
  const bool may_have_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                             req.method == "DELETE";
  if (may_have_body && !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
    req.headers.emplace("Content-Length", "0");
}

}  // namespace

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string original_content_type(const httplib::Request& req) {
  if (req.has_header(kHiddenContentType)) return req.get_header_value(kHiddenContentType);
  return req.get_header_value("Content-Type");
}

void await_job(std::future<void>& done, const httplib::Request& req, std::atomic<bool>& cancel) {
  ConnectionWatch watch(req);
  while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    if (!cancel.load() && watch.peer_closed()) cancel.store(true);
  }
  done.get();
}

Server::Impl::Impl(ServerOptions o, ServerDeps d)
    : options(std::move(o)),
      deps(std::move(d)),
      log(make_logger(options)),
      sessions(options.max_sessions, options.session_idle_sec) {
  if (deps.device_engines.empty()) deps.device_engines.emplace_back("default", deps.engine_factory);
  for (auto& [device, factory] : deps.device_engines) {
    workers.push_back(std::make_unique<EngineWorker>(factory, options.residency, &metrics, options.max_queue));
    worker_devices.push_back(device);
  }
}

EngineWorker& Server::Impl::least_loaded() {
  // Queued and running jobs plus open sessions (a session's chunks come back to its
  // worker); ties go to the first device. A worker whose jobs keep failing on the server's
  // side is passed over while another is healthy (EngineWorker::faulty).
  EngineWorker* best = nullptr;
  size_t best_load = SIZE_MAX;
  bool best_faulty = true;
  for (auto& w : workers) {
    const size_t load = w->queue_depth() + w->running_jobs() + static_cast<size_t>(w->pinned());
    const bool faulty = workers.size() > 1 && w->faulty();
    if (!best || (best_faulty && !faulty) || (faulty == best_faulty && load < best_load))
      best = w.get(), best_load = load, best_faulty = faulty;
  }
  return *best;
}

void Server::Impl::log_line(const std::string& event, const nlohmann::json& fields) const {
  if (options.log_format == "json") {
    nlohmann::json line = fields;
    line["event"] = event;
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    log->info("{}", text.substr(1, text.size() - 2));  // the pattern supplies the braces
    return;
  }
  std::string text = event;
  for (const auto& [k, v] : fields.items())
    text += " " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  log->info("{}", text);
}

void Server::Impl::send_error(httplib::Response& res, const ApiError& error) const {
  res.status = error.status();
  res.set_content(error_body(error), "application/json");
  if (error.status() == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (is_drain_error(error.code()) || error.code() == "queue_full")
    res.set_header("Retry-After", std::to_string(options.retry_after_sec));
  if (error.code() == "server_draining" && !res.has_header("Connection")) res.set_header("Connection", "close");
}

std::string Server::Impl::read_body(const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) const {
  const size_t limit = options.max_upload_bytes + kMultipartOverheadBytes;
  const auto too_large = ApiError(413, "invalid_request_error", "request_too_large",
                                  "[serve] request body is larger than the " +
                                      std::to_string(options.max_upload_bytes >> 20) + " MB limit (--max-upload-mb)");
  // Bodies up to kDrainFactor × the limit are read and discarded so the client, which is
  // usually still sending, gets a clean 413 instead of a reset connection; larger ones
  // are refused from their Content-Length by cpp-httplib without being read.
  std::string body;
  bool over = false, slow = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(options.upload_timeout_sec));
  bool ok = reader([&](const char* data, size_t len) {
    if (std::chrono::steady_clock::now() > deadline) return !(slow = true);
    if (over || body.size() + len > limit) {
      over = true;
      body.clear();
      return true;
    }
    body.append(data, len);
    return true;
  });
  if (over || res.status == 413) throw too_large;
  if (slow)
    throw ApiError(408, "invalid_request_error", "request_timeout",
                   "[serve] the upload took longer than " + std::to_string(int(options.upload_timeout_sec)) +
                       " s; send the body faster or raise --upload-timeout");
  if (!ok) throw bad_request("[serve] could not read the request body (truncated or bad chunked encoding)", "invalid_body");
  return body;
}

std::vector<float> Server::Impl::decode(std::string_view bytes, const std::string& name_hint,
                                        const std::string& content_type) const {
  std::vector<float> samples;
  if (media_type(content_type) == "audio/pcm") {
    // Raw little-endian float32 mono at 16 kHz: the dictation chunk format, no decode.
    if (content_type.find("rate=") != std::string::npos && content_type.find("rate=16000") == std::string::npos)
      throw ApiError(415, "invalid_request_error", "unsupported_media_type",
                     "[serve] audio/pcm chunks must be 16 kHz (audio/pcm;rate=16000), little-endian float32 mono");
    if (bytes.size() % 4 != 0)
      throw bad_request("[serve] audio/pcm body is " + std::to_string(bytes.size()) +
                            " bytes, not a whole number of float32 samples", "invalid_audio");
    samples.resize(bytes.size() / 4);
    std::memcpy(samples.data(), bytes.data(), bytes.size());
    for (float& s : samples)
      if (!std::isfinite(s)) throw bad_request("[serve] audio/pcm chunk contains NaN or infinite samples", "invalid_audio");
  } else {
    if (!deps.decode_audio)
      throw Error(ErrorCode::Unavailable, "[serve] this build has no audio decoder; send audio/pcm;rate=16000");
    samples = deps.decode_audio(bytes, name_hint);
  }
  double seconds = samples.size() / 16000.0;
  if (seconds > options.max_audio_sec)
    throw ApiError(413, "invalid_request_error", "audio_too_long",
                   "[serve] audio is " + std::to_string(int(seconds)) + " s long; the limit is " +
                       std::to_string(int(options.max_audio_sec)) + " s (--max-audio-sec)");
  return samples;
}

nlohmann::json Server::Impl::residency_json(bool unloaded) const {
  ResidencyCounters c;
  for (const auto& w : workers) {
    auto one = w->counters();
    c.resident = c.resident || one.resident;
    c.loads += one.loads, c.unloads += one.unloads, c.requests += one.requests;
    c.last_load_ms = std::max(c.last_load_ms, one.last_load_ms);
    c.idle_unload_sec = one.idle_unload_sec;
  }
  return {{"unloaded", unloaded}, {"resident", c.resident}, {"loads", c.loads}, {"unloads", c.unloads},
          {"requests", c.requests}, {"last_load_ms", c.last_load_ms}, {"idle_unload_sec", c.idle_unload_sec}};
}

nlohmann::json Server::Impl::devices_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < workers.size(); ++i) {
    auto c = workers[i]->counters();
    out.push_back({{"device", worker_devices[i]},
                   {"resident", c.resident},
                   {"loads", c.loads},
                   {"requests", c.requests},
                   {"queue_depth", workers[i]->queue_depth()},
                   {"running", workers[i]->running_jobs()},
                   {"sessions", workers[i]->pinned()}});
  }
  return out;
}

void Server::Impl::install_routes() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request_started = std::chrono::steady_clock::now();
    t_request_open = true;
    ++in_flight;
    admit_request(req);
    res.set_header("x-hark-instance", instance_id);
    // cpp-httplib parses multipart bodies itself when it sees the type; hark parses them
    // (precise errors, fuzzable), so the type is moved aside before routing. The request
    // object is not const: httplib hands the same one to the handler.
    auto& mutable_req = const_cast<httplib::Request&>(req);
    mark_empty_body(mutable_req);
    if (media_type(req.get_header_value("Content-Type")) == "multipart/form-data") {
      std::string type = req.get_header_value("Content-Type");
      mutable_req.headers.erase("Content-Type");
      mutable_req.headers.emplace("Content-Type", "application/octet-stream");
      mutable_req.headers.erase(kHiddenContentType);
      mutable_req.headers.emplace(kHiddenContentType, type);
    }
    // The web page and its worklet hold no data: a browser loads them without a key and
    // sends the key the user types with its API calls.
    const bool public_route = req.path == "/health" || (req.method == "GET" && (req.path == "/" || req.path == "/audio-worklet.js"));
    if (options.api_key.empty() || public_route) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) == 0 && constant_time_equal(auth.substr(prefix.size()), options.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "invalid_request_error", "invalid_api_key",
                             auth.empty() ? "[serve] missing API key: send 'Authorization: Bearer <key>'"
                                          : "[serve] invalid API key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (res.get_header_value("Content-Type") == "application/json" && !res.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;  // a route already wrote its error
    if (res.status == 404)
      send_error(res, ApiError(404, "invalid_request_error", "not_found",
                               "[serve] no route " + req.method + " " + req.path + "; GET /v1 lists the endpoints"));
    else if (res.status == 413)
      send_error(res, ApiError(413, "invalid_request_error", "request_too_large", "[serve] request body is too large"));
    else
      send_error(res, ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                               "http_" + std::to_string(res.status), "[serve] malformed HTTP request"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
    send_error(res, to_api_error(e));
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    double ms = t_request_open ? ms_between(t_request_started, std::chrono::steady_clock::now()) : 0;
    if (t_request_open) --in_flight;
    t_request_open = false;
    finish_request();
    metrics.observe_request(route_label(req.method, req.path), res.status, ms / 1000.0);
    if (res.status == kStatusClientClosed) metrics.count_cancelled();
    log_line("request", {{"method", req.method}, {"path", req.path}, {"status", res.status},
                         {"ms", std::round(ms * 10) / 10}, {"remote", req.remote_addr}});
  });
  install_info_routes();
  install_transcribe_routes();
  install_session_routes();
}

void Server::Impl::run_janitor() {
  std::unique_lock lock(stop_mutex);
  while (!stopping) {
    stop_cv.wait_for(lock, std::chrono::milliseconds(500));
    if (stopping) break;
    lock.unlock();
    for (auto& s : sessions.take_expired()) {
      log_line("session_expired", {{"id", s->id}});
      close_session(s, true);
    }
    lock.lock();
  }
}

Server::Server(ServerOptions options, ServerDeps deps)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(deps))) {
  auto& o = impl_->options;
  if (!o.instance_id.empty()) validate_instance_id(o.instance_id);
  impl_->http.new_task_queue = [n = o.http_threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  // cpp-httplib 0.11 listens with a backlog of 5: a burst of clients connecting at once
  // overflowed it, the kernel dropped the excess handshakes and some of those clients got
  // a read error instead of an answer (a 16-client test failed about 1 run in 4). The
  // listening socket is remembered here and its backlog raised after bind.
  impl_->http.set_socket_options([impl = impl_.get()](socket_t sock) {
    httplib::default_socket_options(sock);
    impl->listen_socket = sock;
  });
  impl_->http.set_payload_max_length((o.max_upload_bytes + kMultipartOverheadBytes) * kDrainFactor);
  impl_->http.set_read_timeout(o.read_timeout_sec, 0);
  impl_->http.set_write_timeout(o.read_timeout_sec, 0);
  impl_->install_routes();
}

Server::~Server() { stop(); }

int Server::start() {
  auto& o = impl_->options;
  int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0)
    throw Error(ErrorCode::Unavailable, "[serve] cannot listen on " + o.host + ":" + std::to_string(o.port) +
                                            " (in use, or not an address of this machine); pick another --port/--host");
  impl_->bound_port = port;
  if (impl_->listen_socket >= 0) ::listen(impl_->listen_socket, kListenBacklog);
  impl_->instance_id = o.instance_id.empty() ? default_instance_id(port) : o.instance_id;
  impl_->sessions.set_route_key(impl_->instance_id);
  impl_->listen_thread = std::thread([this] { impl_->http.listen_after_bind(); });
  // httplib's stop() does nothing before the loop runs: a stop() right after start() would
  // then wait on a listener that never ends.
  for (int i = 0; i < 5000 && !impl_->http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->janitor_thread = std::thread([this] { impl_->run_janitor(); });
  impl_->log_line("listening", {{"host", o.host}, {"port", port}, {"model", o.model_name}, {"instance", impl_->instance_id}});
  return port;
}

void Server::wait() {
  std::unique_lock lock(impl_->stop_mutex);
  impl_->stop_cv.wait(lock, [&] { return impl_->stopped; });
}

DrainReport Server::stop() {
  {
    std::unique_lock lock(impl_->stop_mutex);
    if (impl_->drain_started) {  // another caller drains: wait for it
      impl_->stop_cv.wait(lock, [&] { return impl_->stopped; });
      return impl_->drain_report;
    }
    impl_->drain_started = true;
  }
  DrainReport report = impl_->drain();
  {
    std::lock_guard lock(impl_->stop_mutex);
    impl_->drain_report = report;
    impl_->stopped = true;
  }
  impl_->stop_cv.notify_all();
  return report;
}

void Server::expire_drain() { impl_->expire_requested = true; }

int Server::port() const { return impl_->bound_port; }

std::string Server::instance_id() const { return impl_->instance_id; }

}  // namespace hark::serve
