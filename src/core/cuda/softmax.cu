// Row softmax of the fp32 reference attention (scores materialised by cuBLAS).
#include "core/cuda/device/types.cuh"
#include "core/cuda/kernels.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;

// Block-wide reduction through one shared word per warp; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  v = kMax ? warp_max(v) : warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : (kMax ? -INFINITY : 0.0f);
  if (warp == 0) v = kMax ? warp_max(v) : warp_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__global__ void softmax_kernel(float* scores, int64_t tq, int64_t tk, bool causal, int64_t offset) {
  __shared__ float shared[32];
  const int64_t row_index = blockIdx.x;
  float* row = scores + row_index * tk;
  const int64_t i = row_index % tq;
  const int64_t visible = causal ? min(tk, i + offset + 1) : tk;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce<true>(m, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    const float e = expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_reduce<false>(sum, shared);
  for (int64_t j = threadIdx.x; j < tk; j += blockDim.x) row[j] = j < visible ? row[j] * inv : 0.0f;
}

}  // namespace

void softmax(float* scores, int64_t blocks, int64_t tq, int64_t tk, bool causal, int64_t offset, cudaStream_t stream) {
  if (blocks * tq > 0)
    softmax_kernel<<<static_cast<unsigned>(blocks * tq), kThreads, 0, stream>>>(scores, tq, tk, causal, offset);
}

}  // namespace hark::cuda
