// Parity of the fp32 reference path against transformers (scripts/oracle/model.py) on the
// synthetic checkpoints. Tolerances: relative L2 ≤ 1e-4 for the encoder output and for
// every decoder step's logits (fp32 vs fp32 with different summation orders lands near
// 1e-6); greedy tokens identical (the oracle records the smallest top-1/top-2 margin, so a
// tie cannot make this flaky unnoticed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"
#include "test_support.h"

namespace hark {
namespace {

constexpr double kTolerance = 1e-4;

struct Golden {
  nlohmann::json meta;
  Tensor mel, encoder_rows, logits_cols, logits_last;
};

std::string golden_prefix(const std::string& size) {
  std::string name = size;
  for (auto& c : name) c = c == '.' ? '_' : c;
  return test::data_path("golden/model/" + name);
}

bool load_golden(const std::string& size, Golden& g) {
  const std::string prefix = golden_prefix(size);
  if (!std::filesystem::exists(prefix + "_meta.json")) return false;
  g.meta = nlohmann::json::parse(test::read_file(prefix + "_meta.json"));
  g.mel = read_npy(prefix + "_mel.npy");
  g.encoder_rows = read_npy(prefix + "_encoder_rows.npy");
  g.logits_cols = read_npy(prefix + "_logits_cols.npy");
  g.logits_last = read_npy(prefix + "_logits_last.npy");
  return true;
}

// Every `stride`-th row of x.
Tensor every_nth_row(const Tensor& x, int stride) {
  const int64_t rows = (x.dim(0) + stride - 1) / stride, d = x.dim(1);
  Tensor out = Tensor::empty({rows, d});
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(x.data<float>() + r * stride * d, d, out.data<float>() + r * d);
  return out;
}

Tensor every_nth_col(const float* row, int64_t n, int stride) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; i += stride) v.push_back(row[i]);
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

class ModelParity : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ModelParity, EncoderLogitsAndGreedyMatchTransformers) {
  const auto [size, device] = GetParam();
  if (device == "cuda" && !cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  if (size != "tiny" && device == "cpu" && !std::getenv("HARK_PARITY_LARGE"))
    GTEST_SKIP() << size << " runs on the CPU only with HARK_PARITY_LARGE=1 (see docs/parity.md)";
  Golden g;
  if (!load_golden(size, g)) GTEST_SKIP() << "no goldens in tests/data/golden/model (run scripts/oracle)";

  auto ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size(size)));
  std::shared_ptr<Backend> backend = make_backend(device, {.threads = 0, .compute_type = "f32"});
  WhisperModel model(ckpt, backend);
  const HParams& hp = model.hparams();

  auto audio = model.prepare_audio(g.mel);
  const int row_stride = g.meta["row_stride"], vocab_stride = g.meta["vocab_stride"];
  const double enc_err =
      test::relative_l2(every_nth_row(backend->to_host(audio->features), row_stride), g.encoder_rows);
  EXPECT_LE(enc_err, kTolerance) << "encoder output";
  RecordProperty("encoder_rel_l2", std::to_string(enc_err));

  // Forced sequence, one token at a time through the KV cache.
  std::vector<int32_t> tokens = g.meta["tokens"].get<std::vector<int32_t>>();
  auto state = model.new_state(audio);
  const int64_t cols = g.logits_cols.dim(1);
  double worst = 0;
  for (size_t step = 0; step < tokens.size(); ++step) {
    Tensor logits = model.decode(*state, std::span<const int32_t>(&tokens[step], 1), 1);
    Tensor ours = every_nth_col(logits.data<float>(), hp.n_vocab, vocab_stride);
    Tensor ref = g.logits_cols.rows(step, step + 1).reshape({cols});
    const double err = test::relative_l2(ours, ref);
    worst = std::max(worst, err);
    EXPECT_LE(err, kTolerance) << "logits at step " << step;
    if (step + 1 == tokens.size()) EXPECT_LE(test::relative_l2(logits.reshape({hp.n_vocab}), g.logits_last), kTolerance);
  }
  RecordProperty("logits_worst_rel_l2", std::to_string(worst));

  // The same sequence in one call must agree with the incremental path.
  auto batch_state = model.new_state(audio);
  Tensor all = model.decode(*batch_state, tokens, static_cast<int>(tokens.size()), true);
  Tensor last = all.reshape({static_cast<int64_t>(tokens.size()), hp.n_vocab}).rows(tokens.size() - 1, tokens.size());
  EXPECT_LE(test::relative_l2(last.reshape({hp.n_vocab}), g.logits_last), kTolerance);

  // Plain greedy (no logit filters) from the 4-token start sequence.
  std::vector<int> expected = g.meta["greedy"].get<std::vector<int>>();
  auto greedy_state = model.new_state(audio);
  std::vector<int32_t> input(tokens.begin(), tokens.begin() + 4);
  std::vector<int> produced;
  for (size_t i = 0; i < expected.size(); ++i) {
    Tensor logits = model.decode(*greedy_state, input, static_cast<int>(input.size()));
    const float* row = logits.data<float>();
    int best = static_cast<int>(std::max_element(row, row + hp.n_vocab) - row);
    produced.push_back(best);
    input = {best};
  }
  EXPECT_EQ(produced, expected) << "oracle min top-2 margin " << g.meta["greedy_min_margin"];
}

INSTANTIATE_TEST_SUITE_P(Sizes, ModelParity,
                         ::testing::Combine(::testing::Values("tiny", "base", "large-v3-turbo"),
                                            ::testing::Values("cpu", "cuda")),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (auto& c : n) c = (c == '-' || c == '.') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace hark
