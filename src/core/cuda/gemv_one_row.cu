// The greedy decoder step's products: one activation row, y[n] = x[k]·w[n, k]ᵀ + b, with
// an optional layer norm of x first, for k ≤ 2048 (every Whisper width d; the MLP's 4·d
// input of the larger sizes goes to gemv.cu). At one row these products are bound by the
// latency of the weight reads, not by their bandwidth, so the kernel avoids every wait it
// can:
//  - a warp holds all of x in registers (at most eight 16-byte words per lane), so the
//    norm's statistics and the dot products need no shared memory and no block barrier
//    (gemv.cu stages x in shared memory for up to eight rows and synchronises the block);
//  - the first weight row and the bias are requested before waiting for the kernel that
//    writes x (launch.cuh), and each warp serves several output rows with the next row's
//    weights in flight while the current one is summed, so that the grid is one wave and
//    no block waits for a second one;
//  - a fused norm is folded into the product (kFolded, the default up to width 1280): x
//    is scaled by gamma and the statistics are summed beside the first output, each output
//    corrected afterwards with two constants per output made once per weight
//    (norm_fold.cu; device/one_row.cuh, "The folded norm"). Normalising first put two
//    dependent warp reductions and a pass over x between the wait and the first product:
//    0.217 against 0.197 ms a large-v3-turbo step (13 normalising products);
//  - normalising first (HARK_CUDA_NORM_FOLD=0, and past width 1280) repeats layer_norm.cu's
//    arithmetic lane for lane (same words per lane, same sums, same rounding to T), so it
//    gives the separate kernel's values; its gamma and beta, constants like the weights,
//    are copied to shared memory before the wait (read from global memory after it they
//    were one more round trip on the critical path, ~2 µs each in bench/cuda/step_chain.cu;
//    HARK_CUDA_NORM_SMEM=0 reads them so).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/one_row.cuh"
#include "core/cuda/device/token_select.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"
#include "core/token_select_rules.h"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;
bool norm_in_shared_memory();

constexpr int kMaxWidth = 2048;  // the widest row the kernels take (gemv_one_row_applies)
// The folded norm keeps x·γ in fp32 registers (8 a word): up to 5 words a lane, width 1280,
// the widest d of Whisper's sizes (gemv_one_row_folds).
constexpr int kMaxFoldedWords = 5;

// Whether a fused norm runs folded: its constants given, and the row within its width.
bool folds(const GemvNorm* norm, int words_per_lane) {
  return norm && norm->fold_scale && norm->fold_shift && words_per_lane <= kMaxFoldedWords;
}
[[noreturn]] void unreachable_fold() {
  throw Error(ErrorCode::Internal, "[cuda] a folded norm wider than the one-row kernel keeps");
}

// How a fused norm is applied: kGlobal and kStaged normalise x first (gamma and beta read
// from global memory after the wait, or staged in shared memory before it); kFolded
// multiplies x by gamma and corrects each output with the folded constants (one_row.cuh,
// "The folded norm"; the default, HARK_CUDA_NORM_FOLD=0 goes back to kStaged).
enum class NormRead { kNone, kGlobal, kStaged, kFolded };

