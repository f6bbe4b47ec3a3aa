// Cross-attention for steps of one token a row on many windows (f16/bf16): a 64-row greedy
// step on 64 large-v3-turbo windows reads 491 MB of K/V per layer, and the split kernel
// (decoder_attention.cu), which loads a 128-key chunk into shared memory and only then
// computes on it, read it at 2.2 TB/s (Nsight Compute, 2026-12-02: 228 µs a layer, 53 % of
// DRAM bandwidth, most blocks computing rather than loading at any time). Here each warp
// streams a run of 16-key tiles of one window through registers with an online softmax per
// query; a lane holds 16 bytes (8 dimensions) of 4 keys of K and of V, so the products are
// on whole words and the dot products close with three shuffles. The block's four warps
// merge in shared memory and leave one partial per (query, head, block), merged as the
// split kernel's are (device/cross_attention.cuh). On an H200 (2026-12-03) it read the same
// K/V at 3.84 TB/s (129 µs a layer), and the 64-row step went from 1.08-1.09 to 0.90-0.91 ms.
// Queries that share a window (beams) take a pass each, the later ones mostly from L2: the
// chooser (decoder_attention.cu) sends steps with many rows per window, and steps on few
// windows, to the split kernel.
#include <algorithm>

#include "core/cuda/device/cross_attention.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kWarps = 4, kThreads = kWarps * 32;
constexpr int kKeysPerLane = 4;  // a tile's keys that one lane holds

template <int HD>
__host__ __device__ constexpr int lanes_per_key() {
  return HD / 8;  // 16-byte words of a key row
}
template <int HD>
__host__ __device__ constexpr int tile_keys() {
  return 32 / lanes_per_key<HD>() * kKeysPerLane;  // 16 for head dim 64, 32 for 32
}

struct Tile {
  uint4 k[kKeysPerLane], v[kKeysPerLane];
};

