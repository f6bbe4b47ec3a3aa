// The decoder's attention kernels (head dim 32 or 64, any activation dtype). Every input that
// changes between steps (cached lengths, which window a row reads) is read from device
// memory, so a recorded step can be replayed.
//  - cached_attention: one block per (head, new token, row) appends that token's K/V to
//    the cache and attends over the row's keys; keys of this step are read from the
//    packed projections, not the cache, so blocks never wait for each other's writes.
//  - cross_attention: split-K ("flash decoding"): a block owns a chunk of one window's
//    keys for one head, serves every query row that reads that window (beams share the
//    K/V read), and leaves (max, sum, partial output); the last chunk of a (query, head)
//    to finish combines them (or a second kernel, without counters). Steps of one token a
//    row on many windows go to cross_attention_stream.cu's kernel instead (stream_cross).
#include <string>
#include <type_traits>

#include "core/cuda/device/cached_attention.cuh"
#include "core/cuda/device/cross_attention.cuh"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = kDecoderAttentionThreads;

// Keys per cross-attention block; keeps K and V chunks within 48 KB of shared memory.
// (64-key chunks for 16-bit types, twice the blocks, were no faster in an A/B on an H200:
// 0.273 against 0.271 ms per large-v3-turbo step.)
template <class T>
__host__ __device__ constexpr int chunk_keys() {
  return sizeof(T) == 2 ? 128 : 64;
}
template <int HD, class T>
__host__ __device__ constexpr int padded_row() {
  return HD + 16 / static_cast<int>(sizeof(T));  // one 16-byte step of padding: conflict-free row reads
}

template <int HD, class T>
__global__ void __launch_bounds__(kThreads) cached_kernel(const T* __restrict__ qkv, T* cache_k, T* cache_v,
                                                          const int32_t* __restrict__ lengths, int n_new, int64_t ctx,
                                                          int64_t d, T* __restrict__ out) {
  pdl_enter();
  extern __shared__ float scores[];
  __shared__ float q[HD];
  __shared__ CachedAttentionScratch<HD> scratch;
  const int head = blockIdx.x, i = blockIdx.y, b = blockIdx.z;
  const int64_t past = lengths[b], pos = past + i, n_keys = pos + 1;
  const int64_t row = static_cast<int64_t>(b) * n_new + i;
  const int64_t ld = 3 * d, col = head * HD;
  const T* src = qkv + row * ld;
  const int tid = threadIdx.x;
  // This block's token and head go into the cache for later steps.
  if (tid < HD)
    cache_k[(b * ctx + pos) * d + col + tid] = src[d + col + tid];
  else if (tid < 2 * HD)
    cache_v[(b * ctx + pos) * d + col + tid - HD] = src[2 * d + col + tid - HD];
  if (tid < HD) q[tid] = to_float(src[col + tid]) * rsqrtf(static_cast<float>(HD));
  __syncthreads();
  // Keys of this step come from the packed projections, not the cache: blocks never wait
  // for each other's writes.
  auto key_row = [&](int64_t j, bool value) -> const T* {
    const int64_t offset = value ? 2 * d : d;
    return j < past ? (value ? cache_v : cache_k) + (b * ctx + j) * d + col
                    : qkv + (static_cast<int64_t>(b) * n_new + (j - past)) * ld + offset + col;
  };
  attend_cached<HD, T>(q, n_keys, key_row, scores, scratch, out + row * d + col);
}

