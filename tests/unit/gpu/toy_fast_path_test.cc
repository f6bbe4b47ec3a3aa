// The bundled model through the whole pipeline on the GPU: every clip of
// tests/data/toy-eval transcribed by the fp32 reference path and by the f16 / bf16 / fp8
// fast path, greedy with and without timestamps and beam 5. The rule: at most two differing
// tokens per clip; identical text is expected and counted. A clip whose oracle decoding
// has a near-tie (references.json `oracle.min_margin`, the smallest top-2 logit gap, below
// what the compute type moves a logit by: 0.02 in f16, 0.1 in bf16, whose logits differ
// from fp32 by up to ~0.05 on tiny; fp8 takes bf16's 0.1, not measured on this model) may
// legitimately part from fp32 there: its distance
// is recorded, not judged (on an earlier checkpoint es-multi-18, gap 0.026, went "¡Cli
// canded!" in fp32 and "Click Add." — the truth — in bf16: six tokens). Also: the CUDA fp32 path gives
// the CPU's tokens, `faithful` requests on a fast engine give the fp32 tokens, and word
// timestamps stay close (95 % of word boundaries within 0.1 s, mean difference ≤ 0.05 s:
// DTW may move a boundary inside a pause by a word's length when bf16's coarser
// attention weights shift the path, so the worst case is recorded, not bounded).
// Skips without a GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include <cmath>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "core/backend.h"
#include "hark/engine.h"
#include "test_support.h"
#include "token_distance.h"

