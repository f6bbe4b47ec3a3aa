// `hark get` against a local fake hub: full download, resume, checksum, auth and I/O errors.
#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "fake_hub.h"
#include "hark/error.h"
#include "hub/discovery.h"
#include "hub/download.h"
#include "hub/resolve.h"
#include "hub_fixtures.h"

namespace hark::hub {
namespace {
namespace fs = std::filesystem;

class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = test::make_safetensors("F16", 200'000, 7);  // 400 kB, enough to cut in the middle
    config_ = test::hf_config_tiny().dump();
    hub_.add("openai/whisper-test", "config.json", config_, false);
    hub_.add("openai/whisper-test", "generation_config.json", R"({"alignment_heads":[[2,2]]})", false);
    hub_.add("openai/whisper-test", "model.safetensors", weights_);
    hub_.add("openai/whisper-test", "pytorch_model.bin", "not wanted");
    hub_.add("openai/whisper-test", "tokenizer.json", "not wanted", false);
    hub_.add("ggerganov/whisper.cpp", "ggml-tiny.bin", std::string(5000, 'g'));
    hub_.add("plain/files", "ggml-custom.bin", std::string(3000, 'p'));
  }

  GetOptions options(const std::string& name) {
    GetOptions o;
    o.name = name;
    o.endpoint = hub_.endpoint();
    o.retry_delay_s = 0.01;
    o.max_retries = 0;
    o.http.connect_timeout_s = 5;
    o.http.stall_timeout_s = 5;
    o.on_progress = [this](const DownloadProgress& p) { progress_.push_back(p); };
    o.on_message = [this](const std::string& m) { messages_.push_back(m); };
    return o;
  }

  std::string model_dir() const { return env_.root() + "/hark/models/openai--whisper-test"; }

  std::string error_of(const GetOptions& o, ErrorCode expected_code) {
    try {
      get_model(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), expected_code) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "get_model succeeded";
    return "";
  }

  test::ScopedHubEnv env_{"download"};
  test::FakeHub hub_;
  std::string weights_, config_;
  std::vector<DownloadProgress> progress_;
  std::vector<std::string> messages_;
};

TEST_F(HubDownload, FetchesOnlyTheLoaderFilesAndVerifiesThem) {
  GetResult result = get_model(options("openai/whisper-test"));
  EXPECT_EQ(result.path, model_dir());
  EXPECT_EQ(result.commit, hub_.commit);
  EXPECT_EQ(result.downloaded,
            (std::vector<std::string>{"model.safetensors", "generation_config.json", "config.json"}));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
  EXPECT_EQ(test::read_file(model_dir() + "/config.json"), config_);
  EXPECT_FALSE(fs::exists(model_dir() + "/pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(model_dir() + "/tokenizer.json"));
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors.part"));
  ASSERT_FALSE(progress_.empty());
  EXPECT_TRUE(progress_.back().finished);
  EXPECT_EQ(progress_.back().index, 3);
  int finished = 0;
  for (const auto& p : progress_) finished += p.finished;
  EXPECT_EQ(finished, 3);

  // The download is now a discoverable, resolvable checkpoint.
  auto models = discover_models(SearchPaths::from_environment());
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "openai/whisper-test");
  EXPECT_EQ(resolve_model("openai/whisper-test"), model_dir());

  // A second get finds it on disk and fetches nothing; into an explicit --dir, the
  // verified files already there are reused.
  int requests = hub_.file_requests();
  EXPECT_TRUE(get_model(options("openai/whisper-test")).already_on_disk);
  GetOptions again = options("openai/whisper-test");
  again.dir = model_dir();
  GetResult reused = get_model(again);
  EXPECT_EQ(reused.reused.size(), 3u);
  EXPECT_TRUE(reused.downloaded.empty());
  EXPECT_EQ(hub_.file_requests(), requests);
}

TEST_F(HubDownload, ResumesWithinOneRunAfterADroppedConnection) {
  hub_.drop_at = static_cast<long>(weights_.size() / 2);
  GetOptions o = options("openai/whisper-test");
  o.max_retries = 2;
  get_model(o);
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
  auto ranges = hub_.ranges();
  ASSERT_GE(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(weights_.size() / 2) + "-");
}

TEST_F(HubDownload, ResumesInALaterRunFromThePartFile) {
  hub_.drop_at = static_cast<long>(weights_.size() / 2);
  std::string message = error_of(options("openai/whisper-test"), ErrorCode::Network);
  EXPECT_NE(message.find("resume"), std::string::npos) << message;
  std::string part = model_dir() + "/model.safetensors.part";
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), weights_.size() / 2);
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(model_dir() + "/config.json"));  // config comes last
  EXPECT_TRUE(discover_models(SearchPaths::from_environment()).empty());

  get_model(options("openai/whisper-test"));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
  EXPECT_EQ(hub_.ranges().back().empty(), true);  // config.json: a fresh GET
  bool resumed = false;
  for (const auto& r : hub_.ranges()) resumed |= r == "bytes=" + std::to_string(weights_.size() / 2) + "-";
  EXPECT_TRUE(resumed);
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(HubDownload, MirrorWithoutLfsMetadataIsVerifiedFromTheHeaders) {
  hub_.thin_listing = true;
  get_model(options("openai/whisper-test"));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
  hub_.corrupt_file = "model.safetensors";
  GetOptions again = options("openai/whisper-test");
  again.dir = env_.root() + "/again";
  error_of(again, ErrorCode::Checksum);
}

