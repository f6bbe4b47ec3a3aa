// Streaming sessions over HTTP: windows transcribed while audio arrives, finish costing at
// most one window, the 404/409/429 codes, DELETE, idle expiry and residency pinning.
#include <nlohmann/json.hpp>

#include "fake_engine.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;

class Sessions : public ServerFixture {
 protected:
  json post_json(const std::string& path, const std::string& body, const std::string& type, int expect = 200) {
    auto r = client().Post(path, body, type);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, expect) << path << ": " << r->body;
    return r->body.empty() ? json() : json::parse(r->body);
  }
};

TEST_F(Sessions, WindowsAreTranscribedWhileAudioArrives) {
  start_server();
  auto opened = post_json("/v1/audio/sessions", R"({"language":"fr","vocabulary":["Sotto"],"response_format":"verbose_json"})",
                          "application/json");
  const std::string id = opened["id"];
  EXPECT_EQ(id.rfind("sess_", 0), 0u);
  EXPECT_EQ(opened["model"], "fake-whisper");
  EXPECT_EQ(opened["vocabulary"], json({"Sotto"}));
  // 62 s in 2 s chunks: windows at 30 s and 60 s complete during the upload.
  json last;
  for (int i = 0; i < 31; ++i) last = post_json("/v1/audio/sessions/" + id + "/audio", pcm_seconds(2), "audio/pcm;rate=16000");
  EXPECT_EQ(last["samples"], 62 * 16000);
  EXPECT_EQ(last["duration"], 62.0);
  EXPECT_EQ(last["segments"].size(), 2u);
  EXPECT_EQ(last["segments"][1]["start"], 30.0);
  EXPECT_EQ(stats.windows_in_feed, 2);
  auto done = post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json");
  EXPECT_EQ(stats.windows_in_finish, 1) << "finish costs at most one window";
  EXPECT_EQ(done["text"], " heard 30.00 seconds heard 30.00 seconds heard 2.00 seconds");
  EXPECT_EQ(done["language"], "fr");
  EXPECT_EQ(done["segments"].size(), 3u);
  EXPECT_EQ(done["hark"]["vocabulary"]["included"], json({"Sotto"}));
  // A batch transcription of the same audio gives the same text.
  httplib::MultipartFormDataItems items = {{"file", make_wav(62.0), "a.wav", "audio/wav"}, {"language", "fr", "", ""}};
  EXPECT_EQ(json::parse(client().Post("/v1/audio/transcriptions", items)->body)["text"], done["text"]);
  post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json", 409);
  EXPECT_EQ(client().Delete("/v1/audio/sessions/" + id)->status, 204);
  post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json", 404);
}

TEST_F(Sessions, ContainerChunksAreDecoded) {
  start_server();
  const std::string id = post_json("/v1/audio/sessions", "", "application/json")["id"];
  auto r = post_json("/v1/audio/sessions/" + id + "/audio", make_wav(1.0), "audio/wav");
  EXPECT_EQ(r["samples"], 16000);
  EXPECT_EQ(r["speech"], true);
  EXPECT_EQ(post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json")["text"], " heard 1.00 seconds");
}

TEST_F(Sessions, PartialPreviewsOnlyTheAudioAfterTheLastFinalSegment) {
  start_server();
  const std::string id = post_json("/v1/audio/sessions", "{}", "application/json")["id"];
  const std::string audio = "/v1/audio/sessions/" + id + "/audio";
  auto plain = post_json(audio, pcm_seconds(0.2), "audio/pcm;rate=16000");
  EXPECT_FALSE(plain.contains("partial")) << "previews are opt-in";
  EXPECT_EQ(post_json(audio + "?partial=1", pcm_seconds(0.01), "audio/pcm;rate=16000")["partial"], "")
      << "under a second there is nothing to preview";
  EXPECT_EQ(post_json(audio + "?partial=1", pcm_seconds(1.79), "audio/pcm;rate=16000")["partial"], " heard 2.00 seconds");
  EXPECT_EQ(post_json(audio + "?partial=0", pcm_seconds(2), "audio/pcm;rate=16000").contains("partial"), false);
  // 30 s complete the first window: its segment is final and leaves the preview.
  for (int i = 0; i < 13; ++i) post_json(audio, pcm_seconds(2), "audio/pcm;rate=16000");
  auto r = post_json(audio + "?partial=true", pcm_seconds(1.5), "audio/pcm;rate=16000");
  EXPECT_EQ(r["segments"].size(), 1u);
  EXPECT_EQ(r["partial"], " heard 1.50 seconds");
  // A preview commits nothing: the final text is the windows alone.
  EXPECT_EQ(post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json")["text"],
            " heard 30.00 seconds heard 1.50 seconds");
}

TEST_F(Sessions, TaskFieldSelectsTranslation) {
  start_server();
  const std::string id = post_json("/v1/audio/sessions", R"({"task":"translate","response_format":"verbose_json"})",
                                    "application/json")["id"];
  post_json("/v1/audio/sessions/" + id + "/audio", pcm_seconds(1), "audio/pcm;rate=16000");
  auto done = post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json");
  EXPECT_EQ(done["task"], "translate");
  auto bad = post_json("/v1/audio/sessions", R"({"task":"summarize"})", "application/json", 400);
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("'task' must be transcribe or translate"), std::string::npos);
}

