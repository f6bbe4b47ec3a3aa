// Dictation into a running `hark serve`: one streaming session per take
// (POST /v1/audio/sessions, …/{id}/audio with raw 16 kHz float32, …/{id}/finish).
#include <atomic>
#include <cstring>
#include <optional>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "dictate/transcriber.h"

namespace hark::dictate {
namespace {

using json = nlohmann::json;

// A chunk that completes a window waits for its transcription, and finish for the last
// window (and a first request may load the checkpoint): generous, but never forever.
constexpr int kConnectTimeoutSec = 5;
constexpr int kReplyTimeoutSec = 600;

struct Endpoint {
  std::string origin;  // scheme://host[:port]
  std::string prefix;  // a path the server sits under ("" for the root)
};

Endpoint parse_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos || (url.compare(0, scheme_end, "http") != 0 && url.compare(0, scheme_end, "https") != 0))
    throw Error(ErrorCode::InvalidArgument, "[dictate] --server must be an http:// or https:// URL (got '" + url + "')");
  const size_t path = url.find('/', scheme_end + 3);
  Endpoint e{url.substr(0, path), path == std::string::npos ? "" : url.substr(path)};
  while (!e.prefix.empty() && e.prefix.back() == '/') e.prefix.pop_back();
  if (e.prefix.size() >= 3 && e.prefix.compare(e.prefix.size() - 3, 3, "/v1") == 0) e.prefix.resize(e.prefix.size() - 3);
  return e;
}

std::string describe_failure(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "connection refused or host unreachable";
    case httplib::Error::ConnectionTimeout: return "no answer within " + std::to_string(kConnectTimeoutSec) + " s";
    case httplib::Error::Read: return "the connection broke while waiting for the reply";
    case httplib::Error::Write: return "the connection broke while sending";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification: return "TLS failed";
    default: return httplib::to_string(e);
  }
}

json session_parameters(const TranscribeOptions& o) {
  json p = json::object();
  if (!o.language.empty()) p["language"] = o.language;
  if (!o.prompt.empty()) p["prompt"] = o.prompt;
  if (!o.vocabulary.empty()) p["vocabulary"] = o.vocabulary;
  if (o.vad != VadMode::Off) p["vad"] = true;
  if (o.task == Task::Translate) p["task"] = "translate";
  return p;
}

class ServerTranscriber : public Transcriber {
 public:
  ServerTranscriber(const ServerAddress& server, TranscribeOptions options)
      : url_(server.url), endpoint_(parse_url(server.url)), client_(endpoint_.origin), options_(std::move(options)) {
    client_.set_connection_timeout(kConnectTimeoutSec, 0);
    client_.set_read_timeout(kReplyTimeoutSec, 0);
    client_.set_write_timeout(kReplyTimeoutSec, 0);
    if (!server.api_key.empty()) client_.set_bearer_token_auth(server.api_key.c_str());
  }
  ~ServerTranscriber() override { discard(); }

  std::string describe() const override { return "hark serve at " + url_; }

  void prepare() override {
    check(client_.Get(endpoint_.prefix + "/v1"), "GET /v1");
    begin();  // opening a session loads the model: a missing one is reported before the take
  }
  void begin() override {
    if (id_ && fresh_) {
      fresh_ = false;  // the session prepare() opened serves the first take
      return;
    }
    discard();
    auto reply = check(client_.Post(path("/v1/audio/sessions"), session_parameters(options_).dump(), "application/json"),
                       "opening a session");
    id_ = json::parse(reply, nullptr, false).value("id", "");
    if (id_->empty()) throw Error(ErrorCode::Internal, "[dictate] the server opened a session without an id");
    fresh_ = true;
  }
  Heard feed(std::span<const float> samples, bool want_partial) override {
    fresh_ = false;
    const std::string route = session_path("/audio") + (want_partial ? "?partial=1" : "");
    auto reply = json::parse(check(client_.Post(route, reinterpret_cast<const char*>(samples.data()),
                                                samples.size() * sizeof(float), "audio/pcm;rate=16000"),
                                   "sending audio"),
                             nullptr, false);
    Heard heard;
    for (const auto& s : reply.value("segments", json::array())) heard.final_text += s.value("text", "");
    heard.partial = reply.value("partial", "");
    return heard;
  }
  std::string finish() override {
    fresh_ = false;
    auto reply = check(client_.Post(session_path("/finish"), "{}", "application/json"), "finishing the take");
    id_.reset();
    return json::parse(reply, nullptr, false).value("text", "");
  }
  void discard() noexcept override {
    if (!id_ || cancelled_) return;
    try {
      client_.set_read_timeout(kConnectTimeoutSec, 0);
      client_.Delete(session_path(""));
      client_.set_read_timeout(kReplyTimeoutSec, 0);
    } catch (...) {
    }
    id_.reset();
  }
  void cancel() noexcept override {
    cancelled_ = true;
    client_.stop();
  }