// At most 96 registers (5 blocks an SM, as the chunk's 38 KB of shared memory allows);
// without the bound the merge's loads in flight took it to 113 (4 blocks).
template <int HD, class T, bool kEvictLast = false>
__global__ void __launch_bounds__(kThreads, 5) cross_split_kernel(const T* __restrict__ q, const T* __restrict__ kv,
                                                               int64_t kv_ld, int64_t k_col, int64_t v_col,
                                                               int64_t frames, const int32_t* __restrict__ row_window,
                                                               int n_queries, int n_new, int64_t d,
                                                               float* __restrict__ partials, int splits,
                                                               int* counters, T* __restrict__ out) {
  constexpr int kChunk = chunk_keys<T>(), kPad = padded_row<HD, T>(), kGroups = kThreads / HD;
  constexpr int kPartial = partial_size<HD>();
  __shared__ __align__(16) T ks[kChunk * kPad];
  __shared__ __align__(16) T vs[kChunk * kPad];
  __shared__ float qf[HD], sc[kChunk], group_out[kGroups][HD], red[kThreads / 32];
  const int head = blockIdx.x, split = blockIdx.y, window = blockIdx.z;
  const int64_t k0 = static_cast<int64_t>(split) * kChunk;
  const int nk = static_cast<int>(min(static_cast<int64_t>(kChunk), frames - k0));
  const int tid = threadIdx.x;
  const T* base = kv + (static_cast<int64_t>(window) * frames + k0) * kv_ld + head * HD;
  constexpr int kVec = 16 / sizeof(T);  // elements per 16-byte word
  constexpr int kWords = HD / kVec;      // 16-byte words per key row
  static_assert(kChunk * kWords % kThreads == 0, "every thread copies the same number of words");
  // The chunk is read before waiting for the kernel in front (launch.cuh), which writes
  // q: the windows' K/V are written by the encoder, whose last writes (a cuBLASLt product,
  // or a copy) end before any later kernel may start, so no kernel of the step touches them.
  // All of a thread's copies are in flight at once (cp.async, a fixed count: rows past the
  // window's end are skipped, not read). With loads through registers, two at a time, the
  // kernel ran at 0.8-1.4 TB/s on an H200 (Nsight Compute: 9.8 µs per turbo layer at one
  // row, 272 µs at 48 rows on 48 windows); the one-row figure did not move with this.
  pdl_launch_next();
  [[maybe_unused]] uint64_t policy = 0;
  if constexpr (kEvictLast) policy = l2_policy_evict_last();  // on unless HARK_CUDA_L2_HINTS=0
#pragma unroll
  for (int i = 0; i < kChunk * kWords / kThreads; ++i) {
    const int c = tid + i * kThreads, j = c / kWords, e = (c % kWords) * kVec;
    const bool valid = j < nk;
    const T* src = base + (valid ? static_cast<int64_t>(j) * kv_ld : 0) + e;
    if constexpr (kEvictLast) {
      cp_async16_policy(ks + j * kPad + e, src + k_col, valid, policy);
      cp_async16_policy(vs + j * kPad + e, src + v_col, valid, policy);
    } else {
      cp_async16(ks + j * kPad + e, src + k_col, valid);
      cp_async16(vs + j * kPad + e, src + v_col, valid);
    }
  }
  cp_async_commit();
  pdl_wait();
  cp_async_wait<0>();  // this thread's words; the barrier at the first query publishes all
  const int dim = tid % HD, group = tid / HD;
  // The rows that read this window (device/cross_attention.cuh).
  __shared__ int mine[kMaxWindowRows], n_mine;
  const int n_rows = n_queries / n_new;
  find_window_rows(row_window, n_rows, window, mine, n_mine);
  const bool listed = n_mine <= kMaxWindowRows;
  const int walk = listed ? n_mine * n_new : n_queries;
  for (int w = 0; w < walk; ++w) {
    const int qi = listed ? mine[w / n_new] * n_new + w % n_new : w;
    if (!listed && row_window[qi / n_new] != window) continue;  // uniform over the block
    __syncthreads();  // the chunk is loaded; qf/sc/group_out of the previous query are consumed
    if (tid < HD) qf[tid] = to_float(q[static_cast<int64_t>(qi) * d + head * HD + tid]) * rsqrtf(static_cast<float>(HD));
    __syncthreads();
    float m = -INFINITY;
    for (int j = tid; j < nk; j += kThreads) {
      sc[j] = dot<HD, T>(qf, ks + j * kPad);
      m = fmaxf(m, sc[j]);
    }
    m = block_reduce<true>(m, red);
    float l = 0.0f;
    for (int j = tid; j < nk; j += kThreads) {
      const float p = __expf(sc[j] - m);
      sc[j] = p;
      l += p;
    }
    l = block_reduce<false>(l, red);  // its barriers also publish sc
    float acc = 0.0f;
#pragma unroll 4
    for (int j = group; j < nk; j += kGroups) acc = fmaf(sc[j], to_float(vs[j * kPad + dim]), acc);
    group_out[group][dim] = acc;
    __syncthreads();
    float* p = partials + ((static_cast<int64_t>(qi) * gridDim.x + head) * splits + split) * kPartial;
    if (group == 0) {
      float sum = 0.0f;
#pragma unroll
      for (int g = 0; g < kGroups; ++g) sum += group_out[g][dim];
      p[2 + dim] = sum;
    }
    if (tid == 0) {
      p[0] = m;
      p[1] = l;
    }
    // sc (the chunk's scores, consumed above) stages the chunks' maxima and sums.
    finish_query<HD, T>(partials, splits, counters, qi, d, out, sc);
  }
}

