// The Silero network: a plain double-precision evaluation of the graph (written from the
// TorchScript code) on the first chunks of jfk.wav, chunking and state handling, and clear
// errors for bad weight files. Reference parity lives in parity_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <thread>

#include "hark/error.h"
#include "vad/silero_weights.h"
#include "vad_test_util.h"

namespace hark::vad {
namespace {

using Vec = std::vector<double>;

// conv1d over x[c_in][t] (kernel 3, zero padding `pad`), optional bias, into [c_out][t_out].
std::vector<Vec> conv_ref(const std::vector<Vec>& x, const std::vector<float>& w, const std::vector<float>* bias,
                          int c_out, int kernel, int stride, int pad) {
  const int c_in = static_cast<int>(x.size()), t_in = static_cast<int>(x[0].size());
  const int t_out = (t_in + 2 * pad - kernel) / stride + 1;
  std::vector<Vec> y(c_out, Vec(t_out, 0.0));
  for (int o = 0; o < c_out; ++o)
    for (int t = 0; t < t_out; ++t) {
      double s = bias ? (*bias)[o] : 0.0;
      for (int c = 0; c < c_in; ++c)
        for (int k = 0; k < kernel; ++k) {
          const int src = t * stride + k - pad;
          if (src >= 0 && src < t_in) s += w[(o * c_in + c) * kernel + k] * x[c][src];
        }
      y[o][t] = s;
    }
  return y;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One chunk of the 16 kHz graph in double: reflect pad, STFT conv, |.|, 4 blocks, LSTM, head.
double reference_step(const SileroWeights& w, const Vec& x576, Vec& h, Vec& c) {
  Vec padded = x576;
  for (int i = 1; i <= 64; ++i) padded.push_back(x576[575 - i]);
  const auto spec = conv_ref({padded}, w.stft_basis, nullptr, 258, 256, 128, 0);
  std::vector<Vec> y(129, Vec(4));
  for (int f = 0; f < 129; ++f)
    for (int t = 0; t < 4; ++t) y[f][t] = std::sqrt(spec[f][t] * spec[f][t] + spec[f + 129][t] * spec[f + 129][t]);
  for (const auto& block : w.conv) {
    y = conv_ref(y, block.weight, &block.bias, block.c_out, 3, block.stride, 1);
    for (auto& row : y)
      for (auto& v : row) v = std::max(v, 0.0);
  }
  Vec gates(512);
  for (int g = 0; g < 512; ++g) {
    double s = w.b_ih[g] + w.b_hh[g];
    for (int k = 0; k < 128; ++k) s += w.w_ih[g * 128 + k] * y[k][0] + w.w_hh_t[k * 512 + g] * h[k];
    gates[g] = s;
  }
  double logit = w.head_b;
  for (int k = 0; k < 128; ++k) {
    c[k] = sigmoid(gates[128 + k]) * c[k] + sigmoid(gates[k]) * std::tanh(gates[256 + k]);
    h[k] = sigmoid(gates[384 + k]) * std::tanh(c[k]);
    logit += std::max(h[k], 0.0) * w.head_w[k];
  }
  return sigmoid(logit);
}

TEST(Silero, MatchesADoublePrecisionEvaluationOfTheGraph) {
  const std::vector<float> jfk = test::read_wav16k("audio/jfk.wav");
  ASSERT_GE(jfk.size(), 40u * 512);
  const SileroWeights w = read_silero_weights(hark::test::data_path("vad/silero_vad_16k_jit.safetensors"));
  // Chunks 0-39 of jfk cover silence and the start of speech ("And so my fellow...").
  std::vector<float> clip(jfk.begin(), jfk.begin() + 40 * 512);
  const std::vector<float> ours = test::model().speech_probabilities(clip);
  Vec h(128, 0.0), c(128, 0.0), context(64, 0.0);
  double max_prob = 0;
  for (int i = 0; i < 40; ++i) {
    Vec x = context;
    x.insert(x.end(), clip.begin() + i * 512, clip.begin() + (i + 1) * 512);
    const double expected = reference_step(w, x, h, c);
    context.assign(x.end() - 64, x.end());
    max_prob = std::max(max_prob, expected);
    // fp32 with sequential sums of up to 387 products vs double: a few 1e-6 at most.
    EXPECT_NEAR(ours[i], expected, 1e-5) << "chunk " << i;
  }
  EXPECT_GT(max_prob, 0.5);  // the clip does reach speech
}

TEST(Silero, OneProbabilityPerChunkWithTheLastZeroPadded) {
  std::vector<float> audio(3 * 512 + 100, 0.0f);
  for (size_t i = 0; i < audio.size(); ++i) audio[i] = 0.3f * std::sin(0.05f * i);
  const auto probs = test::model().speech_probabilities(audio);
  ASSERT_EQ(probs.size(), 4u);
  for (float p : probs) EXPECT_TRUE(p >= 0.0f && p <= 1.0f);
  // The padded tail equals running an explicitly zero-padded copy (up to GEMM blocking).
  std::vector<float> padded = audio;
  padded.resize(4 * 512, 0.0f);
  const auto padded_probs = test::model().speech_probabilities(padded);
  ASSERT_EQ(padded_probs.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(padded_probs[i], probs[i], 1e-6);
  EXPECT_TRUE(test::model().speech_probabilities({}).empty());
}

TEST(Silero, SilenceIsNotSpeechAndSpeechIs) {
  const auto silence = test::model().speech_probabilities(std::vector<float>(16000, 0.0f));
  for (float p : silence) EXPECT_LT(p, 0.1f);
  const auto jfk = test::model().speech_probabilities(test::read_wav16k("audio/jfk.wav"));
  EXPECT_GT(*std::max_element(jfk.begin(), jfk.end()), 0.9f);
}

TEST(Silero, RunningInPiecesCarriesTheState) {
  const std::vector<float> jfk = test::read_wav16k("audio/jfk.wav");
  const int64_t n = 250;  // more than two internal blocks
  std::vector<float> whole(n), pieces(n);
  SileroState a, b;
  test::model().run_chunks(jfk.data(), n, a, whole.data());
  int64_t done = 0;
  for (int64_t step : {1, 7, 100, 142}) {
    test::model().run_chunks(jfk.data() + done * 512, step, b, pieces.data() + done);
    done += step;
  }
  ASSERT_EQ(done, n);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(pieces[i], whole[i], 1e-6) << "chunk " << i;
  for (int i = 0; i < kHiddenSize; ++i) EXPECT_NEAR(a.h[i], b.h[i], 1e-6);
  EXPECT_EQ(a.context, b.context);
  b.reset();
  EXPECT_EQ(b.h[0], 0.0f);
}

TEST(Silero, ThreadsShareOneModel) {
  const std::vector<float> jfk = test::read_wav16k("audio/jfk.wav");
  const auto expected = test::model().speech_probabilities(jfk);
  std::vector<float> other;
  std::thread t([&] { other = test::model().speech_probabilities(jfk); });
  const auto mine = test::model().speech_probabilities(jfk);
  t.join();
  EXPECT_EQ(mine, expected);
  EXPECT_EQ(other, expected);
}

TEST(Silero, BadArgumentsAreErrors) {
  SileroState state;
  float prob = 0;
  EXPECT_THROW(test::model().run_chunks(nullptr, 1, state, &prob), Error);
  EXPECT_THROW(test::model().run_chunks(&prob, -1, state, &prob), Error);
  test::model().run_chunks(nullptr, 0, state, nullptr);  // nothing to do
}

// Writes a safetensors file with the given header JSON and `body_bytes` zero bytes.
std::string write_file(const std::string& name, const std::string& header, size_t body_bytes) {
  const std::string path = hark::test::temp_dir("vad-weights") + "/" + name;
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header << std::string(body_bytes, '\0');
  return path;
}

void expect_load_error(const std::string& path, ErrorCode code) {
  try {
    SileroModel::load(path);
    FAIL() << "loaded " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find("[vad]") == std::string::npos &&
                  std::string(e.what()).find("[file]") == std::string::npos,
              true)
        << e.what();
  }
}

TEST(Silero, BadWeightFilesAreClearErrors) {
  expect_load_error("/nonexistent/silero.safetensors", ErrorCode::NotFound);
  expect_load_error(write_file("short.safetensors", "", 0), ErrorCode::ModelFormat);
  expect_load_error(write_file("notjson.safetensors", "{oops", 0), ErrorCode::ModelFormat);
  expect_load_error(write_file("empty.safetensors", "{}", 0), ErrorCode::ModelFormat);
  expect_load_error(
      write_file("shape.safetensors", R"({"stft_conv.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 16),
      ErrorCode::ModelFormat);
  expect_load_error(
      write_file("past.safetensors", R"({"stft_conv.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 4),
      ErrorCode::ModelFormat);
  expect_load_error(
      write_file("f16.safetensors", R"({"stft_conv.weight":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4),
      ErrorCode::ModelFormat);
  // A header length beyond the file.
  const std::string path = hark::test::temp_dir("vad-weights-len") + "/len.safetensors";
  std::ofstream(path, std::ios::binary) << std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10);
  expect_load_error(path, ErrorCode::ModelFormat);
}

TEST(Silero, DefaultWeightsAreFound) {
  EXPECT_NO_THROW(SileroModel::load_default());
}

}  // namespace
}  // namespace hark::vad
