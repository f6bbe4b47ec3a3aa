// A fixed pool of worker threads for data-parallel loops. Its size is the `--threads`
// option. The BLAS library runs single-threaded inside the pool's tasks (core/cpu/gemm.h),
// so this is the only set of worker threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hark {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into at most size() contiguous ranges and runs fn(begin, end) on each;
  // the calling thread takes one range. Returns when all are done. Ranges smaller than
  // `min_chunk` are not split further. Exceptions from fn are rethrown here.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

 private:
  void worker_loop(int index);
  // Waits (spinning briefly, then sleeping) until the published state differs from `seen`.
  uint64_t wait_for_job(uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  // (generation << 16) | parts, published in one store so a worker never pairs one job's
  // generation with another job's split.
  std::atomic<uint64_t> state_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // guarded by mutex_
  std::mutex run_mutex_;  // one parallel_for at a time per pool
};

// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace hark
