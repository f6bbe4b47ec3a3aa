#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.h"
#include "model/loaders/loaders.h"

namespace hark {
namespace {

using test::expect_error;
using test::small_checkpoint;

TEST(Convert, ChainThroughEveryFormatStaysBitIdentical) {
  const std::string root = test::temp_dir("convert-chain");
  Checkpoint src = small_checkpoint();
  src.alignment_heads = {{1, 1}};
  save_checkpoint(src, CheckpointFormat::HuggingFace, root + "/hf");
  auto hf = load_checkpoint(root + "/hf");
  save_checkpoint(*hf, CheckpointFormat::Mlx, root + "/mlx");
  auto mlx = load_checkpoint(root + "/mlx");
  save_checkpoint(*mlx, CheckpointFormat::Ggml, root + "/ggml-small.bin");
  auto ggml = load_checkpoint(root + "/ggml-small.bin");
  loaders::save_mlx(*ggml, root + "/mlx-npz", DType::F32, loaders::MlxContainer::Npz);
  auto npz = load_checkpoint(root + "/mlx-npz");
  loaders::save_hf(*npz, root + "/hf-sharded", DType::F32, 512 * 1024);
  auto sharded = load_checkpoint(root + "/hf-sharded");
  for (const auto& c : {hf, mlx, ggml, npz, sharded}) {
    SCOPED_TRACE(c->path);
    EXPECT_EQ(c->dtype, DType::F32);
    test::expect_bit_identical(c->weights, src.weights, src.hparams);
  }
  EXPECT_EQ(mlx->alignment_heads, src.alignment_heads);  // MLX carries generation_config.json along
  EXPECT_TRUE(ggml->alignment_heads.empty());            // ggml has nowhere to keep them
}

TEST(Convert, SaveKeepsTheStoredDtypeUnlessOneIsGiven) {
  const std::string root = test::temp_dir("convert-dtype");
  const Checkpoint half = make_synthetic_checkpoint(test::small_hparams(51864), DType::F16);
  save_checkpoint(half, CheckpointFormat::HuggingFace, root + "/hf");
  EXPECT_EQ(load_checkpoint(root + "/hf")->dtype, DType::F16);
  save_checkpoint(half, CheckpointFormat::Mlx, root + "/mlx", DType::BF16);
  const auto mlx = load_checkpoint(root + "/mlx");
  EXPECT_EQ(mlx->dtype, DType::BF16);
  EXPECT_EQ(mlx->hparams.n_vocab, 51864);
}

TEST(Convert, DetectionAndUnreadableDirectories) {
  const std::string root = test::temp_dir("convert-detect");
  std::filesystem::create_directories(root + "/empty");
  EXPECT_FALSE(detect_checkpoint_format(root + "/empty"));
  expect_error([&] { load_checkpoint(root + "/empty"); }, ErrorCode::UnsupportedFormat, {"not a Whisper checkpoint"});
  expect_error([&] { load_checkpoint(root + "/nothing-here"); }, ErrorCode::NotFound, {"nothing-here"});
  test::write_binary(root + "/random.bin", std::string(64, 'z'));
  EXPECT_FALSE(detect_checkpoint_format(root + "/random.bin"));
  // An HF directory with only the weights is claimed by the HF loader, which says what is missing.
  loaders::save_hf(small_checkpoint(), root + "/hf", DType::F16);
  std::filesystem::remove(root + "/hf/config.json");
  EXPECT_EQ(detect_checkpoint_format(root + "/hf"), CheckpointFormat::HuggingFace);
}

TEST(Convert, MlxDirectoryWithModelSafetensorsIsStillMlx) {
  // mlx_whisper itself prefers model.safetensors: the OpenAI-style config decides the format.
  const std::string dir = test::temp_dir("convert-mlx-model-st");
  loaders::save_mlx(small_checkpoint(), dir, DType::F32);
  std::filesystem::rename(dir + "/weights.safetensors", dir + "/model.safetensors");
  EXPECT_EQ(detect_checkpoint_format(dir), CheckpointFormat::Mlx);
  test::expect_bit_identical(load_checkpoint(dir)->weights, small_checkpoint().weights, small_checkpoint().hparams);
}

}  // namespace
}  // namespace hark
