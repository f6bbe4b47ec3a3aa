#include "serve/engine_worker.h"

#include "serve/api_error.h"

namespace hark::serve {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Engine& JobContext::engine() { return worker_->ensure_loaded(load_ms_); }

EngineWorker::EngineWorker(EngineFactory factory, ResidencyOptions options, Metrics* metrics, size_t max_queue)
    : factory_(std::move(factory)), options_(options), metrics_(metrics), max_queue_(max_queue) {
  counters_.idle_unload_sec = options_.resident ? 0 : options_.idle_unload_sec;
  last_used_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
  if (options_.preload) {
    // A failed preload is not fatal: requests then answer 503 with the loader's message.
    submit([](JobContext& ctx) { ctx.engine(); }, {nullptr, false});
  }
}

EngineWorker::~EngineWorker() { shutdown(); }

std::future<void> EngineWorker::submit(JobFn fn, JobOptions options) {
  auto job = std::make_unique<Job>();
  job->fn = std::move(fn);
  job->options = std::move(options);
  job->queued_at = std::chrono::steady_clock::now();
  auto future = job->done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      job->done.set_exception(std::make_exception_ptr(ApiError(
          503, "server_error", "server_draining", "[serve] the server is shutting down; retry on another instance")));
      return future;
    }
    if (job->options.bounded) {
      if (max_queue_ > 0 && bounded_ >= max_queue_) {
        job->done.set_exception(std::make_exception_ptr(ApiError(
            503, "server_error", "queue_full",
            "[serve] " + std::to_string(max_queue_) +
                " transcriptions are already queued or running (--max-queue); retry after the Retry-After delay")));
        return future;
      }
      ++bounded_;
    }
    queue_.push_back(std::move(job));
  }
  wake_.notify_all();
  return future;
}

bool EngineWorker::unload_now() {
  auto unloaded = std::make_shared<bool>(false);
  auto done = submit(
      [this, unloaded](JobContext&) {
        std::lock_guard lock(mutex_);
        if (!engine_ || pins_ > 0 || running_ > 1) return;  // only between jobs
        engine_.reset();
        ++counters_.unloads;
        counters_.resident = false;
        *unloaded = true;
      },
      {nullptr, false});
  done.get();
  return *unloaded;
}

void EngineWorker::pin() {
  std::lock_guard lock(mutex_);
  ++pins_;
}

void EngineWorker::unpin() {
  {
    std::lock_guard lock(mutex_);
    if (pins_ > 0) --pins_;
    last_used_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
}

int EngineWorker::pinned() const {
  std::lock_guard lock(mutex_);
  return pins_;
}

ResidencyCounters EngineWorker::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

size_t EngineWorker::queue_depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

size_t EngineWorker::running_jobs() const {
  std::lock_guard lock(mutex_);
  return running_;
}

BatchStats EngineWorker::batch_stats() const {
  std::lock_guard lock(mutex_);
  return engine_ ? engine_->batch_stats() : BatchStats{};
}

void EngineWorker::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(mutex_);
    threads_stop_ = true;
  }
  job_ready_.notify_all();
  for (auto& t : job_threads_)
    if (t.joinable()) t.join();
  job_threads_.clear();
  engine_.reset();
}

// Before the engine is loaded, one job at a time (the first one loads it).
int EngineWorker::concurrency() const { return engine_ ? std::max(1, engine_->max_concurrent_runs()) : 1; }

// The dispatcher: starts queued jobs in order while the engine has room for them, and
// pages the weights out when nothing runs.
void EngineWorker::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (queue_.empty() || running_ >= static_cast<size_t>(concurrency())) {
      if (stopping_ && queue_.empty() && running_ == 0) return;
      if (running_ > 0 || !queue_.empty()) {
        wake_.wait(lock);
        continue;
      }
      maybe_idle_unload(lock);
      continue;
    }
    started_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    ++running_;
    if (started_.size() > idle_threads_) job_threads_.emplace_back([this] { job_thread(); });
    job_ready_.notify_one();
  }
}

