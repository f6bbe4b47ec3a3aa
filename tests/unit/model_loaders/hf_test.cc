#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.h"
#include "model/loaders/loaders.h"
#include "model/loaders/names.h"
#include "model/loaders/safetensors.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

using test::expect_error;
using test::small_checkpoint;

TEST(HfNames, MapsEveryKindOfTensor) {
  EXPECT_EQ(hf_to_internal("model.encoder.layers.3.self_attn.q_proj.weight"), "encoder.blocks.3.attn.query.weight");
  EXPECT_EQ(hf_to_internal("model.encoder.layers.0.self_attn.k_proj.weight"), "encoder.blocks.0.attn.key.weight");
  EXPECT_EQ(hf_to_internal("model.decoder.layers.11.encoder_attn.k_proj.weight"), "decoder.blocks.11.cross_attn.key.weight");
  EXPECT_EQ(hf_to_internal("model.decoder.layers.1.encoder_attn_layer_norm.bias"), "decoder.blocks.1.cross_attn_ln.bias");
  EXPECT_EQ(hf_to_internal("model.decoder.layers.1.fc2.bias"), "decoder.blocks.1.mlp.2.bias");
  EXPECT_EQ(hf_to_internal("model.encoder.layers.2.final_layer_norm.weight"), "encoder.blocks.2.mlp_ln.weight");
  EXPECT_EQ(hf_to_internal("model.encoder.embed_positions.weight"), "encoder.positional_embedding");
  EXPECT_EQ(hf_to_internal("model.encoder.layer_norm.bias"), "encoder.ln_post.bias");
  EXPECT_EQ(hf_to_internal("model.decoder.embed_tokens.weight"), "decoder.token_embedding.weight");
  EXPECT_EQ(hf_to_internal("decoder.layer_norm.weight"), "decoder.ln.weight");  // WhisperModel: no "model."
  EXPECT_FALSE(hf_to_internal("proj_out.weight"));
  EXPECT_FALSE(hf_to_internal("model.encoder.layers.x.fc1.weight"));
  EXPECT_FALSE(hf_to_internal("model.encoder.layers.1.lora_A.weight"));
  // Every internal name maps to HF and back.
  for (const auto& [name, shape] : expected_tensors(test::small_hparams())) EXPECT_EQ(hf_to_internal(internal_to_hf(name)), name);
}

TEST(HfLoader, RoundTripIsBitIdenticalInF32) {
  const std::string dir = test::temp_dir("hf-f32");
  save_hf(small_checkpoint(), dir, DType::F32);
  EXPECT_TRUE(looks_like_hf(dir));
  EXPECT_FALSE(looks_like_mlx(dir));
  const auto ckpt = load_checkpoint(dir);  // detection + shape checks
  EXPECT_EQ(ckpt->format, CheckpointFormat::HuggingFace);
  EXPECT_EQ(ckpt->dtype, DType::F32);
  EXPECT_EQ(ckpt->hparams.n_audio_layer, 2);
  EXPECT_EQ(ckpt->hparams.n_audio_ctx, 12);
  test::expect_bit_identical(ckpt->weights, small_checkpoint().weights, ckpt->hparams);
  // The file holds HF names, not internal ones.
  const auto file = SafetensorsFile::open(dir + "/model.safetensors");
  bool saw_q_proj = false;
  for (const auto& e : file.entries()) saw_q_proj |= e.name == "model.encoder.layers.1.self_attn.q_proj.weight";
  EXPECT_TRUE(saw_q_proj);
  EXPECT_EQ(read_json_file(dir + "/config.json")["d_model"], 16);
}

TEST(HfLoader, HalfAndBf16Storage) {
  for (DType dt : {DType::F16, DType::BF16}) {
    const std::string dir = test::temp_dir(std::string("hf-") + dtype_name(dt));
    save_hf(small_checkpoint(), dir, dt);
    const auto ckpt = load_checkpoint(dir);
    EXPECT_EQ(ckpt->dtype, dt);
    EXPECT_EQ(ckpt->weights.get("decoder.blocks.1.mlp.0.weight").dtype(), dt);
    test::expect_values_as(ckpt->weights, small_checkpoint().weights, ckpt->hparams, dt);
    EXPECT_EQ(read_json_file(dir + "/config.json")["torch_dtype"], dt == DType::F16 ? "float16" : "bfloat16");
  }
}

TEST(HfLoader, ShardedRoundTrip) {
  const std::string dir = test::temp_dir("hf-sharded");
  save_hf(small_checkpoint(), dir, DType::F32, 1 << 20);  // ~3.5 MB → several shards
  EXPECT_FALSE(file_exists(dir + "/model.safetensors"));
  const auto index = read_json_file(dir + "/model.safetensors.index.json");
  std::set<std::string> shards;
  for (const auto& [name, file] : index["weight_map"].items()) shards.insert(file.get<std::string>());
  EXPECT_GE(shards.size(), 3u);
  EXPECT_TRUE(shards.count("model-00001-of-0000" + std::to_string(shards.size()) + ".safetensors"));
  EXPECT_EQ(index["metadata"]["total_size"].get<size_t>(), small_checkpoint().weights.nbytes());
  const auto ckpt = load_checkpoint(dir);
  test::expect_bit_identical(ckpt->weights, small_checkpoint().weights, ckpt->hparams);
}

TEST(HfLoader, GenerationConfigGivesAlignmentHeads) {
  const std::string dir = test::temp_dir("hf-genconfig");
  Checkpoint src = small_checkpoint();
  src.alignment_heads = {{1, 0}, {1, 1}};
  src.generation_config = {{"decoder_start_token_id", 50258}};
  save_hf(src, dir, DType::F16);
  const auto ckpt = load_checkpoint(dir);
  EXPECT_EQ(ckpt->alignment_heads, (AlignmentHeads{{1, 0}, {1, 1}}));
  EXPECT_EQ(ckpt->generation_config["decoder_start_token_id"], 50258);
  test::write_binary(dir + "/generation_config.json", R"({"alignment_heads": [[5, 0]]})");
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"generation_config.json", "[5, 0]"});
}

