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
  int http_threads = 32;           // concurrent connections being served
  int read_timeout_sec = 30;       // one stalled read closes the connection
  double upload_timeout_sec = 300; // a whole body must arrive within this (slow-loris guard)
  ResidencyOptions residency;
  std::string log_format = "text";  // text | json
  std::string log_level = "info";   // off | error | warn | info | debug
};

struct ServerDeps {
  EngineFactory engine_factory;
  AudioDecoder decode_audio;
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
  // Stops accepting connections, lets in-flight requests and queued jobs finish, then
  // releases the engine. Safe to call from any thread, more than once.
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hark::serve
