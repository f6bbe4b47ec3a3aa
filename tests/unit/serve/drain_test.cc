// Graceful drain (Server::stop): 503 + Retry-After for new work while accepted work
// finishes, /health "draining", sessions closed with a clear error, --drain-timeout
// cancelling what is left, and the instance id in session ids and headers.
#include <future>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "serve/sessions.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;

httplib::MultipartFormDataItems upload(double seconds, bool stream = false) {
  httplib::MultipartFormDataItems items = {{"file", make_wav(seconds), "clip.wav", "audio/wav"}};
  if (stream) items.push_back({"stream", "true", "", ""});
  return items;
}

template <class Pred>
bool within_10s(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

class Drain : public ServerFixture {
 protected:
  // Starts stop() on another thread and returns once /health says the drain has begun.
  std::future<DrainReport> begin_drain() {
    auto report = std::async(std::launch::async, [this] { return server->stop(); });
    EXPECT_TRUE(within_10s([&] {
      auto r = client().Get("/health");
      return r && r->status == 503;
    })) << "/health never reported draining";
    return report;
  }
  std::future<httplib::Result> post_async(double seconds, bool stream = false) {
    return std::async(std::launch::async, [this, seconds, stream] {
      return client().Post("/v1/audio/transcriptions", upload(seconds, stream));
    });
  }
  int queue_depth() { return json::parse(client().Get("/stats")->body)["queue"]["depth"]; }
};

TEST_F(Drain, NewWorkGets503WithRetryAfterWhileAcceptedWorkFinishes) {
  start_server();
  stats.hold = true;
  auto running = post_async(1.0);
  ASSERT_TRUE(within_10s([&] { return stats.running == 1; }));
  auto streaming = post_async(31.0, true);  // accepted: queued behind the running job
  auto queued = post_async(2.0);
  ASSERT_TRUE(within_10s([&] { return queue_depth() == 2; }));

  auto report = begin_drain();
  auto health = client().Get("/health");
  EXPECT_EQ(json::parse(health->body)["status"], "draining");
  auto rejected = client().Post("/v1/audio/transcriptions", upload(1.0));
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 503) << rejected->body;
  EXPECT_EQ(rejected->get_header_value("Retry-After"), "1");
  EXPECT_EQ(rejected->get_header_value("Connection"), "close");
  EXPECT_EQ(json::parse(rejected->body)["error"]["code"], "server_draining");
  auto no_session = client().Post("/v1/audio/sessions", "{}", "application/json");
  EXPECT_EQ(no_session->status, 503);
  EXPECT_EQ(client().Get("/v1/models")->status, 200) << "cheap read-only routes still answer";

  stats.hold = false;
  auto a = running.get(), b = queued.get(), s = streaming.get();
  ASSERT_TRUE(a && b && s);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(json::parse(a->body)["text"], " heard 1.00 seconds");
  EXPECT_EQ(b->status, 200);
  EXPECT_EQ(json::parse(b->body)["text"], " heard 2.00 seconds");
  EXPECT_EQ(s->status, 200);
  EXPECT_NE(s->body.find("transcript.text.done"), std::string::npos) << s->body;
  EXPECT_NE(s->body.find(" heard 30.00 seconds heard 1.00 seconds"), std::string::npos);
  EXPECT_EQ(report.get().cancelled, 0u);
  EXPECT_EQ(stats.transcribed, 3);
  EXPECT_EQ(stats.closed, 1) << "the engine was released";
}

TEST_F(Drain, OpenSessionsAreClosedWithAClearError) {
  start_server();
  const std::string id = json::parse(client().Post("/v1/audio/sessions", "{}", "application/json")->body)["id"];
  auto fed = client().Post("/v1/audio/sessions/" + id + "/audio", std::string(16000 * 4, '\0'), "audio/pcm;rate=16000");
  ASSERT_EQ(fed->status, 200) << fed->body;
  stats.hold = true;
  auto running = post_async(1.0);  // keeps the drain open while the session is probed
  ASSERT_TRUE(within_10s([&] { return stats.running == 1; }));

  auto report = begin_drain();
  EXPECT_EQ(json::parse(client().Get("/stats")->body)["sessions"]["open"], 0) << "closed when the drain began";
  for (const std::string path : {"/audio", "/finish"}) {
    auto r = client().Post("/v1/audio/sessions/" + id + path, std::string(16000 * 4, '\0'), "audio/pcm;rate=16000");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << path << ": " << r->body;
    auto error = json::parse(r->body)["error"];
    EXPECT_EQ(error["code"], "session_closed");
    EXPECT_NE(error["message"].get<std::string>().find("open a new session"), std::string::npos);
  }
  stats.hold = false;
  EXPECT_EQ(running.get()->status, 200);
  EXPECT_EQ(report.get().cancelled, 0u);
}

