// Row kernels shared by the CPU backend and the VAD: written as plain loops that the
// compiler vectorises; numerics follow the reference (fp32, exact erf GELU).
#pragma once

#include <bit>
#include <cstdint>

#include "core/checked_span.h"

namespace hark {

// One row of layer norm (two-pass mean/variance in fp32, as PyTorch does).
void layer_norm_row(const float* x, const float* gamma, const float* beta, int64_t n, float eps, float* y);

// x · Φ(x) with Φ from erf; max abs error below 2e-7 against the double-precision formula.
void gelu_inplace(float* x, int64_t n);

// IEEE half precision of n floats, round to nearest even (the same bits as float_to_half).
void floats_to_half(const float* src, uint16_t* dst, int64_t n);

// Softmax over the first `visible` entries; the entries [visible, n) become 0.
void softmax_row(float* x, int64_t visible, int64_t n);

// e^x without libm, branch-free so that loops calling it vectorise (softmax, GELU's erf,
// the VAD's sigmoid/tanh): range reduction x = n·ln2 + r (|r| ≤ ln2/2, Cody–Waite split of
// ln2) and a degree-7 Taylor polynomial for e^r; relative error about 2e-7. Inputs are
// clamped to ±87, which saturates as sigmoid, tanh and masked softmax entries need.
// Uninstrumented like the kernels that call it, so it inlines into them (core/checked_span.h).
HARK_UNINSTRUMENTED inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 87.0f ? 87.0f : x);
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5·2²³: adding it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// log(sum(exp(x))) over n entries, stable.
float log_sum_exp(const float* x, int64_t n);

}  // namespace hark
