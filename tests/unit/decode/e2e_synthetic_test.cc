// End-to-end runs on the deterministic random-weight tiny model: the plumbing from
// samples to segments, determinism, and streaming in random chunks == one batch run.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "core/backend.h"
#include "hark/engine.h"
#include "model/synthetic.h"
#include "transcribe/engine_factory.h"

namespace hark {
namespace {

std::unique_ptr<Engine> synthetic_engine() {
  static std::shared_ptr<const Checkpoint> checkpoint =
      std::make_shared<Checkpoint>(make_synthetic_checkpoint(hparams_for_size("tiny")));
  BackendOptions bo;
  bo.threads = 2;
  return make_engine(checkpoint, make_cpu_backend(bo));
}

// A deterministic "voice-like" signal: gliding harmonics with pauses. 31 s by default:
// one window completes inside feed(), the rest is drained by finish().
std::vector<float> test_audio(double seconds = 31.0) {
  std::vector<float> x(static_cast<size_t>(seconds * 16000));
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = i / 16000.0;
    const bool voiced = std::fmod(t, 4.0) < 2.8;
    const double f0 = 140 + 30 * std::sin(t * 1.3);
    double v = 0;
    for (int h = 1; h <= 5; ++h) v += std::sin(2 * M_PI * f0 * h * t) / h;
    x[i] = static_cast<float>((voiced ? 0.2 * v : 0.0) + noise(rng));
  }
  return x;
}

TranscribeOptions fast_options() {
  TranscribeOptions o;
  o.language = "en";
  o.temperatures = {0.0f};
  o.sample_len = 24;  // keeps each window cheap on the CPU
  return o;
}

void expect_same(const Transcript& a, const Transcript& b) {
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const Segment &x = a.segments[i], &y = b.segments[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.seek, y.seek);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(x.tokens, y.tokens);
    EXPECT_EQ(x.text, y.text);
    EXPECT_EQ(x.avg_logprob, y.avg_logprob);
    ASSERT_EQ(x.words.size(), y.words.size());
    for (size_t w = 0; w < x.words.size(); ++w) {
      EXPECT_EQ(x.words[w].word, y.words[w].word);
      EXPECT_EQ(x.words[w].start, y.words[w].start);
      EXPECT_EQ(x.words[w].end, y.words[w].end);
    }
  }
  EXPECT_EQ(a.text, b.text);
}

// One batch run shared by the tests below (each window costs about a second on CI).
const Transcript& batch_result() {
  static const Transcript t = synthetic_engine()->transcribe(test_audio(), fast_options());
  return t;
}

TEST(EndToEnd, BatchRunIsWellFormed) {
  const Transcript& a = batch_result();
  ASSERT_FALSE(a.segments.empty());
  EXPECT_EQ(a.language, "en");
  EXPECT_NEAR(a.duration, 31.0, 1e-9);
  int last_seek = -1;
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const Segment& s = a.segments[i];
    EXPECT_EQ(s.id, static_cast<int>(i));
    EXPECT_GE(s.seek, last_seek);
    last_seek = s.seek;
    EXPECT_LE(s.start, s.end);
    EXPECT_GE(s.start, s.seek * 0.01 - 1e-9);
    EXPECT_EQ(s.temperature, 0.0);
    EXPECT_LE(s.avg_logprob, 0.0);
    EXPECT_GE(s.no_speech_prob, 0.0);
    EXPECT_LE(s.no_speech_prob, 1.0);
  }
  // The work counters: one decoding run per distinct window at least (31 s: two or more),
  // and every sampled token a segment kept was sampled (timestamps included, EOT not).
  std::set<int> seeks;
  int64_t kept = 0;
  for (const Segment& s : a.segments) {
    seeks.insert(s.seek);
    for (int token : s.tokens) kept += token != 50257;
  }
  EXPECT_GE(a.timings.decode_runs, static_cast<int>(seeks.size()));
  EXPECT_GE(a.timings.decode_runs, 2);
  EXPECT_GE(a.timings.sampled_tokens, kept);
}

