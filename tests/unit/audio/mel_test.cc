// Log-mel properties that need no golden: where a tone's energy lands, the clamp, the
// silence value, window extraction, the filter bank and the npz reader.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "audio/mel.h"
#include "audio/npz.h"
#include "core/assets.h"
#include "core/thread_pool.h"
#include "test_support.h"

namespace hark {
namespace {

std::vector<float> tone(double freq, double seconds, double amp = 0.5) {
  std::vector<float> s(static_cast<size_t>(seconds * 16000));
  for (size_t i = 0; i < s.size(); ++i) s[i] = float(amp * std::sin(2 * M_PI * freq * i / 16000));
  return s;
}

float at(const Tensor& mel, int64_t m, int64_t t) { return mel.data<float>()[m * mel.dim(1) + t]; }

TEST(MelFilters, ShapesAndTriangles) {
  for (int n_mels : {80, 128}) {
    const Tensor& f = mel_filters(n_mels);
    ASSERT_EQ(f.shape(), (Shape{n_mels, 201}));
    for (int64_t m = 0; m < n_mels; ++m) {
      float peak = 0;
      for (int k = 0; k < 201; ++k) {
        ASSERT_GE(f.data<float>()[m * 201 + k], 0.0f);
        peak = std::max(peak, f.data<float>()[m * 201 + k]);
      }
      EXPECT_GT(peak, 0.0f) << "band " << m << " is empty";
    }
  }
  EXPECT_THROW(mel_filters(64), Error);
}

// For each tone, the band with the most energy is the one whose filter weighs the
// tone's FFT bin (40 Hz per bin) the most.
TEST(LogMel, ToneEnergyLandsInItsBand) {
  const Tensor& f = mel_filters(80);
  for (double freq : {200.0, 1000.0, 3000.0, 6400.0}) {
    int bin = static_cast<int>(freq / 40.0);
    int64_t expected = 0;
    for (int64_t m = 1; m < 80; ++m)
      if (f.data<float>()[m * 201 + bin] > f.data<float>()[expected * 201 + bin]) expected = m;
    Tensor mel = log_mel_spectrogram(tone(freq, 1.0), 80, 0);
    int64_t t = mel.dim(1) / 2, best = 0;
    for (int64_t m = 1; m < 80; ++m)
      if (at(mel, m, t) > at(mel, best, t)) best = m;
    EXPECT_EQ(best, expected) << freq << " Hz";
  }
}

// A full-scale 0.5-amplitude tone: |X[k]|² peaks near (A·N/4)² = 2500 for the Hann
// window, so the band value is that times the filter weight; check to 5 % in log10.
TEST(LogMel, ToneLevelMatchesWindowGain) {
  const Tensor& f = mel_filters(80);
  Tensor mel = log_mel_spectrogram(tone(1000.0, 1.0), 80, 0);
  int64_t best = 0, t = mel.dim(1) / 2;
  for (int64_t m = 1; m < 80; ++m)
    if (at(mel, m, t) > at(mel, best, t)) best = m;
  double expected_power = 2500.0 * f.data<float>()[best * 201 + 25];
  double expected = (std::log10(expected_power) + 4.0) / 4.0;
  EXPECT_NEAR(at(mel, best, t), expected, 0.05);
}

TEST(LogMel, ClampAndSilenceValue) {
  std::vector<float> s = tone(440.0, 0.5);
  Tensor mel = log_mel_spectrogram(s, 80);  // 30 s of zero padding follows
  ASSERT_EQ(mel.dim(1), (int64_t(s.size()) + kWindowSamples) / kHopLength);
  float hi = -1e9f, lo = 1e9f;
  for (int64_t i = 0; i < mel.numel(); ++i) hi = std::max(hi, mel.data<float>()[i]), lo = std::min(lo, mel.data<float>()[i]);
  EXPECT_FLOAT_EQ(lo, hi - 2.0f);  // 8 decades below the max, divided by 4
  // Frames in the padding are silence, i.e. the clamp value, not raw zeros.
  EXPECT_FLOAT_EQ(at(mel, 0, mel.dim(1) - 1), lo);
  EXPECT_FLOAT_EQ(at(mel, 79, 1500), lo);
}

TEST(LogMel, FrameCountAndReflectPadding) {
  std::vector<float> s = tone(500.0, 0.1);
  Tensor mel = log_mel_spectrogram(s, 128, 0);
  EXPECT_EQ(mel.shape(), (Shape{128, 10}));  // 1600 / 160: the last STFT frame is dropped
  // Reflect padding: frame 0 sees a mirrored tone, so it is not quieter than silence.
  EXPECT_GT(at(mel, 10, 0), at(mel, 10, 5) - 1.0f);
  EXPECT_THROW(log_mel_spectrogram(std::vector<float>(100), 80, 0), Error);
  EXPECT_THROW(log_mel_spectrogram(s, 80, -1), Error);
}

TEST(MelWindow, SlicesAndZeroFills) {
  std::vector<float> s = tone(300.0, 2.0);
  Tensor full = log_mel_spectrogram(s, 80, 0);  // 200 frames, no padding
  Tensor w = mel_window(full, 150);
  ASSERT_EQ(w.shape(), (Shape{80, kWindowFrames}));
  for (int64_t m = 0; m < 80; m += 13) {
    for (int64_t j = 0; j < 50; ++j) EXPECT_EQ(w.data<float>()[m * kWindowFrames + j], at(full, m, 150 + j));
    for (int64_t j = 50; j < kWindowFrames; j += 97) EXPECT_EQ(w.data<float>()[m * kWindowFrames + j], 0.0f);
  }
  EXPECT_THROW(mel_window(full, 201), Error);
  EXPECT_THROW(mel_window(full, -1), Error);
  EXPECT_THROW(mel_window(Tensor::zeros({3}), 0), Error);
}

TEST(Npz, ReadsDeflatedAssetAndRejectsDamage) {
  std::string path = asset_path("mel_filters.npz");
  auto names = npz_array_names(path);
  EXPECT_NE(std::find(names.begin(), names.end(), "mel_80"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "mel_128"), names.end());
  EXPECT_EQ(read_npz_array(path, "mel_128").shape(), (Shape{128, 201}));
  EXPECT_THROW(read_npz_array(path, "mel_64"), Error);

  std::string bytes = test::read_file(path), dir = test::temp_dir("npz");
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir + "/" + name, std::ios::binary) << content;
    return dir + "/" + name;
  };
  EXPECT_THROW(read_npz_array(write("short.npz", bytes.substr(0, bytes.size() / 2)), "mel_80"), Error);
  std::string flipped = bytes;
  for (size_t i = 100; i < 400; ++i) flipped[i] = char(flipped[i] ^ 0x5A);  // inside mel_80's deflate stream
  EXPECT_THROW(read_npz_array(write("flipped.npz", flipped), "mel_80"), Error);
  EXPECT_THROW(read_npz_array(write("empty.npz", ""), "mel_80"), Error);
  EXPECT_THROW(read_npz_array(dir + "/missing.npz", "mel_80"), Error);
}

// Reports the time of a 30 s clip's mel (with OpenAI's 30 s padding); no assertion on it.
TEST(MelSpeed, ThirtySecondsReport) {
  std::vector<float> s = tone(440.0, 30.0, 0.1);
  log_mel_spectrogram(s, 80);  // warm-up: filters and FFTW plan
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto t0 = std::chrono::steady_clock::now();
    const int reps = 5;
    for (int i = 0; i < reps; ++i) log_mel_spectrogram(s, 80, kWindowSamples, &pool);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("[mel] 30 s of audio (+30 s padding), 80 bins, %d thread(s): %.2f ms\n", threads, ms);
  }
}

}  // namespace
}  // namespace hark
