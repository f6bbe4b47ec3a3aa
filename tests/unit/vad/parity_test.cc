// Silero VAD against the oracle (scripts/oracle/vad.py run on the reference machine):
// per-chunk probabilities from torch.jit (silero_vad.jit) and onnxruntime (silero_vad.onnx)
// within 1e-4 (fp32 vs fp32: different summation orders and activation kernels give a few
// 1e-7; 1e-4 is the product spec's bound), and get_speech_timestamps segments identical to
// the sample, for six clips and eight option sets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "vad/speech_timestamps.h"
#include "vad_test_util.h"

namespace hark::vad {
namespace {

using test::golden_dir;
using test::have_goldens;

std::vector<float> clip_samples(const std::string& clip) {
  if (clip == "silero_test") return test::read_wav16k("audio/silero-test.wav");
  if (clip == "jfk") return test::read_wav16k("audio/jfk.wav");
  if (clip == "ls_test") return read_npy(hark::test::data_path("audio/ls-test.f32.npy")).to_vector();
  return read_npy(golden_dir() + "/" + clip + ".input.npy").to_vector();
}

SpeechTimestampOptions options_from_json(const nlohmann::json& j) {
  SpeechTimestampOptions o;
  if (j.contains("threshold")) o.threshold = j["threshold"];
  if (j.contains("neg_threshold")) o.neg_threshold = j["neg_threshold"].get<double>();
  if (j.contains("min_speech_duration_ms")) o.min_speech_duration_ms = j["min_speech_duration_ms"];
  if (j.contains("max_speech_duration_s")) o.max_speech_duration_s = j["max_speech_duration_s"];
  if (j.contains("min_silence_duration_ms")) o.min_silence_duration_ms = j["min_silence_duration_ms"];
  if (j.contains("speech_pad_ms")) o.speech_pad_ms = j["speech_pad_ms"];
  if (j.contains("use_max_poss_sil_at_max_speech")) o.use_max_poss_sil_at_max_speech = j["use_max_poss_sil_at_max_speech"];
  return o;
}

class VadParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!have_goldens())
      GTEST_SKIP() << "no VAD goldens at " << golden_dir() << " (run scripts/oracle/vad.py --out tests/data/golden/vad)";
  }
};

// Largest |ours − reference| over the clip's chunks, or −1 when that golden is absent.
double compare_to_golden(const std::string& clip, const std::string& ref, const std::vector<float>& ours) {
  const std::string path = golden_dir() + "/" + clip + "." + ref + ".npy";
  if (!std::filesystem::exists(path)) return -1;
  const std::vector<float> expected = read_npy(path).to_vector();
  EXPECT_EQ(ours.size(), expected.size()) << clip << " vs " << ref;
  if (ours.size() != expected.size()) return 1;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double d = std::fabs(static_cast<double>(ours[i]) - expected[i]);
    if (d > worst) worst = d, worst_at = i;
  }
  std::fprintf(stderr, "[vad parity] %s vs %s: max |diff| %.3g over %zu chunks\n", clip.c_str(), ref.c_str(), worst,
               ours.size());
  EXPECT_LE(worst, 1e-4) << clip << " vs " << ref << ": chunk " << worst_at << " ours " << ours[worst_at]
                         << " reference " << expected[worst_at];
  return worst;
}

TEST_P(VadParity, ProbabilitiesMatchTheJitAndOnnxModels) {
  const std::string clip = GetParam();
  const std::vector<float> audio = clip_samples(clip);
  ASSERT_FALSE(audio.empty());
  const std::vector<float> ours = test::model().speech_probabilities(audio);
  int references = 0;
  for (const char* ref : {"jit", "onnx", "numpy"}) references += compare_to_golden(clip, ref, ours) >= 0;
  EXPECT_GT(references, 0);
}

// silero_vad_16k.safetensors (6.2.1) against the jit graph with those weights swapped in.
TEST_P(VadParity, ProbabilitiesWithTheSafetensorsWeights) {
  const std::string clip = GetParam();
  const std::vector<float> ours = test::model_v621().speech_probabilities(clip_samples(clip));
  int references = 0;
  for (const char* ref : {"jit_st", "numpy_st"}) references += compare_to_golden(clip, ref, ours) >= 0;
  EXPECT_GT(references, 0);
}

TEST_P(VadParity, SegmentsIdenticalForEveryOptionSet) {
  const std::string clip = GetParam();
  const nlohmann::json golden = nlohmann::json::parse(hark::test::read_file(golden_dir() + "/segments.json"));
  const nlohmann::json summary = nlohmann::json::parse(hark::test::read_file(golden_dir() + "/summary.json"));
  const std::vector<float> audio = clip_samples(clip);
  const std::vector<float> probs = test::model().speech_probabilities(audio);
  ASSERT_TRUE(golden.contains(clip));
  for (const auto& [name, expected] : golden[clip].items()) {
    const SpeechTimestampOptions options = options_from_json(summary["option_sets"][name]);
    const auto segments = speech_segments_from_probabilities(probs, static_cast<int64_t>(audio.size()), options);
    std::vector<std::pair<int64_t, int64_t>> got, want;
    for (const auto& s : segments) got.emplace_back(s.start, s.end);
    for (const auto& s : expected) want.emplace_back(s["start"].get<int64_t>(), s["end"].get<int64_t>());
    EXPECT_EQ(got, want) << clip << " with option set " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Clips, VadParity,
                         ::testing::Values("silero_test", "jfk", "ls_test", "silence", "noise", "tone"));

}  // namespace
}  // namespace hark::vad
