// hark serve: the OpenAI-compatible transcription server. Construct with options and
// the two things it cannot build itself (how to open the engine, how to decode audio),
// start(), and stop() to drain. Everything it needs is injectable so the routes are
// testable with a fake engine.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/engine_worker.h"

namespace hark::serve {

// Container bytes (WAV, mp3, ...) → 16 kHz mono float. Throws hark::Error
// (InvalidAudio, AudioTooShort, TooLarge, UnsupportedFormat).
using AudioDecoder = std::function<std::vector<float>(std::string_view bytes, const std::string& name_hint)>;

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0 = any free port (tests)
  std::string api_key;             // non-empty: every route but /health needs "Bearer <key>"
  std::string model_name = "whisper";  // reported by /v1/models and in responses
  size_t max_upload_bytes = 100u << 20;
  double max_audio_sec = 4 * 3600.0;
  size_t max_sessions = 64;
  double session_idle_sec = 300;
  int http_threads = 128;          // concurrent connections being served
  int read_timeout_sec = 30;       // one stalled read closes the connection
  double upload_timeout_sec = 300; // a whole body must arrive within this (slow-loris guard)
  ResidencyOptions residency;
  std::string log_format = "text";  // text | json
  std::string log_level = "info";   // off | error | warn | info | debug
  // Routing key put into session ids (sess_<id>_…) and the x-hark-instance header, so a
  // proxy can send a session's calls to the instance that holds it. [A-Za-z0-9-], at most
  // 32 characters; empty = <short host name>-<port>.
  std::string instance_id;
  double drain_timeout_sec = 60;  // stop(): accepted work may take this long, then it is cancelled
  int retry_after_sec = 1;        // Retry-After on the 503s of a draining or full server
  // Transcriptions queued or running at once; beyond it 503 queue_full with Retry-After
  // (0: no limit). Sessions are bounded by max_sessions instead.
  size_t max_queue = 256;
};

// What a drain did: `cancelled` requests were still running when --drain-timeout expired
// and were answered 503 drain_timeout instead of finishing.
struct DrainReport {
  size_t cancelled = 0;
  double seconds = 0;
};

struct ServerDeps {
  EngineFactory engine_factory;
  AudioDecoder decode_audio;
  // One engine worker per entry (device name, its engine), each with its own copy of the
  // model: `hark serve --device cuda:0,cuda:1`. Empty: one worker on engine_factory.
  std::vector<std::pair<std::string, EngineFactory>> device_engines;
};

class Server {
 public:
  Server(ServerOptions options, ServerDeps deps);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and serves on a background thread; returns the bound port. Throws
  // hark::Error(Unavailable) when the address cannot be bound.
  int start();
  // Blocks until stop() has been called and everything drained.
  void wait();
  // Graceful drain: from now on new work is answered 503 with Retry-After and /health
  // reports "draining" (503), open streaming sessions are closed, and the requests already
  // accepted (queued and running jobs, SSE streams) finish. When drain_timeout_sec passes
  // first, the remaining jobs are cancelled (503 drain_timeout). Then the listener and the
  // engine are released. Blocks until done; safe to call from any thread, more than once
  // (later calls wait for the first and return its report).
  DrainReport stop();
  // Ends a drain in progress now, as if its timeout had expired (a second Ctrl-C).
  void expire_drain();
  int port() const;
  // The routing key in use (the default is known once start() has bound the port).
  std::string instance_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hark::serve