TEST(HfLoader, TiedProjectionAcceptedUntiedRejected) {
  const std::string dir = test::temp_dir("hf-proj");
  save_hf(small_checkpoint(), dir, DType::F32);
  const Tensor emb = small_checkpoint().weights.get("decoder.token_embedding.weight");
  std::vector<NamedTensor> tensors;
  for (const auto& [name, shape] : expected_tensors(small_checkpoint().hparams))
    tensors.push_back({internal_to_hf(name), small_checkpoint().weights.get(name)});
  tensors.push_back({"proj_out.weight", emb});
  write_safetensors(dir + "/model.safetensors", tensors, DType::F32);
  EXPECT_NO_THROW(load_checkpoint(dir));
  tensors.back().tensor = emb.clone();
  tensors.back().tensor.data<float>()[7] += 1.0f;
  write_safetensors(dir + "/model.safetensors", tensors, DType::F32);
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::UnsupportedFormat, {"proj_out.weight", "tied"});
}

// Writes model.safetensors with the small checkpoint's tensors, edited by `edit`.
void write_edited(const std::string& dir, const std::function<void(std::vector<NamedTensor>&)>& edit) {
  save_hf(small_checkpoint(), dir, DType::F32);
  std::vector<NamedTensor> tensors;
  for (const auto& [name, shape] : expected_tensors(small_checkpoint().hparams))
    tensors.push_back({internal_to_hf(name), small_checkpoint().weights.get(name)});
  edit(tensors);
  write_safetensors(dir + "/model.safetensors", tensors, DType::F32);
}

TEST(HfLoader, MissingTensorIsNamed) {
  const std::string dir = test::temp_dir("hf-missing");
  write_edited(dir, [](auto& t) {
    std::erase_if(t, [](const NamedTensor& n) { return n.name == "model.decoder.layers.1.encoder_attn.v_proj.bias"; });
  });
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"decoder.blocks.1.cross_attn.value.bias", "missing"});
}

TEST(HfLoader, MisShapedTensorNamesTensorAndBothShapes) {
  const std::string dir = test::temp_dir("hf-misshaped");
  write_edited(dir, [](auto& t) {
    for (auto& n : t)
      if (n.name == "model.encoder.layers.0.fc1.weight") n.tensor = Tensor::zeros({64, 15});
  });
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat,
               {"encoder.blocks.0.mlp.0.weight", "[64, 15]", "[64, 16]"});
}

TEST(HfLoader, MissingConfigIsClear) {
  const std::string dir = test::temp_dir("hf-noconfig");
  save_hf(small_checkpoint(), dir, DType::F16);
  std::filesystem::remove(dir + "/config.json");
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"no config.json"});
}

TEST(HfLoader, BadConfigIsClear) {
  const std::string dir = test::temp_dir("hf-badconfig");
  save_hf(small_checkpoint(), dir, DType::F16);
  test::write_binary(dir + "/config.json", "{\"d_model\": 16,");
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"config.json", "not valid JSON"});
  test::write_binary(dir + "/config.json", R"({"model_type": "llama", "d_model": 16})");
  expect_error([&] { load_hf(dir); }, ErrorCode::UnsupportedFormat, {"llama"});
  test::write_binary(dir + "/config.json", R"({"model_type": "whisper", "d_model": 16})");
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"config.json"});
}

TEST(HfLoader, BrokenIndexesAreClear) {
  const std::string dir = test::temp_dir("hf-badindex");
  save_hf(small_checkpoint(), dir, DType::F32, 1 << 20);
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string first_shard = read_json_file(index)["weight_map"].begin()->get<std::string>();
  test::write_binary(index, R"({"weight_map": {"model.decoder.layer_norm.weight": "../../etc/passwd"}})");
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"not a plain file name"});
  test::write_binary(index, R"({"weight_map": {"model.decoder.layer_norm.weight": "model-00009-of-00009.safetensors"}})");
  expect_error([&] { load_hf(dir); }, ErrorCode::NotFound, {"model-00009-of-00009.safetensors", "missing"});
  test::write_binary(index, nlohmann::json{{"weight_map", {{"model.decoder.ghost.weight", first_shard}}}}.dump());
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"model.decoder.ghost.weight", "does not hold it"});
  test::write_binary(index, R"({"metadata": {}})");
  expect_error([&] { load_hf(dir); }, ErrorCode::ModelFormat, {"weight_map"});
}

TEST(HfLoader, TruncatedWeightsFileIsClear) {
  const std::string dir = test::temp_dir("hf-truncated");
  save_hf(small_checkpoint(), dir, DType::F32);
  std::filesystem::resize_file(dir + "/model.safetensors", 100000);
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"model.safetensors", "outside"});
  std::filesystem::resize_file(dir + "/model.safetensors", 20);
  expect_error([&] { load_checkpoint(dir); }, ErrorCode::ModelFormat, {"header length"});
}

TEST(HfLoader, WrongDtypeInFileIsClear) {
  const std::string dir = test::temp_dir("hf-wrongdtype");
  save_hf(small_checkpoint(), dir, DType::F32);
  test::write_binary(dir + "/model.safetensors",
                     test::safetensors_image(R"({"model.encoder.conv1.bias":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})",
                                             std::string(16, '\0')));
  expect_error([&] { load_hf(dir); }, ErrorCode::UnsupportedFormat, {"model.encoder.conv1.bias", "I64"});
}

}  // namespace
}  // namespace hark::loaders