void EngineWorker::job_thread() {
  std::unique_lock lock(mutex_);
  while (true) {
    ++idle_threads_;
    job_ready_.wait(lock, [&] { return threads_stop_ || !started_.empty(); });
    --idle_threads_;
    if (started_.empty()) return;  // stopping
    auto job = std::move(started_.front());
    started_.pop_front();
    lock.unlock();
    run_job(*job);
    job.reset();
    lock.lock();
    --running_;
    last_used_ = std::chrono::steady_clock::now();
    wake_.notify_all();
  }
}

// Waits for work; when the idle deadline passes with nothing queued, pages out.
void EngineWorker::maybe_idle_unload(std::unique_lock<std::mutex>& lock) {
  bool can_unload = engine_ && !options_.resident && pins_ == 0;
  if (!can_unload) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || (engine_ && !options_.resident && pins_ == 0); });
    return;
  }
  auto deadline = last_used_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(options_.idle_unload_sec));
  if (wake_.wait_until(lock, deadline, [&] { return stopping_ || !queue_.empty() || pins_ > 0; })) return;
  if (std::chrono::steady_clock::now() < deadline) return;  // last_used_ moved on; recompute
  engine_.reset();
  ++counters_.unloads;
  counters_.resident = false;
}

Engine& EngineWorker::ensure_loaded(double& load_ms) {
  std::lock_guard load_lock(load_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (engine_) return *engine_;
  }
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> engine;
  try {
    engine = factory_();
  } catch (const Error& e) {
    // Whatever kept the checkpoint from loading (missing files, bad format, no device),
    // the request cannot be served now: 503 model_unavailable with the loader's advice.
    throw Error(e.code() == ErrorCode::OutOfMemory ? ErrorCode::OutOfMemory : ErrorCode::Unavailable, e.what());
  }
  if (!engine) throw Error(ErrorCode::Unavailable, "[serve] no transcription model is configured; start `hark serve MODEL`");
  load_ms = ms_since(start);
  if (metrics_) metrics_->observe_load(load_ms / 1000.0);
  std::lock_guard lock(mutex_);
  engine_ = std::move(engine);
  ++counters_.loads;
  counters_.resident = true;
  counters_.last_load_ms = load_ms;
  return *engine_;
}

void EngineWorker::run_job(Job& job) {
  JobContext ctx;
  ctx.worker_ = this;
  ctx.cancel_ = job.options.cancel.get();
  ctx.queue_ms_ = ms_since(job.queued_at);
  if (metrics_) metrics_->observe_queue_wait(ctx.queue_ms_ / 1000.0);
  struct Unbound {  // the job no longer counts toward --max-queue once it ends
    EngineWorker& w;
    bool bounded;
    ~Unbound() {
      if (!bounded) return;
      std::lock_guard lock(w.mutex_);
      --w.bounded_;
    }
  } unbound{*this, job.options.bounded};
  if (job.options.cancel && job.options.cancel->load()) {
    job.done.set_exception(std::make_exception_ptr(Error(ErrorCode::Cancelled, "[serve] the client went away before its job started")));
    return;
  }
  if (job.options.count_as_request) {
    std::lock_guard lock(mutex_);
    ++counters_.requests;
  }
  try {
    job.fn(ctx);
    note_outcome(false);
    job.done.set_value();
  } catch (const Error& e) {
    // Failures of the request itself (or a cancel) say nothing about the device either way.
    if (e.code() == ErrorCode::Internal || e.code() == ErrorCode::Unavailable || e.code() == ErrorCode::OutOfMemory)
      note_outcome(true);
    job.done.set_exception(std::current_exception());
  } catch (...) {
    job.done.set_exception(std::current_exception());
  }
}

void EngineWorker::note_outcome(bool fault) {
  std::lock_guard lock(mutex_);
  if (!fault) {
    fault_streak_ = 0;
    return;
  }
  ++fault_streak_;
  last_fault_ = std::chrono::steady_clock::now();
}

bool EngineWorker::faulty() const {
  std::lock_guard lock(mutex_);
  return fault_streak_ >= kFaultStreak && std::chrono::steady_clock::now() - last_fault_ < kFaultQuarantine;
}

}  // namespace hark::serve