template <int HD, class T>
__global__ void cross_combine_kernel(const float* __restrict__ partials, int splits, int64_t d, T* __restrict__ out) {
  pdl_enter();
  constexpr int kPartial = partial_size<HD>();
  const int head = blockIdx.x, n_heads = gridDim.x;
  const int64_t qi = blockIdx.y;
  const int dim = threadIdx.x;
  const float* p = partials + (qi * n_heads + head) * splits * kPartial;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, p[s * kPartial]);
  float l = 0.0f, acc = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float w = __expf(p[s * kPartial] - m);
    l += p[s * kPartial + 1] * w;
    acc += p[s * kPartial + 2 + dim] * w;
  }
  out[qi * d + head * HD + dim] = from_float<T>(acc / l);
}

template <int HD, class T>
__global__ void __launch_bounds__(256) cross_weights_kernel(const T* __restrict__ q, const T* __restrict__ kv,
                                                            int64_t kv_ld, int64_t k_col, int64_t frames,
                                                            const int32_t* __restrict__ row_window, int n_new,
                                                            int64_t d, float* __restrict__ weights) {
  pdl_enter();
  extern __shared__ float sc[];
  __shared__ float qf[HD], red[8];
  const int head = blockIdx.x, n_heads = gridDim.x;
  const int64_t qi = blockIdx.y, row = qi / n_new, i = qi % n_new;
  const int tid = threadIdx.x;
  if (tid < HD) qf[tid] = to_float(q[qi * d + head * HD + tid]) * rsqrtf(static_cast<float>(HD));
  __syncthreads();
  const T* base = kv + static_cast<int64_t>(row_window[row]) * frames * kv_ld + k_col + head * HD;
  float m = -INFINITY;
  for (int64_t j = tid; j < frames; j += blockDim.x) {
    sc[j] = dot<HD, T>(qf, base + j * kv_ld);
    m = fmaxf(m, sc[j]);
  }
  m = warp_max(m);
  if ((tid & 31) == 0) red[tid >> 5] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < 8; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float l = 0.0f;
  for (int64_t j = tid; j < frames; j += blockDim.x) {
    sc[j] = __expf(sc[j] - m);
    l += sc[j];
  }
  l = warp_sum(l);
  if ((tid & 31) == 0) red[tid >> 5] = l;
  __syncthreads();
  l = 0.0f;
  for (int w = 0; w < 8; ++w) l += red[w];
  float* dst = weights + ((row * n_heads + head) * n_new + i) * frames;
  for (int64_t j = tid; j < frames; j += blockDim.x) dst[j] = sc[j] / l;
}

}  // namespace

void cached_attention(DType dt, const void* qkv, void* cache_k, void* cache_v, const int32_t* lengths, int rows,
                      int n_new, int64_t n_ctx, int n_heads, int head_dim, void* out, cudaStream_t stream) {
  if (rows <= 0 || n_new <= 0) return;
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(n_new), static_cast<unsigned>(rows));
  const size_t smem = static_cast<size_t>(n_ctx) * sizeof(float);
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(head_dim, [&](auto hd) {
      launch_kernel(cached_kernel<decltype(hd)::value, T>, grid, kThreads, smem, stream, 
          static_cast<const T*>(qkv), static_cast<T*>(cache_k), static_cast<T*>(cache_v), lengths, n_new, n_ctx, d,
          static_cast<T*>(out));
    });
  });
}

