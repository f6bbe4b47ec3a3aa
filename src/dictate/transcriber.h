// Where a take is transcribed: a streaming session of a running `hark serve`
// (docs/server.md, /v1/audio/sessions) or an in-process Engine's StreamingRun. Both
// transcribe every completed 30 s window while the take goes on, and can preview the
// unfinished rest ("partial" text) on request.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "hark/engine.h"
#include "hark/options.h"

namespace hark::dictate {

struct Heard {
  std::string final_text;  // segments that will not change
  std::string partial;     // a preview of the audio after them (empty unless asked for)
  std::string text() const { return final_text + partial; }
};

// Failures are hark::Error: Network (the server cannot be reached or went away),
// NotFound (the server forgot the session: expired or restarted; open a new one and
// resend the take), anything else is final for the take.
class Transcriber {
 public:
  virtual ~Transcriber() = default;
  virtual std::string describe() const = 0;
  // Checks, before anything is recorded, that takes can be transcribed (server reachable,
  // API key accepted, model loadable).
  virtual void prepare() = 0;
  virtual void begin() = 0;  // a new take
  virtual Heard feed(std::span<const float> samples, bool want_partial) = 0;
  virtual std::string finish() = 0;  // the take's transcript
  virtual void discard() noexcept = 0;  // drop the current take, if any
  // From another thread: makes a feed() or finish() in progress fail soon (the user
  // gave up waiting). The transcriber is not used again.
  virtual void cancel() noexcept = 0;
};

struct ServerAddress {
  std::string url;  // http(s)://host[:port][/prefix]
  std::string api_key;
};

std::unique_ptr<Transcriber> make_server_transcriber(const ServerAddress& server, const TranscribeOptions& options);
std::unique_ptr<Transcriber> make_engine_transcriber(std::unique_ptr<Engine> engine, const TranscribeOptions& options);

// The options of a preview pass: one greedy pass, no fallback ladder, no word timing.
TranscribeOptions preview_options(TranscribeOptions options);

}  // namespace hark::dictate