TEST(EndToEnd, StreamingInRandomChunksEqualsBatch) {
  auto engine = synthetic_engine();
  const auto audio = test_audio();
  const Transcript& batch = batch_result();
  std::mt19937 rng(1);
  std::uniform_int_distribution<size_t> chunk(1, 120000);
  std::vector<Segment> streamed_live;
  RunHooks hooks;
  hooks.on_segment = [&](const Segment& s) { streamed_live.push_back(s); };
  auto run = engine->stream(fast_options(), hooks);
  size_t chunks = 0;
  for (size_t pos = 0; pos < audio.size(); ++chunks) {
    const size_t n = std::min(chunk(rng), audio.size() - pos);
    run->feed(std::span<const float>(audio).subspan(pos, n));
    pos += n;
  }
  EXPECT_GT(chunks, 5u);
  EXPECT_FALSE(run->segments().empty());  // the first window was final before finish()
  Transcript streamed = run->finish();
  expect_same(batch, streamed);
  EXPECT_EQ(streamed_live.size(), streamed.segments.size());
  EXPECT_THROW(run->feed(audio), Error);  // a finished run takes no more audio
}

TEST(EndToEnd, WordTimestampsLieInsideTheirSegments) {
  auto engine = synthetic_engine();
  TranscribeOptions o = fast_options();
  o.word_timestamps = true;
  o.sample_len = 12;
  Transcript t = engine->transcribe(test_audio(3.0), o);
  size_t words = 0;
  for (const Segment& s : t.segments) {
    for (size_t w = 0; w < s.words.size(); ++w) {
      const Word& word = s.words[w];
      EXPECT_LE(word.start, word.end);
      EXPECT_GE(word.probability, 0.0);
      EXPECT_LE(word.probability, 1.0);
      if (w > 0) EXPECT_GE(word.start, s.words[w - 1].start);
      ++words;
    }
    if (!s.words.empty()) {
      EXPECT_LE(s.start, s.words.front().end);
      EXPECT_GE(s.end, s.words.back().start);
    }
  }
  EXPECT_GT(words, 0u);
  // Random weights make every segment look hallucinated: with the silence threshold the
  // loop skips them instead of keeping them.
  o.hallucination_silence_threshold = 1.0f;
  Transcript skipped = engine->transcribe(test_audio(3.0), o);
  EXPECT_LE(skipped.segments.size(), t.segments.size());
}

TEST(EndToEnd, LanguageDetectionGivesEveryLanguageAProbability) {
  auto engine = synthetic_engine();
  TranscribeOptions o = fast_options();
  o.language = "";
  o.sample_len = 4;
  Transcript t = engine->transcribe(test_audio(5.0), o);
  ASSERT_EQ(t.language_probs.size(), 99u);
  double total = 0, best = 0;
  std::string best_code;
  for (auto& [code, p] : t.language_probs) {
    total += p;
    if (p > best) best = p, best_code = code;
  }
  EXPECT_NEAR(total, 1.0, 1e-4);
  EXPECT_EQ(t.language, best_code);
}

TEST(EndToEnd, BeamSearchAndSamplingRun) {
  auto engine = synthetic_engine();
  const auto audio = test_audio(5.0);
  TranscribeOptions o = fast_options();
  o.sample_len = 8;
  o.beam_size = 5;
  Transcript beam = engine->transcribe(audio, o);
  ASSERT_FALSE(beam.segments.empty());
  // The decoding's split (hark bench --e2e): the model's calls and the beam reordering are
  // parts of the decoding time, never more than it.
  EXPECT_GT(beam.timings.decode_model_ms, 0.0);
  EXPECT_GE(beam.timings.decode_reorder_ms, 0.0);
  EXPECT_LE(beam.timings.decode_model_ms + beam.timings.decode_reorder_ms, beam.timings.decode_ms);
  o.beam_size = 0;
  o.temperatures = {0.7f};
  o.best_of = 3;
  o.seed = 11;
  Transcript s1 = engine->transcribe(audio, o);
  Transcript s2 = engine->transcribe(audio, o);
  expect_same(s1, s2);  // the seed fixes the samples
  EXPECT_NEAR(s1.segments[0].temperature, 0.7, 1e-6);
}

TEST(EndToEnd, MisuseIsAClearError) {
  auto engine = synthetic_engine();
  TranscribeOptions o = fast_options();
  auto run = engine->stream(o);
  EXPECT_THROW(
      {
        try {
          run->finish();
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::AudioTooShort);
          throw;
        }
      },
      Error);
  std::vector<float> short_audio(800, 0.0f);
  EXPECT_THROW(engine->transcribe(short_audio, o), Error);
  TranscribeOptions bad = o;
  bad.temperatures = {};
  EXPECT_THROW(engine->transcribe(test_audio(1.0), bad), Error);
  bad = o;
  bad.hallucination_silence_threshold = 2.0f;  // needs word timestamps
  EXPECT_THROW(engine->stream(bad), Error);
  bad = o;
  bad.language = "klingon";
  EXPECT_THROW(engine->stream(bad), Error);
}

}  // namespace
}  // namespace hark