TEST_F(Drain, TimeoutCancelsWhatIsLeftWithAClearError) {
  ServerOptions o;
  o.drain_timeout_sec = 0.2;
  start_server(o);
  stats.hold = true;  // only a cancel ends these jobs
  auto running = post_async(1.0);
  ASSERT_TRUE(within_10s([&] { return stats.running == 1; }));
  auto queued = post_async(2.0);
  ASSERT_TRUE(within_10s([&] { return queue_depth() == 1; }));

  DrainReport report = server->stop();  // returns although the engine would never finish
  EXPECT_EQ(report.cancelled, 2u);
  for (auto* pending : {&running, &queued}) {
    auto r = pending->get();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    auto error = json::parse(r->body)["error"];
    EXPECT_EQ(error["code"], "drain_timeout");
    EXPECT_NE(error["message"].get<std::string>().find("--drain-timeout"), std::string::npos);
  }
  EXPECT_EQ(stats.transcribed, 0);
}

TEST_F(Drain, StartedStreamEndsWithAnErrorEventWhenTheTimeoutExpires) {
  ServerOptions o;
  o.drain_timeout_sec = 600;
  start_server(o);
  stats.hold = true;
  auto stream = post_async(1.0, true);
  ASSERT_TRUE(within_10s([&] { return stats.running == 1; }));
  auto report = begin_drain();
  server->expire_drain();  // as a second SIGTERM does
  EXPECT_EQ(report.get().cancelled, 1u);
  auto r = stream.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "the event stream had started";
  EXPECT_NE(r->body.find("event: error"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("drain_timeout"), std::string::npos) << r->body;
}

TEST_F(Drain, StopWithNothingInFlightReturnsAtOnceAndTwiceIsHarmless) {
  start_server();
  EXPECT_EQ(server->stop().cancelled, 0u);
  EXPECT_EQ(server->stop().cancelled, 0u);
  EXPECT_FALSE(client().Get("/health")) << "the listener is closed";
}

TEST_F(Drain, InstanceIdIsInSessionIdsHeadersAndHealth) {
  ServerOptions o;
  o.instance_id = "node-7";
  start_server(o);
  auto opened = client().Post("/v1/audio/sessions", "{}", "application/json");
  EXPECT_EQ(opened->get_header_value("x-hark-instance"), "node-7");
  const std::string id = json::parse(opened->body)["id"];
  EXPECT_EQ(id.rfind("sess_node-7_", 0), 0u) << id;
  EXPECT_EQ(session_route_key(id), "node-7");
  EXPECT_EQ(json::parse(client().Get("/health")->body)["instance"], "node-7");
  // A session of another instance: the 404 says where it lives and how to route.
  auto foreign = client().Post("/v1/audio/sessions/sess_node-3_0123456789abcdef01234567/finish", "", "application/json");
  EXPECT_EQ(foreign->status, 404);
  auto message = json::parse(foreign->body)["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("instance 'node-3'"), std::string::npos) << message;
  EXPECT_NE(message.find("docs/deploy.md"), std::string::npos) << message;
}

TEST_F(Drain, DefaultInstanceIdIsHostAndPort) {
  start_server();
  const std::string id = server->instance_id();
  const std::string suffix = "-" + std::to_string(port);
  ASSERT_GT(id.size(), suffix.size());
  EXPECT_EQ(id.substr(id.size() - suffix.size()), suffix);
  for (char c : id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-') << id;
}

TEST(InstanceId, BadIdsAreRefusedAtConstruction) {
  for (const std::string& bad : {std::string("a_b"), std::string(), std::string("has space"), std::string("x/y"), std::string(33, 'a')}) {
    ServerOptions o;
    o.instance_id = bad.empty() ? "_" : bad;
    o.log_level = "off";
    try {
      Server server(o, {});
      ADD_FAILURE() << "accepted '" << o.instance_id << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--instance-id"), std::string::npos);
    }
  }
}

TEST(SessionIds, RouteKeyRoundTrips) {
  EXPECT_EQ(session_route_key(random_session_id("a1-b")), "a1-b");
  EXPECT_EQ(random_session_id("k").size(), std::string("sess_k_").size() + 24);
  EXPECT_EQ(session_route_key(random_session_id()), "") << "ids without a key stay valid";
  EXPECT_EQ(session_route_key("nonsense"), "");
  EXPECT_EQ(session_route_key("sess__x"), "");
}

}  // namespace
}  // namespace hark::serve::test
