// The manifest run's scheduler summary and trace lines: every counter where a reader (or a
// script grepping key=value pairs) expects it, and the means guarded against zero calls.
#include "cli/batch_trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace hark::cli {
namespace {

TEST(BatchStatsLine, GivesMeansAndSeconds) {
  BatchStats b;
  b.steps = 4;
  b.rows_stepped = 10;
  b.prefills = 3;
  b.prefill_calls = 2;
  b.encoder_calls = 2;
  b.windows_encoded = 5;
  b.step_seconds = 1.234;
  b.encode_seconds = 0.5;
  b.encoder_lane = true;
  EXPECT_EQ(batch_stats_line(b),
            "batch steps=4 rows_per_step=2.5 prefills=3 prefill_calls=2 prompts_stepped=0 encoder_calls=2 windows_per_call=2.5 step_sec=1.23 "
            "gather_sec=0.00 prefill_sec=0.00 encode_sec=0.50 encoder_lane=yes");
}

TEST(BatchStatsLine, NoStepsOrCallsGiveZeroMeans) {
  const std::string line = batch_stats_line(BatchStats{});
  EXPECT_NE(line.find("rows_per_step=0.0"), std::string::npos) << line;
  EXPECT_NE(line.find("windows_per_call=0.0"), std::string::npos) << line;
  EXPECT_NE(line.find("encoder_lane=no"), std::string::npos) << line;
}

TEST(BatchTraceLine, NamesEveryStage) {
  BatchStats b;
  b.rows_active = 7;
  b.row_capacity = 8;
  b.groups_waiting = 1;
  b.windows_waiting = 2;
  b.windows_encoding = 3;
  b.calls_waiting = 6;
  b.steps = 9;
  b.windows_encoded = 11;
  EXPECT_EQ(batch_trace_line(1.5, 4, 5, b),
            "batch-trace t=1.50 reading=4 running=5 rows=7 capacity=8 groups_waiting=1 windows_waiting=2 "
            "windows_encoding=3 calls_waiting=6 steps=9 windows=11");
}

TEST(WorkerCounts, CountsAScopeAndLeavesOnAThrow) {
  WorkerCounts w;
  {
    const WorkerCounts::In in(w.running);
    EXPECT_EQ(w.running.load(), 1);
  }
  EXPECT_EQ(w.running.load(), 0);
  try {
    const WorkerCounts::In in(w.reading);
    throw 1;
  } catch (int) {
  }
  EXPECT_EQ(w.reading.load(), 0);
}

TEST(BatchTrace, LogsOnlyWhenAskedAndStopsAtItsEnd) {
  WorkerCounts w;
  std::vector<std::string> lines;
  ::unsetenv("HARK_BATCH_TRACE_MS");
  { const BatchTrace off([] { return BatchStats{}; }, w, [&](const std::string& l) { lines.push_back(l); }); }
  EXPECT_TRUE(lines.empty());
  ::setenv("HARK_BATCH_TRACE_MS", "1", 1);
  std::atomic<int> samples = 0;
  {
    const BatchTrace on(
        [&] {
          ++samples;
          return BatchStats{};
        },
        w, [&](const std::string& l) { lines.push_back(l); });
    while (samples < 3) std::this_thread::yield();
  }
  ::unsetenv("HARK_BATCH_TRACE_MS");
  const size_t after_stop = lines.size();
  EXPECT_GE(after_stop, 3u);
  EXPECT_EQ(lines.front().rfind("batch-trace t=", 0), 0u) << lines.front();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(lines.size(), after_stop) << "the trace went on after its end";
}

}  // namespace
}  // namespace hark::cli
