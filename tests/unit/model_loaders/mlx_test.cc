#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.h"
#include "model/loaders/loaders.h"
#include "model/loaders/names.h"
#include "model/loaders/npz.h"
#include "model/loaders/safetensors.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

using test::expect_error;
using test::small_checkpoint;

TEST(MlxNames, UsesMlp1AndMlp2) {
  EXPECT_EQ(internal_to_mlx("decoder.blocks.1.mlp.0.weight"), "decoder.blocks.1.mlp1.weight");
  EXPECT_EQ(internal_to_mlx("encoder.blocks.0.mlp.2.bias"), "encoder.blocks.0.mlp2.bias");
  EXPECT_EQ(internal_to_mlx("encoder.blocks.0.mlp_ln.bias"), "encoder.blocks.0.mlp_ln.bias");
  EXPECT_EQ(mlx_to_internal("encoder.blocks.3.mlp2.weight"), "encoder.blocks.3.mlp.2.weight");
  EXPECT_EQ(mlx_to_internal("decoder.blocks.0.cross_attn.key.weight"), "decoder.blocks.0.cross_attn.key.weight");
}

TEST(MlxLoader, SafetensorsRoundTripIsBitIdentical) {
  const std::string dir = test::temp_dir("mlx-st");
  save_mlx(small_checkpoint(), dir, DType::F32);
  EXPECT_TRUE(looks_like_mlx(dir));
  EXPECT_FALSE(looks_like_hf(dir));
  const auto ckpt = load_checkpoint(dir);
  EXPECT_EQ(ckpt->format, CheckpointFormat::Mlx);
  test::expect_bit_identical(ckpt->weights, small_checkpoint().weights, ckpt->hparams);
  const auto config = read_json_file(dir + "/config.json");
  EXPECT_EQ(config["n_audio_layer"], 2);
  EXPECT_EQ(config["model_type"], "whisper");
  EXPECT_FALSE(config.contains("quantization"));
}

TEST(MlxLoader, NpzRoundTripIsBitIdentical) {
  const std::string dir = test::temp_dir("mlx-npz");
  save_mlx(small_checkpoint(), dir, DType::F32, MlxContainer::Npz);
  EXPECT_TRUE(file_exists(dir + "/weights.npz"));
  EXPECT_FALSE(file_exists(dir + "/weights.safetensors"));
  const auto ckpt = load_checkpoint(dir);
  test::expect_bit_identical(ckpt->weights, small_checkpoint().weights, ckpt->hparams);
}

TEST(MlxLoader, FileUsesMlxNamesAndConvLayout) {
  const std::string dir = test::temp_dir("mlx-layout");
  save_mlx(small_checkpoint(), dir, DType::F32);
  const auto file = SafetensorsFile::open(dir + "/weights.safetensors");
  std::map<std::string, Tensor> stored;
  for (const auto& e : file.entries()) stored[e.name] = file.tensor(e);
  EXPECT_TRUE(stored.count("encoder.blocks.1.mlp1.weight"));
  EXPECT_FALSE(stored.count("encoder.blocks.1.mlp.0.weight"));
  // MLX recomputes the sinusoidal positions: they are not stored when they are the sinusoids.
  EXPECT_FALSE(stored.count("encoder.positional_embedding"));
  EXPECT_FALSE(stored.count("encoder._positional_embedding"));
  // conv1: internal [out=16, in=80, k=3] is stored [out, k, in].
  const Tensor& mlx_conv = stored.at("encoder.conv1.weight");
  ASSERT_EQ(mlx_conv.shape(), (Shape{16, 3, 80}));
  const Tensor& conv = small_checkpoint().weights.get("encoder.conv1.weight");
  for (int o : {0, 7, 15})
    for (int i : {0, 41, 79})
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(mlx_conv.data<float>()[(o * 3 + k) * 80 + i], conv.data<float>()[(o * 80 + i) * 3 + k]);
}

TEST(MlxLoader, NonSinusoidalEncoderPositionsSurvive) {
  const std::string dir = test::temp_dir("mlx-positions");
  Checkpoint src = small_checkpoint();
  Tensor pos = src.weights.get("encoder.positional_embedding").clone();
  pos.data<float>()[5] = 42.0f;
  src.weights.add("encoder.positional_embedding", pos);
  save_mlx(src, dir, DType::F32);
  const auto ckpt = load_checkpoint(dir);
  EXPECT_EQ(ckpt->weights.get("encoder.positional_embedding").data<float>()[5], 42.0f);
}

TEST(MlxLoader, HalfAndBf16Storage) {
  for (auto [dt, container] : {std::pair{DType::F16, MlxContainer::Npz}, std::pair{DType::F16, MlxContainer::Safetensors},
                               std::pair{DType::BF16, MlxContainer::Safetensors}}) {
    const std::string dir = test::temp_dir("mlx-half");
    save_mlx(small_checkpoint(), dir, dt, container);
    const auto ckpt = load_checkpoint(dir);
    EXPECT_EQ(ckpt->dtype, dt);
    for (const auto& [name, shape] : expected_tensors(ckpt->hparams)) {
      if (name == "encoder.positional_embedding") continue;  // recomputed in f32
      const auto got = ckpt->weights.get(name).to_vector();
      auto want = small_checkpoint().weights.get(name).to_vector();
      for (size_t i = 0; i < want.size(); i += 97) {
        const float w = dt == DType::F16 ? half_to_float(float_to_half(want[i])) : bf16_to_float(float_to_bf16(want[i]));
        ASSERT_EQ(got[i], w) << name << " " << i;
      }
    }
  }
  expect_error([] { save_mlx(small_checkpoint(), test::temp_dir("mlx-bf16npz"), DType::BF16, MlxContainer::Npz); },
               ErrorCode::InvalidArgument, {"bf16"});
}

