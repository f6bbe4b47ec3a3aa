// Resampling to 16 kHz checked numerically: tones keep amplitude and phase (no delay),
// content above 8 kHz is removed rather than aliased, streams equal one-shot calls.
#include <gtest/gtest.h>

#include <cmath>

#include "audio/audio.h"
#include "audio_test_util.h"

namespace hark {
namespace {

// Worst |decoded − ideal 16 kHz tone| away from the edges (the filter needs a few
// dozen samples of context there).
double tone_error(const std::vector<float>& got, double freq, double amp) {
  double worst = 0;
  for (size_t i = 200; i + 200 < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - amp * std::sin(2 * M_PI * freq * double(i) / 16000)));
  return worst;
}

double rms(const std::vector<float>& v, size_t skip = 200) {
  double s = 0;
  size_t n = 0;
  for (size_t i = skip; i + skip < v.size(); ++i) s += double(v[i]) * v[i], ++n;
  return n ? std::sqrt(s / n) : 0;
}

class ResampleRates : public ::testing::TestWithParam<int> {};

// A 1 kHz and a 3.5 kHz tone through the WAV path at 8/22.05/44.1/48 kHz: the length is
// rate-exact (±1) and every sample is within 1e-4 of the ideal tone (16-bit source
// quantisation is 1.5e-5; the filter's own error measured 0.3e-6 to 1.7e-5).
TEST_P(ResampleRates, TonesArePreservedWithoutDelay) {
  const int rate = GetParam();
  for (double freq : {1000.0, 3500.0}) {
    std::string wav = test::make_wav(test::sine(freq, rate, 1.0, 0.5), 1, rate, 16);
    std::vector<float> got = decode_audio_memory(wav.data(), wav.size());
    EXPECT_NEAR(double(got.size()), 16000.0, 1.0) << rate;
    EXPECT_LT(tone_error(got, freq, 0.5), 1e-4) << rate << " Hz source, " << freq << " Hz tone";
  }
}

// Above 8 kHz (the new Nyquist) a tone must vanish instead of folding back below it.
TEST_P(ResampleRates, ContentAboveNyquistIsRemoved) {
  const int rate = GetParam();
  if (rate <= 16000) GTEST_SKIP() << "no content above 8 kHz at " << rate << " Hz";
  std::vector<float> in(rate);
  for (int i = 0; i < rate; ++i) in[i] = float(0.5 * std::sin(2 * M_PI * 9000.0 * i / rate));
  std::vector<float> out = decode_pcm_f32(in.data(), in.size() * 4, rate);
  // Measured about -96 dB; require -80 dB.
  EXPECT_LT(rms(out), 0.5 / std::sqrt(2) * 1e-4) << "9 kHz tone leaks (≥ -80 dB) at " << rate;
}

INSTANTIATE_TEST_SUITE_P(Rates, ResampleRates, ::testing::Values(8000, 22050, 44100, 48000));

TEST(Resample, PassbandEdgeKeepsLevel) {
  std::vector<float> in(48000);
  for (int i = 0; i < 48000; ++i) in[i] = float(0.5 * std::sin(2 * M_PI * 7000.0 * i / 48000));
  std::vector<float> out = decode_pcm_f32(in.data(), in.size() * 4, 48000);
  EXPECT_NEAR(rms(out) / (0.5 / std::sqrt(2)), 1.0, 0.02);  // within 0.2 dB at 7 kHz
}

TEST(Resample, StreamingEqualsOneShot) {
  std::vector<float> in(44100 * 2);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(0.3 * std::sin(0.01 * i) + 0.1 * std::sin(0.37 * i));
  std::vector<float> whole = decode_pcm_f32(in.data(), in.size() * 4, 44100), streamed;
  StreamResampler r(44100);
  for (size_t pos = 0; pos < in.size(); pos += 1234) r.feed(in.data() + pos, std::min<size_t>(1234, in.size() - pos), streamed);
  r.flush(streamed);
  ASSERT_EQ(streamed.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(streamed[i], whole[i], 1e-6) << i;
}

TEST(RawPcm, SixteenKilohertzIsPassThrough) {
  std::vector<float> in = {0.0f, 0.5f, -0.25f, 1.0f, -1.0f, 1e-8f};
  EXPECT_EQ(decode_pcm_f32(in.data(), in.size() * 4, 16000), in);
  EXPECT_TRUE(decode_pcm_f32(nullptr, 0, 16000).empty());  // an empty chunk is fine in a stream
}

TEST(RawPcm, BadChunksAreErrors) {
  std::vector<float> in(100, 0.1f);
  auto code = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[audio]"), std::string::npos);
      return e.code();
    }
    return ErrorCode::Internal;
  };
  EXPECT_EQ(code([&] { decode_pcm_f32(in.data(), 7, 16000); }), ErrorCode::InvalidAudio);
  EXPECT_EQ(code([&] { decode_pcm_f32(in.data(), 400, 0); }), ErrorCode::InvalidAudio);
  EXPECT_EQ(code([&] { decode_pcm_f32(in.data(), 400, 10'000'000); }), ErrorCode::InvalidAudio);
  in[50] = std::nanf("");
  EXPECT_EQ(code([&] { decode_pcm_f32(in.data(), 400, 16000); }), ErrorCode::InvalidAudio);
  in[50] = INFINITY;
  EXPECT_EQ(code([&] { decode_pcm_f32(in.data(), 400, 48000); }), ErrorCode::InvalidAudio);
  EXPECT_THROW(StreamResampler(12), Error);
}

}  // namespace
}  // namespace hark
