// hark bench --server: the load generator against a server with the fake engine — every
// request counted, audio seconds summed from the clips, errors counted by kind, and bad
// arguments rejected with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../serve/fake_engine.h"
#include "cli/bench_server.h"

namespace hark::cli {
namespace {

namespace fs = std::filesystem;

class BenchServer : public serve::test::ServerFixture {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("hark_bench_clips_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (double s : {0.5, 1.0, 1.5}) {
      std::ofstream(dir / ("clip" + std::to_string(int(s * 10)) + ".wav"), std::ios::binary) << serve::test::make_wav(s);
    }
    std::ofstream(dir / "README.txt") << "not audio";
  }
  void TearDown() override {
    ServerFixture::TearDown();
    fs::remove_all(dir);
  }
  ServerBenchArgs args() {
    ServerBenchArgs a;
    a.url = "http://127.0.0.1:" + std::to_string(port);
    a.clips = dir.string();
    a.concurrency = 2;
    a.requests = 6;
    a.warmup = 1;
    a.fields = {"language=en", "response_format=json"};
    return a;
  }
  fs::path dir;
};

TEST(BenchPercentile, NearestRank) {
  std::vector<double> ms;
  for (int i = 100; i >= 1; --i) ms.push_back(i);
  EXPECT_EQ(percentile(ms, 50), 50);
  EXPECT_EQ(percentile(ms, 99), 99);
  EXPECT_EQ(percentile(ms, 100), 100);
  EXPECT_EQ(percentile(ms, 0), 1);
  EXPECT_EQ(percentile({}, 50), 0);
}

TEST_F(BenchServer, CountsRequestsAudioAndLatency) {
  start_server();
  auto r = run_server_bench(args());
  EXPECT_EQ(r["requests"], 6);
  EXPECT_EQ(r["errors"], 0);
  EXPECT_EQ(r["clips"], 3);  // README.txt is not audio
  EXPECT_DOUBLE_EQ(r["audio_seconds"].get<double>(), 2 * (0.5 + 1.0 + 1.5));
  EXPECT_GT(r["rtfx"].get<double>(), 0);
  const auto& l = r["latency_ms"];
  EXPECT_LE(l["p50"].get<double>(), l["p99"].get<double>());
  EXPECT_LE(l["p99"].get<double>(), l["max"].get<double>());
  // The warm-up request, the measured ones, and those sent after them until all were answered.
  EXPECT_EQ(r["warmup"], 1);
  EXPECT_EQ(stats.transcribed, 7 + r["unmeasured_after"].get<int>());
  EXPECT_LE(l["min"].get<double>(), l["p50"].get<double>());

  // Latency per clip: every clip twice (6 requests over 3 clips), shortest first, each
  // clip's maximum at most the run's.
  const auto& by_clip = r["latency_ms_by_clip"];
  ASSERT_EQ(by_clip.size(), 3u);
  const double seconds[] = {0.5, 1.0, 1.5};
  const char* names[] = {"clip5.wav", "clip10.wav", "clip15.wav"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(by_clip[i]["clip"], names[i]);
    EXPECT_DOUBLE_EQ(by_clip[i]["seconds"].get<double>(), seconds[i]);
    EXPECT_EQ(by_clip[i]["requests"], 2);
    EXPECT_LE(by_clip[i]["p50"].get<double>(), by_clip[i]["max"].get<double>());
    EXPECT_LE(by_clip[i]["max"].get<double>(), l["max"].get<double>());
  }
}

TEST(BenchArrivals, PoissonScheduleIsSeededIncreasingAndAtTheRate) {
  const auto a = poisson_arrivals(20000, 50.0, 7);
  ASSERT_EQ(a.size(), 20000u);
  EXPECT_EQ(a.front(), 0.0);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  // 19 999 exponential gaps of mean 20 ms: the mean is within 3 % (about 4 standard errors).
  EXPECT_NEAR(a.back() / (a.size() - 1), 1.0 / 50.0, 0.03 / 50.0);
  EXPECT_EQ(a, poisson_arrivals(20000, 50.0, 7));
  EXPECT_NE(a, poisson_arrivals(20000, 50.0, 8));
  EXPECT_TRUE(poisson_arrivals(0, 50.0, 7).empty());
  EXPECT_TRUE(poisson_arrivals(10, 0.0, 7).empty());
}

TEST_F(BenchServer, OpenLoopKeepsToItsScheduleAndReportsWhatWasOffered) {
  start_server();
  auto a = args();
  a.rate = 40;  // 6 requests over ~125 ms on average
  a.seed = 3;
  auto r = run_server_bench(a);
  EXPECT_EQ(r["requests"], 6);
  EXPECT_EQ(r["errors"], 0);
  ASSERT_TRUE(r.contains("open_loop"));
  const auto& o = r["open_loop"];
  EXPECT_EQ(o["rate"].get<double>(), 40);
  EXPECT_EQ(o["seed"].get<uint64_t>(), 3u);
  // Two passes over clips of 0.5, 1 and 1.5 s: a mean of 1 s a request, so 40 audio s per s.
  EXPECT_DOUBLE_EQ(o["offered_audio_per_second"].get<double>(), 40.0);
  // The last request is not sent before its arrival time: the run lasts at least that long.
  EXPECT_GE(r["wall_seconds"].get<double>(), poisson_arrivals(6, 40, 3).back());
  EXPECT_EQ(stats.transcribed, 7);  // the warm-up (closed loop) too
  EXPECT_FALSE(r.contains("unmeasured_after"));  // nothing is sent after an open loop's last request
}

// One client, a server that takes 50 ms a request, and arrivals far faster than that: every
// request after the first waits for the client, is counted as sent late, and its wait is in
// its latency (a closed loop would report ~50 ms for each).
TEST_F(BenchServer, OpenLoopCountsTheWaitForABusyClientAsLatency) {
  start_server();
  stats.delay_ms = 50;
  auto a = args();
  a.concurrency = 1;
  a.rate = 1000;  // six arrivals within a few milliseconds
  auto r = run_server_bench(a);
  EXPECT_EQ(r["errors"], 0);
  const auto& o = r["open_loop"];
  EXPECT_GE(o["sent_late"].get<int>(), 5);
  // The sixth request is sent after five answers (≥ 250 ms) and answered 50 ms later.
  EXPECT_GE(o["start_delay_ms"]["max"].get<double>(), 200.0);
  EXPECT_GE(r["latency_ms"]["max"].get<double>(), 250.0);
}

// A server that answers one request at a time in 50 ms, and two clients that keep sending:
// in steady state every request waits for the other client's, so each takes ~100 ms. Had the
// measured requests started as one burst after the warm-up (both clients at once on an idle
// server), the first would take 50 ms. The client that answers first after the last measured
// request is sent keeps sending (not counted), so the load does not thin out under it.
TEST_F(BenchServer, ClosedLoopMeasuresASteadyStreamWithNoBurstAndNoThinEnd) {
  start_server();
  stats.delay_ms = 50;
  auto a = args();
  a.warmup = 2;
  a.requests = 6;
  auto r = run_server_bench(a);
  EXPECT_EQ(r["requests"], 6);
  EXPECT_EQ(r["errors"], 0);
  EXPECT_GE(r["unmeasured_after"].get<int>(), 1);
  EXPECT_EQ(stats.transcribed, 8 + r["unmeasured_after"].get<int>());
  // ~100 ms each: 75 leaves room for the fake engine's 5 ms polling, and none can take 50.
  EXPECT_GE(r["latency_ms"]["min"].get<double>(), 75.0);
  // Six requests of ~100 ms with two in flight: ~300 ms from the first send to the last answer.
  EXPECT_GE(r["wall_seconds"].get<double>(), 0.25);
  // The throughput, from the clients' time (Little's law): two clients, requests of ≥ 100 ms
  // each, so at most 20 a second, and two passes over clips of 1 s on average, so the audio
  // rate is the request rate. The check counts every answer within the span (the warm-up's
  // second answer lands in it), at most one at the span's start plus one every 50 ms.
  const double rate = r["requests_per_second"].get<double>();
  EXPECT_GT(rate, 0);
  EXPECT_LE(rate, 20.0 + 1e-9);
  // Little's law is the definition: clients over the mean latency. The span's count would
  // read ~17 a second here (six requests over ~350 ms), not the 2 / 0.1 s it gives.
  EXPECT_NEAR(rate, 2.0 / (r["latency_ms"]["mean"].get<double>() / 1000.0), 1e-9);
  EXPECT_NEAR(r["rtfx"].get<double>(), rate, 1e-9);
  const int in_span = r["answered_in_span"].get<int>();
  EXPECT_GE(in_span, 7);
  EXPECT_LE(in_span, 1 + static_cast<int>(r["wall_seconds"].get<double>() / 0.05));
}

TEST_F(BenchServer, ClosedLoopHasNoOpenLoopReport) {
  start_server();
  EXPECT_FALSE(run_server_bench(args()).contains("open_loop"));
}

TEST_F(BenchServer, CountsErrorsByKind) {
  start_server();
  stats.fail_open = true;  // every transcription: 503 model_unavailable
  auto r = run_server_bench(args());
  EXPECT_EQ(r["errors"], 6);
  EXPECT_DOUBLE_EQ(r["audio_seconds"].get<double>(), 0);
  ASSERT_EQ(r["error_kinds"].size(), 1u);
  EXPECT_EQ(r["error_kinds"].begin().key().substr(0, 3), "503");
}

TEST_F(BenchServer, BadArgumentsAreClearErrors) {
  start_server();
  auto a = args();
  a.concurrency = 0;
  EXPECT_THROW(run_server_bench(a), Error);
  a = args();
  a.clips = (dir / "README.txt").string();
  EXPECT_THROW(run_server_bench(a), Error);  // no audio
  a = args();
  a.clips = (dir / "missing").string();
  EXPECT_THROW(run_server_bench(a), Error);
  a = args();
  a.rate = -1;
  EXPECT_THROW(run_server_bench(a), Error);
  a.rate = std::nan("");
  EXPECT_THROW(run_server_bench(a), Error);
  a = args();
  a.url = "http://127.0.0.1:1";  // nothing listens there
  try {
    run_server_bench(a);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unavailable);
    EXPECT_NE(std::string(e.what()).find("/health"), std::string::npos);
  }
}

}  // namespace
}  // namespace hark::cli
