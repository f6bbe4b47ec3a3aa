// Test doubles for the server: an Engine that "transcribes" by describing its input
// (so every response can be checked exactly), a WAV-only decoder, and a fixture that
// runs a Server on 127.0.0.1 with an ephemeral port.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "hark/engine.h"
#include "serve/server.h"

namespace hark::serve::test {

struct FakeEngineStats {
  std::atomic<int> opened{0}, closed{0}, transcribed{0}, cancelled{0};
  std::atomic<int> windows_in_feed{0}, windows_in_finish{0};
  std::atomic<int> running{0}, max_running{0};  // concurrency seen inside the engine
  std::atomic<int> delay_ms{0};
  std::atomic<bool> hold{false};  // transcribe() waits while set (a cancel still ends it)
  std::atomic<bool> fail_open{false};
  std::atomic<bool> fail_transcribe{false};  // transcribe() throws Internal (a broken device)
  std::atomic<int> concurrency{1};          // what the engine reports as max_concurrent_runs()
  std::atomic<int> ms_per_audio_second{0};  // extra work proportional to the clip (long vs short)
  BatchStats batch;                          // what batch_stats() reports
};

// "heard N.NN seconds" per 30 s window, language from the options or "en".
inline std::string describe(size_t samples) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " heard %.2f seconds", samples / 16000.0);
  return buf;
}

inline Transcript make_transcript(size_t total_samples, const TranscribeOptions& o, const RunHooks& hooks,
                                  std::vector<Segment> segments) {
  Transcript t;
  for (const auto& s : segments) t.text += s.text;
  t.language = o.language.empty() ? "en" : o.language;
  t.task = o.task == Task::Translate ? "translate" : "transcribe";
  t.duration = total_samples / 16000.0;
  t.segments = std::move(segments);
  t.vocabulary.included = o.vocabulary;
  t.vocabulary.budget = 223;
  t.vocabulary.tokens = static_cast<int>(o.vocabulary.size());
  t.vad.speech = true;
  if (o.word_timestamps)
    for (auto& s : t.segments) s.words.push_back({s.text, s.start, s.end, 0.9});
  return t;
}

class FakeStreamingRun : public StreamingRun {
 public:
  FakeStreamingRun(FakeEngineStats& stats, TranscribeOptions o) : stats_(stats), options_(std::move(o)) {}
  void feed(std::span<const float> samples) override {
    fed_ += samples.size();
    while (fed_ - done_ >= kWindow) emit(kWindow, stats_.windows_in_feed);
  }
  Transcript finish() override {
    if (fed_ > done_) emit(fed_ - done_, stats_.windows_in_finish);
    return make_transcript(fed_, options_, {}, segments_);
  }
  const std::vector<Segment>& segments() const override { return segments_; }
  double fed_seconds() const override { return fed_ / 16000.0; }

