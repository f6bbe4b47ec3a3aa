// Quantized whisper.cpp files: hark writes every type whisper-quantize writes and reads
// the very blocks back (views into the file, never widened at load); the storage rule
// follows whisper-quantize (2-D tensors only, positional embeddings and conv biases kept).
#include <gtest/gtest.h>

#include <cstring>

#include "core/quant_format.h"
#include "loader_test_util.h"
#include "model/loaders/loaders.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

using test::expect_error;

// Width 64: attention rows are 2 blocks of 32, the MLP's down projection rows (4·64)
// one k-quant super-block of 256.
const Checkpoint& wide_checkpoint() {
  static const Checkpoint ckpt = [] {
    HParams hp = test::small_hparams();
    hp.n_audio_state = hp.n_text_state = 64;
    return make_synthetic_checkpoint(hp);
  }();
  return ckpt;
}

TEST(GgmlQuantized, StorageRuleFollowsWhisperQuantize) {
  const Shape square{64, 64}, down{64, 256};
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.weight", square, DType::Q8_0), DType::Q8_0);
  EXPECT_EQ(ggml_storage_dtype("decoder.token_embedding.weight", {51865, 64}, DType::Q5_0), DType::Q5_0);
  EXPECT_EQ(ggml_storage_dtype("encoder.positional_embedding", {12, 64}, DType::Q8_0), DType::F32);
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.bias", {64}, DType::Q8_0), DType::F32);
  EXPECT_EQ(ggml_storage_dtype("encoder.conv1.weight", {64, 80, 3}, DType::Q8_0), DType::F16);
  // k-quants need rows of whole super-blocks; narrower rows take a 32-block type.
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.mlp.2.weight", down, DType::Q4_K), DType::Q4_K);
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.weight", square, DType::Q4_K), DType::Q5_0);
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.weight", square, DType::Q6_K), DType::Q8_0);
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.weight", square, DType::Q2_K), DType::Q4_0);
  EXPECT_EQ(ggml_storage_dtype("encoder.blocks.0.attn.query.weight", {16, 16}, DType::Q8_0), DType::F16);
}

TEST(GgmlQuantized, EveryTypeRoundTripsBlockForBlock) {
  const std::string dir = test::temp_dir("ggml-quant");
  const Checkpoint& source = wide_checkpoint();
  for (const quant::BlockInfo& format : quant::formats()) {
    const std::string file = dir + "/ggml-" + format.name + ".bin";
    save_ggml(source, file, format.dtype);
    EXPECT_EQ(read_ggml_header(file).ftype, 2000 + format.ggml_ftype) << format.name;
    const auto ckpt = load_checkpoint(file);
    int quantized = 0;
    for (const auto& [name, shape] : expected_tensors(ckpt->hparams)) {
      const Tensor& got = ckpt->weights.get(name);
      const DType want_dtype = ggml_storage_dtype(name, shape, format.dtype);
      ASSERT_EQ(got.dtype(), want_dtype) << format.name << " " << name;
      const Tensor want = cast_tensor(source.weights.get(name), want_dtype);
      ASSERT_EQ(got.nbytes(), want.nbytes()) << name;
      ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << format.name << " " << name;
      quantized += dtype_is_quantized(want_dtype);
    }
    // The token embedding holds most of the weights: the checkpoint's dtype is its type.
    EXPECT_EQ(ckpt->dtype, ggml_storage_dtype("decoder.token_embedding.weight", {51865, 64}, format.dtype));
    EXPECT_GT(quantized, 20) << format.name;
    // The down projections (rows of 256) keep the k-quant itself.
    EXPECT_EQ(ckpt->weights.get("decoder.blocks.1.mlp.2.weight").dtype(), format.dtype) << format.name;
  }
}

TEST(GgmlQuantized, DequantizedValuesStayCloseToTheSource) {
  const std::string file = test::temp_dir("ggml-q8") + "/ggml-q8_0.bin";
  save_ggml(wide_checkpoint(), file, DType::Q8_0);
  const auto ckpt = load_checkpoint(file);
  const Tensor& w = ckpt->weights.get("decoder.blocks.0.mlp.0.weight");
  ASSERT_EQ(w.dtype(), DType::Q8_0);
  EXPECT_LT(test::relative_l2(w.to_f32(), wide_checkpoint().weights.get("decoder.blocks.0.mlp.0.weight")), 0.01);
}

TEST(GgmlQuantized, HuggingFaceAndMlxRefuseQuantizedTypes) {
  const std::string dir = test::temp_dir("quant-hf");
  expect_error([&] { save_hf(wide_checkpoint(), dir, DType::Q8_0); }, ErrorCode::InvalidArgument,
               {"q8_0", "written as ggml only"});
  expect_error([&] { save_mlx(wide_checkpoint(), dir, DType::Q4_K); }, ErrorCode::InvalidArgument,
               {"q4_k", "written as ggml only"});
}

}  // namespace
}  // namespace hark::loaders
