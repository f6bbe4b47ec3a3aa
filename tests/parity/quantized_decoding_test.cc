// Quantized decoding (--compute-type int8 and ggml types) against the fp32 reference path
// on the bundled model's held-out clips: at most two differing tokens per clip (token edit
// distance, each run of text tokens in its canonical tokenization), greedy and beam 5. The
// synthetic shapes are compared step by step in tests/unit/model/quantized_model_test.cc; the WER side of the proof (same WER within
// 0.5 points) is tests/cli/quantized_wer.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "hark/engine.h"
#include "model/loaders/loaders.h"
#include "test_support.h"
#include "token_distance.h"
#include "tokenizer/tokenizer.h"

namespace hark {
namespace {

constexpr size_t kMaxDifferingTokens = 2;

std::vector<int> all_tokens(const Transcript& t) {
  std::vector<int> out;
  for (const Segment& s : t.segments) out.insert(out.end(), s.tokens.begin(), s.tokens.end());
  return out;
}

// The tokens of a transcript with every run of text tokens between two timestamps (or
// specials) replaced by the tokenizer's own encoding of its text. The same words can come
// out of a near-tie as two different token splits ("Frauengeschichten": 13930 1501 22320
// against 24191 23378 in beam 5 on the open-vocabulary model): the same text and times,
// which the raw distance counts as three differing tokens. Differing text still differs
// token by token, in canonical tokens.
std::vector<int> canonical_tokens(const Transcript& t, const Tokenizer& tok) {
  std::vector<int> out, run;
  auto flush = [&] {
    if (run.empty()) return;
    const std::vector<int> again = tok.encode(tok.decode(run));
    out.insert(out.end(), again.begin(), again.end());
    run.clear();
  };
  for (const Segment& s : t.segments)
    for (int id : s.tokens) {
      if (id < tok.eot()) {
        run.push_back(id);
        continue;
      }
      flush();
      out.push_back(id);
    }
  flush();
  return out;
}

TEST(CanonicalTokens, SameTextInAnotherSplitIsTheSameSequence) {
  const auto tok = Tokenizer::for_vocab_size(51865);
  const std::string text = " Seine Frauengeschichten";
  const std::vector<int> canonical = tok->encode(text);
  std::vector<int> split;
  for (size_t cut = 2; cut < text.size() && (split.empty() || split == canonical); ++cut) {
    split = tok->encode(text.substr(0, cut));
    const std::vector<int> rest = tok->encode(text.substr(cut));
    split.insert(split.end(), rest.begin(), rest.end());
  }
  ASSERT_NE(split, canonical);  // a non-canonical split of the same text
  ASSERT_EQ(tok->decode(split), text);
  Transcript a, b;
  const int ts = tok->special_token("<|0.00|>");
  a.segments.push_back({});
  a.segments[0].tokens = {ts};
  a.segments[0].tokens.insert(a.segments[0].tokens.end(), canonical.begin(), canonical.end());
  b.segments.push_back({});
  b.segments[0].tokens = {ts};
  b.segments[0].tokens.insert(b.segments[0].tokens.end(), split.begin(), split.end());
  EXPECT_EQ(canonical_tokens(a, *tok), canonical_tokens(b, *tok));
  b.segments[0].tokens.back() = canonical.front();  // different text stays different
  EXPECT_NE(canonical_tokens(a, *tok), canonical_tokens(b, *tok));
}

TEST(TokenEditDistance, CountsEachDifference) {
  EXPECT_EQ(test::edit_distance({1, 2, 3}, {1, 2, 3}), 0);
  EXPECT_EQ(test::edit_distance({1, 2, 3}, {1, 9, 3}), 1);
  EXPECT_EQ(test::edit_distance({1, 2, 3}, {1, 3}), 1);
  EXPECT_EQ(test::edit_distance({1, 2, 3, 4}, {9, 2, 3}), 2);
}

std::unique_ptr<Engine> toy_engine(const std::string& compute_type) {
  EngineOptions options;
  options.model = std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech";
  options.threads = 2;
  options.compute_type = compute_type;
  return Engine::open(options);
}

struct Clip {
  std::string file, language;
  std::vector<float> audio;
  // The oracle's beam search gap (references.json oracle.beam5_min_margin: the smallest gap
  // between a kept and a dropped candidate, or between the best two at the end).
  double beam_margin = 1e9;
};

// A beam run whose oracle gap is below this is a near-tie: recorded, not judged (as the GPU
// fast path's test does for bf16; docs/parity.md). Found with run 12's checkpoint: int8 on
// fr-multi-17 (gap 0.017) wrote a nonsense word differently, 4 tokens apart.
constexpr double kBeamNearTie = 0.1;

const std::vector<Clip>& toy_clips() {
  static const std::vector<Clip> clips = [] {
    std::vector<Clip> out;
    for (const auto& ref : nlohmann::json::parse(test::read_file(test::data_path("toy-eval/references.json")))) {
      const std::string file = ref["file"];
      Clip c{file, ref["lang"].is_string() ? ref["lang"].get<std::string>() : "en",
             decode_audio_file(test::data_path("toy-eval/" + file))};
      if (ref.contains("oracle") && ref["oracle"].contains("beam5_min_margin") &&
          ref["oracle"]["beam5_min_margin"].is_number())
        c.beam_margin = ref["oracle"]["beam5_min_margin"];
      out.push_back(std::move(c));
    }
    return out;
  }();
  return clips;
}

TranscribeOptions decoding(int beam_size, const std::string& language) {
  TranscribeOptions o;
  o.language = language;
  o.temperatures = {0.0f};
  o.beam_size = beam_size;
  return o;
}

// The full comparison (beam 5 on every clip, every ggml type) takes minutes on CI's two
// cores; by default: int8, greedy on every clip, beam 5 on the multi-utterance clips; in the
// sanitizer build (seconds per transcription) greedy on the multi-utterance clips only (the
// kernels for several rows run there in the QuantGemm unit tests).
bool slow_tests() { return std::getenv("HARK_SLOW_TESTS") != nullptr; }

// gcc defines __SANITIZE_ADDRESS__; clang reports it through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct ClipRun {
  int beam;
  size_t clip;
};

std::vector<ClipRun> runs() {
  std::vector<ClipRun> out;
  for (int beam : {0, 5})
    for (size_t i = 0; i < toy_clips().size(); ++i) {
      const bool multi = toy_clips()[i].file.find("multi") != std::string::npos;
      if (slow_tests() || (kSanitized ? beam == 0 && multi : beam == 0 || multi)) out.push_back({beam, i});
    }
  return out;
}

const Tokenizer& toy_tokenizer() {
  static const auto tok = Tokenizer::for_vocab_size(51865);
  return *tok;
}

// The fp32 path's transcripts for each run (computed once).
const std::vector<Transcript>& reference_transcripts() {
  static const std::vector<Transcript> transcripts = [] {
    std::vector<Transcript> out;
    const auto reference = toy_engine("f32");
    for (const ClipRun& r : runs()) {
      const Clip& clip = toy_clips()[r.clip];
      out.push_back(reference->transcribe(clip.audio, decoding(r.beam, clip.language)));
    }
    return out;
  }();
  return transcripts;
}

class ToyQuantized : public ::testing::TestWithParam<const char*> {};

TEST_P(ToyQuantized, AtMostTwoDifferingTokensPerClip) {
  if (std::string(GetParam()) != "int8" && !slow_tests())
    GTEST_SKIP() << GetParam() << " runs with HARK_SLOW_TESTS=1 (int8 runs by default)";
  const auto quantized = toy_engine(GetParam());
  const std::vector<ClipRun> all = runs();
  size_t worst = 0, worst_near_tie = 0, judged = 0, total = 0, raw_total = 0, tokens = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Clip& clip = toy_clips()[all[i].clip];
    const Transcript& reference = reference_transcripts()[i];
    const Transcript got = quantized->transcribe(clip.audio, decoding(all[i].beam, clip.language));
    const std::vector<int> ref = canonical_tokens(reference, toy_tokenizer());
    const size_t d = test::edit_distance(ref, canonical_tokens(got, toy_tokenizer()));
    if (all[i].beam && clip.beam_margin < kBeamNearTie) {
      worst_near_tie = std::max(worst_near_tie, d);
    } else {
      EXPECT_LE(d, kMaxDifferingTokens) << clip.file << (all[i].beam ? " beam 5" : " greedy");
      worst = std::max(worst, d);
      ++judged;
    }
    total += d, tokens += ref.size();
    raw_total += test::edit_distance(all_tokens(reference), all_tokens(got));
  }
  EXPECT_GE(judged, all.size() / 2) << "most runs must be judged";
  RecordProperty("worst_clip_differing_tokens", std::to_string(worst));
  RecordProperty("worst_near_tie_differing_tokens", std::to_string(worst_near_tie));
  RecordProperty("differing_tokens", std::to_string(total) + " of " + std::to_string(tokens));
  RecordProperty("differing_tokens_as_sampled", std::to_string(raw_total));
  std::printf("%s: %zu of %zu tokens differ (%zu as sampled), worst judged clip %zu (%zu of %zu runs judged; "
              "beam near-ties: worst %zu)\n",
              GetParam(), total, tokens, raw_total, worst, judged, all.size(), worst_near_tie);
  EXPECT_GT(tokens, kSanitized ? 80u : 250u);
}