namespace hark {
namespace {

struct RunOutcome {
  std::vector<int> tokens;
  std::string text;
  std::vector<Word> words;
};

RunOutcome run(Engine& engine, const std::vector<float>& audio, const TranscribeOptions& options) {
  const Transcript t = engine.transcribe(audio, options);
  RunOutcome r;
  r.text = t.text;
  for (const Segment& s : t.segments) {
    r.tokens.insert(r.tokens.end(), s.tokens.begin(), s.tokens.end());
    r.words.insert(r.words.end(), s.words.begin(), s.words.end());
  }
  return r;
}

// A slimmed copy of the tree (scripts/device/slim-tree.sh on) leaves the model out.
bool toy_model_present() {
  return std::filesystem::exists(std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech/model.safetensors");
}

std::unique_ptr<Engine> open(const std::string& device, const std::string& compute) {
  EngineOptions o;
  o.model = std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech";
  o.device = device;
  o.compute_type = compute;
  o.threads = 2;
  return Engine::open(o);
}

struct Clip {
  std::string file;
  std::vector<float> audio;
  double oracle_margin = 1e9;  // smallest top-2 logit gap of the oracle's greedy decoding
  // The oracle's beam search (5 beams): the smallest gap between a kept and a dropped
  // candidate at a step, or between the best two at the end. A beam run turns on those
  // gaps, not on greedy's: a clip can be clear for greedy and a near-tie for beams.
  double beam_margin = 1e9;
  double margin(const std::string& option_set) const { return option_set == "beam5" ? beam_margin : oracle_margin; }
};

std::vector<Clip> clips() {
  std::vector<Clip> out;
  for (const auto& ref : nlohmann::json::parse(test::read_file(test::data_path("toy-eval/references.json")))) {
    const std::string file = ref["file"];
    Clip c{file, decode_audio_file(test::data_path("toy-eval/" + file))};
    if (ref.contains("oracle") && ref["oracle"]["min_margin"].is_number()) c.oracle_margin = ref["oracle"]["min_margin"];
    if (ref.contains("oracle") && ref["oracle"].contains("beam5_min_margin") &&
        ref["oracle"]["beam5_min_margin"].is_number())
      c.beam_margin = ref["oracle"]["beam5_min_margin"];
    out.push_back(std::move(c));
  }
  return out;
}

double near_tie_margin(const std::string& compute) { return compute == "f16" ? 0.02 : 0.1; }

std::vector<std::pair<std::string, TranscribeOptions>> option_sets() {
  TranscribeOptions greedy, plain, beam;
  greedy.temperatures = plain.temperatures = beam.temperatures = {0.0f};
  plain.without_timestamps = true;
  beam.beam_size = 5;
  return {{"greedy", greedy}, {"greedy-no-timestamps", plain}, {"beam5", beam}};
}

class ToyFastPath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
    if (!toy_model_present()) GTEST_SKIP() << "no bundled model in this tree (slim-tree.sh)";
  }
};

TEST_P(ToyFastPath, EveryClipWithinTwoTokens) {
  auto ref = open("cuda", "f32"), fast = open("cuda", GetParam());
  int runs = 0, judged = 0, same_text = 0, worst = 0, worst_near_tie = 0, greedy_runs = 0, greedy_judged = 0;
  for (const Clip& clip : clips()) {
    for (const auto& [name, options] : option_sets()) {
      const bool near_tie = clip.margin(name) < near_tie_margin(GetParam()), greedy = name != "beam5";
      const RunOutcome a = run(*ref, clip.audio, options), b = run(*fast, clip.audio, options);
      const int distance = test::edit_distance(b.tokens, a.tokens);
      if (near_tie) {
        worst_near_tie = std::max(worst_near_tie, distance);
      } else {
        worst = std::max(worst, distance);
        EXPECT_LE(distance, 2) << clip.file << " " << name << "\n fp32: " << a.text << "\n fast: " << b.text;
        ++judged;
        greedy_judged += greedy;
      }
      greedy_runs += greedy;
      same_text += a.text == b.text;
      ++runs;
    }
  }
  // Not a vacuous test: most greedy runs must be judged. Beam runs cannot carry this: their
  // margin is the smallest gap between a kept and a dropped candidate over a whole search,
  // under bf16's 0.1 on 12 of the 13 clips for the mean of runs 19 and 21b (references.json),
  // which left 25 of 39 runs judged in bf16 (H100, 2026-12-07) where the old guard asked for
  // 26 of all runs; of the 26 greedy runs 24 are judged (one clip's greedy gap is 0.066).
  EXPECT_GE(greedy_judged, greedy_runs * 2 / 3) << "most greedy runs must be judged";
  RecordProperty("runs", runs);
  RecordProperty("judged_runs", judged);
  RecordProperty("judged_greedy_runs", greedy_judged);
  RecordProperty("identical_text", same_text);
  RecordProperty("worst_token_distance", worst);
  RecordProperty("worst_token_distance_near_ties", worst_near_tie);
  std::printf("[toy fast path %s] %d of %d runs with identical text, worst token distance %d (%d judged runs; "
              "near-tie clips: worst %d)\n",
              GetParam().c_str(), same_text, runs, worst, judged, worst_near_tie);
}

TEST_P(ToyFastPath, WordTimestampsStayClose) {
  auto ref = open("cuda", "f32"), fast = open("cuda", GetParam());
  TranscribeOptions options;
  options.temperatures = {0.0f};
  options.word_timestamps = true;
  double worst = 0, total = 0;
  int compared = 0, close = 0;
  for (const Clip& clip : clips()) {
    const RunOutcome a = run(*ref, clip.audio, options), b = run(*fast, clip.audio, options);
    if (a.tokens != b.tokens || a.words.size() != b.words.size()) continue;  // timings compare like for like
    for (size_t i = 0; i < a.words.size(); ++i) {
      for (double diff : {std::abs(a.words[i].start - b.words[i].start), std::abs(a.words[i].end - b.words[i].end)}) {
        worst = std::max(worst, diff);
        total += diff;
        close += diff <= 0.1;
        ++compared;
      }
    }
  }
  RecordProperty("worst_word_time_difference_s", std::to_string(worst));
  RecordProperty("mean_word_time_difference_s", std::to_string(total / std::max(compared, 1)));
  RecordProperty("boundaries_within_0_1_s", std::to_string(close) + " of " + std::to_string(compared));
  EXPECT_GT(compared, 40);
  EXPECT_GE(close, 0.95 * compared);
  EXPECT_LE(total / std::max(compared, 1), 0.05);
}

TEST_P(ToyFastPath, FaithfulRequestsRunTheReferencePath) {
  auto ref = open("cuda", "f32"), fast = open("cuda", GetParam());
  const auto all = clips();
  TranscribeOptions options;
  options.temperatures = {0.0f};
  options.faithful = true;
  for (size_t i = 0; i < all.size(); i += 4)
    EXPECT_EQ(run(*fast, all[i].audio, options).tokens, run(*ref, all[i].audio, options).tokens) << all[i].file;
}

INSTANTIATE_TEST_SUITE_P(ComputeTypes, ToyFastPath, ::testing::Values("f16", "bf16", "fp8"),
                         [](const auto& info) { return info.param; });

TEST(ToyReferencePath, CudaFp32GivesTheCpuTokens) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  if (!toy_model_present()) GTEST_SKIP() << "no bundled model in this tree (slim-tree.sh)";
  auto cpu = open("cpu", "f32"), gpu = open("cuda", "f32");
  TranscribeOptions options;
  options.temperatures = {0.0f};
  for (const Clip& clip : clips())
    EXPECT_EQ(run(*gpu, clip.audio, options).tokens, run(*cpu, clip.audio, options).tokens) << clip.file;
}

}  // namespace
}  // namespace hark
