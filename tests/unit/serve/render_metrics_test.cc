// Response rendering (json / verbose_json / text / srt / vtt) and the Prometheus exposition.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/metrics.h"
#include "serve/render.h"

namespace hark::serve {
namespace {

Transcript two_segments() {
  Transcript t;
  t.text = " Hello there. General Kenobi.";
  t.language = "en";
  t.duration = 3725.5;
  Segment a;
  a.id = 0, a.start = 0, a.end = 1.5, a.text = " Hello there.", a.tokens = {1, 2};
  a.words = {{" Hello", 0, 0.7, 0.9}, {" there.", 0.7, 1.5, 0.8}};
  Segment b;
  b.id = 1, b.seek = 3000, b.start = 3661.25, b.end = 3725.5, b.text = " General Kenobi.";
  t.segments = {a, b};
  t.vocabulary.included = {"Kenobi"};
  t.vocabulary.omitted = {"Grievous"};
  t.vocabulary.tokens = 3;
  t.vocabulary.budget = 220;
  return t;
}

TEST(Render, SubtitleCuesAreSafe) {
  // Cue text is stripped and a "-->" inside it is defused, as the CLI's writers do.
  Transcript t;
  Segment s;
  s.start = 59.9996, s.end = 61, s.text = "  a --> b \n";
  t.segments = {s};
  RunInfo info;
  EXPECT_EQ(render_response(t, info, ResponseFormat::Vtt).body, "WEBVTT\n\n00:01:00.000 --> 00:01:01.000\na -> b\n\n");
  EXPECT_EQ(render_response(t, info, ResponseFormat::Srt).body, "1\n00:01:00,000 --> 00:01:01,000\na -> b\n\n");
}

TEST(Render, SrtAndVttBodies) {
  RunInfo info;
  auto srt = render_response(two_segments(), info, ResponseFormat::Srt);
  EXPECT_EQ(srt.content_type, "application/x-subrip");
  EXPECT_EQ(srt.body, "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n01:01:01,250 --> 01:02:05,500\nGeneral Kenobi.\n\n");
  auto vtt = render_response(two_segments(), info, ResponseFormat::Vtt);
  EXPECT_EQ(vtt.content_type, "text/vtt");
  EXPECT_EQ(vtt.body, "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n01:01:01.250 --> 01:02:05.500\nGeneral Kenobi.\n\n");
  auto text = render_response(two_segments(), info, ResponseFormat::Text);
  EXPECT_EQ(text.body, " Hello there. General Kenobi.\n");
  EXPECT_EQ(text.content_type, "text/plain; charset=utf-8");
}

TEST(Render, JsonCarriesTheHarkExtension) {
  RunInfo info;
  info.model = "tiny";
  info.load_ms = 12.5;
  info.transcribe_ms = 30;
  info.total_ms = 45;
  info.vocabulary_requested = true;
  auto j = nlohmann::json::parse(render_response(two_segments(), info, ResponseFormat::Json).body);
  EXPECT_EQ(j["text"], " Hello there. General Kenobi.");
  EXPECT_FALSE(j.contains("segments"));
  EXPECT_EQ(j["hark"]["model"], "tiny");
  EXPECT_EQ(j["hark"]["timings"]["load_ms"], 12.5);
  EXPECT_EQ(j["hark"]["vocabulary"]["included"][0], "Kenobi");
  EXPECT_EQ(j["hark"]["vocabulary"]["token_budget"], 220);
  EXPECT_FALSE(j["hark"].contains("vad"));
  EXPECT_EQ(timings_header(info), "load_ms=12.5;queue_ms=0.0;transcribe_ms=30.0;total_ms=45.0");
}

TEST(Render, VerboseJsonHasSegmentsAndWordsAtBothLevels) {
  RunInfo info;
  info.words_requested = true;
  auto j = nlohmann::json::parse(render_response(two_segments(), info, ResponseFormat::VerboseJson).body);
  EXPECT_EQ(j["task"], "transcribe");
  EXPECT_EQ(j["duration"], 3725.5);
  ASSERT_EQ(j["segments"].size(), 2u);
  EXPECT_EQ(j["segments"][1]["seek"], 3000);
  EXPECT_EQ(j["segments"][0]["tokens"], nlohmann::json({1, 2}));
  for (const char* key : {"id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                          "compression_ratio", "no_speech_prob", "words"})
    EXPECT_TRUE(j["segments"][0].contains(key)) << key;
  ASSERT_EQ(j["words"].size(), 2u);
  EXPECT_EQ(j["words"][1]["word"], " there.");
  EXPECT_EQ(j["segments"][0]["words"][0]["probability"], 0.9);
}

TEST(Metrics, PrometheusExpositionCountsAndBuckets) {
  Metrics m;
  m.observe_request("POST /v1/audio/transcriptions", 200, 0.2);
  m.observe_request("POST /v1/audio/transcriptions", 200, 3.0);
  m.observe_request("POST /v1/audio/transcriptions", 400, 0.001);
  m.observe_queue_wait(0.03);
  m.add_audio_seconds(11.5);
  LiveGauges live;
  live.queue_depth = 3;
  live.model_resident = true;
  std::string text = m.render_prometheus(live);
  EXPECT_NE(text.find("hark_http_requests_total{route=\"POST /v1/audio/transcriptions\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("hark_http_requests_total{route=\"POST /v1/audio/transcriptions\",status=\"400\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hark_http_request_duration_seconds_bucket{route=\"POST /v1/audio/transcriptions\",le=\"0.25\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("hark_http_request_duration_seconds_bucket{route=\"POST /v1/audio/transcriptions\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("hark_queue_wait_seconds_bucket{le=\"0.05\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hark_queue_wait_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(text.find("hark_audio_seconds_total 11.5\n"), std::string::npos);
  EXPECT_NE(text.find("hark_queue_depth 3\n"), std::string::npos);
  EXPECT_NE(text.find("hark_model_resident 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE hark_queue_wait_seconds histogram\n"), std::string::npos);
}

TEST(Metrics, RouteLabelsHaveLowCardinality) {
  EXPECT_EQ(route_label("POST", "/v1/audio/sessions/sess_abc/audio"), "POST /v1/audio/sessions/{id}/audio");
  EXPECT_EQ(route_label("DELETE", "/v1/audio/sessions/sess_abc"), "DELETE /v1/audio/sessions/{id}");
  EXPECT_EQ(route_label("GET", "/health"), "GET /health");
  EXPECT_EQ(route_label("GET", "/random/../path"), "GET other");
}

}  // namespace
}  // namespace hark::serve