// The kernels' common part: warp `warp`'s rows [first, end) of y = norm(x)·wᵀ + b, each
// value (after GELU, before a residual add) handed to on_value(row, v) on every lane. Every thread returns
// from it (none exits early), so a kernel may synchronise its block afterwards.
template <class T, class Y, int W, NormRead kNorm, bool kEvictFirst, class OnValue>
__device__ __forceinline__ void one_row_product(const T* __restrict__ x, int k, const T* __restrict__ w, int n,
                                                const T* __restrict__ bias, Y* y, int epilogue,
                                                const float* __restrict__ gamma, const float* __restrict__ beta,
                                                float eps, const float* __restrict__ fold_scale,
                                                const float* __restrict__ fold_shift, int first, int end,
                                                OnValue on_value) {
  constexpr bool kFolded = kNorm == NormRead::kFolded;
  // gamma then beta, when staged (16 KB at the widest).
  __shared__ float4 staged[kNorm == NormRead::kStaged ? 2 * kMaxWidth / 4 : 1];
  const int lane = threadIdx.x & 31;
  auto fetch = [&](int row, uint4 (&out)[W]) { fetch_row_words<T, W, kEvictFirst>(w, k, row, row < end, lane, out); };
  pdl_launch_next();
  if constexpr (kNorm == NormRead::kStaged) {
    for (int i = threadIdx.x; i < k / 4; i += kThreads) {
      cp_async16(&staged[i], gamma + 4 * i, true);
      cp_async16(&staged[k / 4 + i], beta + 4 * i, true);
    }
    cp_async_commit();
  }
  uint4 wv[W];
  fetch(first, wv);
  // Folded: the bias is in fold_shift, and each output has its scale.
  [[maybe_unused]] float4 g[kFolded ? 2 * W : 1];
  float b = 0.0f, c = 0.0f;
  if constexpr (kFolded) {
    fetch_gamma_words<W>(gamma, k, lane, g);
    if (first < end) b = fold_shift[first], c = fold_scale[first];
  } else {
    b = bias && first < end ? to_float(bias[first]) : 0.0f;
  }
  pdl_wait();
  if constexpr (kNorm == NormRead::kStaged) {
    cp_async_wait<0>();
    __syncthreads();
    gamma = reinterpret_cast<const float*>(staged);
    beta = reinterpret_cast<const float*>(staged + k / 4);
  }
  if (first >= end) return;

  [[maybe_unused]] uint4 xv[W];
  [[maybe_unused]] float xg[kFolded ? 8 * W : 1];
  [[maybe_unused]] float sum = 0, sum_sq = 0, mean = 0, rstd = 0;
  if constexpr (kFolded)
    load_row_scaled<T, W>(x, k, lane, g, xg, sum, sum_sq);
  else
    load_row<T, W>(x, k, lane, kNorm != NormRead::kNone ? gamma : nullptr, beta, eps, xv);

  for (int row = first; row < end; ++row) {
    uint4 next[W];
    fetch(row + 1, next);  // zeros past this warp's rows
    float v, next_bias = 0.0f, next_scale = 0.0f;
    if constexpr (kFolded) {
      if (row + 1 < end) next_bias = fold_shift[row + 1], next_scale = fold_scale[row + 1];
      float dot = dot_words_scaled<T, W>(wv, xg, lane, k / 8);
      if (row == first) {  // the statistics reduced beside the first output
        warp_sum3(dot, sum, sum_sq);
        mean = sum / static_cast<float>(k);
        rstd = rsqrtf(fmaxf(sum_sq / static_cast<float>(k) - mean * mean, 0.0f) + eps);
      } else {
        dot = warp_sum(dot);
      }
      v = rstd * (dot - mean * c) + b;
      c = next_scale;
    } else {
      next_bias = bias && row + 1 < end ? to_float(bias[row + 1]) : 0.0f;
      v = row_dot<T, W>(wv, xv, k, lane) + b;
    }
    if (epilogue == static_cast<int>(GemvEpilogue::Gelu)) v = gelu_erf(v);
    if (lane == 0) {
      const float stored = epilogue == static_cast<int>(GemvEpilogue::Residual) ? v + to_float(y[row]) : v;
      y[row] = from_float<Y>(stored);
    }
    on_value(row, v);
#pragma unroll
    for (int u = 0; u < W; ++u) wv[u] = next[u];
    b = next_bias;
  }
}

template <class T, class Y, int W, NormRead kNorm, bool kEvictFirst>
__global__ void __launch_bounds__(kThreads) gemv_one_row_kernel(const T* __restrict__ x, int k,
                                                                const T* __restrict__ w, int n,
                                                                const T* __restrict__ bias, Y* y, int epilogue,
                                                                const float* __restrict__ gamma,
                                                                const float* __restrict__ beta, float eps,
                                                                const float* __restrict__ fold_scale,
                                                                const float* __restrict__ fold_shift,
                                                                int rows_per_warp) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int first = warp * rows_per_warp, end = min(n, first + rows_per_warp);
  one_row_product<T, Y, W, kNorm, kEvictFirst>(x, k, w, n, bias, y, epilogue, gamma, beta, eps, fold_scale,
                                               fold_shift, first, end, [](int, float) {});
}

// The greedy step's logits with its token chosen in the same launch (token_select.cu's two
// kernels for one row and k = 1, the same rules): lane j keeps the values of its warp's
// rows first + j + 32·s and tests their masks after the product; each block leaves
// one part (text and timestamp log-sum-exp, best text and best timestamp token), and the
// last block to finish merges the parts, applies the timestamps-versus-text rule, writes
// the choice and feeds it back (select_feed_back).
constexpr int kSelectSlots = 4;  // rows a lane keeps: at most 128 rows a warp
constexpr int kSelectPartFloats = 8;

