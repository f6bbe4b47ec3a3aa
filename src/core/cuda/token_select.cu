// Backend::select_tokens on the GPU: one block per row applies the logit filters
// (core/token_select_rules.h, the same test the CPU reference uses), then finds the k
// best tokens and the row's log-sum-exp with block reductions over the ~52 k logits, all
// in fp32. The logits stay on the device; a decoder step returns k (token, log-prob)
// pairs per row.
#include <cstdint>

#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/token_select_rules.h"

namespace hark::cuda {
namespace {

using namespace device;
using namespace select_spec;
constexpr int kThreads = 512;
constexpr int kMaxK = 16;

struct Best {
  float value;
  int index;
};

// The larger value; on equal values the lower index (std::max_element's choice).
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.value > a.value || (b.value == a.value && b.index >= 0 && (a.index < 0 || b.index < a.index))) return b;
  return a;
}

__device__ Best block_best(Best v, Best* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, v.value, o), __shfl_xor_sync(0xffffffffu, v.index, o)};
    v = better(v, other);
  }
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  Best r = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) r = better(r, scratch[w]);
  __syncthreads();
  return r;
}

__device__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0;
  for (int w = 0; w < kThreads / 32; ++w) r += scratch[w];
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kThreads) select_kernel(const float* __restrict__ logits, int vocab,
                                                          const int32_t* __restrict__ spec, int k,
                                                          int32_t* __restrict__ out) {
  __shared__ Best best_scratch[kThreads / 32];
  __shared__ float sum_scratch[kThreads / 32];
  __shared__ int chosen[kMaxK];
  const int r = blockIdx.x;
  const float* x = logits + static_cast<int64_t>(r) * vocab;
  const int32_t* row = spec + kHeader + spec[kMaskWords] + r * kRowFields;
  const bool timestamps = spec[kTimestamps] != 0;
  const int ts = timestamps ? spec[kTimestampBegin] : vocab;
  auto filtered = [&](int i) { return select_masked(spec, row, i) ? -INFINITY : x[i]; };

  bool text_masked = false;
  if (timestamps) {
    Best text{-INFINITY, -1}, stamp{-INFINITY, -1};
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const Best v{filtered(i), i};
      if (i < ts) text = better(text, v); else stamp = better(stamp, v);
    }
    const float max_text = block_best(text, best_scratch).value, max_ts = block_best(stamp, best_scratch).value;
    float lse_ts = -INFINITY;
    if (max_ts > -INFINITY) {
      float sum = 0;
      for (int i = ts + threadIdx.x; i < vocab; i += kThreads) sum += __expf(filtered(i) - max_ts);
      lse_ts = max_ts + __logf(block_sum(sum, sum_scratch));
    }
    text_masked = lse_ts > max_text;  // the timestamps together are likelier than any text token
  }
  auto final_value = [&](int i) { return text_masked && i < ts ? -INFINITY : filtered(i); };
  Best top{-INFINITY, -1};
  for (int i = threadIdx.x; i < vocab; i += kThreads) top = better(top, Best{final_value(i), i});
  top = block_best(top, best_scratch);
  float lse = -INFINITY;
  if (top.value > -INFINITY) {
    float sum = 0;
    for (int i = threadIdx.x; i < vocab; i += kThreads) sum += __expf(final_value(i) - top.value);
    lse = top.value + __logf(block_sum(sum, sum_scratch));
  }
  int32_t* o = out + static_cast<int64_t>(r) * k * 2;
  for (int c = 0; c < k; ++c) {
    if (c > 0) {  // the best not chosen yet
      top = Best{-INFINITY, -1};
      for (int i = threadIdx.x; i < vocab; i += kThreads) {
        bool taken = false;
        for (int j = 0; j < c; ++j) taken = taken || chosen[j] == i;
        if (!taken) top = better(top, Best{final_value(i), i});
      }
      top = block_best(top, best_scratch);
    }
    const bool found = top.index >= 0 && top.value > -INFINITY;
    if (threadIdx.x == 0) {
      chosen[c] = found ? top.index : -1;
      o[2 * c] = found ? top.index : spec[kEot];
      o[2 * c + 1] = __float_as_int(found ? top.value - lse : -INFINITY);
    }
    __syncthreads();
  }
}

}  // namespace

void select_tokens(const float* logits, int rows, int vocab, const int32_t* spec, int k, int32_t* out,
                   cudaStream_t stream) {
  if (rows <= 0) return;
  if (k < 1 || k > kMaxK) throw Error(ErrorCode::InvalidArgument, "[cuda] select_tokens keeps 1 to 16 tokens per row");
  select_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, spec, k, out);
}

}  // namespace hark::cuda
