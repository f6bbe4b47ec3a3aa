#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/assets.h"
#include "loader_test_util.h"
#include "model/loaders/loaders.h"
#include "model/loaders/npz.h"

namespace hark::loaders {
namespace {

using test::expect_error;
using test::small_checkpoint;

std::string i32(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// A valid ggml header for `hp` with `ftype`, a 1×1 mel bank and a two-token vocabulary.
std::string header_bytes(const HParams& hp, int32_t ftype) {
  std::string s = i32(0x67676d6c);
  for (int v : {hp.n_vocab, hp.n_audio_ctx, hp.n_audio_state, hp.n_audio_head, hp.n_audio_layer, hp.n_text_ctx,
                hp.n_text_state, hp.n_text_head, hp.n_text_layer, hp.n_mels})
    s += i32(v);
  s += i32(ftype) + i32(1) + i32(1) + std::string(4, '\0');
  s += i32(2) + i32(1) + "a" + i32(2) + "bc";
  return s;
}

std::string tensor_record(const std::string& name, std::vector<int32_t> ne, int32_t type, size_t data_bytes) {
  std::string s = i32(static_cast<int32_t>(ne.size())) + i32(static_cast<int32_t>(name.size())) + i32(type);
  for (int32_t d : ne) s += i32(d);
  return s + name + std::string(data_bytes, '\0');
}

TEST(GgmlHeader, ReadsWhisperCppTestFiles) {
  const auto tiny = read_ggml_header(test::data_path("ggml/for-tests-ggml-tiny.bin"));
  EXPECT_EQ(tiny.hparams.size_name(), "tiny");
  EXPECT_EQ(tiny.hparams.n_vocab, 51865);
  EXPECT_EQ(tiny.hparams.n_audio_ctx, 1500);
  EXPECT_EQ(tiny.ftype, 1);
  EXPECT_EQ(tiny.mel_filters.shape(), (Shape{80, 201}));
  ASSERT_EQ(tiny.vocab.size(), 50257u);
  EXPECT_EQ(tiny.vocab[0], "!");
  const auto en = read_ggml_header(test::data_path("ggml/for-tests-ggml-tiny.en.bin"));
  EXPECT_EQ(en.hparams.size_name(), "tiny.en");
  EXPECT_EQ(en.vocab.back(), "<|endoftext|>");
  EXPECT_TRUE(looks_like_ggml(test::data_path("ggml/for-tests-ggml-tiny.bin")));
  EXPECT_FALSE(looks_like_ggml(test::data_path("audio/jfk.wav")));
}

TEST(GgmlHeader, MelFiltersMatchTheReferenceBank) {
  const auto tiny = read_ggml_header(test::data_path("ggml/for-tests-ggml-tiny.bin"));
  for (const auto& [name, t] : read_npz(asset_path("mel_filters.npz"))) {
    if (name != "mel_80") continue;
    ASSERT_EQ(t.shape(), tiny.mel_filters.shape());
    EXPECT_LT(test::max_abs_diff(t, tiny.mel_filters), 1e-7);
    return;
  }
  FAIL() << "mel_80 missing from assets/mel_filters.npz";
}

TEST(GgmlLoader, TestFileWithoutTensorsIsAClearError) {
  for (const char* f : {"ggml/for-tests-ggml-tiny.bin", "ggml/for-tests-ggml-tiny.en.bin"})
    expect_error([&] { load_checkpoint(test::data_path(f)); }, ErrorCode::ModelFormat, {"no tensor data", "50257-token"});
}

TEST(GgmlLoader, RoundTripIsBitIdenticalInF32) {
  const std::string file = test::temp_dir("ggml-f32") + "/ggml-small.bin";
  save_ggml(small_checkpoint(), file, DType::F32);
  const auto ckpt = load_checkpoint(file);
  EXPECT_EQ(ckpt->format, CheckpointFormat::Ggml);
  EXPECT_EQ(ckpt->dtype, DType::F32);
  test::expect_bit_identical(ckpt->weights, small_checkpoint().weights, ckpt->hparams);
}

TEST(GgmlLoader, F16KeepsSmallTensorsInF32LikeWhisperCpp) {
  const std::string file = test::temp_dir("ggml-f16") + "/ggml-small.bin";
  save_ggml(small_checkpoint(), file, DType::F16);
  const auto header = read_ggml_header(file);
  EXPECT_EQ(header.ftype, 1);
  const auto ckpt = load_checkpoint(file);
  EXPECT_EQ(ckpt->dtype, DType::F16);
  EXPECT_EQ(ckpt->weights.get("encoder.blocks.0.attn.query.weight").dtype(), DType::F16);
  EXPECT_EQ(ckpt->weights.get("encoder.conv1.weight").dtype(), DType::F16);
  for (const char* name : {"encoder.conv1.bias", "encoder.positional_embedding", "decoder.positional_embedding",
                           "decoder.ln.weight", "encoder.blocks.1.attn.query.bias"})
    EXPECT_EQ(ckpt->weights.get(name).dtype(), DType::F32) << name;
  for (const auto& [name, shape] : expected_tensors(ckpt->hparams)) {
    const Tensor& t = ckpt->weights.get(name);
    const auto got = t.to_vector(), want = small_checkpoint().weights.get(name).to_vector();
    for (size_t i = 0; i < want.size(); i += 31)
      ASSERT_EQ(got[i], t.dtype() == DType::F16 ? half_to_float(float_to_half(want[i])) : want[i]) << name;
  }
}

TEST(GgmlWriter, HeaderMatchesWhisperCppConventions) {
  const std::string file = test::temp_dir("ggml-header") + "/ggml-small.bin";
  save_ggml(small_checkpoint(), file, DType::F32);
  const auto header = read_ggml_header(file);
  EXPECT_EQ(header.hparams.n_audio_state, 16);
  EXPECT_EQ(header.mel_filters.shape(), (Shape{80, 201}));
  // Vocabulary as in whisper.cpp's own multilingual file. That test file stores tokens that
  // are not valid UTF-8 as U+FFFD, so only the ASCII tokens (77%) are compared.
  const auto reference = read_ggml_header(test::data_path("ggml/for-tests-ggml-tiny.bin"));
  ASSERT_EQ(header.vocab.size(), reference.vocab.size());
  size_t compared = 0;
  for (size_t i = 0; i < header.vocab.size(); ++i) {
    const std::string& token = header.vocab[i];
    if (std::any_of(token.begin(), token.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) continue;
    ASSERT_EQ(token, reference.vocab[i]) << "token " << i;
    ++compared;
  }
  EXPECT_GT(compared, 38000u);
  EXPECT_LT(test::max_abs_diff(header.mel_filters, reference.mel_filters), 1e-7);
  // The first tensor record: conv biases are stored with ne = [1, d].
  const std::string bytes = test::read_file(file);
  const size_t conv_bias = bytes.find("encoder.conv1.bias");
  ASSERT_NE(conv_bias, std::string::npos);
  int32_t record[5];
  std::memcpy(record, bytes.data() + conv_bias - 20, 20);
  EXPECT_EQ(record[0], 2);   // n_dims
  EXPECT_EQ(record[1], 18);  // name length
  EXPECT_EQ(record[2], 0);   // f32
  EXPECT_EQ(record[3], 1);   // ne[0]
  EXPECT_EQ(record[4], 16);  // ne[1]
  expect_error([&] { save_ggml(small_checkpoint(), file, DType::BF16); }, ErrorCode::InvalidArgument, {"f16, f32 or q8_0"});
}

TEST(GgmlLoader, MalformedFilesAreClearErrors) {
  const std::string dir = test::temp_dir("ggml-bad");
  const HParams hp = test::small_hparams();
  const auto load_bytes = [&](const std::string& bytes) {
    test::write_binary(dir + "/m.bin", bytes);
    load_ggml(dir + "/m.bin");
  };
  expect_error([&] { load_bytes("ggm"); }, ErrorCode::ModelFormat, {"truncated"});
  expect_error([&] { load_bytes(i32(0x12345678) + std::string(60, '\0')); }, ErrorCode::ModelFormat, {"bad magic"});
  expect_error([&] { load_bytes("GGUF" + std::string(60, '\0')); }, ErrorCode::UnsupportedFormat, {"GGUF"});
  // Quantized files of ggml's older block layouts (quantization version 0 or 1).
  expect_error([&] { load_bytes(header_bytes(hp, 2)); }, ErrorCode::UnsupportedFormat, {"version 0", "ftype 2"});
  expect_error([&] { load_bytes(header_bytes(hp, 1008)); }, ErrorCode::UnsupportedFormat, {"version 1"});
  // ftypes whisper-quantize never writes (4: q4_1 with some f16, 15: iq2_xxs, 24: bf16).
  for (int ftype : {4, 2015, 24, -1})
    expect_error([&] { load_bytes(header_bytes(hp, ftype)); }, ErrorCode::UnsupportedFormat,
                 {"ftype " + std::to_string(ftype)});
  HParams odd = hp;
  odd.n_mels = 7;
  expect_error([&] { load_bytes(header_bytes(odd, 1)); }, ErrorCode::ModelFormat, {"n_mels = 7"});
  const std::string head = header_bytes(hp, 1);
  expect_error([&] { load_bytes(head.substr(0, head.size() - 2)); }, ErrorCode::ModelFormat, {"truncated"});
  expect_error([&] { load_bytes(head + tensor_record("encoder.blocks.0.attn.query.weight", {16, 16}, 8, 272)); },
               ErrorCode::ModelFormat, {"encoder.blocks.0.attn.query.weight", "q8_0", "not whole blocks of 32"});
  expect_error([&] { load_bytes(head + tensor_record("encoder.blocks.0.attn.query.weight", {32, 2}, 9, 72)); },
               ErrorCode::UnsupportedFormat, {"encoder.blocks.0.attn.query.weight", "q8_1"});
  expect_error([&] { load_bytes(head + tensor_record("w", {256, 2}, 14, 419)); }, ErrorCode::ModelFormat,
               {"'w' q6_k[2, 256]", "runs past the end"});
  expect_error([&] { load_bytes(head + tensor_record("encoder.ln_post.weight", {16}, 0, 40)); },
               ErrorCode::ModelFormat, {"encoder.ln_post.weight", "runs past the end"});
  expect_error([&] { load_bytes(head + tensor_record("x", {1 << 30, 1 << 30, 1 << 30, 1 << 30}, 0, 8)); },
               ErrorCode::ModelFormat, {"runs past the end"});
  expect_error([&] { load_bytes(head + tensor_record("x", {-4}, 0, 8)); }, ErrorCode::ModelFormat, {"tensor dimension"});
  expect_error([&] { load_bytes(head + tensor_record("x", {1, 1, 1, 1, 1}, 0, 8)); }, ErrorCode::ModelFormat, {"tensor rank"});
}

TEST(GgmlLoader, MissingAndMisShapedTensorsAreNamed) {
  const std::string dir = test::temp_dir("ggml-shapes");
  const std::string file = dir + "/ggml-small.bin";
  save_ggml(small_checkpoint(), file, DType::F32);
  std::string bytes = test::read_file(file);
  // Rename one tensor to something unknown: the loader then misses it.
  const size_t at = bytes.find("decoder.blocks.1.mlp_ln.bias");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'X';
  test::write_binary(dir + "/missing.bin", bytes);
  expect_error([&] { load_checkpoint(dir + "/missing.bin"); }, ErrorCode::ModelFormat, {"decoder.blocks.1.mlp_ln.bias"});
  // Swap the two dims of a square-free matrix: ne [16, 64] → [64, 16].
  bytes = test::read_file(file);
  const size_t fc = bytes.find("encoder.blocks.0.mlp.0.weight");
  int32_t ne[2];
  std::memcpy(ne, bytes.data() + fc - 8, 8);
  ASSERT_EQ(ne[0], 16);
  ASSERT_EQ(ne[1], 64);
  std::swap(ne[0], ne[1]);
  std::memcpy(bytes.data() + fc - 8, ne, 8);
  test::write_binary(dir + "/shape.bin", bytes);
  expect_error([&] { load_checkpoint(dir + "/shape.bin"); }, ErrorCode::ModelFormat,
               {"encoder.blocks.0.mlp.0.weight", "[16, 64]", "[64, 16]"});
}

}  // namespace
}  // namespace hark::loaders
