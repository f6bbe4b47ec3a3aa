// Route-by-route tests against a Server on 127.0.0.1 with the fake engine.
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "serve/base64.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;

httplib::MultipartFormDataItems upload(const std::string& wav, std::vector<std::pair<std::string, std::string>> fields = {}) {
  httplib::MultipartFormDataItems items = {{"file", wav, "clip.wav", "audio/wav"}};
  for (auto& [k, v] : fields) items.push_back({k, v, "", ""});
  return items;
}

class Routes : public ServerFixture {
 protected:
  void SetUp() override { start_server(); }
};

TEST_F(Routes, MultipartTranscriptionJson) {
  auto c = client();
  auto r = c.Post("/v1/audio/transcriptions", upload(make_wav(1.5), {{"model", "whisper-1"}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(r->get_header_value("x-hark-language"), "en");
  EXPECT_NE(r->get_header_value("x-hark-timings").find("load_ms="), std::string::npos);
  auto j = json::parse(r->body);
  EXPECT_EQ(j["text"], " heard 1.50 seconds");
  EXPECT_EQ(j["hark"]["model"], "fake-whisper");
  EXPECT_EQ(j["hark"]["duration"], 1.5);
  EXPECT_GT(j["hark"]["timings"]["load_ms"].get<double>(), 0.0) << "the first request paged the weights in";
  auto again = json::parse(c.Post("/v1/audio/transcriptions", upload(make_wav(2.0)))->body);
  EXPECT_EQ(again["hark"]["timings"]["load_ms"], 0.0) << "weights were already resident";
  EXPECT_EQ(again["text"], " heard 2.00 seconds");
}

TEST_F(Routes, JsonBodyWithBase64AndDataUrl) {
  auto c = client();
  json body = {{"file", base64_encode(make_wav(1.0))}, {"language", "de"}, {"response_format", "verbose_json"}};
  auto r = c.Post("/v1/audio/transcriptions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["language"], "de");
  EXPECT_EQ(j["task"], "transcribe");
  EXPECT_EQ(j["segments"].size(), 1u);
  EXPECT_EQ(j["segments"][0]["end"], 1.0);
  body = {{"input_audio", {{"data", "data:audio/wav;base64," + base64_encode(make_wav(0.5))}}}};
  r = c.Post("/v1/audio/transcriptions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["text"], " heard 0.50 seconds");
}

TEST_F(Routes, TranslationsRunTheTranslateTask) {
  auto r = client().Post("/v1/audio/translations", upload(make_wav(1.0), {{"response_format", "verbose_json"}}));
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["task"], "translate");
}

TEST_F(Routes, EveryResponseFormatHasItsContentType) {
  auto c = client();
  const std::pair<const char*, const char*> formats[] = {{"text", "text/plain; charset=utf-8"},
                                                         {"srt", "application/x-subrip"},
                                                         {"vtt", "text/vtt"},
                                                         {"verbose_json", "application/json"}};
  for (auto [format, type] : formats) {
    auto r = c.Post("/v1/audio/transcriptions", upload(make_wav(31.0), {{"response_format", format}}));
    ASSERT_EQ(r->status, 200) << format << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), type) << format;
    EXPECT_EQ(r->get_header_value("x-hark-language"), "en");
  }
  auto srt = c.Post("/v1/audio/transcriptions", upload(make_wav(31.0), {{"response_format", "srt"}}));
  EXPECT_EQ(srt->body, "1\n00:00:00,000 --> 00:00:30,000\nheard 30.00 seconds\n\n"
                       "2\n00:00:30,000 --> 00:00:31,000\nheard 1.00 seconds\n\n");
  auto text = c.Post("/v1/audio/transcriptions", upload(make_wav(1.0), {{"response_format", "text"}}));
  EXPECT_EQ(text->body, " heard 1.00 seconds\n");
}

TEST_F(Routes, WordGranularityAddsWordsAtBothLevels) {
  auto r = client().Post("/v1/audio/transcriptions",
                         upload(make_wav(1.0), {{"response_format", "verbose_json"}, {"timestamp_granularities[]", "word"},
                                                {"timestamp_granularities[]", "segment"}}));
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  ASSERT_EQ(j["words"].size(), 1u);
  EXPECT_EQ(j["words"][0]["word"], " heard 1.00 seconds");
  EXPECT_EQ(j["segments"][0]["words"].size(), 1u);
}

TEST_F(Routes, VocabularyAndVadReports) {
  auto r = client().Post("/v1/audio/transcriptions",
                         upload(make_wav(1.0), {{"vocabulary", "Sotto,SwiftUI"}, {"vad", "true"}}));
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["hark"]["vocabulary"]["included"], json({"Sotto", "SwiftUI"}));
  EXPECT_EQ(j["hark"]["vocabulary"]["token_budget"], 223);
  EXPECT_EQ(j["hark"]["vad"]["speech"], true);
}

TEST_F(Routes, StreamingSendsDeltasProgressAndDone) {
  auto r = client().Post("/v1/audio/transcriptions", upload(make_wav(61.0), {{"stream", "true"}}));
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<json> events;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    size_t end = r->body.find("\n\n", pos);
    events.push_back(json::parse(r->body.substr(pos + 6, end - pos - 6)));
    pos = end;
  }
  std::vector<std::string> types;
  for (auto& e : events) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"transcript.progress", "transcript.text.delta", "transcript.progress",
                                             "transcript.text.delta", "transcript.progress", "transcript.text.delta",
                                             "transcript.text.done"}));
  EXPECT_EQ(events[1]["delta"], " heard 30.00 seconds");
  EXPECT_EQ(events[5]["segment"]["start"], 60.0);
  EXPECT_EQ(events[4]["done"], 6100);
  EXPECT_EQ(events[4]["total"], 6100);
  EXPECT_EQ(events.back()["text"], " heard 30.00 seconds heard 30.00 seconds heard 1.00 seconds");
  EXPECT_EQ(events.back()["hark"]["model"], "fake-whisper");
  EXPECT_NE(r->body.find("event: transcript.text.done\n"), std::string::npos);
}

