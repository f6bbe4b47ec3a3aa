// Row kernels shared by the CPU backend and the VAD: written as plain loops that the
// compiler vectorises; numerics follow the reference (fp32, exact erf GELU).
#pragma once

#include <cstdint>

namespace hark {

// One row of layer norm (two-pass mean/variance in fp32, as PyTorch does).
void layer_norm_row(const float* x, const float* gamma, const float* beta, int64_t n, float eps, float* y);

// x · Φ(x) with Φ from erf; max abs error below 2e-7 against the double-precision formula.
void gelu_inplace(float* x, int64_t n);

// Softmax over the first `visible` entries; the entries [visible, n) become 0.
void softmax_row(float* x, int64_t visible, int64_t n);

// exp(x) with ~2e-7 relative error, vectorisable (see vector_math.cc).
float fast_exp(float x);

// log(sum(exp(x))) over n entries, stable.
float log_sum_exp(const float* x, int64_t n);

}  // namespace hark