TEST(MlxLoader, QuantizedCheckpointsAreRejected) {
  const std::string dir = test::temp_dir("mlx-quant");
  save_mlx(small_checkpoint(), dir, DType::F16);
  auto config = read_json_file(dir + "/config.json");
  config["quantization"] = {{"group_size", 64}, {"bits", 4}};
  test::write_binary(dir + "/config.json", config.dump());
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::UnsupportedFormat, {"quantized", "\"bits\":4"});
  // Quantized tensors without the config key are caught by their names.
  config.erase("quantization");
  test::write_binary(dir + "/config.json", config.dump());
  write_safetensors(dir + "/weights.safetensors", {{"encoder.blocks.0.mlp1.scales", Tensor::zeros({4})}}, DType::F16);
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::UnsupportedFormat, {"quantized", "mlp1.scales"});
}

TEST(MlxLoader, MissingPiecesAreClear) {
  const std::string dir = test::temp_dir("mlx-missing");
  save_mlx(small_checkpoint(), dir, DType::F16, MlxContainer::Npz);
  std::filesystem::remove(dir + "/config.json");
  EXPECT_TRUE(looks_like_mlx(dir));
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"no config.json"});
  save_mlx(small_checkpoint(), dir, DType::F16, MlxContainer::Npz);
  std::filesystem::remove(dir + "/weights.npz");
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::NotFound, {"weights.safetensors or weights.npz"});
  save_mlx(small_checkpoint(), dir, DType::F32);
  auto config = read_json_file(dir + "/config.json");
  config.erase("n_text_head");
  test::write_binary(dir + "/config.json", config.dump());
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"n_text_head"});
}

TEST(MlxLoader, MisShapedConvNamesMlxLayout) {
  const std::string dir = test::temp_dir("mlx-badconv");
  save_mlx(small_checkpoint(), dir, DType::F32);
  std::vector<NamedTensor> tensors;
  const auto file = SafetensorsFile::open(dir + "/weights.safetensors");
  for (const auto& e : file.entries())
    tensors.push_back({e.name, e.name == "encoder.conv2.weight" ? Tensor::zeros({16, 16, 3}) : file.tensor(e).clone()});
  write_safetensors(dir + "/weights.safetensors", tensors, DType::F32);
  // [16, 16, 3] would be right in PyTorch's layout but not in MLX's.
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"encoder.conv2.weight", "[16, 16, 3]", "[16, 3, 16]"});
}

TEST(Npz, ReadsNumpyStoredAndCompressedArchives) {
  for (const char* name : {"numpy_savez.npz", "numpy_savez_compressed.npz"}) {
    const auto arrays = read_npz(std::string(HARK_SOURCE_DIR) + "/tests/unit/model_loaders/data/" + name);
    ASSERT_EQ(arrays.size(), 3u) << name;
    std::map<std::string, Tensor> by_name;
    for (const auto& a : arrays) by_name[a.name] = a.tensor;
    const Tensor& alpha = by_name.at("alpha");
    EXPECT_EQ(alpha.shape(), (Shape{3, 4}));
    EXPECT_EQ(alpha.to_vector()[5], 1.5f);  // 5 * 0.5 - 1
    EXPECT_EQ(by_name.at("beta").dtype(), DType::F16);
    EXPECT_EQ(by_name.at("beta").to_vector(), (std::vector<float>{1.5f, -2.25f, 3.0f}));
    EXPECT_EQ(by_name.at("gamma").shape(), (Shape{1, 2, 3}));
    EXPECT_EQ(by_name.at("gamma").to_vector()[4], 4.0f);
  }
}

TEST(Npz, DamagedArchivesAreClearErrors) {
  const std::string good = test::read_file(std::string(HARK_SOURCE_DIR) + "/tests/unit/model_loaders/data/numpy_savez_compressed.npz");
  const auto parse = [](const std::string& bytes) {
    parse_npz(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "w.npz");
  };
  expect_error([&] { parse("PK"); }, ErrorCode::ModelFormat, {"w.npz", "too short"});
  expect_error([&] { parse(std::string(100, 'x')); }, ErrorCode::ModelFormat, {"no zip end record"});
  expect_error([&] { parse(good.substr(200)); }, ErrorCode::ModelFormat, {"w.npz"});
  // Every truncation and every single-byte corruption is an error or a valid result, never a crash.
  for (size_t n = 0; n < good.size(); n += 7) {
    try { parse(good.substr(0, n)); } catch (const Error&) {}
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try { parse(bad); } catch (const Error&) {}
  }
}

TEST(Npz, WriterRoundTrip) {
  const std::string dir = test::temp_dir("npz-rt");
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  write_npz(dir + "/x.npz", {{"first", a}, {"second.with.dots", a.reshape({6})}}, DType::F16);
  const auto back = read_npz(dir + "/x.npz");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].name, "second.with.dots");
  EXPECT_EQ(back[0].tensor.dtype(), DType::F16);
  EXPECT_EQ(back[0].tensor.to_vector(), a.to_vector());
}

}  // namespace
}  // namespace hark::loaders
