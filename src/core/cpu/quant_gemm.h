// Matrix products with block-quantized weights (ggml's q4_0 … q6_K, core/quant_format.h)
// kept packed in memory. A few rows of x (decoder steps, beams) are quantized per block
// of 32 to int8 and multiplied with integer dot products straight from the weight blocks
// (AVX-512 VNNI or AVX2, chosen at run time; a portable loop otherwise): at batch 1 the
// step is bound by weight reads, and q8_0 blocks are half the bytes of f16. Larger
// products (the encoder) on AVX-512 VNNI quantize x the same way and run a register-tiled
// int8 product (quant_gemm_avx512.cc) for the formats whose 32 values share one scale and
// offset; with q2_K, q3_K, q6_K or other CPUs they widen one panel of weight rows at a time
// to fp32 in a per-thread buffer and run sgemm on it (HARK_CPU_Q8_GEMM=panel: that path
// for every format), so no fp32 copy of a weight is ever kept.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace hark {

// Rows of x at most for the integer dot-product path; larger products use sgemm panels.
constexpr int64_t kQuantGemvMaxRows = 8;

// y[m, n] = x[m, k] · w[n, k]ᵀ (+ bias[n]), rows of y `ldy` apart; w is quantized, k a
// multiple of its block.
void quant_linear(ThreadPool& pool, const float* x, int64_t m, int64_t k, const Tensor& w, const float* bias, float* y,
                  int64_t ldy);

// y[j] = x · w_j for the n rows w_j of k values, `row_bytes` apart, on the calling thread
// (attention scores over q8_0 keys, each row a head's blocks of a key).
void quant_dot_serial(const float* x, int64_t k, DType dtype, const uint8_t* w, size_t row_bytes, int64_t n, float* y);

// The instruction set the integer kernels run on: "avx512-vnni", "avx2" or "scalar".
const char* quant_isa();
// Selects one explicitly (tests, benchmarks); false when this CPU cannot run it.
bool set_quant_isa(const std::string& name);

}  // namespace hark
