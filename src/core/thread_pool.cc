#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HARK_CPU_RELAX() _mm_pause()
#else
#define HARK_CPU_RELAX() std::this_thread::yield()
#endif

namespace hark {
namespace {

// A decoder step is ~70 small parallel loops of tens of microseconds each. Sleeping on a
// futex between them costs a wake-up system call and a reschedule every time, so workers
// and the caller first spin this long before blocking.
// After the first few hundred pause-spins the waiter yields on every turn, so that when the
// cores are oversubscribed (other processes, several pools) the spin gives its time away
// instead of burning it: measured on 2 cores with a competing busy process, pure spinning
// made a tiny decoder step 3x slower while yielding matched plain sleeping.
constexpr auto kSpinFor = std::chrono::microseconds(200);
constexpr int kPauseSpins = 256;

constexpr uint64_t kPartsMask = 0xffff;

template <class Ready>
bool spin_until(Ready&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinFor;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if (i < kPauseSpins) {
      HARK_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

}  // namespace

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(int threads) {
  threads = std::clamp(threads, 1, static_cast<int>(kPartsMask));
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  auto changed = [&] { return stop_.load(std::memory_order_acquire) || state_.load(std::memory_order_acquire) != seen; };
  if (!spin_until(changed)) {
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, changed);
    sleepers_.fetch_sub(1);
  }
  return state_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    if (stop_.load()) return;
    if (index >= static_cast<int>(seen & kPartsMask)) continue;  // not needed for this job
    const auto range = ranges_[index];
    std::exception_ptr err;
    try {
      (*job_)(range.first, range.second);
    } catch (...) {
      err = std::current_exception();
    }
    if (err) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = err;
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // pairs with the caller's predicate check
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
  if (n <= 0) return;
  int64_t parts = std::min<int64_t>(size(), std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk)));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  ranges_.clear();
  for (int64_t p = 0; p < parts; ++p) ranges_.emplace_back(n * p / parts, n * (p + 1) / parts);
  job_ = &fn;
  error_ = nullptr;
  pending_.store(static_cast<int>(parts) - 1, std::memory_order_relaxed);
  {
    // Published under the mutex so a worker deciding to sleep cannot miss it.
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t generation = (state_.load(std::memory_order_relaxed) >> 16) + 1;
    state_.store((generation << 16) | static_cast<uint64_t>(parts), std::memory_order_release);
  }
  if (sleepers_.load() > 0) wake_.notify_all();
  std::exception_ptr mine;
  try {
    fn(ranges_[0].first, ranges_[0].second);
  } catch (...) {
    mine = std::current_exception();
  }
  auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
  job_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace hark
