// The session client against a real Server (with the fake engine of the serve tests):
// chunks, previews and the transcript, and each failure as the error code the take
// loop acts on, with a message that says what to do.
#include <gtest/gtest.h>

#include <future>

#include <nlohmann/json.hpp>

#include "../serve/fake_engine.h"
#include "dictate/transcriber.h"

namespace hark::dictate {
namespace {

using serve::ServerOptions;
using serve::test::ServerFixture;

std::string message_of(const std::function<void()>& f, ErrorCode expected) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

class SessionClient : public ServerFixture {
 protected:
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

TEST_F(SessionClient, StreamsATakeIntoASession) {
  start_server();
  TranscribeOptions o;
  o.language = "fr";
  auto t = make_server_transcriber({url() + "/v1/", ""}, o);
  t->prepare();
  t->begin();
  std::vector<float> second(16000, 0.0f);
  EXPECT_EQ(t->feed(second, false).partial, "");
  Heard heard = t->feed(second, true);
  EXPECT_EQ(heard.final_text, "");
  EXPECT_EQ(heard.partial, " heard 2.00 seconds");
  EXPECT_EQ(t->finish(), " heard 2.00 seconds");
  t->begin();  // a second take gets a new session
  t->feed(second, false);
  EXPECT_EQ(t->finish(), " heard 1.00 seconds");
}

TEST_F(SessionClient, ApiKeyMessages) {
  ServerOptions o;
  o.api_key = "sesame";
  start_server(o);
  auto missing = message_of([&] { make_server_transcriber({url(), ""}, {})->prepare(); }, ErrorCode::InvalidArgument);
  EXPECT_NE(missing.find("needs an API key: pass --api-key"), std::string::npos) << missing;
  auto wrong = message_of([&] { make_server_transcriber({url(), "nope"}, {})->prepare(); }, ErrorCode::InvalidArgument);
  EXPECT_NE(wrong.find("rejected the API key"), std::string::npos) << wrong;
  EXPECT_NO_THROW(make_server_transcriber({url(), "sesame"}, {})->prepare());
}

TEST_F(SessionClient, MissingModelIsReportedBeforeTheTake) {
  start_server();
  stats.fail_open = true;
  auto m = message_of([&] { make_server_transcriber({url(), ""}, {})->prepare(); }, ErrorCode::Unavailable);
  EXPECT_NE(m.find("hark get tiny"), std::string::npos) << m;
}

TEST_F(SessionClient, UnreachableServerSaysHowToStartOne) {
  start_server();
  const std::string gone = url();
  ASSERT_TRUE(client().Get("/health"));  // listening: stopping a server that is still starting can hang httplib
  server->stop();
  auto m = message_of([&] { make_server_transcriber({gone, ""}, {})->prepare(); }, ErrorCode::Network);
  EXPECT_NE(m.find("hark serve"), std::string::npos) << m;
  EXPECT_NE(m.find("--model"), std::string::npos) << m;
}

// A server stopping gracefully answers 503 session_closed while it finishes accepted work;
// the take loop treats that like a server that went away (the take is saved) and the
// message says how to go on, not how to call the API.
TEST_F(SessionClient, DrainingServerSaysStartItAgain) {
  start_server();
  auto t = make_server_transcriber({url(), ""}, {});
  t->prepare();
  t->begin();
  t->feed(std::vector<float>(1600, 0.0f), false);
  stats.hold = true;  // an accepted job keeps the drain open while the session is probed
  auto running = std::async(std::launch::async, [this] {
    return client().Post("/v1/audio/transcriptions", httplib::MultipartFormDataItems{
                                                         {"file", serve::test::make_wav(1.0), "clip.wav", "audio/wav"}});
  });
  for (int i = 0; i < 2000 && stats.running != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(stats.running, 1);
  auto stopped = std::async(std::launch::async, [this] { return server->stop(); });
  for (int i = 0; i < 2000; ++i) {
    auto h = client().Get("/health");
    if (h && h->status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto m = message_of([&] { t->feed(std::vector<float>(1600, 0.0f), false); }, ErrorCode::Network);
  EXPECT_NE(m.find("is shutting down"), std::string::npos) << m;
  EXPECT_NE(m.find("start it again with `hark serve`"), std::string::npos) << m;
  EXPECT_NE(m.find("--model"), std::string::npos) << m;
  stats.hold = false;
  EXPECT_EQ(running.get()->status, 200);
  stopped.get();
}

TEST_F(SessionClient, ExpiredSessionIsNotFound) {
  ServerOptions o;
  o.session_idle_sec = 0.2;
  start_server(o);
  auto t = make_server_transcriber({url(), ""}, {});
  t->prepare();
  t->begin();
  t->feed(std::vector<float>(1600, 0.0f), false);
  for (int i = 0; i < 300 && nlohmann::json::parse(client().Get("/stats")->body)["sessions"]["open"] != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto m = message_of([&] { t->feed(std::vector<float>(1600, 0.0f), false); }, ErrorCode::NotFound);
  EXPECT_NE(m.find("expired"), std::string::npos) << m;
}

TEST(SessionClientUrl, OnlyHttpUrls) {
  auto m = message_of([] { make_server_transcriber({"ftp://host", ""}, {}); }, ErrorCode::InvalidArgument);
  EXPECT_NE(m.find("http://"), std::string::npos);
  message_of([] { make_server_transcriber({"127.0.0.1:8080", ""}, {}); }, ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace hark::dictate
