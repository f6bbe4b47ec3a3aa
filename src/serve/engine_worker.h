// The worker that owns the Engine. HTTP threads submit jobs to a FIFO queue; the worker
// loads the checkpoint on first use, starts jobs in order on job threads — one at a time,
// or as many at once as the engine runs (a batching engine shares its model among them,
// src/batch/) — and pages the weights out after --idle-unload seconds without jobs unless
// the server is --resident or a streaming session still needs them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hark/engine.h"
#include "serve/metrics.h"

namespace hark::serve {

// Opens the configured checkpoint. Tests inject a fake engine here.
using EngineFactory = std::function<std::unique_ptr<Engine>()>;

struct ResidencyOptions {
  double idle_unload_sec = 300;
  bool resident = false;  // never page out once loaded
  bool preload = false;   // load at start instead of on the first request
};

struct ResidencyCounters {
  bool resident = false;  // weights are loaded now
  uint64_t loads = 0, unloads = 0, requests = 0;
  double last_load_ms = 0;
  double idle_unload_sec = 0;
};

class JobContext {
 public:
  // The loaded engine; loads it first when it is paged out (throws 503-mapped errors).
  Engine& engine();
  double load_ms() const { return load_ms_; }    // spent loading inside this job
  double queue_ms() const { return queue_ms_; }  // spent waiting before this job started
  const std::atomic<bool>* cancel() const { return cancel_; }

 private:
  friend class EngineWorker;
  class EngineWorker* worker_ = nullptr;
  const std::atomic<bool>* cancel_ = nullptr;
  double load_ms_ = 0, queue_ms_ = 0;
};

using JobFn = std::function<void(JobContext&)>;

struct JobOptions {
  std::shared_ptr<std::atomic<bool>> cancel;  // set by the HTTP thread when the client leaves
  bool count_as_request = true;               // residency counter "requests"
  bool bounded = false;                       // counts toward --max-queue (one-shot transcriptions)
};

class EngineWorker {
 public:
  // max_queue > 0: at most that many bounded jobs waiting or running; submit() fails
  // further ones with 503 queue_full.
  EngineWorker(EngineFactory factory, ResidencyOptions options, Metrics* metrics = nullptr, size_t max_queue = 0);
  ~EngineWorker();
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // Queues `fn`; the future completes when it ran (or rethrows what it threw). A job
  // whose cancel flag is set before it starts fails with ErrorCode::Cancelled unrun.
  // After shutdown() it fails with ErrorCode::Unavailable; beyond --max-queue with a 503
  // ApiError (queue_full).
  std::future<void> submit(JobFn fn, JobOptions options = {});

  // Pages the weights out between jobs; false when nothing was loaded or a session pins them.
  bool unload_now();
  // Open streaming sessions pin the engine: their StreamingRun refers to it.
  void pin();
  void unpin();
  int pinned() const;  // open sessions held by this worker

  ResidencyCounters counters() const;
  size_t queue_depth() const;   // jobs waiting to start
  size_t running_jobs() const;
  // Its last kFaultStreak jobs failed on the server's side (the device, the loader, the
  // engine: not the request), the last less than kFaultQuarantine ago. A broken GPU fails
  // fast, so the least loaded worker would otherwise draw all the traffic to it; the
  // router passes it over while another works, and tries it again after the quarantine.
  bool faulty() const;
  static constexpr int kFaultStreak = 3;
  static constexpr std::chrono::seconds kFaultQuarantine{30};
  // The loaded engine's batching figures (zeros when none is loaded or it does not batch).
  BatchStats batch_stats() const;
  // Runs every queued job, then stops the thread. Idempotent.
  void shutdown();

 private:
  struct Job {
    JobFn fn;
    JobOptions options;
    std::promise<void> done;
    std::chrono::steady_clock::time_point queued_at;
  };
  friend class JobContext;

  void run();
  void run_job(Job& job);
  void job_thread();
  int concurrency() const;  // jobs that may run at once now (mutex_ held)
  Engine& ensure_loaded(double& load_ms);
  void maybe_idle_unload(std::unique_lock<std::mutex>& lock);
  void note_outcome(bool fault);  // a job ended: a server-side failure or not

  EngineFactory factory_;
  ResidencyOptions options_;
  Metrics* metrics_;
  size_t max_queue_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;       // the dispatcher waits here
  std::condition_variable job_ready_;  // idle job threads wait here
  std::deque<std::unique_ptr<Job>> queue_;
  std::deque<std::unique_ptr<Job>> started_;  // dispatched, not yet taken by a job thread
  size_t running_ = 0, idle_threads_ = 0, bounded_ = 0;
  std::vector<std::thread> job_threads_;
  bool stopping_ = false, threads_stop_ = false;
  int pins_ = 0;
  int fault_streak_ = 0;
  std::chrono::steady_clock::time_point last_fault_;
  // Set and reset by the dispatcher or by a job while no other job runs; read by jobs.
  std::unique_ptr<Engine> engine_;
  std::mutex load_mutex_;
  std::chrono::steady_clock::time_point last_used_;
  ResidencyCounters counters_;
  std::thread thread_;
};

}  // namespace hark::serve
