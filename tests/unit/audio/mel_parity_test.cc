// Log-mel against the reference goldens of scripts/oracle/mel.py (transformers'
// WhisperFeatureExtractor, numpy path), from the very samples the oracle read.
// Tolerance: max |difference| ≤ 1e-4 (issue 2); hark's STFT is double precision, so the
// remaining difference is the reference's complex64 spectrum and float32 filters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "audio/audio.h"
#include "audio/mel.h"
#include "core/npy.h"
#include "core/thread_pool.h"
#include "test_support.h"

namespace hark {
namespace {

constexpr double kTolerance = 1e-4;

std::string golden_dir() {
  if (const char* env = std::getenv("HARK_MEL_GOLDEN_DIR")) return env;
  return test::data_path("golden/mel");
}

std::vector<float> clip(const std::string& name) {
  if (name == "jfk") return decode_audio_file(test::data_path("audio/jfk.wav"));
  if (name == "ls_test") return decode_audio_file(test::data_path("audio/ls-test.wav"));
  // concat33: jfk + ls_test + jfk + ls_test cut to 33.0 s, as in mel.py.
  std::vector<float> jfk = clip("jfk"), ls = clip("ls_test"), out;
  for (const auto* part : {&jfk, &ls, &jfk, &ls}) out.insert(out.end(), part->begin(), part->end());
  out.resize(33 * kSampleRate);
  return out;
}

// Max |mel[:, begin + j] − golden[:, j]| over the golden's frames.
double max_diff_columns(const Tensor& mel, const Tensor& golden, int64_t begin) {
  const int64_t n_mels = mel.dim(0), frames = mel.dim(1), gframes = golden.dim(1);
  double worst = 0;
  for (int64_t m = 0; m < n_mels; ++m)
    for (int64_t j = 0; j < gframes && begin + j < frames; ++j)
      worst = std::max(worst, std::fabs(double(mel.data<float>()[m * frames + begin + j]) -
                                        golden.data<float>()[m * gframes + j]));
  return worst;
}

class MelParity : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    auto [name, n_mels] = GetParam();
    std::string file = golden_dir() + "/" + name + "_" + std::to_string(n_mels) + ".npy";
    if (!std::filesystem::exists(file))
      GTEST_SKIP() << "no mel golden " << file << " (run scripts/oracle/mel.py on the oracle machine)";
  }
};

TEST_P(MelParity, FullPaddedMelMatchesReference) {
  auto [name, n_mels] = GetParam();
  std::vector<float> samples = clip(name);
  Tensor golden = read_npy(golden_dir() + "/" + name + "_" + std::to_string(n_mels) + ".npy").to_f32();
  Tensor mel = log_mel_spectrogram(samples, n_mels);
  ASSERT_EQ(mel.dim(0), n_mels);
  ASSERT_EQ(mel.dim(1), (int64_t(samples.size()) + kWindowSamples) / kHopLength);
  ASSERT_EQ(golden.dim(0), n_mels);
  ASSERT_LE(golden.dim(1), mel.dim(1));
  const double diff = max_diff_columns(mel, golden, 0);
  EXPECT_LE(diff, kTolerance) << name;
  std::printf("[mel parity] %s, %d bins: max |hark - reference| = %.3g\n", name.c_str(), n_mels, diff);

  // The golden stops 40 frames after the content; every frame after it is silence,
  // i.e. the golden's last column.
  const int64_t gframes = golden.dim(1), frames = mel.dim(1);
  double worst_tail = 0;
  for (int64_t m = 0; m < n_mels; ++m) {
    float silence = golden.data<float>()[m * gframes + gframes - 1];
    for (int64_t t = gframes; t < frames; ++t)
      worst_tail = std::max(worst_tail, std::fabs(double(mel.data<float>()[m * frames + t]) - silence));
  }
  EXPECT_LE(worst_tail, kTolerance);
}

TEST_P(MelParity, WindowsMatchReferenceColumns) {
  auto [name, n_mels] = GetParam();
  std::vector<float> samples = clip(name);
  Tensor golden = read_npy(golden_dir() + "/" + name + "_" + std::to_string(n_mels) + ".npy").to_f32();
  Tensor mel = log_mel_spectrogram(samples, n_mels);
  const int64_t content = mel_content_frames(int64_t(samples.size()));
  for (int64_t offset = 0; offset < content; offset += kWindowFrames) {
    Tensor window = mel_window(mel, offset);
    ASSERT_EQ(window.shape(), (Shape{n_mels, kWindowFrames}));
    // Compare the window's columns that the golden holds.
    const int64_t gframes = golden.dim(1);
    double worst = 0;
    for (int64_t m = 0; m < n_mels; ++m)
      for (int64_t j = 0; j < kWindowFrames && offset + j < gframes; ++j)
        worst = std::max(worst, std::fabs(double(window.data<float>()[m * kWindowFrames + j]) -
                                          golden.data<float>()[m * gframes + offset + j]));
    EXPECT_LE(worst, kTolerance) << name << " window at frame " << offset;
  }
}

INSTANTIATE_TEST_SUITE_P(Clips, MelParity,
                         ::testing::Combine(::testing::Values("jfk", "ls_test", "concat33"), ::testing::Values(80, 128)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param));
                         });

TEST(MelThreads, PoolGivesIdenticalResult) {
  std::vector<float> samples = clip("ls_test");
  ThreadPool pool(2);
  Tensor a = log_mel_spectrogram(samples, 80);
  Tensor b = log_mel_spectrogram(samples, 80, kWindowSamples, &pool);
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(test::max_abs_diff(a, b), 0.0);
}

}  // namespace
}  // namespace hark
