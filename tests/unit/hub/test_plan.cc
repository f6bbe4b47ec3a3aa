// Name parsing, file selection, digests and progress text: the network-free parts of `hark get`.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hark/error.h"
#include "hub/catalog.h"
#include "hub/hash.h"
#include "hub/inspect.h"
#include "hub/paths.h"
#include "hub/plan.h"
#include "hub/progress.h"
#include "hub_fixtures.h"

namespace hark::hub {
namespace {

TEST(HubCatalog, ShortNamesAndAliases) {
  auto turbo = parse_short_name("turbo");
  ASSERT_TRUE(turbo);
  EXPECT_EQ(turbo->entry->hf_repo, "openai/whisper-large-v3-turbo");
  EXPECT_FALSE(turbo->format);
  EXPECT_EQ(parse_short_name("large")->entry->name, "large-v3");
  EXPECT_EQ(parse_short_name("small.en")->entry->hf_repo, "openai/whisper-small.en");
  EXPECT_EQ(parse_short_name("distil-large-v3")->entry->hf_repo, "distil-whisper/distil-large-v3");
  auto ggml = parse_short_name("ggml-large-v3-turbo.bin");
  ASSERT_TRUE(ggml);
  EXPECT_EQ(ggml->entry->name, "large-v3-turbo");
  EXPECT_EQ(*ggml->format, CheckpointFormat::Ggml);
  EXPECT_EQ(*parse_short_name("mlx:tiny")->format, CheckpointFormat::Mlx);
  EXPECT_FALSE(parse_short_name("mlx:ggml-tiny"));
  EXPECT_FALSE(parse_short_name("huge"));
  EXPECT_FALSE(parse_short_name("xx:tiny"));
  EXPECT_EQ(find_catalog_entry_by_source("ggml-base.en")->name, "base.en");
  EXPECT_EQ(find_catalog_entry_by_source("mlx-community/whisper-large-v3-turbo")->name, "large-v3-turbo");
  EXPECT_EQ(find_catalog_entry_by_source("someone/else"), nullptr);
}

TEST(HubPlan, ParsesNamesReposAndUrls) {
  auto t = parse_get_target("turbo", std::nullopt, "main");
  EXPECT_EQ(t.repo, "openai/whisper-large-v3-turbo");
  EXPECT_EQ(t.file, "");
  t = parse_get_target("turbo", CheckpointFormat::Mlx, "main");
  EXPECT_EQ(t.repo, "mlx-community/whisper-large-v3-turbo");
  t = parse_get_target("ggml:small.en", std::nullopt, "main");
  EXPECT_EQ(t.repo, "ggerganov/whisper.cpp");
  EXPECT_EQ(t.file, "ggml-small.en.bin");
  t = parse_get_target("ggerganov/whisper.cpp/ggml-base.bin", std::nullopt, "v1");
  EXPECT_EQ(t.repo, "ggerganov/whisper.cpp");
  EXPECT_EQ(t.file, "ggml-base.bin");
  EXPECT_EQ(t.revision, "v1");
  t = parse_get_target("https://huggingface.co/openai/whisper-tiny", std::nullopt, "main");
  EXPECT_EQ(t.repo, "openai/whisper-tiny");
  EXPECT_EQ(t.endpoint, "https://huggingface.co");
  t = parse_get_target("https://hf-mirror.example/ggerganov/whisper.cpp/resolve/abc/ggml-tiny.bin?download=true",
                       std::nullopt, "main");
  EXPECT_EQ(t.repo, "ggerganov/whisper.cpp");
  EXPECT_EQ(t.revision, "abc");
  EXPECT_EQ(t.file, "ggml-tiny.bin");
  EXPECT_EQ(t.endpoint, "https://hf-mirror.example");
  t = parse_get_target("https://example.com/files/ggml-custom.bin", std::nullopt, "main");
  EXPECT_EQ(t.url, "https://example.com/files/ggml-custom.bin");
  EXPECT_EQ(t.repo, "");

  EXPECT_THROW(parse_get_target("nonsense", std::nullopt, "main"), Error);
  EXPECT_THROW(parse_get_target("a/../b", std::nullopt, "main"), Error);
  EXPECT_THROW(parse_get_target("org/name/../../etc/passwd", std::nullopt, "main"), Error);
  EXPECT_THROW(parse_get_target("distil-small.en", CheckpointFormat::Ggml, "main"), Error);
  EXPECT_THROW(parse_get_target("mlx:tiny", CheckpointFormat::Ggml, "main"), Error);
}

RepoListing listing_of(std::initializer_list<std::string> names) {
  RepoListing listing;
  for (const auto& name : names) listing.files.push_back({name, 1, "", ""});
  return listing;
}

std::vector<std::string> names_of(const std::vector<RemoteFile>& files) {
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  return names;
}

TEST(HubPlan, ChoosesOnlyWhatTheLoaderReadsWithConfigLast) {
  auto hf = listing_of({"README.md", "config.json", "generation_config.json", "model.safetensors", "pytorch_model.bin",
                        "tokenizer.json", "flax_model.msgpack"});
  EXPECT_EQ(names_of(choose_files(hf, "", "r")),
            (std::vector<std::string>{"model.safetensors", "generation_config.json", "config.json"}));
  auto sharded = listing_of({"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                             "model.safetensors.index.json"});
  EXPECT_EQ(names_of(choose_files(sharded, "", "r")),
            (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                      "model.safetensors.index.json", "config.json"}));
  auto mlx = listing_of({"config.json", "weights.npz", "README.md"});
  EXPECT_EQ(names_of(choose_files(mlx, "", "r")), (std::vector<std::string>{"weights.npz", "config.json"}));
  auto ggml = listing_of({"ggml-tiny.bin", "ggml-base.bin", "README.md"});
  EXPECT_EQ(names_of(choose_files(ggml, "ggml-base.bin", "r")), (std::vector<std::string>{"ggml-base.bin"}));

  auto expect_error = [](const RepoListing& listing, const std::string& file, const std::string& fragment) {
    try {
      choose_files(listing, file, "org/repo");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(ggml, "", "hark get org/repo/ggml-tiny.bin");
  expect_error(ggml, "ggml-huge.bin", "ggml-base.bin");
  expect_error(listing_of({"config.json", "pytorch_model.bin"}), "", "PyTorch");
  expect_error(listing_of({"model.safetensors"}), "", "no config.json");
  expect_error(listing_of({"README.md"}), "", "README.md");
}

TEST(HubPlan, ParsesTheHubListingWithLfsHashes) {
  auto json = nlohmann::json::parse(R"({"id":"openai/whisper-tiny","sha":"169d4a43","siblings":[
    {"rfilename":"config.json","blobId":"417aa5c6","size":1983},
    {"rfilename":"model.safetensors","blobId":"ffff","size":151061672,
     "lfs":{"sha256":"7d4b4b7f","size":151061672,"pointerSize":135}},
    {"rfilename":"README.md"}]})");
  auto listing = parse_repo_listing(json);
  EXPECT_EQ(listing.commit, "169d4a43");
  ASSERT_EQ(listing.files.size(), 3u);
  EXPECT_EQ(listing.files[0].git_sha1, "417aa5c6");
  EXPECT_EQ(listing.files[0].size, 1983u);
  EXPECT_EQ(listing.files[1].sha256, "7d4b4b7f");
  EXPECT_EQ(listing.files[1].git_sha1, "");  // the blob id of an LFS file is the pointer's
  EXPECT_EQ(listing.files[1].size, 151061672u);
  EXPECT_EQ(listing.files[2].size, 0u);
  EXPECT_THROW(parse_repo_listing(nlohmann::json::parse(R"({"error":"x"})")), Error);
}

TEST(HubHash, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string dir = test::temp_dir("hash");
  test::write_bytes(dir + "/hello", "hello\n");
  // `git hash-object` of "hello\n".
  EXPECT_EQ(hash_file(dir + "/hello", HashKind::GitBlobSha1), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(hash_file(dir + "/hello", HashKind::Sha256), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  EXPECT_THROW(hash_file(dir + "/missing", HashKind::Sha256), Error);
}

TEST(HubPaths, EnvironmentDecidesTheSearchPaths) {
  test::ScopedHubEnv env("paths");
  env.set("HF_HOME", env.root() + "/hfhome");
  env.set("WHISPER_CPP_MODELS", "/a:/b");
  auto paths = SearchPaths::from_environment();
  EXPECT_EQ(paths.hark_models, env.root() + "/hark/models");
  ASSERT_GE(paths.hf_caches.size(), 2u);
  EXPECT_EQ(paths.hf_caches[0], env.root() + "/hf/hub");
  EXPECT_EQ(paths.hf_caches[1], env.root() + "/hfhome/hub");
  EXPECT_EQ(paths.whisper_cpp[0], "/a");
  EXPECT_EQ(paths.whisper_cpp[1], "/b");
  env.set("HARK_HOME", std::nullopt);
  EXPECT_EQ(hark_home(), env.root() + "/home/.cache/hark");
  EXPECT_EQ(repo_dir_name("openai/whisper-tiny"), "openai--whisper-tiny");
  EXPECT_EQ(repo_id_from_dir_name("openai--whisper-tiny"), "openai/whisper-tiny");
  EXPECT_EQ(repo_id_from_dir_name("plain"), "");
  EXPECT_EQ(expand_home("~/x"), env.root() + "/home/x");
}

TEST(HubProgress, RateEtaAndLineText) {
  RateMeter meter(5.0);
  EXPECT_EQ(meter.bytes_per_second(), 0);
  meter.add(0.0, 0);
  meter.add(1.0, 1'000'000);
  meter.add(2.0, 2'000'000);
  EXPECT_DOUBLE_EQ(meter.bytes_per_second(), 1'000'000);
  meter.add(10.0, 4'000'000);  // the window drops the old samples: 2 MB over 8 s
  EXPECT_DOUBLE_EQ(meter.bytes_per_second(), 250'000);

  EXPECT_EQ(format_duration(7), "0:07");
  EXPECT_EQ(format_duration(754), "12:34");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "--:--");
  EXPECT_EQ(human_bytes(999), "999 B");
  EXPECT_EQ(human_bytes(1'500'000'000), "1.5 GB");

  DownloadProgress p{"model.safetensors", 2, 3, 500'000'000, 1'000'000'000};
  EXPECT_EQ(render_progress_line(p, 50'000'000, 10),
            "[2/3] model.safetensors [#####-----]  50%  500.0 MB/1.0 GB  50.0 MB/s  ETA 0:10");
  p.done = p.total, p.finished = true;
  EXPECT_EQ(render_progress_line(p, 0, 4), "[2/3] model.safetensors [####] 100%  1.0 GB/1.0 GB  done");
  p.total = 0, p.finished = false;
  EXPECT_EQ(render_progress_line(p, 0, 4), "[2/3] model.safetensors  1.0 GB  0 B/s");
}

}  // namespace
}  // namespace hark::hub
