// Element-wise, normalisation and layout kernels of the CUDA backend (fp32 reference path).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/kernels.cuh"

namespace hark::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__device__ float block_sum(float v, float* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__device__ float block_max(float v, float* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : -INFINITY;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, int64_t d,
                                  float eps) {
  __shared__ float shared[32];
  const float* row = x + blockIdx.x * d;
  float* out = y + blockIdx.x * d;
  float sum = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) sum += row[i];
  const float mean = block_sum(sum, shared) / static_cast<float>(d);
  float var = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const float c = row[i] - mean;
    var += c * c;
  }
  const float inv = rsqrtf(block_sum(var, shared) / static_cast<float>(d) + eps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) out[i] = (row[i] - mean) * inv * gamma[i] + beta[i];
}

__global__ void gelu_kernel(float* x, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

__global__ void add_kernel(float* x, const float* y, int64_t n, int64_t y_n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[y_n == n ? i : i % y_n];
}

__global__ void fill_rows_kernel(float* y, const float* bias, int64_t n, int64_t cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = bias[i % cols];
}

__global__ void softmax_kernel(float* scores, int64_t tq, int64_t tk, bool causal, int64_t offset) {
  __shared__ float shared[32];
  const int64_t row_index = blockIdx.x;
  float* row = scores + row_index * tk;
  const int64_t i = row_index % tq;
  const int64_t visible = causal ? min(tk, i + offset + 1) : tk;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    const float e = expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_sum(sum, shared);
  for (int64_t j = threadIdx.x; j < tk; j += blockDim.x) row[j] = j < visible ? row[j] * inv : 0.0f;
}

__global__ void im2col_kernel(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out,
                              int stride, int padding) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= cin * k * t_out) return;
  const int64_t t = idx % t_out, row = idx / t_out, kk = row % k, ci = row / k;
  const int64_t src = t * stride + kk - padding;
  cols[idx] = (src >= 0 && src < t_in) ? x[ci * t_in + src] : 0.0f;
}

__global__ void transpose_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  __shared__ float tile[32][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  for (int r_off = threadIdx.y; r_off < 32; r_off += blockDim.y) {
    const int64_t r = blockIdx.y * 32 + r_off;
    if (r < rows && c < cols) tile[r_off][threadIdx.x] = x[r * cols + c];
  }
  __syncthreads();
  const int64_t r2 = blockIdx.y * 32 + threadIdx.x;
  for (int c_off = threadIdx.y; c_off < 32; c_off += blockDim.y) {
    const int64_t c2 = blockIdx.x * 32 + c_off;
    if (r2 < rows && c2 < cols) y[c2 * rows + r2] = tile[threadIdx.x][c_off];
  }
}

__global__ void embedding_kernel(const float* table, const int32_t* ids, int64_t n, int64_t d, const float* positions,
                                 int64_t first, float* out) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n * d) return;
  const int64_t i = idx / d, j = idx % d;
  float v = table[static_cast<int64_t>(ids[i]) * d + j];
  if (positions) v += positions[(first + i) * d + j];
  out[idx] = v;
}

__global__ void half_to_float_kernel(const uint16_t* src, int dtype, float* dst, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (dtype == 1) {
    dst[i] = __half2float(__ushort_as_half(src[i]));
  } else {
    dst[i] = __uint_as_float(static_cast<unsigned>(src[i]) << 16);
  }
}

}  // namespace

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t d, float eps,
                cudaStream_t stream) {
  if (rows > 0) layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, gamma, beta, y, d, eps);
}

void gelu(float* x, int64_t n, cudaStream_t stream) {
  if (n > 0) gelu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n);
}

void add(float* x, const float* y, int64_t n, int64_t y_n, cudaStream_t stream) {
  if (n > 0) add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, y_n);
}

void fill_rows(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols > 0) fill_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, bias, rows * cols, cols);
}

void softmax(float* scores, int64_t blocks, int64_t tq, int64_t tk, bool causal, int64_t offset, cudaStream_t stream) {
  if (blocks * tq > 0)
    softmax_kernel<<<static_cast<unsigned>(blocks * tq), kThreads, 0, stream>>>(scores, tq, tk, causal, offset);
}

void im2col(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out, int stride, int padding,
            cudaStream_t stream) {
  const int64_t n = cin * k * t_out;
  if (n > 0) im2col_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, cols, cin, t_in, k, t_out, stride, padding);
}

void transpose(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32));
  if (rows > 0 && cols > 0) transpose_kernel<<<grid, dim3(32, 8), 0, stream>>>(x, y, rows, cols);
}

void embedding(const float* table, const int32_t* ids, int64_t n, int64_t d, const float* positions, int64_t first,
               float* out, cudaStream_t stream) {
  if (n * d > 0) embedding_kernel<<<blocks_for(n * d), kThreads, 0, stream>>>(table, ids, n, d, positions, first, out);
}

void half_to_float(const uint16_t* src, int dtype, float* dst, int64_t n, cudaStream_t stream) {
  if (n > 0) half_to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dtype, dst, n);
}

}  // namespace hark::cuda