 private:
  static constexpr size_t kWindow = 30 * 16000;
  void emit(size_t n, std::atomic<int>& counter) {
    Segment s;
    s.id = static_cast<int>(segments_.size());
    s.start = done_ / 16000.0;
    s.end = (done_ + n) / 16000.0;
    s.text = describe(n);
    segments_.push_back(s);
    done_ += n;
    ++counter;
  }
  FakeEngineStats& stats_;
  TranscribeOptions options_;
  size_t fed_ = 0, done_ = 0;
  std::vector<Segment> segments_;
};

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(FakeEngineStats& stats) : stats_(stats) { ++stats_.opened; }
  ~FakeEngine() override { ++stats_.closed; }

  Transcript transcribe(std::span<const float> samples, const TranscribeOptions& o, const RunHooks& hooks) override {
    int now = ++stats_.running;
    int seen = stats_.max_running;
    while (now > seen && !stats_.max_running.compare_exchange_weak(seen, now)) {}
    struct Leave { std::atomic<int>& r; ~Leave() { --r; } } leave{stats_.running};
    if (stats_.fail_transcribe) throw Error(ErrorCode::Internal, "[fake] the device failed");
    // Work in 5 ms slices so a cancel flag is noticed promptly, as the real seek loop does per window.
    const int work_ms = stats_.delay_ms + static_cast<int>(stats_.ms_per_audio_second * samples.size() / 16000);
    for (int waited = 0; stats_.hold || waited < work_ms; waited += 5) {
      if (hooks.cancel && hooks.cancel->load()) {
        ++stats_.cancelled;
        throw Error(ErrorCode::Cancelled, "[fake] cancelled");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<Segment> segments;
    const size_t window = 30 * 16000;
    for (size_t at = 0; at < samples.size(); at += window) {
      Segment s;
      size_t n = std::min(window, samples.size() - at);
      s.id = static_cast<int>(segments.size());
      s.seek = static_cast<int>(at / 160);
      s.start = at / 16000.0;
      s.end = (at + n) / 16000.0;
      s.text = describe(n);
      s.tokens = {50364, 1000 + s.id};
      segments.push_back(s);
      if (hooks.on_progress) hooks.on_progress((at + n) / 16000.0, samples.size() / 16000.0);
      if (hooks.on_segment) hooks.on_segment(s);
    }
    ++stats_.transcribed;
    return make_transcript(samples.size(), o, hooks, segments);
  }
  std::unique_ptr<StreamingRun> stream(const TranscribeOptions& o, const RunHooks&) override {
    return std::make_unique<FakeStreamingRun>(stats_, o);
  }
  std::string model_name() const override { return "fake-whisper"; }
  int max_concurrent_runs() const override { return stats_.concurrency; }
  BatchStats batch_stats() const override { return stats_.batch; }

 private:
  FakeEngineStats& stats_;
};

// The value of the Prometheus sample `name` in a /metrics body; -1 when it is missing.
inline double metric(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

// `seconds` of silence as raw f32 PCM at 16 kHz (a session's audio chunk).
inline std::string pcm_seconds(double seconds) { return std::string(static_cast<size_t>(seconds * 16000) * 4, '\0'); }

// 16-bit PCM mono 16 kHz WAV of `seconds` of a quiet sine.
inline std::string make_wav(double seconds, int rate = 16000) {
  const uint32_t n = static_cast<uint32_t>(seconds * rate);
  std::string out = "RIFF";
  auto u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  u32(36 + n * 2);
  out += "WAVEfmt ";
  u32(16); u16(1); u16(1); u32(rate); u32(rate * 2); u16(2); u16(16);
  out += "data";
  u32(n * 2);
  for (uint32_t i = 0; i < n; ++i) u16(static_cast<uint16_t>(static_cast<int16_t>(3000 * std::sin(i * 0.05))));
  return out;
}

// The decoder the tests inject: 16 kHz mono PCM16 WAV only, with the library's error kinds.
inline std::vector<float> fake_decode(std::string_view bytes, const std::string&) {
  if (bytes.size() < 44 || bytes.substr(0, 4) != "RIFF" || bytes.substr(8, 4) != "WAVE")
    throw Error(ErrorCode::InvalidAudio, "[audio] cannot decode the upload: not a WAV file");
  uint32_t rate;
  std::memcpy(&rate, bytes.data() + 24, 4);
  if (rate != 16000) throw Error(ErrorCode::UnsupportedFormat, "[audio] fake decoder reads 16 kHz only");
  std::vector<float> out((bytes.size() - 44) / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int16_t v;
    std::memcpy(&v, bytes.data() + 44 + 2 * i, 2);
    out[i] = v / 32768.0f;
  }
  if (out.size() < 1600) throw Error(ErrorCode::AudioTooShort, "[audio] clip is shorter than 0.1 s");
  return out;
}

// A quiet server on a free loopback port, and a client for it.
inline ServerOptions loopback(ServerOptions o) {
  o.host = "127.0.0.1";
  o.port = 0;
  o.log_level = "off";
  return o;
}

inline httplib::Client loopback_client(int port, const std::string& api_key = "") {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  if (!api_key.empty()) c.set_bearer_token_auth(api_key.c_str());
  return c;
}

class ServerFixture : public ::testing::Test {
 protected:
  void start_server(ServerOptions o = {}) {
    o = loopback(std::move(o));
    ServerDeps deps;
    deps.engine_factory = [this]() -> std::unique_ptr<Engine> {
      if (stats.fail_open) throw Error(ErrorCode::NotFound, "[hub] model 'tiny' is not downloaded; run `hark get tiny`");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // loading takes measurable time
      return std::make_unique<FakeEngine>(stats);
    };
    deps.decode_audio = fake_decode;
    server = std::make_unique<Server>(o, deps);
    port = server->start();
  }
  void TearDown() override {
    if (server) server->stop();
  }
  httplib::Client client(std::string api_key = "") { return loopback_client(port, api_key); }
  FakeEngineStats stats;
  std::unique_ptr<Server> server;
  int port = 0;
};

}  // namespace hark::serve::test