// int8 is the fast CPU mode; the ggml types that keep the rule on this model run with
// HARK_SLOW_TESTS=1. On the open-vocabulary model (width 256, where every matrix takes a
// k-quant) q6_k and q5_0 no longer do (15 and 33 of 524 tokens, worst clips 6 and 8, on
// 2026-12-01; the 4-bit types did not on the old model either): docs/parity.md has the counts.
INSTANTIATE_TEST_SUITE_P(ComputeTypes, ToyQuantized, ::testing::Values("int8", "q8_0"));

// `faithful` requests on a quantized engine run the fp32 reference path on the values the
// quantized weights hold: the same tokens as an f32 engine over the same file.
TEST(ToyQuantizedFaithful, RunsTheFp32PathOnTheQuantizedValues) {
  const std::string file = test::temp_dir("faithful-q8") + "/ggml-toy-q8_0.bin";
  loaders::save_ggml(*load_checkpoint(std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech"), file, DType::Q8_0);
  EngineOptions options;
  options.model = file;
  options.threads = 2;
  const auto quantized = Engine::open(options);
  options.compute_type = "f32";
  const auto reference = Engine::open(options);
  const Clip& clip = toy_clips().front();
  TranscribeOptions faithful = decoding(0, clip.language);
  faithful.faithful = true;
  const Transcript want = reference->transcribe(clip.audio, decoding(0, clip.language));
  const Transcript got = quantized->transcribe(clip.audio, faithful);
  EXPECT_EQ(all_tokens(got), all_tokens(want));
  ASSERT_FALSE(want.segments.empty());
  ASSERT_EQ(got.segments.size(), want.segments.size());
  // The same arithmetic to the last bit (the quantized path's log-probabilities differ).
  EXPECT_EQ(got.segments[0].avg_logprob, want.segments[0].avg_logprob);
  const Transcript fast = quantized->transcribe(clip.audio, decoding(0, clip.language));
  EXPECT_NE(fast.segments[0].avg_logprob, want.segments[0].avg_logprob);
}

}  // namespace
}  // namespace hark
