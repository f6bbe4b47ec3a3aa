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

// Dot products of one weight row with `m` rows of x (m ≤ kHalfGemvMaxRows).
inline void row_dots(const float* x, int64_t m, int64_t k, const uint16_t* wrow, DType dtype, float* out) {
  __m256 acc[kHalfGemvMaxRows];
  for (int64_t r = 0; r < m; ++r) acc[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 wv = load8(wrow + i, dtype);
    for (int64_t r = 0; r < m; ++r) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * k + i), acc[r]);
  }
  for (int64_t r = 0; r < m; ++r) {
    float s = hsum(acc[r]);
    for (int64_t j = i; j < k; ++j)
      s += x[r * k + j] * (dtype == DType::F16 ? half_to_float(wrow[j]) : bf16_to_float(wrow[j]));
    out[r] = s;
  }
}
#else
inline void row_dots(const float* x, int64_t m, int64_t k, const uint16_t* wrow, DType dtype, float* out) {
  for (int64_t r = 0; r < m; ++r) {
    float s = 0;
    for (int64_t j = 0; j < k; ++j)
      s += x[r * k + j] * (dtype == DType::F16 ? half_to_float(wrow[j]) : bf16_to_float(wrow[j]));
    out[r] = s;
  }
}
#endif

}  // namespace

void gemv_half(ThreadPool& pool, const float* x, int64_t m, int64_t k, const uint16_t* w, DType w_dtype, int64_t n,
               const float* bias, float* y) {
  for (int64_t first = 0; first < m; first += kHalfGemvMaxRows) {
    const int64_t rows = std::min(kHalfGemvMaxRows, m - first);
    const float* xs = x + first * k;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      float dots[kHalfGemvMaxRows];
      for (int64_t j = begin; j < end; ++j) {
        row_dots(xs, rows, k, w + j * k, w_dtype, dots);
        for (int64_t r = 0; r < rows; ++r) y[(first + r) * n + j] = dots[r] + (bias ? bias[j] : 0.0f);
      }
    }, 64);
  }
}

}  // namespace hark
