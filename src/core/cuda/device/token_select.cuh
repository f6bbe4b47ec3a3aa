// The token selection's reductions (token_select.cu), shared with the greedy step's logits
// product that chooses its token itself (gemv_one_row.cu): the best (value, index) with
// std::max_element's tie rule, and an online log-sum-exp. Device helpers only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace hark::cuda::device {

struct Best {
  float value;
  int index;
};

// The larger value; on equal values the lower index (std::max_element's choice).
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.index < 0) return a;
  if (a.index < 0 || b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

// Across a warp: every lane gets the best of all lanes'.
__device__ __forceinline__ Best warp_best(Best v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, v.value, o), __shfl_xor_sync(0xffffffffu, v.index, o)};
    v = better(v, other);
  }
  return v;
}

// Warp results (every lane holding its warp's) combined across the block in warp order;
// every thread must call it, `scratch` holds one entry a warp.
template <class V, class Combine>
__device__ inline V block_combine(V warp_result, V* scratch, Combine combine) {
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = warp_result;
  __syncthreads();
  V r = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x) / 32; ++w) r = combine(r, scratch[w]);
  __syncthreads();
  return r;
}

__device__ inline Best block_best(Best v, Best* scratch) {
  return block_combine(warp_best(v), scratch, [](Best a, Best b) { return better(a, b); });
}

// An online log-sum-exp: max and Σ exp(x − max).
struct Lse {
  float max, sum;
};

__device__ __forceinline__ Lse add(Lse a, Lse b) {
  if (b.max == -INFINITY) return a;
  if (a.max == -INFINITY) return b;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

__device__ __forceinline__ Lse warp_lse(Lse v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = add(v, Lse{__shfl_xor_sync(0xffffffffu, v.max, o), __shfl_xor_sync(0xffffffffu, v.sum, o)});
  return v;
}

__device__ inline Lse block_lse(Lse v, Lse* scratch) {
  return block_combine(warp_lse(v), scratch, [](Lse a, Lse b) { return add(a, b); });
}

__device__ __forceinline__ float log_sum(Lse v) { return v.max == -INFINITY ? -INFINITY : v.max + __logf(v.sum); }

}  // namespace hark::cuda::device
