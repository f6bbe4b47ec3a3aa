// Two GPUs in one process (`hark serve --device cuda:0,cuda:1`): an engine on the second
// GPU, loaded on one thread and used from others (the server's job threads), gives the
// same tokens as the first GPU's engine. The CUDA runtime's current device is per thread,
// so a thread that never chose the second GPU would allocate on the first and hand those
// pointers to the second GPU's stream ("invalid argument"), which is what this guards.
// A one-job engine is used from several threads in turn (the server queues its jobs); a
// batching engine from several at once, within the fast path's two-token rule of the
// first GPU's tokens (batch composition may move an f16 rounding). Skips without two GPUs.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "core/backend.h"
#include "hark/engine.h"
#include "test_support.h"
#include "token_distance.h"

namespace hark {
namespace {

std::unique_ptr<Engine> open_on(const std::string& device, int max_batch = 1) {
  EngineOptions o;
  o.max_batch = max_batch;
  o.model = std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech";
  o.device = device;
  o.compute_type = "f16";
  o.threads = 2;
  return Engine::open(o);
}

std::vector<int> tokens_of(Engine& engine, const std::vector<float>& audio) {
  TranscribeOptions options;
  options.temperatures = {0.0f};
  std::vector<int> out;
  for (const Segment& s : engine.transcribe(audio, options).segments) out.insert(out.end(), s.tokens.begin(), s.tokens.end());
  return out;
}

TEST(TwoGpus, AnEngineOnTheSecondGpuWorksFromAnyThread) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two CUDA GPUs";
  std::vector<std::vector<float>> clips;
  for (const auto& ref : nlohmann::json::parse(test::read_file(test::data_path("toy-eval/references.json"))))
    clips.push_back(decode_audio_file(test::data_path("toy-eval/" + std::string(ref["file"]))));
  ASSERT_FALSE(clips.empty());

  auto first = open_on("cuda:0");
  std::vector<std::vector<int>> expected;
  for (const auto& clip : clips) expected.push_back(tokens_of(*first, clip));

  // Loaded on a thread of its own, as the server's first job loads it, then used from
  // other threads in turn, and from this one (whose current device is the first GPU).
  std::unique_ptr<Engine> second = std::async(std::launch::async, [] { return open_on("cuda:1"); }).get();
  for (size_t i = 0; i < clips.size(); ++i) {
    auto got = std::async(std::launch::async, [&] { return tokens_of(*second, clips[i]); }).get();
    EXPECT_EQ(got, expected[i]) << "clip " << i;
  }
  EXPECT_EQ(tokens_of(*second, clips[0]), expected[0]);

  // A batching engine on the second GPU, from two threads at once.
  std::unique_ptr<Engine> batching = std::async(std::launch::async, [] { return open_on("cuda:1", 16); }).get();
  auto half = [&](size_t parity) {
    std::vector<std::pair<size_t, std::vector<int>>> got;
    for (size_t i = parity; i < clips.size(); i += 2) got.emplace_back(i, tokens_of(*batching, clips[i]));
    return got;
  };
  auto a = std::async(std::launch::async, half, 0), b = std::async(std::launch::async, half, 1);
  size_t checked = 0;
  for (auto* f : {&a, &b})
    for (const auto& [i, tokens] : f->get()) {
      EXPECT_LE(test::edit_distance(tokens, expected[i]), 2) << "clip " << i;
      ++checked;
    }
  EXPECT_EQ(checked, clips.size());
}

}  // namespace
}  // namespace hark
