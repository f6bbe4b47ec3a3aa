#include "core/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/tensor.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace hark {

void floats_to_half(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

namespace {

// The loops of the kernels below, uninstrumented in the sanitizer build: each public
// function checks its spans first (core/checked_span.h).
HARK_UNINSTRUMENTED void layer_norm_loop(const float* x, const float* gamma, const float* beta, int64_t n, float eps,
                                         float* y) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float var = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float d = x[i] - mean;
    var += d * d;
  }
  const float inv = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

// erf(x) for x >= 0 via Abramowitz & Stegun 7.1.26 refined: the rational part is
// evaluated in float, exp() in float; error ~1e-7, far inside the 1e-4 parity budget.
HARK_UNINSTRUMENTED inline float erf_approx(float x) {
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float r = 1.0f - poly * fast_exp(-ax * ax);
  return std::copysign(r, x);
}

HARK_UNINSTRUMENTED void gelu_loop(float* x, int64_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + erf_approx(v * kInvSqrt2));
  }
}

HARK_UNINSTRUMENTED void softmax_loop(float* x, int64_t visible, int64_t n) {
  // The max and the sum are reduced in 16 independent lanes: a single running sum is a
  // chain of dependent additions that the compiler may not reorder, and it made softmax
  // the largest single cost of the encoder (1500 × 1500 scores per head and layer).
  constexpr int kLanes = 16;
  float lane_max[kLanes];
  for (float& m : lane_max) m = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= visible; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane_max[j] = std::max(lane_max[j], x[i + j]);
  float max = -std::numeric_limits<float>::infinity();
  for (float m : lane_max) max = std::max(max, m);
  for (; i < visible; ++i) max = std::max(max, x[i]);

  float lane_sum[kLanes] = {};
  i = 0;
  for (; i + kLanes <= visible; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float e = fast_exp(x[i + j] - max);
      x[i + j] = e;
      lane_sum[j] += e;
    }
  }
  float sum = 0.0f;
  for (float s : lane_sum) sum += s;
  for (; i < visible; ++i) {
    x[i] = fast_exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (i = 0; i < visible; ++i) x[i] *= inv;
  for (i = visible; i < n; ++i) x[i] = 0.0f;
}

HARK_UNINSTRUMENTED float log_sum_exp_loop(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - max));
  return max + static_cast<float>(std::log(sum));
}

}  // namespace

void layer_norm_row(const float* x, const float* gamma, const float* beta, int64_t n, float eps, float* y) {
  check_span(x, n);
  check_span(gamma, n);
  check_span(beta, n);
  check_span(y, n);
  layer_norm_loop(x, gamma, beta, n, eps, y);
}

void gelu_inplace(float* x, int64_t n) {
  check_span(x, n);
  gelu_loop(x, n);
}

void softmax_row(float* x, int64_t visible, int64_t n) {
  check_span(x, n);
  softmax_loop(x, visible, n);
}

float log_sum_exp(const float* x, int64_t n) {
  check_span(x, n);
  return log_sum_exp_loop(x, n);
}

}  // namespace hark
