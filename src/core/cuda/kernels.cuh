// Host entry points of the CUDA kernels (one family per .cu file). All take raw device
// pointers and the stream to run on; shapes are row-major.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hark::cuda {

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t d, float eps,
                cudaStream_t stream);
void gelu(float* x, int64_t n, cudaStream_t stream);
// x += y where y has n elements (same shape) or `row` elements broadcast over x's rows.
void add(float* x, const float* y, int64_t n, int64_t y_n, cudaStream_t stream);
// y[rows, cols] = bias broadcast over rows.
void fill_rows(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);
// In-place softmax over rows of length tk; with causal, row i of each [tq, tk] block keeps
// entries [0, i + offset] and zeroes the rest.
void softmax(float* scores, int64_t blocks, int64_t tq, int64_t tk, bool causal, int64_t offset, cudaStream_t stream);
// cols[cin·k, t_out] from x[cin, t_in] for a 1-D convolution.
void im2col(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out, int stride, int padding,
            cudaStream_t stream);
void transpose(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
// out[i] = table[ids[i]] (+ positions[first + i]).
void embedding(const float* table, const int32_t* ids, int64_t n, int64_t d, const float* positions, int64_t first,
               float* out, cudaStream_t stream);
// fp16 / bf16 (dtype 1 / 2) → fp32.
void half_to_float(const uint16_t* src, int dtype, float* dst, int64_t n, cudaStream_t stream);

}  // namespace hark::cuda