TEST_F(HubDownload, StartsOverWhenTheServerIgnoresTheRange) {
  fs::create_directories(model_dir());
  test::write_bytes(model_dir() + "/model.safetensors.part", weights_.substr(0, 1000));
  hub_.ignore_range = true;
  get_model(options("openai/whisper-test"));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
}

TEST_F(HubDownload, ChecksumMismatchRemovesTheBadFile) {
  hub_.corrupt_file = "model.safetensors";
  std::string message = error_of(options("openai/whisper-test"), ErrorCode::Checksum);
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("removed"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors.part"));
  EXPECT_TRUE(discover_models(SearchPaths::from_environment()).empty());
}

TEST_F(HubDownload, GatedRepoNeedsAToken) {
  hub_.gated_repo = "openai/whisper-test";
  std::string message = error_of(options("openai/whisper-test"), ErrorCode::Unavailable);
  EXPECT_NE(message.find("401"), std::string::npos) << message;
  EXPECT_NE(message.find("gated"), std::string::npos) << message;
  EXPECT_NE(message.find("--token"), std::string::npos) << message;
  EXPECT_NE(message.find("HF_TOKEN"), std::string::npos) << message;

  GetOptions wrong = options("openai/whisper-test");
  wrong.token = "hf_wrong";
  message = error_of(wrong, ErrorCode::Unavailable);
  EXPECT_NE(message.find("rejected the token"), std::string::npos) << message;

  env_.set("HF_TOKEN", std::string("hf_secret"));
  get_model(options("openai/whisper-test"));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
  EXPECT_EQ(hub_.authorizations().back(), "Bearer hf_secret");
}

TEST_F(HubDownload, MissingRepoRevisionAndFileSay404) {
  std::string message = error_of(options("openai/whisper-nope"), ErrorCode::NotFound);
  EXPECT_NE(message.find("404"), std::string::npos) << message;
  EXPECT_NE(message.find("openai/whisper-nope"), std::string::npos) << message;
  GetOptions revision = options("openai/whisper-test");
  revision.revision = "v9";
  message = error_of(revision, ErrorCode::NotFound);
  EXPECT_NE(message.find("revision 'v9'"), std::string::npos) << message;
  message = error_of(options("ggerganov/whisper.cpp/ggml-huge.bin"), ErrorCode::NotFound);
  EXPECT_NE(message.find("ggml-tiny.bin"), std::string::npos) << message;
}

TEST_F(HubDownload, UnwritableTargetIsAClearIoError) {
  // Root ignores permission bits, so use a folder "inside" a regular file.
  test::write_bytes(env_.root() + "/a-file", "x");
  GetOptions o = options("openai/whisper-test");
  o.dir = env_.root() + "/a-file/models";
  std::string message = error_of(o, ErrorCode::Io);
  EXPECT_NE(message.find("--dir"), std::string::npos) << message;
  EXPECT_NE(message.find("a-file/models"), std::string::npos) << message;
}

TEST_F(HubDownload, FailedWriteIsAClearIoErrorAndKeepsThePart) {
  // A file-size limit makes write() fail the way a full disk does.
  struct rlimit old_limit;
  getrlimit(RLIMIT_FSIZE, &old_limit);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {100'000, old_limit.rlim_max};
  setrlimit(RLIMIT_FSIZE, &limit);
  std::string message = error_of(options("openai/whisper-test"), ErrorCode::Io);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("model.safetensors.part"), std::string::npos) << message;
  EXPECT_NE(message.find("size limit"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors"));
}

TEST_F(HubDownload, AProgressCallbackCanCancelAndTheRunResumesLater) {
  GetOptions o = options("openai/whisper-test");
  o.on_progress = [](const DownloadProgress& p) {
    if (p.done > 0 && !p.finished) throw Error(ErrorCode::Cancelled, "[get] cancelled");
  };
  error_of(o, ErrorCode::Cancelled);
  EXPECT_TRUE(fs::exists(model_dir() + "/model.safetensors.part"));
  EXPECT_FALSE(fs::exists(model_dir() + "/model.safetensors"));
  get_model(options("openai/whisper-test"));
  EXPECT_EQ(test::read_file(model_dir() + "/model.safetensors"), weights_);
}

TEST_F(HubDownload, UnreachableHostSaysTheNetworkIsDown) {
  GetOptions o = options("openai/whisper-test");
  {
    test::FakeHub closed;  // take a free port, then close it
    o.endpoint = closed.endpoint();
  }
  std::string message = error_of(o, ErrorCode::Network);
  EXPECT_NE(message.find("cannot reach 127.0.0.1"), std::string::npos) << message;
  EXPECT_NE(message.find("HF_ENDPOINT"), std::string::npos) << message;
}

TEST_F(HubDownload, AShortNameIsSatisfiedByAnyBuildOnDisk) {
  test::make_ggml(env_.root() + "/whisper.cpp/models/ggml-tiny.bin", 1, false, 51865);
  GetResult result = get_model(options("tiny"));
  EXPECT_TRUE(result.already_on_disk);
  EXPECT_EQ(result.path, env_.root() + "/whisper.cpp/models/ggml-tiny.bin");
  EXPECT_EQ(hub_.file_requests(), 0);
  // Asking for a specific build still fetches it (here it is not on the fake hub: 404).
  error_of(options("hf:tiny"), ErrorCode::NotFound);
}

TEST_F(HubDownload, GgmlShortNameHubUrlAndPlainUrl) {
  GetResult ggml = get_model(options("ggml:tiny"));
  EXPECT_EQ(ggml.path, env_.root() + "/hark/models/ggerganov--whisper.cpp/ggml-tiny.bin");
  EXPECT_EQ(test::read_file(ggml.path), std::string(5000, 'g'));

  GetOptions from_url = options(hub_.endpoint() + "/openai/whisper-test/resolve/main/config.json");
  from_url.endpoint = "http://127.0.0.1:1";  // the URL's own host wins
  from_url.dir = env_.root() + "/url";
  EXPECT_EQ(get_model(from_url).path, env_.root() + "/url/config.json");
  EXPECT_EQ(test::read_file(env_.root() + "/url/config.json"), config_);

  GetOptions plain = options(hub_.endpoint() + "/plain/ggml-custom.bin");
  GetResult result = get_model(plain);
  EXPECT_EQ(result.path, env_.root() + "/hark/models/ggml-custom.bin");
  EXPECT_EQ(test::read_file(result.path), std::string(3000, 'p'));

  hub_.corrupt_file = "ggml-custom.bin";  // checked against X-Linked-Etag
  plain.dir = env_.root() + "/plain2";
  error_of(plain, ErrorCode::Checksum);
  EXPECT_FALSE(fs::exists(env_.root() + "/plain2/ggml-custom.bin"));
}

}  // namespace
}  // namespace hark::hub
