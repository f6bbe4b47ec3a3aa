// The engine worker: FIFO order, one job at a time, residency (load on first use, idle
// unload, --resident, pins), cancellation and shutdown.
#include <gtest/gtest.h>

#include "fake_engine.h"
#include "serve/api_error.h"
#include "serve/engine_worker.h"

namespace hark::serve {
namespace {

using test::FakeEngine;
using test::FakeEngineStats;

EngineFactory factory(FakeEngineStats& stats) {
  return [&stats] { return std::make_unique<FakeEngine>(stats); };
}

TEST(EngineWorker, RunsJobsInOrderOneAtATimeAndLoadsOnce) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {});
  std::vector<int> order;
  std::vector<std::future<void>> done;
  std::vector<double> load_ms(5, -1);
  for (int i = 0; i < 5; ++i)
    done.push_back(worker.submit([&, i](JobContext& ctx) {
      ctx.engine();
      load_ms[i] = ctx.load_ms();
      order.push_back(i);
    }));
  for (auto& f : done) f.get();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(stats.opened, 1);
  EXPECT_GE(load_ms[0], 0.0);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(load_ms[i], 0.0) << "only the first job paged the weights in";
  auto c = worker.counters();
  EXPECT_TRUE(c.resident);
  EXPECT_EQ(c.loads, 1u);
  EXPECT_EQ(c.requests, 5u);
}

TEST(EngineWorker, JobExceptionsReachTheCaller) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {});
  auto f = worker.submit([](JobContext&) { throw Error(ErrorCode::InvalidAudio, "[test] bad"); });
  try {
    f.get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidAudio);
  }
  worker.submit([](JobContext& ctx) { ctx.engine(); }).get();  // still serving
}

TEST(EngineWorker, FailedLoadIsUnavailableAndRetried) {
  FakeEngineStats stats;
  bool fail = true;
  EngineWorker worker([&]() -> std::unique_ptr<Engine> {
    if (fail) throw Error(ErrorCode::NotFound, "[hub] run `hark get tiny`");
    return std::make_unique<FakeEngine>(stats);
  }, {});
  try {
    worker.submit([](JobContext& ctx) { ctx.engine(); }).get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unavailable);
    EXPECT_NE(std::string(e.what()).find("hark get tiny"), std::string::npos);
  }
  fail = false;
  worker.submit([](JobContext& ctx) { ctx.engine(); }).get();
  EXPECT_EQ(worker.counters().loads, 1u);
}

TEST(EngineWorker, CancelledBeforeStartIsNeverRun) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {});
  std::promise<void> gate, running;
  auto blocker = worker.submit([&](JobContext&) {
    running.set_value();
    gate.get_future().wait();
  });
  running.get_future().wait();
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  bool ran = false;
  auto victim = worker.submit([&](JobContext&) { ran = true; }, {cancel, true});
  EXPECT_EQ(worker.queue_depth(), 1u);
  cancel->store(true);
  gate.set_value();
  blocker.get();
  try {
    victim.get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Cancelled);
  }
  EXPECT_FALSE(ran);
}

TEST(EngineWorker, IdleUnloadPagesOutAndPinsPreventIt) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {0.05, false, false});
  worker.submit([](JobContext& ctx) { ctx.engine(); }).get();
  for (int i = 0; i < 400 && worker.counters().resident; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(worker.counters().resident);
  EXPECT_EQ(worker.counters().unloads, 1u);
  EXPECT_EQ(stats.closed, 1);
  // A pinned engine (an open session) stays loaded past the idle deadline.
  worker.submit([](JobContext& ctx) { ctx.engine(); }).get();
  worker.pin();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(worker.counters().resident);
  EXPECT_FALSE(worker.unload_now());
  worker.unpin();
  for (int i = 0; i < 400 && worker.counters().resident; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(worker.counters().unloads, 2u);
  EXPECT_EQ(worker.counters().loads, 2u);
}

TEST(EngineWorker, ResidentNeverUnloadsButAdminUnloadDoes) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {0.01, true, true});  // preload
  worker.submit([](JobContext& ctx) { EXPECT_EQ(ctx.load_ms(), 0.0); ctx.engine(); }).get();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_TRUE(worker.counters().resident);
  EXPECT_EQ(worker.counters().idle_unload_sec, 0.0);
  EXPECT_TRUE(worker.unload_now());
  EXPECT_FALSE(worker.unload_now());
  EXPECT_EQ(worker.counters().unloads, 1u);
}

TEST(EngineWorker, ShutdownRunsQueuedJobsThenRefusesNewOnes) {
  FakeEngineStats stats;
  EngineWorker worker(factory(stats), {});
  std::atomic<int> ran{0};
  std::vector<std::future<void>> done;
  for (int i = 0; i < 4; ++i)
    done.push_back(worker.submit([&](JobContext&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++ran;
    }));
  worker.shutdown();
  EXPECT_EQ(ran, 4);
  for (auto& f : done) f.get();
  // Refused as a draining server's work is (the dictation client reads the code).
  try {
    worker.submit([](JobContext&) {}).get();
    ADD_FAILURE() << "a job submitted after shutdown ran";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_EQ(e.code(), "server_draining");
  }
}

}  // namespace
}  // namespace hark::serve
