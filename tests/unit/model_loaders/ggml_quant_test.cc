// Quantized whisper.cpp files: hark writes every type whisper-quantize writes and reads
// the very blocks back (views into the file, never widened at load); the storage rule
// follows whisper-quantize (2-D tensors only, positional embeddings and conv biases kept).
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/quant_format.h"
#include "loader_test_util.h"
#include "model/loaders/loaders.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

using test::expect_error;

// Width 64 for the 32-block types; 256 for the k-quants, whose rows (as whisper.cpp
// reads them) must be whole super-blocks of 256.
const Checkpoint& checkpoint_of_width(int64_t width) {
  static std::map<int64_t, Checkpoint> cache;
  auto it = cache.find(width);
  if (it == cache.end()) {
    HParams hp = test::small_hparams();
    hp.n_audio_state = hp.n_text_state = static_cast<int>(width);
    it = cache.emplace(width, make_synthetic_checkpoint(hp)).first;
  }
  return it->second;
}
const Checkpoint& wide_checkpoint() { return checkpoint_of_width(64); }

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
  for (const quant::BlockInfo& format : quant::formats()) {
    const Checkpoint& source = checkpoint_of_width(format.elems == 32 ? 64 : 256);
    const std::string file = dir + "/ggml-" + format.name + ".bin";
    save_ggml(source, file, format.dtype);
    EXPECT_EQ(read_ggml_header(file).ftype, 2000 + format.ggml_ftype) << format.name;
    const auto ckpt = load_checkpoint(file);
    EXPECT_EQ(ckpt->dtype, format.dtype);
    int quantized = 0;
    for (const auto& [name, shape] : expected_tensors(ckpt->hparams)) {
      const Tensor& got = ckpt->weights.get(name);
      const DType want_dtype = ggml_storage_dtype(name, shape, format.dtype);
      ASSERT_TRUE(want_dtype == format.dtype || !dtype_is_quantized(want_dtype)) << "one type per file: " << name;
      ASSERT_EQ(got.dtype(), want_dtype) << format.name << " " << name;
      const Tensor want = cast_tensor(source.weights.get(name), want_dtype);
      ASSERT_EQ(got.nbytes(), want.nbytes()) << name;
      ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << format.name << " " << name;
      quantized += dtype_is_quantized(want_dtype);
    }
    EXPECT_EQ(quantized, 2 * 6 + 2 * 10 + 1) << format.name;  // every matrix and the token embedding
  }
}

TEST(GgmlQuantized, KQuantFilesNeedWholeSuperBlocks) {
  const std::string file = test::temp_dir("ggml-kq") + "/ggml-q4_k.bin";
  expect_error([&] { save_ggml(wide_checkpoint(), file, DType::Q4_K); }, ErrorCode::InvalidArgument,
               {"q4_k", "rows of 64", "choose q8_0", "--compute-type q4_k"});
  EXPECT_FALSE(file_exists(file));
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
