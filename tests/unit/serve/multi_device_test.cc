// Several engine workers in one server (`hark serve --device cuda:0,cuda:1`): one-shot
// transcriptions go to the least loaded worker, a streaming session stays on the worker
// that holds its state, and /health, /stats and /metrics report every device. Fake
// engines stand in for the GPUs, one FakeEngineStats per device.
#include <nlohmann/json.hpp>

#include <future>

#include "fake_engine.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;

class MultiDevice : public ::testing::Test {
 protected:
  void start_server() {
    ServerDeps deps;
    deps.decode_audio = fake_decode;
    for (int i = 0; i < 2; ++i)
      deps.device_engines.emplace_back("gpu" + std::to_string(i),
                                       [this, i]() -> std::unique_ptr<Engine> { return std::make_unique<FakeEngine>(stats[i]); });
    server = std::make_unique<Server>(loopback({}), deps);
    port = server->start();
  }
  void TearDown() override {
    if (server) server->stop();
  }
  httplib::Client client() { return loopback_client(port); }
  json post(const std::string& path, const std::string& body, const std::string& type) {
    auto r = client().Post(path, body, type);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return r->body.empty() ? json() : json::parse(r->body);
  }
  int transcribe() {
    httplib::MultipartFormDataItems items = {{"file", make_wav(1.0), "clip.wav", "audio/wav"}};
    auto r = client().Post("/v1/audio/transcriptions", items);
    return r ? r->status : -1;
  }
  FakeEngineStats stats[2];
  std::unique_ptr<Server> server;
  int port = 0;
};

TEST_F(MultiDevice, ConcurrentRequestsGoToTheIdleDevice) {
  stats[0].delay_ms = 600;
  stats[1].delay_ms = 600;
  start_server();
  // Each fake engine runs one job at a time: while the first request holds one device the
  // second must go to the other, not queue behind it.
  auto first = std::async(std::launch::async, [&] { return transcribe(); });
  while (stats[0].running + stats[1].running == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto second = std::async(std::launch::async, [&] { return transcribe(); });
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(second.get(), 200);
  EXPECT_EQ(stats[0].transcribed, 1);
  EXPECT_EQ(stats[1].transcribed, 1);
  EXPECT_EQ(stats[0].max_running, 1);
  EXPECT_EQ(stats[1].max_running, 1);
  // Both devices loaded their own engine.
  EXPECT_EQ(stats[0].opened, 1);
  EXPECT_EQ(stats[1].opened, 1);
}

TEST_F(MultiDevice, ABrokenDeviceDoesNotDrawTheTraffic) {
  // A failing GPU answers at once, so it is always the least loaded: without the fault
  // quarantine every request would go to it and fail.
  stats[0].fail_transcribe = true;
  start_server();
  int failed = 0, served = 0;
  for (int i = 0; i < 12; ++i) (transcribe() == 200 ? served : failed)++;
  EXPECT_EQ(failed, EngineWorker::kFaultStreak);  // then the router passes device 0 over
  EXPECT_EQ(served, 12 - EngineWorker::kFaultStreak);
  EXPECT_EQ(stats[1].transcribed, served);
  // When every device is failing, requests still go somewhere (and fail with the cause).
  stats[1].fail_transcribe = true;
  for (int i = 0; i < EngineWorker::kFaultStreak; ++i) EXPECT_EQ(transcribe(), 500);
  EXPECT_EQ(transcribe(), 500);
}

TEST_F(MultiDevice, SessionsStayOnTheDeviceThatHoldsThem) {
  start_server();
  const std::string a = post("/v1/audio/sessions", "{}", "application/json")["id"];
  const std::string b = post("/v1/audio/sessions", "{}", "application/json")["id"];
  // An open session counts as load: the second one opens on the other device.
  json health = json::parse(client().Get("/health")->body);
  ASSERT_EQ(health["devices"].size(), 2u);
  EXPECT_EQ(health["devices"][0]["sessions"], 1);
  EXPECT_EQ(health["devices"][1]["sessions"], 1);
  // 31 s to session a: one window on its device only; then 62 s to session b.
  for (int i = 0; i < 31; ++i) post("/v1/audio/sessions/" + a + "/audio", pcm_seconds(1), "audio/pcm;rate=16000");
  const int a_device = stats[0].windows_in_feed == 1 ? 0 : 1;
  EXPECT_EQ(stats[a_device].windows_in_feed, 1);
  EXPECT_EQ(stats[1 - a_device].windows_in_feed, 0);
  for (int i = 0; i < 31; ++i) post("/v1/audio/sessions/" + b + "/audio", pcm_seconds(2), "audio/pcm;rate=16000");
  EXPECT_EQ(stats[a_device].windows_in_feed, 1);
  EXPECT_EQ(stats[1 - a_device].windows_in_feed, 2);
  // One-shot work in between goes elsewhere, and the sessions still finish where they live.
  EXPECT_EQ(transcribe(), 200);
  EXPECT_EQ(post("/v1/audio/sessions/" + a + "/finish", "", "application/json")["text"],
            " heard 30.00 seconds heard 1.00 seconds");
  EXPECT_EQ(stats[a_device].windows_in_finish, 1);
  EXPECT_EQ(client().Delete("/v1/audio/sessions/" + b)->status, 204);
  EXPECT_EQ(stats[1 - a_device].windows_in_finish, 0);
}

TEST_F(MultiDevice, HealthStatsAndMetricsReportEveryDevice) {
  start_server();
  EXPECT_EQ(transcribe(), 200);
  json health = json::parse(client().Get("/health")->body);
  ASSERT_EQ(health["devices"].size(), 2u);
  EXPECT_EQ(health["devices"][0]["device"], "gpu0");
  EXPECT_EQ(health["devices"][1]["device"], "gpu1");
  // The totals add the devices up: one request, one load.
  EXPECT_EQ(health["transcription"]["requests"], 1);
  EXPECT_EQ(health["transcription"]["loads"], 1);
  json stats_body = json::parse(client().Get("/stats")->body);
  EXPECT_EQ(stats_body["devices"].size(), 2u);
  const std::string metrics = client().Get("/metrics")->body;
  for (const char* line : {"hark_device_queue_depth{device=\"gpu0\"} 0", "hark_device_queue_depth{device=\"gpu1\"} 0",
                           "hark_device_jobs_running{device=\"gpu1\"} 0", "hark_device_sessions_open{device=\"gpu0\"} 0",
                           "# TYPE hark_device_model_resident gauge"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line;
  // Unloading pages out every device.
  auto r = client().Post("/admin/transcription/unload", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["resident"], false);
}

}  // namespace
}  // namespace hark::serve::test
