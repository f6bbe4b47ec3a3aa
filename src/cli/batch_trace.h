// What the batch scheduler did during `hark transcribe --manifest --parallel N`: one line
// of its counters at the end (where the time went: steps, prefills, encoder calls and their
// mean size, for tuning --max-batch and --encode-batch), and with HARK_BATCH_TRACE_MS=N a
// line every N ms of where the workers are (reading audio, inside the engine) and of the
// batch's occupancy and queues (for finding what a throughput run is bound by).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "hark/engine.h"

namespace hark::cli {

// "batch steps=… rows_per_step=… prefills=… prefill_calls=… encoder_calls=… windows_per_call=… step_sec=…
// gather_sec=… prefill_sec=… encode_sec=… encoder_lane=yes|no"
std::string batch_stats_line(const BatchStats& stats);

// One trace line: "batch-trace t=… reading=… running=… rows=… capacity=… groups_waiting=…
// windows_waiting=… windows_encoding=… calls_waiting=… steps=… windows=…"
std::string batch_trace_line(double seconds, int reading, int running, const BatchStats& stats);

// Workers in each stage of a manifest run, counted by its transcribe callback.
struct WorkerCounts {
  std::atomic<int> reading = 0;  // decoding an audio file
  std::atomic<int> running = 0;  // inside Engine::transcribe
  // Counts a worker in a stage for its scope.
  class In {
   public:
    explicit In(std::atomic<int>& stage) : stage_(stage) { ++stage_; }
    ~In() { --stage_; }
    In(const In&) = delete;
    In& operator=(const In&) = delete;

   private:
    std::atomic<int>& stage_;
  };
};

// While alive, and only when HARK_BATCH_TRACE_MS is a positive number of milliseconds,
// logs batch_trace_line() that often through `log` from a thread of its own. `sample`
// must be callable from that thread (it returns empty stats until the engine is open).
class BatchTrace {
 public:
  BatchTrace(std::function<BatchStats()> sample, const WorkerCounts& workers,
             std::function<void(const std::string&)> log);
  ~BatchTrace();
  BatchTrace(const BatchTrace&) = delete;
  BatchTrace& operator=(const BatchTrace&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hark::cli
