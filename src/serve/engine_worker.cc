#include "serve/engine_worker.h"

namespace hark::serve {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Engine& JobContext::engine() { return worker_->ensure_loaded(load_ms_); }

EngineWorker::EngineWorker(EngineFactory factory, ResidencyOptions options, Metrics* metrics)
    : factory_(std::move(factory)), options_(options), metrics_(metrics) {
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
      job->done.set_exception(std::make_exception_ptr(
          Error(ErrorCode::Unavailable, "[serve] the server is shutting down; retry on another instance")));
      return future;
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
        if (!engine_ || pins_ > 0) return;
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

ResidencyCounters EngineWorker::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

size_t EngineWorker::queue_depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void EngineWorker::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  engine_.reset();
}

void EngineWorker::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) return;
      maybe_idle_unload(lock);
      continue;
    }
    auto job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run_job(*job);
    lock.lock();
    last_used_ = std::chrono::steady_clock::now();
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
  if (engine_) return *engine_;
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
    job.done.set_value();
  } catch (...) {
    job.done.set_exception(std::current_exception());
  }
}

}  // namespace hark::serve
