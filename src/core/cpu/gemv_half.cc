#include "core/cpu/gemv_half.h"

#include <immintrin.h>

#include <algorithm>

#include "core/checked_span.h"

namespace hark {
namespace {

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
HARK_UNINSTRUMENTED inline __m256 load8(const float* p, DType) { return _mm256_loadu_ps(p); }

HARK_UNINSTRUMENTED inline __m256 load8(const uint16_t* p, DType dtype) {
  __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (dtype == DType::F16) return _mm256_cvtph_ps(raw);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));  // bf16 → f32
}

HARK_UNINSTRUMENTED inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Dot products of R consecutive weight rows with the M rows of x, into out[R·M] (row-major
// by weight row). Each (weight row, x row) pair keeps its own accumulator and summation
// order, so results do not depend on R; R·M independent FMA chains hide the FMA latency
// that a lone chain (M = 1) would otherwise be bound by, well below memory bandwidth.
HARK_UNINSTRUMENTED inline float weight_at(const float* w, DType) { return *w; }
HARK_UNINSTRUMENTED inline float weight_at(const uint16_t* w, DType dtype) {
  return dtype == DType::F16 ? half_to_float(*w) : bf16_to_float(*w);
}

// How far ahead of the product the weights are fetched (bench/gemv_bench.cc, 2026-12-01:
// 2, 4 and 8 KB tried; 8 KB was best or level for 1-8 rows, fp16 and fp32).
constexpr int64_t kPrefetchBytes = 8192;

// Uninstrumented in the sanitizer build; gemv_passes checks the spans (core/checked_span.h).
template <int R, int M, class W>
HARK_UNINSTRUMENTED inline void tile_dots(const float* x, int64_t k, const W* w, DType dtype, float* out) {
  __m256 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < M; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t i = 0;
  // The tile's R rows are one contiguous run of weights; fetch ahead along it (the hardware
  // prefetchers fall behind once each weight byte feeds several FMAs: 5 rows of x over fp32
  // weights read 13 GB/s without this, against 40 with one row).
  const char* ahead = reinterpret_cast<const char*>(w) + kPrefetchBytes;
  constexpr int64_t kLinesPerStep = (R * 8 * static_cast<int64_t>(sizeof(W)) + 63) / 64;
  for (; i + 8 <= k; i += 8) {
    for (int64_t l = 0; l < kLinesPerStep; ++l)
      _mm_prefetch(ahead + (R * i * static_cast<int64_t>(sizeof(W))) + 64 * l, _MM_HINT_T0);
    __m256 xv[M];
    for (int c = 0; c < M; ++c) xv[c] = _mm256_loadu_ps(x + c * k + i);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = load8(w + r * k + i, dtype);
      for (int c = 0; c < M; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const W* wrow = w + r * k;
    for (int c = 0; c < M; ++c) {
      float s = hsum(acc[r][c]);
      for (int64_t j = i; j < k; ++j) s += x[c * k + j] * weight_at(wrow + j, dtype);
      out[r * M + c] = s;
    }
  }
}

// Weight rows [begin, end) against M rows of x: tiles of R rows, then single rows. Two
// weight rows a tile from 3 rows of x up: each x load then feeds two FMAs (with one weight
// row, 5-8 rows of x made the loop bound by its loads: the tiny logits over 5 fp16-weight
// rows took 2.1-2.2 ms against 1.8 with two, bench/gemv_bench.cc; 8 rows 2.9 against 2.7).
// R·M accumulators and M x vectors fit the 32 vector registers of AVX-512 at M = 8.
template <int M, class W>
void rows_dots(const float* x, int64_t k, const W* w, DType dtype, int64_t begin, int64_t end,
               const float* bias, float* y, int64_t n) {
  constexpr int R = M <= 2 ? 4 : 2;
  float dots[R * M];
  int64_t j = begin;
  auto store = [&](int64_t row, int rows_in_tile) {
    for (int r = 0; r < rows_in_tile; ++r)
      for (int c = 0; c < M; ++c) y[c * n + row + r] = dots[r * M + c] + (bias ? bias[row + r] : 0.0f);
  };
  for (; j + R <= end; j += R) {
    tile_dots<R, M, W>(x, k, w + j * k, dtype, dots);
    store(j, R);
  }
  for (; j < end; ++j) {
    tile_dots<1, M, W>(x, k, w + j * k, dtype, dots);
    store(j, 1);
  }
}

template <class W>
using RowsDots = void (*)(const float*, int64_t, const W*, DType, int64_t, int64_t, const float*, float*, int64_t);
template <class W>
constexpr RowsDots<W> kRowsDots[kHalfGemvMaxRows] = {rows_dots<1, W>, rows_dots<2, W>, rows_dots<3, W>,
                                                     rows_dots<4, W>, rows_dots<5, W>, rows_dots<6, W>,
                                                     rows_dots<7, W>, rows_dots<8, W>};
#else
inline float weight_at(const float* w, DType) { return *w; }
inline float weight_at(const uint16_t* w, DType dtype) {
  return dtype == DType::F16 ? half_to_float(*w) : bf16_to_float(*w);
}

template <class W>
void rows_dots_scalar(const float* x, int64_t m, int64_t k, const W* w, DType dtype, int64_t begin, int64_t end,
                      const float* bias, float* y, int64_t n) {
  for (int64_t j = begin; j < end; ++j) {
    const W* wrow = w + j * k;
    for (int64_t r = 0; r < m; ++r) {
      float s = 0;
      for (int64_t i = 0; i < k; ++i) s += x[r * k + i] * weight_at(wrow + i, dtype);
      y[r * n + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
#endif

// Passes of up to kHalfGemvMaxRows rows of x over w. Within a thread's range of weight
// rows, blocks of weight rows small enough to stay in cache serve every pass before the
// next block is read, so w comes from memory once however many rows x has.
template <class W>
void gemv_passes(ThreadPool& pool, const float* x, int64_t m, int64_t k, const W* w, DType w_dtype, int64_t n,
                 const float* bias, float* y) {
  const int64_t block = std::max<int64_t>(8, (int64_t{64} << 10) / static_cast<int64_t>(k * sizeof(W)));
  // The tiles run uninstrumented in the sanitizer build: their spans, checked once.
  check_span(x, m * k);
  check_span(w, n * k);
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t b0 = begin; b0 < end; b0 += block) {
      const int64_t b1 = std::min(end, b0 + block);
      for (int64_t first = 0; first < m; first += kHalfGemvMaxRows) {
        const int64_t rows = std::min(kHalfGemvMaxRows, m - first);
#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
        kRowsDots<W>[rows - 1](x + first * k, k, w, w_dtype, b0, b1, bias, y + first * n, n);
#else
        rows_dots_scalar<W>(x + first * k, rows, k, w, w_dtype, b0, b1, bias, y + first * n, n);
#endif
      }
    }
  }, 64);
}

}  // namespace

void gemv_half(ThreadPool& pool, const float* x, int64_t m, int64_t k, const uint16_t* w, DType w_dtype, int64_t n,
               const float* bias, float* y) {
  gemv_passes<uint16_t>(pool, x, m, k, w, w_dtype, n, bias, y);
}

void gemv_rows(ThreadPool& pool, const float* x, int64_t m, int64_t k, const void* w, DType w_dtype, int64_t n,
               const float* bias, float* y) {
  if (w_dtype == DType::F32)
    gemv_passes<float>(pool, x, m, k, static_cast<const float*>(w), w_dtype, n, bias, y);
  else
    gemv_passes<uint16_t>(pool, x, m, k, static_cast<const uint16_t*>(w), w_dtype, n, bias, y);
}

}  // namespace hark
