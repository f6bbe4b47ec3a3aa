// Inspection, discovery and model resolution over hand-built model folders.
#include <filesystem>

#include <gtest/gtest.h>

#include "hark/error.h"
#include "hub/discovery.h"
#include "hub/inspect.h"
#include "hub/resolve.h"
#include "hub_fixtures.h"

namespace hark::hub {
namespace {
namespace fs = std::filesystem;
using test::ScopedHubEnv;

// A Hugging Face cache entry: blobs, a snapshot of symlinks, and refs/main.
fs::path make_hf_cache_repo(const fs::path& cache, const std::string& repo, const std::string& commit,
                            const nlohmann::json& config = test::hf_config_tiny()) {
  fs::path folder = cache / hf_cache_folder_name(repo);
  fs::path snapshot = folder / "snapshots" / commit;
  test::write_bytes(folder / "blobs" / "aaa", config.dump());
  test::write_bytes(folder / "blobs" / "bbb", test::make_safetensors("F32", 32));
  fs::create_directories(snapshot);
  fs::create_symlink("../../blobs/aaa", snapshot / "config.json");
  fs::create_symlink("../../blobs/bbb", snapshot / "model.safetensors");
  test::write_bytes(folder / "refs" / "main", commit);
  return snapshot;
}

TEST(HubInspect, ReadsHuggingFaceCheckpoint) {
  ScopedHubEnv env("inspect-hf");
  fs::path dir = env.root() + "/ck";
  test::make_hf_checkpoint(dir);
  auto info = inspect_checkpoint(dir.string());
  ASSERT_TRUE(info);
  EXPECT_EQ(info->format, CheckpointFormat::HuggingFace);
  EXPECT_EQ(info->size_class(), "tiny");
  EXPECT_EQ(info->dtype, "f16");
  EXPECT_EQ(info->hparams.n_vocab, 51865);
  EXPECT_EQ(info->bytes, fs::file_size(dir / "model.safetensors"));
}

TEST(HubInspect, ReadsMlxNpzAndGgml) {
  ScopedHubEnv env("inspect-mlx");
  test::make_mlx_checkpoint(env.root() + "/mlx");
  auto mlx = inspect_checkpoint(env.root() + "/mlx");
  ASSERT_TRUE(mlx);
  EXPECT_EQ(mlx->format, CheckpointFormat::Mlx);
  EXPECT_EQ(mlx->size_class(), "base.en");
  EXPECT_EQ(mlx->dtype, "f16");

  test::make_ggml(env.root() + "/ggml-tiny.en.bin", 0);
  auto ggml = inspect_checkpoint(env.root() + "/ggml-tiny.en.bin");
  ASSERT_TRUE(ggml);
  EXPECT_EQ(ggml->format, CheckpointFormat::Ggml);
  EXPECT_EQ(ggml->size_class(), "tiny.en");
  EXPECT_EQ(ggml->dtype, "f32");
  EXPECT_EQ(ggml->hparams.n_vocab, 51864);
}

TEST(HubInspect, RejectsIncompleteAndUnsupportedCheckpoints) {
  ScopedHubEnv env("inspect-bad");
  std::string why;
  // Truncated safetensors: the header promises more data than the file holds.
  fs::path hf = env.root() + "/truncated";
  test::make_hf_checkpoint(hf);
  fs::resize_file(hf / "model.safetensors", fs::file_size(hf / "model.safetensors") - 10);
  EXPECT_FALSE(inspect_checkpoint(hf.string(), &why));
  EXPECT_NE(why.find("incomplete"), std::string::npos) << why;

  // Sharded checkpoint with one shard missing.
  fs::path sharded = env.root() + "/sharded";
  test::write_bytes(sharded / "config.json", test::hf_config_tiny().dump());
  test::write_bytes(sharded / "model-00001-of-00002.safetensors", test::make_safetensors("F16", 8));
  test::write_bytes(sharded / "model.safetensors.index.json",
                    nlohmann::json{{"weight_map", {{"a", "model-00001-of-00002.safetensors"},
                                                   {"b", "model-00002-of-00002.safetensors"}}}}.dump());
  EXPECT_FALSE(inspect_checkpoint(sharded.string(), &why));
  test::write_bytes(sharded / "model-00002-of-00002.safetensors", test::make_safetensors("F16", 8));
  EXPECT_TRUE(inspect_checkpoint(sharded.string(), &why)) << why;

  // Weights still downloading (only the .part exists), a truncated ggml, ggml types hark
  // does not read,
  // pytorch-only weights and a non-Whisper config.
  fs::path partial = env.root() + "/partial";
  test::write_bytes(partial / "config.json", test::hf_config_tiny().dump());
  test::write_bytes(partial / "model.safetensors.part", test::make_safetensors("F16", 8));
  EXPECT_FALSE(inspect_checkpoint(partial.string(), &why));
  test::make_ggml(env.root() + "/cut.bin", 1, true);
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/cut.bin", &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  test::make_ggml(env.root() + "/q5.bin", 1008);  // q5_0 of ggml's old quantization version 1
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/q5.bin", &why));
  EXPECT_NE(why.find("quantization version 1"), std::string::npos) << why;
  test::make_ggml(env.root() + "/iq2.bin", 2015);  // a type whisper-quantize never writes
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/iq2.bin", &why));
  EXPECT_NE(why.find("ftype 2015"), std::string::npos) << why;
  test::make_ggml(env.root() + "/q8.bin", 2007);  // whisper-quantize's q8_0
  const auto q8 = inspect_checkpoint(env.root() + "/q8.bin", &why);
  ASSERT_TRUE(q8) << why;
  EXPECT_EQ(q8->dtype, "q8_0");
  test::write_bytes(env.root() + "/pt/config.json", test::hf_config_tiny().dump());
  test::write_bytes(env.root() + "/pt/pytorch_model.bin", "x");
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/pt", &why));
  auto bert = test::hf_config_tiny();
  bert["model_type"] = "bert";
  test::make_hf_checkpoint(env.root() + "/bert", bert);
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/bert", &why));
  EXPECT_FALSE(inspect_checkpoint(env.root() + "/missing", &why));
}

TEST(HubDiscovery, FindsHarkHfCacheAndWhisperCppModelsInOrder) {
  ScopedHubEnv env("discover");
  SearchPaths paths = SearchPaths::from_environment();
  ASSERT_EQ(paths.hark_models, env.root() + "/hark/models");
  test::make_hf_checkpoint(paths.hark_models + "/openai--whisper-large-v3-turbo", test::hf_config_turbo());
  make_hf_cache_repo(paths.hf_caches.front(), "openai/whisper-tiny", std::string(40, 'a'));
  test::make_ggml(env.root() + "/whisper.cpp/models/ggml-tiny.en.bin");
  test::make_ggml(env.root() + "/whisper.cpp/models/for-tests-ggml-tiny.bin");  // whisper.cpp's test stubs
  test::write_bytes(env.root() + "/whisper.cpp/models/ggml-base.bin.part", "partial");

  auto models = discover_models(paths);
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].name, "openai/whisper-large-v3-turbo");
  EXPECT_EQ(models[0].source, "hark");
  EXPECT_EQ(models[0].size_class(), "large-v3-turbo");
  EXPECT_EQ(models[0].hparams.n_vocab, 51866);
  EXPECT_EQ(models[1].name, "openai/whisper-tiny");
  EXPECT_EQ(models[1].source, "hf-cache");
  EXPECT_EQ(models[1].dtype, "f32");
  EXPECT_NE(models[1].path.find("/snapshots/" + std::string(40, 'a')), std::string::npos);
  EXPECT_EQ(models[2].name, "ggml-tiny.en");
  EXPECT_EQ(models[2].source, "whisper.cpp");
  EXPECT_EQ(models[2].format, CheckpointFormat::Ggml);
}

