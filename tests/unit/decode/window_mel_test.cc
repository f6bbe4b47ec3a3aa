// WindowMel against the whole-clip log-mel: with the clip maximum known (the batch path)
// every window equals the reference's padded mel cut at the same frame; a stream's running
// maximum differs exactly where the loudest frame comes later.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "audio/mel.h"
#include "transcribe/window_mel.h"

namespace hark {
namespace {

// 70 s: faint noise, then a loud chirp from 50 s to 55 s, more than 8 log10 units above it.
std::vector<float> quiet_then_loud() {
  std::vector<float> s(70 * 16000);
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 1e-5f);
  for (size_t i = 0; i < s.size(); ++i) s[i] = noise(rng);
  for (size_t i = 50 * 16000; i < 55 * 16000; ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    s[i] += 0.5f * static_cast<float>(std::sin(2 * M_PI * (300 + 40 * (t - 50)) * t));
  }
  return s;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return worst;
}

TEST(WindowMel, WithTheClipMaximumEveryWindowEqualsTheReferenceMel) {
  const auto samples = quiet_then_loud();
  const Tensor whole = log_mel_spectrogram(samples, 80);  // the reference: 30 s padding, one clamp
  WindowMel mel(80);
  mel.use_clip_maximum(samples);
  for (int64_t seek : {0, 1234, 3000, 5000, 6000}) {
    const Tensor w = mel.window(samples, seek);
    EXPECT_LT(max_abs_diff(w, mel_window(whole, seek)), 2e-5f) << "window at frame " << seek;
  }
}

TEST(WindowMel, AStreamClampsAtTheMaximumSoFar) {
  const auto samples = quiet_then_loud();
  const Tensor whole = log_mel_spectrogram(samples, 80);
  WindowMel stream(80);
  // The first window has not heard the chirp: its floor is lower than the reference's.
  EXPECT_GT(max_abs_diff(stream.window(samples, 0), mel_window(whole, 0)), 0.05f);
  // From the window holding the loudest frame on, the floors agree.
  EXPECT_LT(max_abs_diff(stream.window(samples, 4500), mel_window(whole, 4500)), 2e-5f);
  EXPECT_LT(max_abs_diff(stream.window(samples, 6000), mel_window(whole, 6000)), 2e-5f);
}

TEST(WindowMel, ShortClipsAndSilence) {
  const std::vector<float> silence(8000, 0.0f);
  const Tensor whole = log_mel_spectrogram(silence, 128);
  WindowMel mel(128);
  mel.use_clip_maximum(silence);
  EXPECT_LT(max_abs_diff(mel.window(silence, 0), mel_window(whole, 0)), 1e-6f);
}

}  // namespace
}  // namespace hark