template <class T, int W, NormRead kNorm, bool kEvictFirst>
__global__ void __launch_bounds__(kThreads) logits_select_kernel(const T* __restrict__ x, int k,
                                                                 const T* __restrict__ w, int n, float* y,
                                                                 const float* __restrict__ gamma,
                                                                 const float* __restrict__ beta, float eps,
                                                                 const float* __restrict__ fold_scale,
                                                                 const float* __restrict__ fold_shift,
                                                                 int rows_per_warp, OneRowSelect sel) {
  using namespace select_spec;
  __shared__ Lse lse_scratch[kThreads / 32];
  __shared__ Best best_scratch[kThreads / 32];
  __shared__ float warp_parts[kThreads / 32][kSelectPartFloats];
  __shared__ bool last;
  const int lane = threadIdx.x & 31, warp_in_block = threadIdx.x >> 5;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int first = warp * rows_per_warp, end = min(n, first + rows_per_warp);
  float kept[kSelectSlots];
#pragma unroll
  for (int s = 0; s < kSelectSlots; ++s) kept[s] = -INFINITY;
  one_row_product<T, float, W, kNorm, kEvictFirst>(x, k, w, n, nullptr, y, 0, gamma, beta, eps, fold_scale,
                                                   fold_shift, first, end,
                                                   [&](int row, float v) {
                                                     const int i = row - first;
#pragma unroll
                                                     for (int s = 0; s < kSelectSlots; ++s)
                                                       if (i == lane + 32 * s) kept[s] = v;
                                                   });
  // After the product (whose pdl_wait every thread passed): the spec is the previous
  // step's. Lane j's rows, masked as select_parts masks them.
  const int32_t* spec = sel.spec;
  const int32_t* summary = spec + kHeader + spec[kMaskWords];
  const int ts = spec[kTimestamps] ? spec[kTimestampBegin] : n;
  Lse text{-INFINITY, 0.0f}, stamp{-INFINITY, 0.0f};
  Best best_text{-INFINITY, -1}, best_stamp{-INFINITY, -1};
#pragma unroll
  for (int s = 0; s < kSelectSlots; ++s) {
    const int row = first + lane + 32 * s;
    if (row >= end || kept[s] == -INFINITY || select_masked(spec, summary, row)) continue;
    if (row < ts) {
      text = add(text, Lse{kept[s], 1.0f});
      best_text = better(best_text, Best{kept[s], row});
    } else {
      stamp = add(stamp, Lse{kept[s], 1.0f});
      best_stamp = better(best_stamp, Best{kept[s], row});
    }
  }
  text = warp_lse(text), stamp = warp_lse(stamp);
  best_text = warp_best(best_text), best_stamp = warp_best(best_stamp);
  if (lane == 0) {
    float* p = warp_parts[warp_in_block];
    p[0] = text.max, p[1] = text.sum, p[2] = stamp.max, p[3] = stamp.sum;
    p[4] = best_text.value, p[5] = __int_as_float(best_text.index);
    p[6] = best_stamp.value, p[7] = __int_as_float(best_stamp.index);
  }
  __syncthreads();
  // The block's part, then the count of finished blocks.
  if (threadIdx.x == 0) {
    Lse bt{-INFINITY, 0.0f}, bs{-INFINITY, 0.0f};
    Best xt{-INFINITY, -1}, xs{-INFINITY, -1};
    for (int i = 0; i < kThreads / 32; ++i) {
      const float* p = warp_parts[i];
      bt = add(bt, Lse{p[0], p[1]}), bs = add(bs, Lse{p[2], p[3]});
      xt = better(xt, Best{p[4], __float_as_int(p[5])}), xs = better(xs, Best{p[6], __float_as_int(p[7])});
    }
    float* out = sel.parts + static_cast<int64_t>(blockIdx.x) * kSelectPartFloats;
    out[0] = bt.max, out[1] = bt.sum, out[2] = bs.max, out[3] = bs.sum;
    out[4] = xt.value, out[5] = __int_as_float(xt.index), out[6] = xs.value, out[7] = __int_as_float(xs.index);
    __threadfence();
    last = atomicAdd(sel.counter, 1) == static_cast<int>(gridDim.x) - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  text = Lse{-INFINITY, 0.0f}, stamp = Lse{-INFINITY, 0.0f};
  best_text = Best{-INFINITY, -1}, best_stamp = Best{-INFINITY, -1};
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += kThreads) {
    const float* p = sel.parts + static_cast<int64_t>(b) * kSelectPartFloats;
    text = add(text, Lse{__ldcg(p), __ldcg(p + 1)});
    stamp = add(stamp, Lse{__ldcg(p + 2), __ldcg(p + 3)});
    best_text = better(best_text, Best{__ldcg(p + 4), __float_as_int(__ldcg(p + 5))});
    best_stamp = better(best_stamp, Best{__ldcg(p + 6), __float_as_int(__ldcg(p + 7))});
  }
  text = block_lse(text, lse_scratch);
  stamp = block_lse(stamp, lse_scratch);
  best_text = block_best(best_text, best_scratch);
  best_stamp = block_best(best_stamp, best_scratch);
  if (threadIdx.x == 0) {
    *sel.counter = 0;  // for the next launch
    // The timestamps together likelier than any text token: text is masked.
    const bool text_masked = spec[kTimestamps] && log_sum(stamp) > text.max;
    const float lse = text_masked ? log_sum(stamp) : log_sum(add(text, stamp));
    const Best chosen = text_masked ? best_stamp : better(best_text, best_stamp);
    const bool found = chosen.index >= 0;
    const int token = found ? chosen.index : spec[kEot];
    sel.out[0] = token;
    sel.out[1] = __float_as_int(found ? chosen.value - lse : -INFINITY);
    // Every block has read the spec's row summary (each counted itself after its reads).
    if (sel.feed) select_feed_back(sel.spec, 0, token, sel.feed, 1);
  }
}