TEST(HubDiscovery, FollowsRefsMainToTheCurrentSnapshot) {
  ScopedHubEnv env("refs");
  fs::path cache = env.root() + "/hf/hub";
  make_hf_cache_repo(cache, "openai/whisper-tiny", std::string(40, 'b'));
  fs::path folder = cache / "models--openai--whisper-tiny";
  // An older snapshot that refs/main no longer points at.
  fs::create_directories(folder / "snapshots" / std::string(40, 'c'));
  EXPECT_EQ(hf_cache_snapshot(folder.string()), (folder / "snapshots" / std::string(40, 'b')).string());
  EXPECT_EQ(hf_cache_snapshot((folder / "nothing").string()), "");
}

TEST(HubDiscovery, NeverListsHalfWrittenDownloads) {
  ScopedHubEnv env("halfwritten");
  SearchPaths paths = SearchPaths::from_environment();
  fs::path dir = paths.hark_models + "/openai--whisper-small";
  // `hark get` writes config.json last, but even a folder with config.json and only the
  // .part of the weights, or weights cut short, must stay invisible.
  test::write_bytes(dir / "config.json", test::hf_config_tiny().dump());
  test::write_bytes(dir / "model.safetensors.part", test::make_safetensors("F16", 64));
  test::write_bytes(paths.hark_models + "/ggerganov--whisper.cpp/ggml-base.bin.part", "partial");
  fs::path hf_blob = env.root() + "/hf/hub/models--openai--whisper-base/blobs/x.incomplete";
  test::write_bytes(hf_blob, "partial");
  EXPECT_TRUE(discover_models(paths).empty());

  std::string full = test::make_safetensors("F16", 64);
  test::write_bytes(dir / "model.safetensors", full.substr(0, full.size() / 2));
  EXPECT_TRUE(discover_models(paths).empty());
  test::write_bytes(dir / "model.safetensors", full);
  EXPECT_EQ(discover_models(paths).size(), 1u);
}

