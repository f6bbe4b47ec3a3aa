#include "core/cpu/mem_bandwidth.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace hark {
namespace {

// Sums 64-byte lines with several independent accumulators, so that loads, not adds,
// limit the loop.
uint64_t read_range(const uint64_t* p, size_t words) {
#if defined(__AVX2__)
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 16 <= words; i += 16) {
    a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < words; ++i) s += p[i];
  return s;
#else
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= words; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  for (; i < words; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
#endif
}

}  // namespace

double read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int repeats) {
  const size_t words = std::max<size_t>(bytes / 8 / 64 * 64, 64);
  std::unique_ptr<uint64_t, decltype(&std::free)> storage(
      static_cast<uint64_t*>(std::aligned_alloc(64, words * 8)), &std::free);
  uint64_t* data = storage.get();
  for (size_t i = 0; i < words; ++i) data[i] = i;  // touch every page before timing
  std::atomic<uint64_t> total{0};
  double best = 1e30;
  for (int r = 0; r < repeats + 1; ++r) {  // the first pass only warms the caches
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(static_cast<int64_t>(words / 64), [&](int64_t begin, int64_t end) {
      total += read_range(data + begin * 64, (end - begin) * 64);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);
  }
  volatile uint64_t sink = total.load();
  (void)sink;
  return static_cast<double>(words * 8) / best / 1e9;
}

}  // namespace hark
