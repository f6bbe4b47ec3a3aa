// The three checkpoint layouts hold the same weights, so the model must give identical
// numbers from each: the synthetic tiny checkpoint is written as Hugging Face, MLX and
// ggml, loaded back through load_checkpoint(), and run on the oracle's mel.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/npy.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"
#include "test_support.h"

namespace hark {
namespace {

struct Outputs {
  Tensor encoder, logits;
};

Outputs run_model(std::shared_ptr<const Checkpoint> ckpt, const Tensor& mel) {
  WhisperModel model(std::move(ckpt), make_cpu_backend({}));
  auto audio = model.prepare_audio(mel);
  auto state = model.new_state(audio);
  std::vector<int32_t> tokens = {50258, 50259, 50359, 50363, 400, 370, 452};
  Tensor logits = model.decode(*state, tokens, static_cast<int>(tokens.size()), true);
  return {audio->features, logits};
}

TEST(LoaderParity, HfMlxAndGgmlGiveIdenticalOutputs) {
  const std::string mel_path = test::data_path("golden/model/tiny_mel.npy");
  if (!std::filesystem::exists(mel_path)) GTEST_SKIP() << "no model goldens";
  const Tensor mel = read_npy(mel_path);
  Checkpoint synthetic = make_synthetic_checkpoint(hparams_for_size("tiny"));
  const Outputs reference = run_model(std::make_shared<const Checkpoint>(synthetic), mel);

  const std::string dir = test::temp_dir("loader-parity");
  const std::vector<std::pair<CheckpointFormat, std::string>> layouts = {
      {CheckpointFormat::HuggingFace, dir + "/hf"},
      {CheckpointFormat::Mlx, dir + "/mlx"},
      {CheckpointFormat::Ggml, dir + "/ggml-tiny.bin"},
  };
  for (const auto& [format, path] : layouts) {
    save_checkpoint(synthetic, format, path, DType::F32);
    auto loaded = load_checkpoint(path);
    EXPECT_EQ(loaded->format, format);
    const Outputs out = run_model(loaded, mel);
    // Same fp32 weights and the same kernels: the outputs must be bit-identical.
    EXPECT_EQ(test::max_abs_diff(out.encoder, reference.encoder), 0.0) << to_string(format);
    EXPECT_EQ(test::max_abs_diff(out.logits, reference.logits), 0.0) << to_string(format);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hark