// A read-only 16-byte load that skips L1 (volatile: issued where it is written, so the
// first tile's loads stay ahead of the wait for the kernel in front).
__device__ __forceinline__ uint4 load_word(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Key j of a tile at key0, for this lane: key0 + lane / lanes + u · (32 / lanes).
template <int HD>
__device__ __forceinline__ int tile_key(int key0, int u, int lane) {
  constexpr int kLanes = lanes_per_key<HD>();
  return key0 + lane / kLanes + u * (32 / kLanes);
}

// Keys past `end` are not read (their words are zero and their scores masked). `lane_k`
// points at this lane's word of the window's first key row (K; V is v_offset further on);
// offsets within a window fit 32 bits (1 500 rows of at most 2·32·1280 values).
template <int HD>
__device__ __forceinline__ void load_tile(Tile& t, const uint16_t* lane_k, int kv_ld, int v_offset, int key0, int end,
                                          int lane) {
#pragma unroll
  for (int u = 0; u < kKeysPerLane; ++u) {
    const int j = tile_key<HD>(key0, u, lane);
    if (j < end) {
      const uint16_t* src = lane_k + (key0 + u * (32 / lanes_per_key<HD>())) * kv_ld;
      t.k[u] = load_word(src);
      t.v[u] = load_word(src + v_offset);
    } else {
      t.k[u] = t.v[u] = make_uint4(0, 0, 0, 0);
    }
  }
}

// One query's running softmax over the keys seen so far: max, this lane's key group's sum
// of e^(s − m), and its weighted values for this lane's 8 dimensions.
struct RowState {
  float m, l, acc[8];
};

template <int HD, class T>
__device__ __forceinline__ void attend_tile(const Tile& t, const float (&q)[8], int key0, int end, int lane,
                                            RowState& s) {
  constexpr int kLanes = lanes_per_key<HD>();
  float sc[kKeysPerLane];
  float tile_max = -INFINITY;
#pragma unroll
  for (int u = 0; u < kKeysPerLane; ++u) {
    float kf[8];
    widen8<T>(t.k[u], kf);
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) a = fmaf(q[i], kf[i], a);
#pragma unroll
    for (int o = 1; o < kLanes; o <<= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    sc[u] = tile_key<HD>(key0, u, lane) < end ? a : -INFINITY;
    tile_max = fmaxf(tile_max, sc[u]);
  }
#pragma unroll
  for (int o = kLanes; o < 32; o <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
  if (tile_max == -INFINITY) return;  // no key of the tile is in range (the same for the whole warp)
  const float m = fmaxf(s.m, tile_max), scale = __expf(s.m - m);
  s.l *= scale;
#pragma unroll
  for (int i = 0; i < 8; ++i) s.acc[i] *= scale;
#pragma unroll
  for (int u = 0; u < kKeysPerLane; ++u) {
    const float p = __expf(sc[u] - m);
    s.l += p;
    float vf[8];
    widen8<T>(t.v[u], vf);
#pragma unroll
    for (int i = 0; i < 8; ++i) s.acc[i] = fmaf(p, vf[i], s.acc[i]);
  }
  s.m = m;
}

// Grid (heads, splits, windows); a block owns keys [split · block_keys, + block_keys) of
// its window, block_keys = kWarps · tiles · tile_keys, warp w its tiles w, w + kWarps, ….
// kDepth: tiles a warp holds at once. 1 (the default): one tile, load then compute, the
// other warps of the SM covering the loads (94 registers, 5 blocks an SM); 2: the next
// tile's loads in flight while the last is computed (128 registers, 4 blocks; at 96 it
// spilled). Depth 1 was the faster by ~0.01 ms a 64-row step in two alternated pairs.
template <int HD, class T, int kDepth>
__global__ void __launch_bounds__(kThreads, kDepth == 2 ? 4 : 5) cross_stream_kernel(const T* __restrict__ q, const T* __restrict__ kv,
                                                                int64_t kv_ld, int64_t k_col, int64_t v_col,
                                                                int frames, const int32_t* __restrict__ row_window,
                                                                int n_queries, int n_new, int64_t d, int tiles,
                                                                float* __restrict__ partials, int* counters,
                                                                T* __restrict__ out) {
  constexpr int kLanes = lanes_per_key<HD>(), kTile = tile_keys<HD>(), kPartial = partial_size<HD>();
  __shared__ __align__(16) float qs[HD];
  __shared__ float warp_m[kWarps], warp_l[kWarps], warp_acc[kWarps][HD], stage[2 * kCrossStreamMaxSplits];
  const int head = blockIdx.x, split = blockIdx.y, window = blockIdx.z, splits = gridDim.y;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int begin = split * kWarps * tiles * kTile, end = min(begin + kWarps * tiles * kTile, frames);
  // This lane's word of key row lane / kLanes (of each tile) in K; V is v_col − k_col on.
  const uint16_t* lane_k = reinterpret_cast<const uint16_t*>(kv) + static_cast<int64_t>(window) * frames * kv_ld +
                           k_col + head * HD + (lane / kLanes) * kv_ld + (lane % kLanes) * 8;
  const int ld = static_cast<int>(kv_ld), v_offset = static_cast<int>(v_col - k_col);
  auto key0 = [&](int t) { return begin + (warp + kWarps * t) * kTile; };
  // The first tile is read before waiting for the kernel in front, which writes q: the
  // windows' K/V are written by the encoder or a copy, never by a kernel of the step.
  pdl_launch_next();
  Tile a;
  [[maybe_unused]] Tile b;
  load_tile<HD>(a, lane_k, ld, v_offset, key0(0), end, lane);
  pdl_wait();
  __shared__ int mine[kMaxWindowRows], n_mine;
  find_window_rows(row_window, n_queries / n_new, window, mine, n_mine);
  const bool listed = n_mine <= kMaxWindowRows;
  const int walk = listed ? n_mine * n_new : n_queries;
  bool first_pass = true;
  for (int w = 0; w < walk; ++w) {
    const int qi = listed ? mine[w / n_new] * n_new + w % n_new : w;
    if (!listed && row_window[qi / n_new] != window) continue;  // uniform over the block
    __syncthreads();  // the previous query's shared values are consumed
    if (tid < HD) qs[tid] = to_float(q[static_cast<int64_t>(qi) * d + head * HD + tid]) * rsqrtf(static_cast<float>(HD));
    __syncthreads();
    float qr[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) qr[i] = qs[(lane % kLanes) * 8 + i];
    if (!first_pass) load_tile<HD>(a, lane_k, ld, v_offset, key0(0), end, lane);
    first_pass = false;
    RowState s{-INFINITY, 0.0f, {}};
    if constexpr (kDepth == 2) {
      // Two tiles in turn: the next one's loads are issued before the current one is used.
      for (int t = 0; t < tiles; t += 2) {
        if (t + 1 < tiles) load_tile<HD>(b, lane_k, ld, v_offset, key0(t + 1), end, lane);
        attend_tile<HD, T>(a, qr, key0(t), end, lane, s);
        if (t + 1 < tiles) {
          if (t + 2 < tiles) load_tile<HD>(a, lane_k, ld, v_offset, key0(t + 2), end, lane);
          attend_tile<HD, T>(b, qr, key0(t + 1), end, lane, s);
        }
      }
    } else {
      for (int t = 0; t < tiles; ++t) {
        if (t > 0) load_tile<HD>(a, lane_k, ld, v_offset, key0(t), end, lane);
        attend_tile<HD, T>(a, qr, key0(t), end, lane, s);
      }
    }
    // The warp's key groups (lanes of one lane % kLanes) merged: the same max throughout.
#pragma unroll
    for (int o = kLanes; o < 32; o <<= 1) {
      s.l += __shfl_xor_sync(0xffffffffu, s.l, o);
#pragma unroll
      for (int i = 0; i < 8; ++i) s.acc[i] += __shfl_xor_sync(0xffffffffu, s.acc[i], o);
    }
    if (lane < kLanes) {
#pragma unroll
      for (int i = 0; i < 8; ++i) warp_acc[warp][lane * 8 + i] = s.acc[i];
      if (lane == 0) {
        warp_m[warp] = s.m;
        warp_l[warp] = s.l;
      }
    }
    __syncthreads();
    if (tid < HD) {
      // The block holds at least one key, so the max is finite; a warp without keys weighs 0.
      float m = warp_m[0];
#pragma unroll
      for (int i = 1; i < kWarps; ++i) m = fmaxf(m, warp_m[i]);
      float l = 0.0f, acc = 0.0f;
#pragma unroll
      for (int i = 0; i < kWarps; ++i) {
        const float weight = __expf(warp_m[i] - m);
        l += warp_l[i] * weight;
        acc += warp_acc[i][tid] * weight;
      }
      float* p = partials + ((static_cast<int64_t>(qi) * gridDim.x + head) * splits + split) * kPartial;
      p[2 + tid] = acc;
      if (tid == 0) {
        p[0] = m;
        p[1] = l;
      }
    }
    finish_query<HD, T>(partials, splits, counters, qi, d, out, stage);
  }
}

}  // namespace

CrossStreamPlan plan_cross_stream(int head_dim, int n_heads, int64_t frames, int windows, int tiles, int depth) {
  const int tile = head_dim == 64 ? tile_keys<64>() : tile_keys<32>();
  auto splits_for = [&](int t) {
    const int64_t keys = static_cast<int64_t>(kWarps) * t * tile;
    return static_cast<int>((frames + keys - 1) / keys);
  };
  if (tiles > 0) return {tiles, splits_for(tiles), depth};
  // The longest runs (the pipeline's depth) that still leave ~4 blocks an SM for some
  // waves of an H200 (132 SMs); fewer windows take shorter runs.
  constexpr int64_t kEnoughBlocks = 2048;
  for (int t : {8, 4, 2})
    if (static_cast<int64_t>(n_heads) * splits_for(t) * windows >= kEnoughBlocks) return {t, splits_for(t), depth};
  return {1, splits_for(1), depth};
}

void cross_attention_stream(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t v_col,
                            int64_t frames, int windows, const int32_t* row_window, int rows, int n_new, int n_heads,
                            int head_dim, const CrossStreamPlan& plan, float* partials, void* out, cudaStream_t stream,
                            int* counters) {
  if (counters && plan.splits > kCrossStreamMaxSplits)
    throw Error(ErrorCode::InvalidArgument, "[cuda] the streaming cross-attention merges in the kernel up to " +
                                                std::to_string(kCrossStreamMaxSplits) + " splits, not " +
                                                std::to_string(plan.splits));
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(plan.splits), static_cast<unsigned>(windows));
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(head_dim, [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      auto kernel = plan.depth == 2 ? cross_stream_kernel<HD, T, 2> : cross_stream_kernel<HD, T, 1>;
      launch_kernel(kernel, grid, kThreads, 0, stream, static_cast<const T*>(q), static_cast<const T*>(kv), kv_ld,
                    k_col, v_col, static_cast<int>(frames), row_window, rows * n_new, n_new, d, plan.tiles, partials,
                    counters, static_cast<T*>(out));
    });
  });
}

}  // namespace hark::cuda