int multiprocessors() {
  int device = 0, count = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
  return std::max(1, count);
}

// Warps of `kernel` resident on the whole GPU at once (its registers decide).
template <class Kernel>
int resident_warps(Kernel kernel) {
  int blocks_per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, 0), "occupancy");
  return multiprocessors() * std::max(1, blocks_per_sm) * (kThreads / 32);
}

template <class T, class Y, int W, NormRead kNorm, bool kEvictFirst>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, const GemvNorm* norm,
            cudaStream_t stream) {
  auto kernel = gemv_one_row_kernel<T, Y, W, kNorm, kEvictFirst>;
  // Every GPU of one process is the same model in practice: asked once per kernel.
  static const int capacity = resident_warps(kernel);
  // Rows spread so that the whole grid is resident at once (one wave).
  const int rows_per_warp = std::max(1, (n + capacity - 1) / capacity);
  const int warps = (n + rows_per_warp - 1) / rows_per_warp;
  const unsigned blocks = static_cast<unsigned>((warps + kThreads / 32 - 1) / (kThreads / 32));
  launch_kernel(kernel, blocks, kThreads, 0, stream, static_cast<const T*>(x), k, static_cast<const T*>(w), n,
                static_cast<const T*>(bias), static_cast<Y*>(y), epilogue, norm ? norm->gamma : nullptr,
                norm ? norm->beta : nullptr, norm ? norm->eps : 0.0f, norm ? norm->fold_scale : nullptr,
                norm ? norm->fold_shift : nullptr, rows_per_warp);
}

template <class T, class Y, int W>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, const GemvNorm* norm,
            cudaStream_t stream) {
  const bool hints = l2_hints();
  auto go = [&](auto read) {
    constexpr NormRead kRead = decltype(read)::value;
    hints ? launch<T, Y, W, kRead, true>(x, k, w, n, bias, y, epilogue, norm, stream)
          : launch<T, Y, W, kRead, false>(x, k, w, n, bias, y, epilogue, norm, stream);
  };
  if (!norm) return go(std::integral_constant<NormRead, NormRead::kNone>{});
  if (folds(norm, W)) {
    if constexpr (W <= kMaxFoldedWords) return go(std::integral_constant<NormRead, NormRead::kFolded>{});
    else unreachable_fold();
  }
  if (norm_in_shared_memory()) return go(std::integral_constant<NormRead, NormRead::kStaged>{});
  go(std::integral_constant<NormRead, NormRead::kGlobal>{});
}