TEST(HubResolve, ResolvesPathsRepoIdsAndShortNames) {
  ScopedHubEnv env("resolve");
  SearchPaths paths = SearchPaths::from_environment();
  std::string turbo = paths.hark_models + "/openai--whisper-large-v3-turbo";
  test::make_hf_checkpoint(turbo, test::hf_config_turbo());
  auto tiny = make_hf_cache_repo(paths.hf_caches.front(), "openai/whisper-tiny", std::string(40, 'd'));
  std::string ggml = env.root() + "/whisper.cpp/models/ggml-small.en.bin";
  test::make_ggml(ggml);
  test::make_mlx_checkpoint(paths.hark_models + "/mlx-community--whisper-base.en-mlx");

  EXPECT_EQ(resolve_model("turbo", paths), turbo);
  EXPECT_EQ(resolve_model("large-v3-turbo", paths), turbo);
  EXPECT_EQ(resolve_model("openai/whisper-large-v3-turbo", paths), turbo);
  EXPECT_EQ(resolve_model("tiny", paths), tiny.string());
  EXPECT_EQ(resolve_model("OpenAI/Whisper-Tiny", paths), tiny.string());
  EXPECT_EQ(resolve_model("small.en", paths), ggml);
  EXPECT_EQ(resolve_model("ggml-small.en", paths), ggml);
  EXPECT_EQ(resolve_model("base.en", paths), paths.hark_models + "/mlx-community--whisper-base.en-mlx");
  EXPECT_EQ(resolve_model(turbo, paths), turbo);
  EXPECT_EQ(resolve_model(ggml, paths), ggml);
  // The HF cache folder itself stands for its snapshot.
  EXPECT_EQ(resolve_model(env.root() + "/hf/hub/models--openai--whisper-tiny", paths), tiny.string());
}

TEST(HubResolve, MissingModelNamesTheExactGetCommand) {
  ScopedHubEnv env("resolve-missing");
  SearchPaths paths = SearchPaths::from_environment();
  test::make_ggml(env.root() + "/whisper.cpp/models/ggml-tiny.en.bin");
  auto expect_error = [&](const std::string& spec, ErrorCode code, const std::string& fragment) {
    try {
      resolve_model(spec, paths);
      ADD_FAILURE() << spec << " resolved";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("turbo", ErrorCode::NotFound, "`hark get turbo`");
  EXPECT_NO_THROW(resolve_model("tiny.en", paths));  // the ggml build counts
  expect_error("mlx:tiny.en", ErrorCode::NotFound, "`hark get mlx:tiny.en`");
  expect_error("hf:tiny.en", ErrorCode::NotFound, "same shape");
  expect_error("someone/whisper-custom", ErrorCode::NotFound, "`hark get someone/whisper-custom`");
  expect_error("whatever", ErrorCode::InvalidArgument, "short name");
  expect_error("", ErrorCode::InvalidArgument, "no model");
  expect_error("./no/such/dir", ErrorCode::NotFound, "no such file");
  fs::create_directories(env.root() + "/empty");
  expect_error(env.root() + "/empty", ErrorCode::ModelFormat, "config.json");
}

}  // namespace
}  // namespace hark::hub
