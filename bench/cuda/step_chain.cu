// A question the greedy decoder step leaves (issue 12, docs/gpu.md "Known gaps"): is the
// step's chain of one-row products cheaper as one persistent kernel, with a grid-wide
// barrier between products and each warp fetching its first weight row of the next
// product while it waits at the barrier, than as one launch per product with programmatic
// dependent launch, as a recorded step runs today? There the next kernel's warps become
// resident, and start their weight reads, only as the current kernel's blocks exit.
//
// This program times the same chain both ways on synthetic f16 weights shaped like a
// large-v3-turbo greedy step (four layers of eight products, attention stood in for by
// products of the same bytes, then the logits): 33 products, ~350 MB of weights, each
// read once a step. Both ways share the one-row kernel's per-warp code (device/one_row.cuh),
// so their outputs must agree bit for bit, which it checks before timing.
//
// Built as hark_bench_step_chain with -DHARK_BENCH=ON; or by hand, from the repository root:
//   nvcc -O3 -std=c++20 -arch=sm_90a -I src bench/cuda/step_chain.cu -o step_chain && ./step_chain
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/cuda/device/one_row.cuh"
#include "core/cuda/device/pdl.cuh"

using namespace hark::cuda::device;

namespace {

constexpr int kThreads = 256;
constexpr int kWords = 5;  // 16-byte words per lane: k = 1280 (large-v3-turbo's width)
constexpr int kWidth = 1280;
constexpr float kEps = 1e-5f;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

enum Epilogue : int { kNone = 0, kGelu = 1, kResidual = 2 };

// One product y[n] = x[1280]·w[n, 1280]ᵀ + b, optionally layer-normalising x first.
struct Product {
  const __half* x;
  const __half* w;
  int n;
  const __half* bias;
  void* y;
  int y_f32;
  int epilogue;
  const float* gamma;  // null: no norm
  const float* beta;
};

__device__ __forceinline__ float bias_of(const Product& p, int row, int end) {
  return p.bias && row < end ? __half2float(p.bias[row]) : 0.0f;
}

// A warp's rows [first, end) of p, its first row's words already in wv (gemv_one_row.cu's loop).
__device__ __forceinline__ void run_rows(const Product& p, int first, int end, uint4 (&wv)[kWords], float b,
                                         int lane) {
  uint4 xv[kWords];
  load_row<__half, kWords>(p.x, kWidth, lane, p.gamma, p.beta, kEps, xv);
  for (int row = first; row < end; ++row) {
    uint4 next[kWords];
    fetch_row_words<__half, kWords, true>(p.w, kWidth, row + 1, row + 1 < end, lane, next);
    const float next_bias = bias_of(p, row + 1, end);
    const float acc = row_dot<__half, kWords>(wv, xv, kWidth, lane);
    if (lane == 0) {
      float v = acc + b;
      if (p.epilogue == kGelu) v = gelu_erf(v);
      if (p.y_f32) {
        static_cast<float*>(p.y)[row] = v;
      } else {
        __half* y = static_cast<__half*>(p.y);
        if (p.epilogue == kResidual) v += __half2float(y[row]);
        y[row] = __float2half_rn(v);
      }
    }
#pragma unroll
    for (int u = 0; u < kWords; ++u) wv[u] = next[u];
    b = next_bias;
  }
}

// Today's way: one launch per product (with PDL when the launch asks for it).
__global__ void __launch_bounds__(kThreads) one_product(Product p, int rows_per_warp) {
  const int lane = threadIdx.x & 31;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int first = warp * rows_per_warp, end = min(p.n, first + rows_per_warp);
  pdl_launch_next();
  uint4 wv[kWords];
  fetch_row_words<__half, kWords, true>(p.w, kWidth, first, first < end, lane, wv);
  const float b = bias_of(p, first, end);
  pdl_wait();
  if (first < end) run_rows(p, first, end, wv, b, lane);
}

// The same product with the norm's gamma and beta (constants, like the weights) copied to
// shared memory before the wait, so that the norm after it reads no global memory but x.
__global__ void __launch_bounds__(kThreads) one_product_staged_norm(Product p, int rows_per_warp) {
  __shared__ float4 gamma[kWidth / 4], beta[kWidth / 4];
  const int lane = threadIdx.x & 31;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int first = warp * rows_per_warp, end = min(p.n, first + rows_per_warp);
  pdl_launch_next();
  if (p.gamma)
    for (int i = threadIdx.x; i < kWidth / 4; i += kThreads) {
      cp_async16(&gamma[i], p.gamma + 4 * i, true);
      cp_async16(&beta[i], p.beta + 4 * i, true);
    }
  cp_async_commit();
  uint4 wv[kWords];
  fetch_row_words<__half, kWords, true>(p.w, kWidth, first, first < end, lane, wv);
  const float b = bias_of(p, first, end);
  pdl_wait();
  cp_async_wait<0>();
  __syncthreads();
  Product q = p;
  if (p.gamma) q.gamma = reinterpret_cast<const float*>(gamma), q.beta = reinterpret_cast<const float*>(beta);
  if (first < end) run_rows(q, first, end, wv, b, lane);
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ long long global_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The other way: every product in one kernel whose blocks are all resident at once. After
// product i a block arrives at barrier i (its writes made visible first), then its warps
// request their first weight row of product i + 1 (kEarly), and only then does it wait
// for the other blocks, so those reads overlap the slowest blocks' tail. The monotonic
// counter is zeroed before each launch.
template <bool kEarly>
__global__ void __launch_bounds__(kThreads) chain_kernel(const Product* __restrict__ products, int count,
                                                         unsigned* barrier, long long* stamps) {
  const int lane = threadIdx.x & 31;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int warps = static_cast<int>(gridDim.x * blockDim.x / 32);
  int first = 0, end = 0;
  uint4 wv[kWords];
  float b = 0;
  auto plan = [&](const Product& p) {
    const int per_warp = (p.n + warps - 1) / warps;
    first = warp * per_warp;
    end = min(p.n, first + per_warp);
  };
  auto fetch = [&](const Product& p) {
    fetch_row_words<__half, kWords, true>(p.w, kWidth, first, first < end, lane, wv);
    b = bias_of(p, first, end);
  };
  Product cur = products[0];
  plan(cur);
  fetch(cur);
  if (stamps && blockIdx.x == 0 && threadIdx.x == 0) stamps[0] = global_ns();
  for (int i = 0; i < count; ++i) {
    if (first < end) run_rows(cur, first, end, wv, b, lane);
    if (i + 1 == count) break;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(barrier, 1u);
    }
    Product next = products[i + 1];
    plan(next);
    if (kEarly) fetch(next);
    if (threadIdx.x == 0) {
      const unsigned target = static_cast<unsigned>(i + 1) * gridDim.x;
      while (load_acquire(barrier) < target) {
      }
      if (stamps && blockIdx.x == 0) stamps[i + 1] = global_ns();
    }
    __syncthreads();
    cur = next;
    if (!kEarly) fetch(cur);
  }
}

template <class Kernel>
int blocks_per_sm(Kernel kernel) {
  int n = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, 0), "occupancy");
  return std::max(1, n);
}