template <class T, int W, NormRead kNorm, bool kEvictFirst>
bool launch_select(const void* x, int k, const void* w, int n, float* y, const GemvNorm* norm,
                   const OneRowSelect& sel, cudaStream_t stream) {
  auto kernel = logits_select_kernel<T, W, kNorm, kEvictFirst>;
  static const int capacity = resident_warps(kernel);
  const int rows_per_warp = std::max(1, (n + capacity - 1) / capacity);
  if (rows_per_warp > 32 * kSelectSlots) return false;  // more rows a warp than its lanes keep
  const int warps = (n + rows_per_warp - 1) / rows_per_warp;
  const unsigned blocks = static_cast<unsigned>((warps + kThreads / 32 - 1) / (kThreads / 32));
  if (static_cast<int>(blocks) > kMaxSelectParts) return false;
  launch_kernel(kernel, blocks, kThreads, 0, stream, static_cast<const T*>(x), k, static_cast<const T*>(w), n, y,
                norm ? norm->gamma : nullptr, norm ? norm->beta : nullptr, norm ? norm->eps : 0.0f,
                norm ? norm->fold_scale : nullptr, norm ? norm->fold_shift : nullptr, rows_per_warp, sel);
  return true;
}

template <class T, int W>
bool launch_select(const void* x, int k, const void* w, int n, float* y, const GemvNorm* norm,
                   const OneRowSelect& sel, cudaStream_t stream) {
  const bool hints = l2_hints();
  auto go = [&](auto read) {
    constexpr NormRead kRead = decltype(read)::value;
    return hints ? launch_select<T, W, kRead, true>(x, k, w, n, y, norm, sel, stream)
                 : launch_select<T, W, kRead, false>(x, k, w, n, y, norm, sel, stream);
  };
  if (!norm) return go(std::integral_constant<NormRead, NormRead::kNone>{});
  if (folds(norm, W)) {
    if constexpr (W <= kMaxFoldedWords) return go(std::integral_constant<NormRead, NormRead::kFolded>{});
    else unreachable_fold();
  }
  if (norm_in_shared_memory()) return go(std::integral_constant<NormRead, NormRead::kStaged>{});
  return go(std::integral_constant<NormRead, NormRead::kGlobal>{});
}

// Measurement switch HARK_CUDA_NORM_SMEM=0: gamma and beta read from global memory after the wait.
bool norm_in_shared_memory() {
  static const bool on = [] {
    const char* env = std::getenv("HARK_CUDA_NORM_SMEM");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

}  // namespace

bool l2_hints() {
  static const bool on = [] {
    const char* env = std::getenv("HARK_CUDA_L2_HINTS");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

bool gemv_one_row_applies(int m, int k) {
  // Measurement switch HARK_CUDA_GEMV_ONE_ROW=0: every few-row product through gemv.cu.
  static const bool enabled = [] {
    const char* env = std::getenv("HARK_CUDA_GEMV_ONE_ROW");
    return !(env && std::string(env) == "0");
  }();
  return enabled && m == 1 && k % 8 == 0 && k <= kMaxWidth;
}

void gemv_one_row(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                  GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm) {
  if (n <= 0) return;
  const int per_lane = (k / 8 + 31) / 32;
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto y_tag) {
      using Y = decltype(y_tag);
      const int e = static_cast<int>(epilogue);
      if (per_lane <= 2) return launch<T, Y, 2>(x, k, w, n, bias, y, e, norm, stream);
      if (per_lane <= 4) return launch<T, Y, 4>(x, k, w, n, bias, y, e, norm, stream);
      if (per_lane <= 5) return launch<T, Y, 5>(x, k, w, n, bias, y, e, norm, stream);
      return launch<T, Y, 8>(x, k, w, n, bias, y, e, norm, stream);
    };
    if (y_dt == DType::F32)
      go(float{});
    else
      go(T{});
  });
}

bool gemv_one_row_folds(int k) { return k % 8 == 0 && k <= kMaxWidth && (k / 8 + 31) / 32 <= kMaxFoldedWords; }

int64_t logits_select_parts_floats() { return static_cast<int64_t>(kMaxSelectParts) * kSelectPartFloats; }

bool gemv_one_row_select(DType dt, const void* x, int k, const void* w, int n, float* y, const GemvNorm* norm,
                         const OneRowSelect& sel, cudaStream_t stream) {
  if (n <= 0 || !gemv_one_row_applies(1, k)) return false;
  const int per_lane = (k / 8 + 31) / 32;
  bool launched = false;
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if (per_lane <= 2)
      launched = launch_select<T, 2>(x, k, w, n, y, norm, sel, stream);
    else if (per_lane <= 4)
      launched = launch_select<T, 4>(x, k, w, n, y, norm, sel, stream);
    else if (per_lane <= 5)
      launched = launch_select<T, 5>(x, k, w, n, y, norm, sel, stream);
    else
      launched = launch_select<T, 8>(x, k, w, n, y, norm, sel, stream);
  });
  return launched;
}

}  // namespace hark::cuda