TEST_F(Routes, InfoRoutes) {
  auto c = client();
  auto v1 = json::parse(c.Get("/v1")->body);
  EXPECT_EQ(v1["name"], "hark");
  EXPECT_NE(std::find(v1["endpoints"].begin(), v1["endpoints"].end(), "POST /v1/audio/transcriptions"), v1["endpoints"].end());
  auto models = json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "whisper");
  EXPECT_EQ(c.Get("/v1/models/whisper")->status, 200);
  EXPECT_EQ(c.Get("/v1/models/gpt-4")->status, 404);
  auto health = json::parse(c.Get("/health")->body);
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["transcription"]["resident"], false);
  EXPECT_EQ(health["transcription"]["loads"], 0);
  auto page = c.Get("/");
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("Hold to talk"), std::string::npos);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body.find("createScriptProcessor"), std::string::npos) << "deprecated; the worklet replaces it";
  EXPECT_NE(page->body.find("echoCancellation: processing"), std::string::npos);
  auto worklet = c.Get("/audio-worklet.js");
  EXPECT_EQ(worklet->status, 200);
  EXPECT_EQ(worklet->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_NE(worklet->body.find("registerProcessor('hark-resampler'"), std::string::npos);
}

TEST_F(Routes, ResidencyCountersAndAdminUnload) {
  auto c = client();
  ASSERT_EQ(c.Post("/v1/audio/transcriptions", upload(make_wav(1.0)))->status, 200);
  auto st = json::parse(c.Get("/stats")->body);
  EXPECT_EQ(st["transcription"]["resident"], true);
  EXPECT_EQ(st["transcription"]["loads"], 1);
  EXPECT_EQ(st["transcription"]["requests"], 1);
  EXPECT_EQ(st["audio_seconds"], 1.0);
  auto unload = json::parse(c.Post("/admin/transcription/unload", "", "application/json")->body);
  EXPECT_EQ(unload["unloaded"], true);
  EXPECT_EQ(unload["resident"], false);
  EXPECT_EQ(unload["unloads"], 1);
  for (const char* key : {"loads", "requests", "last_load_ms", "idle_unload_sec"}) EXPECT_TRUE(unload.contains(key));
  EXPECT_EQ(json::parse(c.Get("/stats")->body)["transcription"]["resident"], false);
  auto r = json::parse(c.Post("/v1/audio/transcriptions", upload(make_wav(1.0)))->body);
  EXPECT_GT(r["hark"]["timings"]["load_ms"].get<double>(), 0.0) << "reloaded after the unload";
  EXPECT_EQ(stats.opened.load(), 2);
}

TEST_F(Routes, MetricsExposition) {
  auto c = client();
  ASSERT_EQ(c.Post("/v1/audio/transcriptions", upload(make_wav(2.0)))->status, 200);
  // The request counter is updated by the server's logger, which runs after the response
  // has gone out: poll briefly instead of racing it.
  const std::string counted = "hark_http_requests_total{route=\"POST /v1/audio/transcriptions\",status=\"200\"} 1";
  auto m = c.Get("/metrics");
  for (int i = 0; i < 100 && m && m->body.find(counted) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m = c.Get("/metrics");
  }
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m->body.find("hark_http_requests_total{route=\"POST /v1/audio/transcriptions\",status=\"200\"} 1"), std::string::npos);
  EXPECT_NE(m->body.find("hark_audio_seconds_total 2\n"), std::string::npos);
  EXPECT_NE(m->body.find("hark_queue_wait_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("hark_model_resident 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("hark_model_loads_total 1\n"), std::string::npos);
}

TEST_F(Routes, ModelUnavailableIs503NamingHarkGet) {
  stats.fail_open = true;
  auto r = client().Post("/v1/audio/transcriptions", upload(make_wav(1.0)));
  ASSERT_EQ(r->status, 503);
  auto j = json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "model_unavailable");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("hark get tiny"), std::string::npos);
  auto s = client().Post("/v1/audio/transcriptions", upload(make_wav(1.0), {{"stream", "true"}}));
  EXPECT_EQ(s->status, 503) << "a stream that cannot start still gets its real status";
  EXPECT_EQ(client().Get("/health")->status, 200);
}

TEST_F(Routes, DisconnectedClientCancelsItsJob) {
  stats.delay_ms = 5000;
  {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(0, 200000);  // give up after 0.2 s: the socket closes
    auto r = c.Post("/v1/audio/transcriptions", upload(make_wav(1.0)));
    EXPECT_FALSE(r);
  }
  for (int i = 0; i < 400 && stats.cancelled == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(stats.cancelled, 1);
  stats.delay_ms = 0;
  auto r = client().Post("/v1/audio/transcriptions", upload(make_wav(1.0)));
  EXPECT_EQ(r->status, 200) << "the worker moved on";
  auto m = client().Get("/metrics")->body;
  EXPECT_NE(m.find("status=\"499\"} 1"), std::string::npos) << m;
}

}  // namespace
}  // namespace hark::serve::test
