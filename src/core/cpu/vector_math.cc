#include "core/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hark {

void layer_norm_row(const float* x, const float* gamma, const float* beta, int64_t n, float eps, float* y) {
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

namespace {

// erf(x) for x >= 0 via Abramowitz & Stegun 7.1.26 refined: the rational part is
// evaluated in float, exp() in float; error ~1e-7, far inside the 1e-4 parity budget.
inline float erf_approx(float x) {
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float r = 1.0f - poly * fast_exp(-ax * ax);
  return std::copysign(r, x);
}
}  // namespace

void gelu_inplace(float* x, int64_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + erf_approx(v * kInvSqrt2));
  }
}

void softmax_row(float* x, int64_t visible, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < visible; ++i) max = std::max(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < visible; ++i) x[i] = fast_exp(x[i] - max);
  for (int64_t i = 0; i < visible; ++i) sum += x[i];
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < visible; ++i) x[i] *= inv;
  for (int64_t i = visible; i < n; ++i) x[i] = 0.0f;
}

float log_sum_exp(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - max));
  return max + static_cast<float>(std::log(sum));
}

}  // namespace hark