struct Buffers {
  std::vector<void*> owned;
  template <class T>
  T* alloc(size_t count) {
    void* p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
    owned.push_back(p);
    return static_cast<T*>(p);
  }
  ~Buffers() {
    for (void* p : owned) cudaFree(p);
  }
};

void fill_half(__half* d, size_t count, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<__half> h(count);
  for (auto& v : h) v = __float2half(u(rng));
  check(cudaMemcpy(d, h.data(), count * sizeof(__half), cudaMemcpyHostToDevice), "upload");
}

void fill_float(float* d, size_t count, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> h(count);
  for (auto& v : h) v = u(rng);
  check(cudaMemcpy(d, h.data(), count * sizeof(float), cudaMemcpyHostToDevice), "upload");
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 4;
  const int replays = argc > 2 ? std::atoi(argv[2]) : 500;
  const int vocab = 51866;
  std::mt19937 rng(1);
  Buffers buf;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");

  // The residual stream, a saved copy to restart from, and each product's output.
  __half* h = buf.alloc<__half>(kWidth);
  __half* h0 = buf.alloc<__half>(kWidth);
  fill_half(h0, kWidth, 1.0f, rng);
  std::vector<Product> products;
  size_t weight_bytes = 0;
  auto add = [&](const __half* x, int n, bool norm, int epilogue, void* y, bool f32 = false) {
    __half* w = buf.alloc<__half>(static_cast<size_t>(n) * kWidth);
    fill_half(w, static_cast<size_t>(n) * kWidth, 0.03f, rng);
    weight_bytes += static_cast<size_t>(n) * kWidth * sizeof(__half);
    __half* bias = nullptr;
    if (!f32) {
      bias = buf.alloc<__half>(n);
      fill_half(bias, n, 0.1f, rng);
    }
    float *gamma = nullptr, *beta = nullptr;
    if (norm) {
      gamma = buf.alloc<float>(kWidth);
      beta = buf.alloc<float>(kWidth);
      fill_float(gamma, kWidth, 0.8f, 1.2f, rng);
      fill_float(beta, kWidth, -0.1f, 0.1f, rng);
    }
    products.push_back({x, w, n, bias, y, f32 ? 1 : 0, epilogue, gamma, beta});
  };
  for (int l = 0; l < layers; ++l) {
    __half* qkv = buf.alloc<__half>(3 * kWidth);
    __half* a = buf.alloc<__half>(kWidth);
    __half* q = buf.alloc<__half>(kWidth);
    __half* a2 = buf.alloc<__half>(3000);
    __half* up = buf.alloc<__half>(5120);
    __half* down = buf.alloc<__half>(5120);
    add(h, 3 * kWidth, true, kNone, qkv);  // packed Q/K/V, norm fused
    add(qkv, kWidth / 5, false, kNone, a);  // self-attention's reads (~0.65 MB at ~250 positions)
    add(a, kWidth, false, kResidual, h);    // output product into the residual stream
    add(h, kWidth, true, kNone, q);         // cross-attention query, norm fused
    add(q, 3000, false, kNone, a2);         // cross-attention's reads (1500 × 1280 K and V: 7.7 MB)
    add(a2, kWidth, false, kResidual, h);   // output product
    add(h, 5120, true, kGelu, up);          // MLP up, norm and GELU fused
    add(up, 5120, false, kNone, down);      // MLP down's bytes (5120 × 1280)
  }
  float* logits = buf.alloc<float>(vocab);
  add(h, vocab, true, kNone, logits, true);
  const int count = static_cast<int>(products.size());
  Product* device_products = buf.alloc<Product>(count);
  check(cudaMemcpy(device_products, products.data(), count * sizeof(Product), cudaMemcpyHostToDevice), "upload");
  unsigned* barrier = buf.alloc<unsigned>(1);
  long long* stamps = buf.alloc<long long>(count + 1);

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const int per_launch_capacity = sms * blocks_per_sm(one_product) * (kThreads / 32);

  // mode 0: the one-row kernel as it is; 1: gamma and beta staged in shared memory; 2: no norm
  // at all (a lower bound: its logits differ).
  auto launch_chain_of_launches = [&](bool pdl, int mode = 0) {
    for (Product p : products) {
      if (mode == 2) p.gamma = p.beta = nullptr;
      const int rows_per_warp = std::max(1, (p.n + per_launch_capacity - 1) / per_launch_capacity);
      const int warps = (p.n + rows_per_warp - 1) / rows_per_warp;
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(static_cast<unsigned>((warps + 7) / 8));
      config.blockDim = dim3(kThreads);
      config.stream = stream;
      cudaLaunchAttribute attribute[1];
      attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attribute[0].val.programmaticStreamSerializationAllowed = 1;
      config.attrs = attribute;
      config.numAttrs = pdl ? 1 : 0;
      if (mode == 1)
        check(cudaLaunchKernelEx(&config, one_product_staged_norm, p, rows_per_warp), "launch");
      else
        check(cudaLaunchKernelEx(&config, one_product, p, rows_per_warp), "launch");
    }
  };
  auto launch_persistent = [&](bool early, int blocks, long long* stamp_out) {
    check(cudaMemsetAsync(barrier, 0, sizeof(unsigned), stream), "memset");
    if (early)
      chain_kernel<true><<<blocks, kThreads, 0, stream>>>(device_products, count, barrier, stamp_out);
    else
      chain_kernel<false><<<blocks, kThreads, 0, stream>>>(device_products, count, barrier, stamp_out);
    check(cudaGetLastError(), "chain launch");
  };
  auto restart = [&] { check(cudaMemcpyAsync(h, h0, kWidth * sizeof(__half), cudaMemcpyDeviceToDevice, stream), "h"); };
  auto read_logits = [&] {
    std::vector<float> out(vocab);
    check(cudaStreamSynchronize(stream), "sync");
    check(cudaMemcpy(out.data(), logits, vocab * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return out;
  };

  const int early_bps = blocks_per_sm(chain_kernel<true>), late_bps = blocks_per_sm(chain_kernel<false>);
  std::printf("step chain: %d products, %.1f MB of f16 weights, %d SMs; one launch per product: %d blocks/SM; "
              "persistent: %d (early fetch) / %d blocks/SM\n",
              count, weight_bytes / 1e6, sms, blocks_per_sm(one_product), early_bps, late_bps);

  // The same numbers every way.
  restart();
  launch_chain_of_launches(true);
  const std::vector<float> reference = read_logits();
  struct Variant {
    const char* name;
    bool persistent, pdl_or_early;
    int blocks;
    int mode = 0;
  };
  std::vector<Variant> variants = {
      {"one launch per product, PDL (today)", false, true, 0},
      {"one launch per product, no PDL", false, false, 0},
      {"one launch per product, norm constants in smem", false, true, 0, 1},
      {"one launch per product, no norm (bound)", false, true, 0, 2},
      {"persistent, early fetch, all resident blocks", true, true, sms * early_bps},
      {"persistent, early fetch, one block an SM", true, true, sms},
      {"persistent, fetch after the barrier", true, false, sms * late_bps},
  };
  for (const Variant& v : variants) {
    restart();
    if (v.persistent)
      launch_persistent(v.pdl_or_early, v.blocks, nullptr);
    else
      launch_chain_of_launches(v.pdl_or_early, v.mode);
    const std::vector<float> out = read_logits();
    const bool same = std::memcmp(out.data(), reference.data(), vocab * sizeof(float)) == 0;
    std::printf("  check %-48s %s\n", v.name, same ? "bit-identical logits" : v.mode == 2 ? "differ (expected)" : "DIFFERENT LOGITS");
    if (!same && v.mode != 2) return 1;
  }

  // Each way recorded as a graph and replayed; median of 5 batches of `replays`.
  for (const Variant& v : variants) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    if (v.persistent)
      launch_persistent(v.pdl_or_early, v.blocks, nullptr);
    else
      launch_chain_of_launches(v.pdl_or_early, v.mode);
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    for (int i = 0; i < 50; ++i) check(cudaGraphLaunch(exec, stream), "warm-up");
    cudaEvent_t t0, t1;
    check(cudaEventCreate(&t0), "event");
    check(cudaEventCreate(&t1), "event");
    std::vector<float> per_step;
    for (int rep = 0; rep < 5; ++rep) {
      check(cudaEventRecord(t0, stream), "record");
      for (int i = 0; i < replays; ++i) check(cudaGraphLaunch(exec, stream), "replay");
      check(cudaEventRecord(t1, stream), "record");
      check(cudaEventSynchronize(t1), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, t0, t1), "elapsed");
      per_step.push_back(1000.0f * ms / replays);
    }
    std::sort(per_step.begin(), per_step.end());
    std::printf("  %-48s %7.1f us a chain (batches of %d: %.1f .. %.1f)\n", v.name, per_step[2], replays,
                per_step[0], per_step[4]);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }

  // Where the persistent chain's time goes: block 0's clock at each barrier (one run).
  for (int pass = 0; pass < 3; ++pass) {  // the last pass is reported, warm
    restart();
    launch_persistent(true, sms * early_bps, stamps);
  }
  std::vector<long long> t(count);
  check(cudaStreamSynchronize(stream), "sync");
  check(cudaMemcpy(t.data(), stamps, count * sizeof(long long), cudaMemcpyDeviceToHost), "download");
  std::printf("  persistent, early fetch: block 0 passed each barrier at (us after its start):");
  for (int i = 1; i < count; ++i) std::printf("%s%.1f", i % 8 == 1 ? "\n    " : " ", (t[i] - t[0]) / 1000.0);
  std::printf("\n");
  return 0;
}
