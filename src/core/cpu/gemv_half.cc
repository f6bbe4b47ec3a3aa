#include "core/cpu/gemv_half.h"

#include <immintrin.h>

#include <algorithm>

namespace hark {
namespace {

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
inline __m256 load8(const uint16_t* p, DType dtype) {
  __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (dtype == DType::F16) return _mm256_cvtph_ps(raw);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));  // bf16 → f32
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Dot products of R consecutive weight rows with the M rows of x, into out[R·M] (row-major
// by weight row). Each (weight row, x row) pair keeps its own accumulator and summation
// order, so results do not depend on R; R·M independent FMA chains hide the FMA latency
// that a lone chain (M = 1) would otherwise be bound by, well below memory bandwidth.
template <int R, int M>
inline void tile_dots(const float* x, int64_t k, const uint16_t* w, DType dtype, float* out) {
  __m256 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < M; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv[M];
    for (int c = 0; c < M; ++c) xv[c] = _mm256_loadu_ps(x + c * k + i);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = load8(w + r * k + i, dtype);
      for (int c = 0; c < M; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const uint16_t* wrow = w + r * k;
    for (int c = 0; c < M; ++c) {
      float s = hsum(acc[r][c]);
      for (int64_t j = i; j < k; ++j)
        s += x[c * k + j] * (dtype == DType::F16 ? half_to_float(wrow[j]) : bf16_to_float(wrow[j]));
      out[r * M + c] = s;
    }
  }
}

// Weight rows [begin, end) against M rows of x: tiles of R rows, then single rows.
template <int M>
void rows_dots(const float* x, int64_t k, const uint16_t* w, DType dtype, int64_t begin, int64_t end,
               const float* bias, float* y, int64_t n) {
  constexpr int R = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  float dots[R * M];
  int64_t j = begin;
  auto store = [&](int64_t row, int rows_in_tile) {
    for (int r = 0; r < rows_in_tile; ++r)
      for (int c = 0; c < M; ++c) y[c * n + row + r] = dots[r * M + c] + (bias ? bias[row + r] : 0.0f);
  };
  for (; j + R <= end; j += R) {
    tile_dots<R, M>(x, k, w + j * k, dtype, dots);
    store(j, R);
  }
  for (; j < end; ++j) {
    tile_dots<1, M>(x, k, w + j * k, dtype, dots);
    store(j, 1);
  }
}

using RowsDots = void (*)(const float*, int64_t, const uint16_t*, DType, int64_t, int64_t, const float*, float*,
                          int64_t);
constexpr RowsDots kRowsDots[kHalfGemvMaxRows] = {rows_dots<1>, rows_dots<2>, rows_dots<3>, rows_dots<4>,
                                                  rows_dots<5>, rows_dots<6>, rows_dots<7>, rows_dots<8>};
#else
void rows_dots_scalar(const float* x, int64_t m, int64_t k, const uint16_t* w, DType dtype, int64_t begin, int64_t end,
                      const float* bias, float* y, int64_t n) {
  for (int64_t j = begin; j < end; ++j) {
    const uint16_t* wrow = w + j * k;
    for (int64_t r = 0; r < m; ++r) {
      float s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += x[r * k + i] * (dtype == DType::F16 ? half_to_float(wrow[i]) : bf16_to_float(wrow[i]));
      y[r * n + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
#endif

}  // namespace

void gemv_half(ThreadPool& pool, const float* x, int64_t m, int64_t k, const uint16_t* w, DType w_dtype, int64_t n,
               const float* bias, float* y) {
  for (int64_t first = 0; first < m; first += kHalfGemvMaxRows) {
    const int64_t rows = std::min(kHalfGemvMaxRows, m - first);
    const float* xs = x + first * k;
    float* ys = y + first * n;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
      kRowsDots[rows - 1](xs, k, w, w_dtype, begin, end, bias, ys, n);
#else
      rows_dots_scalar(xs, rows, k, w, w_dtype, begin, end, bias, ys, n);
#endif
    }, 64);
  }
}

}  // namespace hark
