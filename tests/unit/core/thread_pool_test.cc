// ThreadPool: every index visited exactly once, across many back-to-back jobs (the decoder
// issues thousands of tiny ones), uneven splits, errors from any thread, and pools used
// from several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace hark {
namespace {

TEST(ThreadPool, EveryIndexOnceOverManyJobs) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int job = 0; job < 2000; ++job) {
      const int64_t n = 1 + job % 37;
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " job " << job;
    }
  }
}

TEST(ThreadPool, MinChunkLimitsTheSplit) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallel_for(10, [&](int64_t, int64_t) { calls.fetch_add(1); }, 6);
  EXPECT_EQ(calls.load(), 1);
}

TEST(ThreadPool, ErrorsFromWorkersAndCallerAreRethrown) {
  ThreadPool pool(3);
  for (int thrower : {0, 1, 2}) {
    EXPECT_THROW(pool.parallel_for(3, [&](int64_t b, int64_t) {
      if (b == thrower) throw std::runtime_error("boom");
    }), std::runtime_error);
    // The pool still works afterwards.
    std::atomic<int> sum{0};
    pool.parallel_for(30, [&](int64_t b, int64_t e) { sum.fetch_add(static_cast<int>(e - b)); });
    EXPECT_EQ(sum.load(), 30);
  }
}

TEST(ThreadPool, SharedBySeveralCallers) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int j = 0; j < 300; ++j)
        pool.parallel_for(100, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 300 * 100);
}

TEST(ThreadPool, IdlePoolSleepsAndWakes) {
  ThreadPool pool(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: workers block
  std::atomic<int> sum{0};
  pool.parallel_for(3, [&](int64_t b, int64_t e) { sum.fetch_add(static_cast<int>(e - b)); });
  EXPECT_EQ(sum.load(), 3);
}

}  // namespace
}  // namespace hark
