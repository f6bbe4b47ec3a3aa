// The server in front of an engine that runs many jobs at once: a short request is not
// queued behind a long one, --max-queue answers 503 with Retry-After, /metrics shows the
// queue and the batch, a bodiless POST (curl -X POST) is accepted, and with a real
// batching engine a deleted session or a client that goes away gives its rows back, and
// many concurrent mixed requests and sessions get what a one-at-a-time server answers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "../batch/batch_test_util.h"
#include "fake_engine.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Sends `request` as is and returns everything the server answers before closing.
std::string raw_request(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  timeval timeout{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  [[maybe_unused]] auto sent = send(fd, request.data(), request.size(), 0);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<size_t>(n));
  close(fd);
  return answer;
}

template <class F>
bool eventually(F done) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST_F(ServerFixture, PostWithoutBodyOrContentLengthIsAccepted) {
  start_server();
  auto c = client();
  std::string id = json::parse(c.Post("/v1/audio/sessions", "{}", "application/json")->body)["id"];
  ASSERT_EQ(c.Post("/v1/audio/sessions/" + id + "/audio", make_wav(1.0), "audio/wav")->status, 200);
  // What `curl -X POST URL` sends: no body, no Content-Length, no Transfer-Encoding.
  std::string finished = raw_request(port, "POST /v1/audio/sessions/" + id + "/finish HTTP/1.1\r\nHost: x\r\n"
                                           "Connection: close\r\n\r\n");
  EXPECT_EQ(finished.substr(0, 12), "HTTP/1.1 200") << finished;
  EXPECT_NE(finished.find("heard 1.00 seconds"), std::string::npos) << finished;
  std::string opened = raw_request(port, "POST /v1/audio/sessions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(opened.substr(0, 12), "HTTP/1.1 200") << opened;
  const std::string other = json::parse(opened.substr(opened.find("\r\n\r\n") + 4))["id"];
  std::string deleted = raw_request(port, "DELETE /v1/audio/sessions/" + other + " HTTP/1.1\r\nHost: x\r\n"
                                          "Connection: close\r\n\r\n");
  EXPECT_EQ(deleted.substr(0, 12), "HTTP/1.1 204") << deleted;
  std::string unload = raw_request(port, "POST /admin/transcription/unload HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(unload.substr(0, 12), "HTTP/1.1 200") << unload;
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST_F(ServerFixture, BeyondMaxQueueIs503WithRetryAfter) {
  ServerOptions o;
  o.max_queue = 1;
  o.retry_after_sec = 3;
  start_server(o);
  stats.concurrency = 4;  // the session below runs next to the held job
  stats.hold = true;
  auto first = std::async(std::launch::async, [&] {
    return client().Post("/v1/audio/transcriptions", {{"file", make_wav(1.0), "a.wav", "audio/wav"}})->status;
  });
  ASSERT_TRUE(eventually([&] { return stats.running.load() == 1; }));
  auto second = client().Post("/v1/audio/transcriptions", {{"file", make_wav(1.0), "a.wav", "audio/wav"}});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503);
  EXPECT_EQ(second->get_header_value("Retry-After"), "3");
  EXPECT_EQ(json::parse(second->body)["error"]["code"], "queue_full");
  // Sessions are bounded by --max-sessions, not by the queue.
  EXPECT_EQ(client().Post("/v1/audio/sessions", "{}", "application/json")->status, 200);
  stats.hold = false;
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(client().Post("/v1/audio/transcriptions", {{"file", make_wav(1.0), "a.wav", "audio/wav"}})->status, 200);
}

TEST_F(ServerFixture, ShortRequestIsNotQueuedBehindALongOneOnABatchingEngine) {
  start_server();
  stats.concurrency = 8;
  stats.ms_per_audio_second = 50;
  client().Post("/v1/audio/transcriptions", {{"file", make_wav(0.5), "a.wav", "audio/wav"}});  // loads the engine
  std::atomic<int> order{0};
  int long_done = -1, short_done = -1;
  std::thread long_request([&] {
    client().Post("/v1/audio/transcriptions", {{"file", make_wav(20.0), "a.wav", "audio/wav"}});
    long_done = order++;
  });
  ASSERT_TRUE(eventually([&] { return stats.running.load() == 1; }));
  auto r = client().Post("/v1/audio/transcriptions", {{"file", make_wav(0.5), "a.wav", "audio/wav"}});
  short_done = order++;
  long_request.join();
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(short_done, long_done);
  EXPECT_EQ(stats.max_running, 2);
}

TEST_F(ServerFixture, MetricsShowTheQueueAndTheBatch) {
  start_server();
  stats.batch.max_rows = 16;
  stats.batch.rows_active = 12;
  stats.batch.row_capacity = 16;
  stats.batch.groups_waiting = 3;
  stats.batch.windows_waiting = 2;
  stats.batch.windows_encoding = 4;
  stats.batch.calls_waiting = 5;
  stats.batch.steps = 100;
  stats.batch.rows_stepped = 750;
  stats.batch.rows_computed = 900;
  stats.batch.tokens_fed_back = 640;
  stats.batch.step_seconds = 2.5;
  stats.batch.encode_seconds = 0.5;
  client().Post("/v1/audio/transcriptions", {{"file", make_wav(0.5), "a.wav", "audio/wav"}});
  // The worker counts the job as done just after the response is sent: on a loaded machine
  // /metrics can come first.
  std::string m = client().Get("/metrics")->body;
  for (int i = 0; i < 500 && metric(m, "hark_jobs_running") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = client().Get("/metrics")->body;
  }
  EXPECT_EQ(metric(m, "hark_batch_max_rows"), 16);
  EXPECT_EQ(metric(m, "hark_batch_rows"), 12);
  EXPECT_EQ(metric(m, "hark_batch_occupancy"), 0.75);
  EXPECT_EQ(metric(m, "hark_batch_sequences_waiting"), 3);
  EXPECT_EQ(metric(m, "hark_batch_windows_waiting"), 2);
  EXPECT_EQ(metric(m, "hark_batch_windows_encoding"), 4);
  EXPECT_EQ(metric(m, "hark_batch_calls_waiting"), 5);
  EXPECT_EQ(metric(m, "hark_batch_rows_stepped_total"), 750);
  EXPECT_EQ(metric(m, "hark_batch_rows_computed_total"), 900);
  EXPECT_EQ(metric(m, "hark_batch_tokens_fed_back_total"), 640);
  EXPECT_EQ(metric(m, "hark_queue_depth"), 0);
  EXPECT_EQ(metric(m, "hark_jobs_running"), 0);
  const json s = json::parse(client().Get("/stats")->body);
  EXPECT_EQ(s["batch"]["rows"], 12);
  EXPECT_EQ(s["batch"]["windows_encoding"], 4);
  EXPECT_EQ(s["batch"]["calls_waiting"], 5);
  EXPECT_EQ(s["batch"]["seconds"]["step"], 2.5);
  EXPECT_EQ(s["batch"]["seconds"]["encode"], 0.5);
  EXPECT_EQ(metric(m, "hark_batch_step_seconds_total"), 2.5);
  EXPECT_EQ(s["queue"]["max"], 256);
}

// A server over a real engine (the narrow random-weight model); max_batch 1: one job at
// a time, as before batching. A short text context keeps every window's decoding short.
std::unique_ptr<Server> narrow_server(int max_batch, int& port, int text_ctx = 448) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.log_level = "off";
  ServerDeps deps;
  deps.engine_factory = [max_batch, text_ctx] { return hark::test::narrow_engine(max_batch, 2, text_ctx); };
  deps.decode_audio = fake_decode;
  auto server = std::make_unique<Server>(o, deps);
  port = server->start();
  return server;
}

class BatchingServer : public ServerFixture {
 protected:
  void start() { server = narrow_server(4, port); }
  double rows() { return metric(client().Get("/metrics")->body, "hark_batch_rows"); }
};

std::string wav_of(const std::vector<float>& x) {
  std::string out = make_wav(0);
  const uint32_t bytes = static_cast<uint32_t>(x.size() * 2), riff = 36 + bytes;
  std::memcpy(out.data() + 4, &riff, 4);
  std::memcpy(out.data() + 40, &bytes, 4);
  for (float v : x) {
    const int16_t s = static_cast<int16_t>(std::clamp(v, -1.0f, 1.0f) * 32767);
    out.append(reinterpret_cast<const char*>(&s), 2);
  }
  return out;
}

TEST_F(BatchingServer, DeletedSessionStopsItsRunningChunkAndGivesRowsBack) {
  start();
  auto c = client();
  std::string id = json::parse(c.Post("/v1/audio/sessions", R"({"language":"en","temperature":0})",
                                      "application/json")->body)["id"];
  // Twenty windows in one chunk: the delete lands while it is being transcribed.
  std::future<int> fed = std::async(std::launch::async, [&] {
    return client().Post("/v1/audio/sessions/" + id + "/audio", wav_of(hark::test::voice_like(600, 4)), "audio/wav")
        ->status;
  });
  ASSERT_TRUE(eventually([&] { return rows() > 0; }));
  EXPECT_EQ(client().Delete("/v1/audio/sessions/" + id)->status, 204);
  EXPECT_EQ(fed.get(), 404);  // the chunk's job was stopped: the session is gone
  EXPECT_TRUE(eventually([&] { return rows() == 0; }));
}

TEST_F(BatchingServer, ClientThatGoesAwayGivesItsRowsBack) {
  start();
  {
    auto impatient = client();
    impatient.set_read_timeout(0, 300000);  // gives up after 0.3 s, long before the 20 windows
    httplib::MultipartFormDataItems items = {{"file", wav_of(hark::test::voice_like(600, 5)), "a.wav", "audio/wav"},
                                             {"language", "en", "", ""},
                                             {"temperature", "0", "", ""}};
    EXPECT_FALSE(impatient.Post("/v1/audio/transcriptions", items));
  }
  EXPECT_TRUE(eventually([&] { return metric(client().Get("/metrics")->body, "hark_requests_cancelled_total") >= 1; }));
  EXPECT_TRUE(eventually([&] { return rows() == 0; }));
  // The engine still serves.
  httplib::MultipartFormDataItems items = {{"file", wav_of(hark::test::voice_like(3, 6)), "a.wav", "audio/wav"},
                                           {"language", "en", "", ""}, {"temperature", "0", "", ""}};
  EXPECT_EQ(client().Post("/v1/audio/transcriptions", items)->status, 200);
}

// What a client sees of one request: a transcription in one format, or a whole session
// (every chunk's reply and the finish), with the timings (which differ run to run) removed.
using Call = std::function<std::string(httplib::Client&)>;

std::string without_timings(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return body;  // srt, vtt, text
  if (j.contains("hark")) j["hark"].erase("timings");
  return j.dump();
}

Call transcription(std::string route, double seconds, int seed, httplib::MultipartFormDataItems fields) {
  return [=](httplib::Client& c) {
    auto items = fields;
    items.push_back({"file", wav_of(hark::test::voice_like(seconds, seed)), "a.wav", "audio/wav"});
    auto r = c.Post(route, items);
    return r ? std::to_string(r->status) + " " + without_timings(r->body) : std::string("no answer");
  };
}

Call session(std::string params, double seconds, int seed, double chunk_seconds) {
  return [=](httplib::Client& c) {
    auto created = c.Post("/v1/audio/sessions", params, "application/json");
    if (!created || created->status != 200) return std::string("session not created");
    const std::string path = "/v1/audio/sessions/" + json::parse(created->body)["id"].get<std::string>();
    const std::vector<float> audio = hark::test::voice_like(seconds, seed);
    const size_t chunk = static_cast<size_t>(chunk_seconds * 16000);
    std::string seen;
    for (size_t at = 0; at < audio.size(); at += chunk) {
      std::vector<float> part(audio.begin() + at, audio.begin() + std::min(audio.size(), at + chunk));
      auto r = c.Post(path + "/audio", wav_of(part), "audio/wav");
      seen += r ? std::to_string(r->status) + " " + r->body + "\n" : "no answer\n";
    }
    auto done = c.Post(path + "/finish");  // bodiless, as curl -X POST sends it
    return seen + (done ? std::to_string(done->status) + " " + without_timings(done->body) : "no answer");
  };
}

std::vector<std::pair<std::string, Call>> mixed_calls() {
  const std::string t = "/v1/audio/transcriptions";
  return {
      {"json-en", transcription(t, 4, 1, {{"language", "en", "", ""}, {"temperature", "0", "", ""}})},
      {"verbose-two-windows-detect", transcription(t, 35, 2, {{"response_format", "verbose_json", "", ""},
                                                              {"temperature", "0", "", ""}})},
      {"srt-de-prompt", transcription(t, 9, 3, {{"response_format", "srt", "", ""}, {"language", "de", "", ""},
                                                 {"prompt", "Vocabulary: hark, Whisper.", "", ""},
                                                 {"temperature", "0", "", ""}})},
      {"vtt-beam2", transcription(t, 6, 4, {{"response_format", "vtt", "", ""}, {"beam_size", "2", "", ""},
                                             {"language", "en", "", ""}, {"temperature", "0", "", ""}})},
      {"text-translate-fr", transcription("/v1/audio/translations", 12, 5, {{"response_format", "text", "", ""},
                                                                            {"language", "fr", "", ""},
                                                                            {"temperature", "0", "", ""}})},
      {"verbose-words", transcription(t, 20, 6, {{"response_format", "verbose_json", "", ""},
                                                 {"timestamp_granularities[]", "word", "", ""},
                                                 {"language", "en", "", ""}, {"temperature", "0", "", ""}})},
      {"sampled-best-of-2", transcription(t, 5, 7, {{"temperature", "0.4", "", ""}, {"best_of", "2", "", ""},
                                                    {"seed", "7", "", ""}, {"language", "en", "", ""}})},
      {"session-en", session(R"({"language":"en","temperature":0})", 34, 8, 4)},
      {"session-es-verbose", session(R"({"language":"es","temperature":0,"response_format":"verbose_json"})", 12, 9,
                                     2.5)},
  };
}

// 48 tokens per window (the prompt gets 23 of the previous text): cheap enough for the
// sanitizer build.
constexpr int kShortTextContext = 96;

// Many concurrent requests of mixed options and formats, sessions among them, answer on a
// batching server exactly what a one-at-a-time server answers to each alone (fp32 CPU:
// bit for bit, so the rendered bodies match byte for byte, timings aside).
TEST(BatchingServerOutput, ConcurrentMixedRequestsAndSessionsAnswerAsOnAOneAtATimeServer) {
  const auto calls = mixed_calls();
  std::vector<std::string> alone, together(calls.size());
  {
    int port = 0;
    auto reference = narrow_server(1, port, kShortTextContext);
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(300, 0);
    for (const auto& [name, call] : calls) alone.push_back(call(c));
    reference->stop();
  }
  int port = 0;
  auto batching = narrow_server(8, port, kShortTextContext);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < calls.size(); ++i)
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(300, 0);
      together[i] = calls[i].second(c);
    });
  for (auto& t : clients) t.join();
  httplib::Client c("127.0.0.1", port);
  const std::string m = c.Get("/metrics")->body;
  batching->stop();
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(alone[i].substr(0, 4), "200 ") << calls[i].first << ": " << alone[i].substr(0, 300);
    EXPECT_EQ(together[i], alone[i]) << calls[i].first;
  }
  EXPECT_GT(metric(m, "hark_batch_rows_stepped_total"), metric(m, "hark_batch_steps_total"))
      << "no step carried more than one row: nothing was batched";
}

}  // namespace
}  // namespace hark::serve::test
