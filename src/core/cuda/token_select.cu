// Backend::select_tokens on the GPU, in two launches so that a row's ~52 k logits are
// spread over many blocks (one block per row took 108 µs per decoder step; 128 parts of
// ~400 logits measured 6 µs less per greedy step on an H200 than 32 parts):
//  1. select_parts: block (part, row) filters its slice of the vocabulary (the same test
//     as the CPU reference, core/token_select_rules.h) and leaves, separately for text
//     and timestamp tokens, the online (max, Σexp) pair and its k best tokens;
//  2. select_merge: one block per row merges the parts, applies the timestamps-versus-
//     text rule on the merged statistics, and writes the k best tokens with their
//     log-probabilities.
#include <algorithm>
#include <cstdint>

#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/token_select.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"
#include "core/token_select_rules.h"

namespace hark::cuda {
namespace {

using namespace device;
using namespace select_spec;
constexpr int kThreads = 256;
constexpr int kMaxParts = 128;  // parts per row (32 measured 6 µs slower per greedy step)
static_assert(kMaxParts <= kThreads, "select_merge reads one part per thread");
constexpr int kMaxK = 16;

// Per (row, part): text Lse, timestamp Lse, then k text and k timestamp candidates.
__host__ __device__ constexpr int part_floats(int k) { return 4 + 4 * k; }

__global__ void __launch_bounds__(kThreads) select_parts(const float* __restrict__ logits, int vocab,
                                                         const int32_t* __restrict__ spec, int k,
                                                         float* __restrict__ parts) {
  pdl_enter();
  __shared__ Best best_scratch[kThreads / 32];
  __shared__ Lse lse_scratch[kThreads / 32];
  const int part = blockIdx.x, r = blockIdx.y, n_parts = gridDim.x;
  const int chunk = (vocab + n_parts - 1) / n_parts;
  const int begin = part * chunk, end = min(vocab, begin + chunk);
  const float* x = logits + static_cast<int64_t>(r) * vocab;
  const int32_t* row = spec + kHeader + spec[kMaskWords] + r * kRowFields;
  const int ts = spec[kTimestamps] ? spec[kTimestampBegin] : vocab;
  Lse text{-INFINITY, 0.0f}, stamp{-INFINITY, 0.0f};
  for (int i = begin + threadIdx.x; i < end; i += kThreads) {
    const float v = select_masked(spec, row, i) ? -INFINITY : x[i];
    if (v == -INFINITY) continue;
    if (i < ts) text = add(text, Lse{v, 1.0f}); else stamp = add(stamp, Lse{v, 1.0f});
  }
  text = block_lse(text, lse_scratch);
  stamp = block_lse(stamp, lse_scratch);
  float* out = parts + (static_cast<int64_t>(r) * n_parts + part) * part_floats(k);
  if (threadIdx.x == 0) {
    out[0] = text.max, out[1] = text.sum, out[2] = stamp.max, out[3] = stamp.sum;
  }
  // The k best of each region, by rounds that exclude what earlier rounds took.
  for (int region = 0; region < 2; ++region) {
    const int lo = region == 0 ? begin : max(begin, ts), hi = region == 0 ? min(end, ts) : end;
    float prev_value = INFINITY;
    int prev_index = -1;
    for (int c = 0; c < k; ++c) {
      Best b{-INFINITY, -1};
      for (int i = lo + threadIdx.x; i < hi; i += kThreads) {
        const float v = select_masked(spec, row, i) ? -INFINITY : x[i];
        // Only tokens ranked after the previous pick (value, then id): no chosen list needed.
        const bool after = v < prev_value || (v == prev_value && i > prev_index);
        if (v > -INFINITY && after) b = better(b, Best{v, i});
      }
      b = block_best(b, best_scratch);
      if (threadIdx.x == 0) {
        out[4 + region * 2 * k + 2 * c] = b.index >= 0 ? b.value : -INFINITY;
        out[4 + region * 2 * k + 2 * c + 1] = __int_as_float(b.index);
      }
      if (b.index < 0) {
        for (int rest = c + 1 + threadIdx.x; rest < k; rest += kThreads) {
          out[4 + region * 2 * k + 2 * rest] = -INFINITY;
          out[4 + region * 2 * k + 2 * rest + 1] = __int_as_float(-1);
        }
        break;
      }
      prev_value = b.value, prev_index = b.index;
    }
  }
}

__global__ void __launch_bounds__(kThreads) select_merge(const float* __restrict__ parts, int32_t* __restrict__ spec,
                                                         int k, int n_parts, int32_t* __restrict__ out,
                                                         int32_t* __restrict__ feed) {
  pdl_enter();
  __shared__ Best best_scratch[kThreads / 32];
  __shared__ Lse lse_scratch[kThreads / 32];
  const int r = blockIdx.x;
  const float* p = parts + static_cast<int64_t>(r) * n_parts * part_floats(k);
  Lse text{-INFINITY, 0.0f}, stamp{-INFINITY, 0.0f};
  if (threadIdx.x < n_parts) {
    const float* q = p + threadIdx.x * part_floats(k);
    text = Lse{q[0], q[1]};
    stamp = Lse{q[2], q[3]};
  }
  text = block_lse(text, lse_scratch);
  stamp = block_lse(stamp, lse_scratch);
  // The timestamps together likelier than any text token: text is masked.
  const bool text_masked = spec[kTimestamps] && log_sum(stamp) > text.max;
  const float lse = text_masked ? log_sum(stamp) : log_sum(add(text, stamp));
  // Candidates: each part's k best of each region (text only when not masked).
  const int per_part = 2 * k, total = n_parts * per_part;
  float prev_value = INFINITY;
  int prev_index = -1;
  for (int c = 0; c < k; ++c) {
    Best b{-INFINITY, -1};
    for (int j = threadIdx.x; j < total; j += kThreads) {
      const int part = j / per_part, slot = j % per_part;
      if (text_masked && slot < k) continue;
      const float* q = p + part * part_floats(k) + 4 + 2 * slot;
      const float v = q[0];
      const int index = __float_as_int(q[1]);
      const bool after = v < prev_value || (v == prev_value && index > prev_index);
      if (index >= 0 && v > -INFINITY && after) b = better(b, Best{v, index});
    }
    b = block_best(b, best_scratch);
    if (threadIdx.x == 0) {
      const bool found = b.index >= 0;
      out[(static_cast<int64_t>(r) * k + c) * 2] = found ? b.index : spec[kEot];
      out[(static_cast<int64_t>(r) * k + c) * 2 + 1] = __float_as_int(found ? b.value - lse : -INFINITY);
      // Greedy one-step lag: the best token becomes the next step's input here. Every
      // block of select_parts has finished reading the row summaries (this kernel began
      // after them), and each block writes only its own row.
      if (feed && c == 0) select_feed_back(spec, r, found ? b.index : spec[kEot], feed, gridDim.x);
    }
    if (b.index >= 0) prev_value = b.value, prev_index = b.index;
    else prev_value = -INFINITY, prev_index = 0x7fffffff;  // nothing left: the rest are EOT, −∞
  }
}

}  // namespace

int64_t select_tokens_scratch(int rows, int k) { return static_cast<int64_t>(rows) * kMaxParts * part_floats(k); }

void select_tokens(const float* logits, int rows, int vocab, int32_t* spec, int k, float* scratch, int32_t* out,
                   cudaStream_t stream, int32_t* feed) {
  if (rows <= 0) return;
  if (k < 1 || k > kMaxK) throw Error(ErrorCode::InvalidArgument, "[cuda] select_tokens keeps 1 to 16 tokens per row");
  // About one wave of blocks: 128 parts of a row for up to 8 rows, fewer and larger parts
  // as rows grow (48 rows of 128 parts were six waves of ~400-logit blocks, 65 µs a step
  // of the turbo shape on an H200).
  const int parts = std::clamp(1024 / rows, 16, kMaxParts);
  launch_kernel(select_parts, dim3(parts, static_cast<unsigned>(rows)), kThreads, 0, stream, logits, vocab, spec, k, scratch);
  launch_kernel(select_merge, static_cast<unsigned>(rows), kThreads, 0, stream, scratch, spec, k, parts, out, feed);
}

}  // namespace hark::cuda