 private:
  std::string path(const std::string& route) const { return endpoint_.prefix + route; }
  std::string session_path(const std::string& tail) const { return path("/v1/audio/sessions/" + id_.value_or("") + tail); }

  // The body of a 2xx reply; otherwise a hark::Error whose code says what the caller can do.
  std::string check(const httplib::Result& r, const std::string& what) {
    if (!r && cancelled_) throw Error(ErrorCode::Cancelled, "[dictate] stopped before the server answered");
    if (!r)
      throw Error(ErrorCode::Network, "[dictate] cannot reach hark serve at " + url_ + " (" + describe_failure(r.error()) +
                                          ", " + what + "); start it with `hark serve`, or transcribe in this "
                                          "process with --model M");
    if (r->status >= 200 && r->status < 300) return r->body;
    auto body = json::parse(r->body, nullptr, false);
    std::string message = body.is_object() && body.contains("error") ? body["error"].value("message", "") : "";
    std::string code = body.is_object() && body.contains("error") ? body["error"].value("code", "") : "";
    if (message.empty()) message = r->body.substr(0, 200);
    if (r->status == 401)
      throw Error(ErrorCode::InvalidArgument,
                  "[dictate] the server at " + url_ +
                      (code == "invalid_api_key" && message.find("missing") != std::string::npos
                           ? " needs an API key: pass --api-key KEY (or set HARK_API_KEY)"
                           : " rejected the API key: check --api-key (or HARK_API_KEY)"));
    if (r->status == 404 && code == "session_not_found")
      throw Error(ErrorCode::NotFound, "[dictate] the server no longer has the session (it expired after idling, or "
                                       "the server restarted)");
    if (r->status == 404)
      throw Error(ErrorCode::InvalidArgument, "[dictate] " + url_ + " is not a hark server (" + what + ": 404); check --server");
    // A server stopping gracefully answers 503 server_draining / session_closed until it
    // closes: its advice is written for API clients (open a new session elsewhere); the
    // person at the microphone needs the same advice as for a server that is gone.
    if (r->status == 503 && (code == "server_draining" || code == "session_closed"))
      throw Error(ErrorCode::Network, "[dictate] hark serve at " + url_ + " is shutting down (" + what +
                                          "); start it again with `hark serve`, or transcribe in this process "
                                          "with --model M");
    if (r->status == 503) throw Error(ErrorCode::Unavailable, "[dictate] the server cannot transcribe: " + message);
    throw Error(ErrorCode::Internal, "[dictate] the server answered " + std::to_string(r->status) + " while " + what +
                                         ": " + message);
  }

  std::string url_;
  Endpoint endpoint_;
  httplib::Client client_;
  TranscribeOptions options_;
  std::optional<std::string> id_;
  bool fresh_ = false;  // opened and not used yet
  std::atomic<bool> cancelled_{false};
};

}  // namespace

std::unique_ptr<Transcriber> make_server_transcriber(const ServerAddress& server, const TranscribeOptions& options) {
  return std::make_unique<ServerTranscriber>(server, options);
}

}  // namespace hark::dictate
