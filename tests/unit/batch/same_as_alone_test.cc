// Same output as alone: requests of mixed length and options decoded concurrently by a
// batching engine give, bit for bit, what each gives alone on an engine that runs one job
// at a time (the pre-batching path): greedy, beams, the temperature fallback with best-of
// sampling, prompts, languages (given and detected), translation, word timestamps,
// without timestamps, and streaming runs fed in chunks among them.
#include <thread>

#include "batch_test_util.h"

namespace hark::test {
namespace {

struct Request {
  std::string name;
  double seconds = 5;
  int seed = 1;
  TranscribeOptions options;
  double chunk_seconds = 0;  // > 0: a streaming run fed in chunks of this length
};

TranscribeOptions base_options() {
  TranscribeOptions o;
  o.sample_len = 8;  // random weights never say EOT: a few tokens per window keep this cheap
  o.temperatures = {0.0f, 0.5f, 1.0f};
  o.best_of = 2;
  return o;
}

std::vector<Request> mixed_requests() {
  std::vector<Request> r;
  auto add = [&](std::string name, double seconds, int seed, auto&& tweak, double chunk = 0) {
    Request q{std::move(name), seconds, seed, base_options(), chunk};
    tweak(q.options);
    r.push_back(std::move(q));
  };
  add("greedy-en", 4, 1, [](TranscribeOptions& o) { o.language = "en"; o.temperatures = {0.0f}; });
  add("beam3-fallback", 12, 2, [](TranscribeOptions& o) {
    o.language = "en";
    o.beam_size = 3;
    o.temperatures = {0.0f, 0.6f};
  });
  add("two-windows-detect", 35, 3, [](TranscribeOptions& o) { o.best_of = 3; });
  add("prompt-translate-de", 9, 4, [](TranscribeOptions& o) {
    o.language = "de";
    o.task = Task::Translate;
    o.prompt = "Vocabulary: hark, Whisper.";
  });
  add("words", 20, 5, [](TranscribeOptions& o) {
    o.language = "en";
    o.temperatures = {0.0f};
    o.word_timestamps = true;
  });
  add("sampled-no-timestamps", 6, 6, [](TranscribeOptions& o) {
    o.language = "fr";
    o.without_timestamps = true;
    o.condition_on_previous_text = false;
    o.best_of = 3;
    o.temperatures = {0.4f, 0.8f};
    o.seed = 7;
  });
  add("stream-three-windows", 62, 7, [](TranscribeOptions& o) { o.language = "es"; o.temperatures = {0.0f}; }, 2.5);
  add("beam2-words", 15, 8, [](TranscribeOptions& o) {
    o.language = "en";
    o.beam_size = 2;
    o.temperatures = {0.0f};
    o.word_timestamps = true;
  });
  return r;
}

Transcript run(Engine& engine, const Request& q) {
  const std::vector<float> audio = voice_like(q.seconds, q.seed);
  if (q.chunk_seconds <= 0) return engine.transcribe(audio, q.options);
  auto stream = engine.stream(q.options);
  const size_t chunk = static_cast<size_t>(q.chunk_seconds * 16000);
  for (size_t at = 0; at < audio.size(); at += chunk)
    stream->feed(std::span<const float>(audio).subspan(at, std::min(chunk, audio.size() - at)));
  return stream->finish();
}

// Runs every request alone on `reference`, then all at once from their own threads on
// `batching`, and expects each transcript to be identical to its run alone.
void expect_together_as_alone(Engine& reference, Engine& batching, const std::vector<Request>& requests) {
  std::vector<Transcript> alone;
  for (const Request& q : requests) alone.push_back(run(reference, q));
  std::vector<Transcript> together(requests.size());
  std::vector<std::string> errors(requests.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        together[i] = run(batching, requests[i]);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(errors[i], "") << requests[i].name;
    EXPECT_FALSE(alone[i].segments.empty()) << requests[i].name;
    expect_identical(together[i], alone[i], requests[i].name);
  }
}

TEST(SameAsAlone, ConcurrentMixedRequestsMatchTheOneAtATimeEngine) {
  auto reference = narrow_engine(1);
  EXPECT_EQ(reference->max_concurrent_runs(), 1);
  auto batching = narrow_engine(8);
  EXPECT_GT(batching->max_concurrent_runs(), 1);
  expect_together_as_alone(*reference, *batching, mixed_requests());
  BatchStats stats = batching->batch_stats();
  // The last groups' rows are given back at the scheduler's next turn.
  for (int i = 0; i < 3000 && stats.rows_active > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = batching->batch_stats();
  }
  EXPECT_GT(stats.steps, 0u);
  EXPECT_GT(stats.rows_stepped, stats.steps) << "no step carried more than one row: nothing was batched";
  EXPECT_GE(stats.rows_computed, stats.rows_stepped) << "a step computes every row it advances";
  EXPECT_EQ(stats.rows_active, 0) << "rows were not given back";
  EXPECT_LE(stats.row_capacity, 8);
  // Prompts waiting side by side may share a pass (how many do depends on timing).
  EXPECT_GT(stats.prefill_calls, 0u);
  EXPECT_LE(stats.prefill_calls, stats.prefills);
}

// The encoder lane (a second backend and thread that encode windows beside the steps; on
// by default on a GPU) forced on the CPU: mixed concurrent requests, streams among them,
// whose windows are encoded there and handed to the steps give what each gives alone.
TEST(SameAsAlone, WindowsEncodedOnTheLaneMatchTheOneAtATimeEngine) {
  auto reference = narrow_engine(1);
  auto batching = narrow_engine(8, 2, 448, /*select=*/false, EncoderLane::On);
  expect_together_as_alone(*reference, *batching, mixed_requests());
  const BatchStats stats = batching->batch_stats();
  EXPECT_TRUE(stats.encoder_lane);
  EXPECT_GT(stats.windows_encoded, 8u);
  EXPECT_GT(stats.rows_stepped, stats.steps) << "no step carried more than one row: nothing was batched";
  auto plain = narrow_engine(8);
  EXPECT_FALSE(plain->batch_stats().encoder_lane) << "the CPU encodes between steps unless asked";
}

// Windows encoded ahead (the lane forced on the CPU): a run without timestamps knows where
// its next window starts, so that window's mel and encoder call go out while the current
// one decodes. Whole clips of two and three windows (the last one short, the temperature
// fallback on one) and a stream fed in large chunks give what each gives alone; every
// window queued ahead is the one its run then needs. Word timings and timestamps move the
// seek by what was said: nothing is queued ahead for them.
TEST(SameAsAlone, WindowsEncodedAheadMatchTheOneAtATimeEngine) {
  auto greedy_text = [](TranscribeOptions o) {
    o.language = "en";
    o.temperatures = {0.0f};
    o.without_timestamps = true;
    return o;
  };
  std::vector<Request> requests;
  requests.push_back({"three-windows", 75, 11, greedy_text(base_options())});  // two ahead: 30 s, then the last 15 s
  Request fallback{"two-windows-fallback", 45, 12, base_options()};  // one ahead
  fallback.options.without_timestamps = true;
  fallback.options.language = "de";
  fallback.options.temperatures = {0.0f, 0.5f};
  fallback.options.compression_ratio_threshold = 0.5f;  // every window falls back: the seek still moves by its size
  requests.push_back(fallback);
  requests.push_back({"stream-65-s-chunks", 75, 13, greedy_text(base_options()), 65.0});  // one ahead, in the first feed
  Request words{"words", 45, 14, greedy_text(base_options())};
  words.options.word_timestamps = true;  // none
  requests.push_back(words);
  Request timestamps{"timestamps", 45, 15, base_options()};  // none
  timestamps.options.language = "en";
  requests.push_back(timestamps);

  auto reference = narrow_engine(1);
  auto batching = narrow_engine(8, 2, 448, /*select=*/false, EncoderLane::On);
  // Opt-in (HARK_ENCODE_AHEAD=1) until measured on a GPU; read when a run starts.
  ::setenv("HARK_ENCODE_AHEAD", "1", 1);
  expect_together_as_alone(*reference, *batching, requests);
  BatchStats stats = batching->batch_stats();
  EXPECT_EQ(stats.windows_ahead, 4u);
  EXPECT_EQ(stats.windows_ahead_unused, 0u);
  EXPECT_EQ(reference->batch_stats().windows_ahead, 0u) << "one run at a time: the encoder has no lane";

  // Without the switch nothing is queued ahead.
  ::unsetenv("HARK_ENCODE_AHEAD");
  Transcript off = run(*batching, requests[0]);
  expect_identical(off, run(*reference, requests[0]), "three-windows, nothing ahead");
  EXPECT_EQ(batching->batch_stats().windows_ahead, 4u);
}

// The GPU fast path's way of decoding, run on the CPU (BackendOptions::select_next_to_logits):
// tokens chosen next to the logits, greedy runs advanced by the scheduler itself without
// waking their threads between steps, beams and sampling as before. Concurrent requests
// give what each gives alone on a one-at-a-time engine decoding the same way.
std::vector<Request> select_requests() {
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    Request q{"greedy-" + std::to_string(i), 3.0 + 5 * i, 20 + i, base_options()};
    q.options.language = i % 2 ? "en" : "de";
    q.options.temperatures = {0.0f};
    q.options.sample_len = 6 + 3 * i;
    q.options.without_timestamps = i == 3;
    q.options.word_timestamps = i == 4;
    requests.push_back(q);
  }
  Request beam{"beam2", 8, 30, base_options()};
  beam.options.language = "en";
  beam.options.beam_size = 2;
  beam.options.temperatures = {0.0f};
  requests.push_back(beam);
  Request stream{"stream", 33, 31, base_options(), 3.0};
  stream.options.language = "en";
  stream.options.temperatures = {0.0f};
  requests.push_back(stream);
  return requests;
}

TEST(SameAsAlone, GreedyRunsAdvancedByTheSchedulerMatchAlone) {
  const std::vector<Request> requests = select_requests();
  auto reference = narrow_engine(1, 2, 448, /*select=*/true);
  auto batching = narrow_engine(8, 2, 448, /*select=*/true);
  expect_together_as_alone(*reference, *batching, requests);
  const BatchStats stats = batching->batch_stats();
  EXPECT_GT(stats.rows_stepped, stats.steps) << "no step carried more than one row: nothing was batched";
  EXPECT_GT(stats.tokens_fed_back, 20u) << "the greedy runs were not advanced by the scheduler";
}

// The fast path's short prompts (a window's start, at most kPromptStepTokens tokens) fed
// through the batched steps a token a step instead of a prefill pass each, forced on the
// CPU: the same transcripts as alone, greedy with the scheduler choosing the tokens and
// beams, sampling and text prompts (which keep their passes) among them.
TEST(SameAsAlone, ShortPromptsFedThroughTheStepsMatchAlone) {
  std::vector<Request> requests = select_requests();
  for (Request& q : mixed_requests()) requests.push_back(q);
  auto reference = narrow_engine(1, 2, 448, /*select=*/true);
  auto batching = narrow_engine(16, 2, 448, /*select=*/true, EncoderLane::Auto, /*prompt_step_tokens=*/4);
  expect_together_as_alone(*reference, *batching, requests);
  const BatchStats stats = batching->batch_stats();
  EXPECT_GT(stats.rows_stepped, stats.steps) << "no step carried more than one row: nothing was batched";
  EXPECT_GT(stats.prompts_stepped, 8u) << "no prompt went through the steps";
  EXPECT_GT(stats.prefill_calls, 0u) << "the text prompts and previous-text prompts keep their passes";
}

}  // namespace
}  // namespace hark::test