TEST_F(Sessions, SixtyFourOpenThenTooManyRequests) {
  start_server();
  std::vector<std::string> ids;
  for (int i = 0; i < 64; ++i) ids.push_back(post_json("/v1/audio/sessions", "{}", "application/json")["id"]);
  auto r = post_json("/v1/audio/sessions", "{}", "application/json", 429);
  EXPECT_EQ(r["error"]["code"], "too_many_sessions");
  // Finishing one frees its slot (finished sessions are not open).
  post_json("/v1/audio/sessions/" + ids[0] + "/audio", pcm_seconds(0.5), "audio/pcm;rate=16000");
  post_json("/v1/audio/sessions/" + ids[0] + "/finish", "", "application/json");
  post_json("/v1/audio/sessions", "{}", "application/json");
  EXPECT_EQ(json::parse(client().Get("/stats")->body)["sessions"]["open"], 64);
}

TEST_F(Sessions, IdleSessionsExpireAndReleaseTheModel) {
  ServerOptions o;
  o.session_idle_sec = 0.2;
  o.residency.idle_unload_sec = 0.1;
  start_server(o);
  const std::string id = post_json("/v1/audio/sessions", "{}", "application/json")["id"];
  // Any call on the session would refresh it, so watch /stats instead.
  for (int i = 0; i < 300 && json::parse(client().Get("/stats")->body)["sessions"]["open"] != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  post_json("/v1/audio/sessions/" + id + "/finish", "", "application/json", 404);
  // With the session gone the weights page out after --idle-unload.
  for (int i = 0; i < 300 && stats.closed == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(stats.closed, 1);
  EXPECT_EQ(json::parse(client().Get("/health")->body)["transcription"]["unloads"], 1);
}

TEST_F(Sessions, OpenSessionPinsTheModelAgainstUnload) {
  start_server();
  const std::string id = post_json("/v1/audio/sessions", "{}", "application/json")["id"];
  auto unload = post_json("/admin/transcription/unload", "", "application/json");
  EXPECT_EQ(unload["unloaded"], false);
  EXPECT_EQ(unload["resident"], true);
  EXPECT_EQ(client().Delete("/v1/audio/sessions/" + id)->status, 204);
  EXPECT_EQ(post_json("/admin/transcription/unload", "", "application/json")["unloaded"], true);
}

TEST_F(Sessions, StopDrainsInFlightWork) {
  start_server();
  stats.delay_ms = 300;
  std::atomic<int> status{0};
  std::thread request([&] {
    httplib::MultipartFormDataItems items = {{"file", make_wav(1.0), "a.wav", "audio/wav"}};
    auto r = client().Post("/v1/audio/transcriptions", items);
    status = r ? r->status : -1;
  });
  for (int i = 0; i < 200 && stats.running == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server->stop();  // returns once the in-flight request has been answered
  request.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(stats.transcribed, 1);
  EXPECT_EQ(stats.closed, 1) << "the engine was released at shutdown";
}

}  // namespace
}  // namespace hark::serve::test