int64_t cross_attention_scratch(int rows, int n_new, int n_heads, int head_dim, int64_t frames) {
  // The most splits any dtype uses (64-key chunks for fp32).
  return static_cast<int64_t>(rows) * n_new * n_heads * ((frames + 63) / 64) * (head_dim + 2);
}

namespace {
// The streaming kernel where it measured faster (docs/gpu.md, HARK_CUDA_CROSS): one new
// token a row, 8 windows or more (a tie at 8, 9 % faster at 16, 16 % at 64 on an H200), and
// few rows a window, since each row sharing a window costs it another pass over the keys.
bool stream_cross(DType dt, CrossKernel kernel, int n_new, int windows, int rows) {
  if (dt == DType::F32 || kernel == CrossKernel::kSplit) return false;
  if (kernel == CrossKernel::kStream) return true;
  return n_new == 1 && windows >= kCrossStreamMinWindows && rows <= 2 * windows;
}
}  // namespace

void cross_attention(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t v_col,
                     int64_t frames, int windows, const int32_t* row_window, int rows, int n_new, int n_heads,
                     int head_dim, float* partials, void* out, cudaStream_t stream, int* counters,
                     CrossKernel kernel, int stream_tiles, int stream_depth) {
  if (rows <= 0 || n_new <= 0 || frames <= 0) return;
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(head_dim, [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      int splits = 0;
      if (stream_cross(dt, kernel, n_new, windows, rows)) {
        const CrossStreamPlan plan = plan_cross_stream(head_dim, n_heads, frames, windows, stream_tiles, stream_depth);
        if (plan.splits > kCrossStreamMaxSplits) counters = nullptr;
        cross_attention_stream(dt, q, kv, kv_ld, k_col, v_col, frames, windows, row_window, rows, n_new, n_heads,
                               head_dim, plan, partials, out, stream, counters);
        splits = plan.splits;
      } else {
        splits = static_cast<int>((frames + chunk_keys<T>() - 1) / chunk_keys<T>());
        // The in-kernel merge stages 2 · splits floats in the chunk's score buffer (chunk_keys
        // floats): past that (over 8 192 frames for 16-bit types) the second kernel merges.
        if (2 * splits > chunk_keys<T>()) counters = nullptr;
        dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(splits), static_cast<unsigned>(windows));
        auto split = [&](auto kernel) {
          launch_kernel(kernel, grid, kThreads, 0, stream, static_cast<const T*>(q), static_cast<const T*>(kv),
                        kv_ld, k_col, v_col, frames, row_window, rows * n_new, n_new, d, partials, splits, counters,
                        static_cast<T*>(out));
        };
        if (l2_hints())
          split(cross_split_kernel<HD, T, true>);
        else
          split(cross_split_kernel<HD, T, false>);
      }
      if (!counters) {
        dim3 combine(static_cast<unsigned>(n_heads), static_cast<unsigned>(rows * n_new));
        launch_kernel(cross_combine_kernel<HD, T>, combine, HD, 0, stream, partials, splits, d, static_cast<T*>(out));
      }
    });
  });
}

void cross_attention_weights(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t frames,
                             const int32_t* row_window, int rows, int n_new, int n_heads, int head_dim, float* weights,
                             cudaStream_t stream) {
  if (rows <= 0 || n_new <= 0 || frames <= 0) return;
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(rows * n_new));
  const size_t smem = static_cast<size_t>(frames) * sizeof(float);
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(head_dim, [&](auto hd) {
      launch_kernel(cross_weights_kernel<decltype(hd)::value, T>, grid, 256, smem, stream, 
          static_cast<const T*>(q), static_cast<const T*>(kv), kv_ld, k_col, frames, row_window, n_new, d, weights);
    });
  });
}

}  // namespace hark::cuda
