// What the decoder's cross-attention kernels share (decoder_attention.cu's split kernel,
// cross_attention_stream.cu's streaming one): a block serves a range of one window's keys
// for one head and every query that reads that window, and leaves a partial (max, sum,
// output) per query; the last block of a (query, head) to finish merges them. Device
// helpers only.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda/device/types.cuh"

namespace hark::cuda::device {

// A partial per (query, head, split): max, sum, then HD outputs, as floats.
template <int HD>
__host__ __device__ constexpr int partial_size() {
  return HD + 2;
}

// The query rows (of n_rows) that read `window`, found by all threads of the block at once
// (one thread walking every row's window index was a chain of dependent loads per block: 48
// of them at 48 rows on 48 windows). At most kMaxWindowRows are listed; `count` is the true
// number, so a caller past the list walks every row instead (still correct). Ends with a
// barrier: every thread sees the list.
constexpr int kMaxWindowRows = 32;
__device__ __forceinline__ void find_window_rows(const int32_t* __restrict__ row_window, int n_rows, int window,
                                                 int (&rows)[kMaxWindowRows], int& count) {
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  for (int r = threadIdx.x; r < n_rows; r += blockDim.x)
    if (row_window[r] == window) {
      const int slot = atomicAdd(&count, 1);
      if (slot < kMaxWindowRows) rows[slot] = r;
    }
  __syncthreads();
}

// The chunks of one (query, head) merged by the whole block: out = Σ acc_s·e^(m_s − m) /
// Σ l_s·e^(m_s − m). The partials come from other blocks, through L2; every load is issued
// before the first is used (each chunk's max and sum by a thread of its own into `stage`,
// each dimension's outputs as a fixed, predicated count) rather than in two dependent loops
// of one load per chunk. The sums are the loops', in their order. `stage` holds 2 · splits
// floats of shared memory. (On an H200 this did not change the one-row step, 0.238 ms either
// way; together with two changes in the split kernel it took that kernel at 48 rows on 48
// windows from 272 to 152 µs per turbo layer, Nsight Compute, 2026-12-01.)
template <int HD, class T>
__device__ void combine_chunks(const float* p, int splits, T* out, float* stage) {
  constexpr int kPartial = partial_size<HD>();
  constexpr int kMaxSplits = 16;  // outputs held in registers (12 chunks at 1500 frames for 16-bit types)
  const int tid = threadIdx.x;
  for (int s = tid; s < splits; s += blockDim.x) {
    stage[s] = __ldcg(p + s * kPartial);
    stage[splits + s] = __ldcg(p + s * kPartial + 1);
  }
  __syncthreads();
  if (tid >= HD) return;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, stage[s]);
  float l = 0.0f, acc = 0.0f;
  for (int s0 = 0; s0 < splits; s0 += kMaxSplits) {
    float av[kMaxSplits];
#pragma unroll
    for (int i = 0; i < kMaxSplits; ++i)
      if (s0 + i < splits) av[i] = __ldcg(p + (s0 + i) * kPartial + 2 + tid);
#pragma unroll
    for (int i = 0; i < kMaxSplits; ++i) {
      if (s0 + i < splits) {
        const float w = __expf(stage[s0 + i] - m);
        l += stage[splits + s0 + i] * w;
        acc += av[i] * w;
      }
    }
  }
  out[tid] = from_float<T>(acc / l);
}

// After a block has written its partial for query qi and this head (blockIdx.x, of
// gridDim.x heads): with counters, the last of the `splits` blocks to finish merges all of
// them into out[qi, head] and resets the counter for the next launch, so no second kernel
// is needed. `stage`: 2 · splits floats of shared memory, free to overwrite.
template <int HD, class T>
__device__ void finish_query(const float* partials, int splits, int* counters, int64_t qi, int64_t d, T* out,
                             float* stage) {
  if (!counters) return;
  __shared__ bool last;
  const int head = blockIdx.x;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = counters + qi * gridDim.x + head;
    last = atomicAdd(counter, 1) == splits - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  if (last) {
    __threadfence();
    combine_chunks<HD, T>(partials + (qi * gridDim.x + head) * splits * partial_size<HD>(), splits,
                          out + qi * d + head * HD, stage);
  }
}

}  // namespace hark::cuda::device
