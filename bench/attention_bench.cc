// The decoder step's attention on the CPU: cross-attention of a few query rows over 1500
// fp32 keys (one call per window, as a batching server's step runs it, or one call with
// a window's beams), and the self-attention over a short cache. Reports K/V bytes read
// per second (src/core/cpu/cpu_attention.cc).
#include <benchmark/benchmark.h>

#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace {

// {windows, query rows per window, keys, heads, threads, causal}
void BM_AttendMany(benchmark::State& state) {
  const int64_t windows = state.range(0), tq = state.range(1), tk = state.range(2);
  const int heads = static_cast<int>(state.range(3));
  const bool causal = state.range(5) != 0;
  const bool panels = state.range(6) != 0;  // K/V in head panels (CpuBackend::arrange_cross_kv)
  const int64_t hd = 64, d = heads * hd;
  hark::ThreadPool pool(static_cast<int>(state.range(4)));
  // Four layers' K/V, used in turn, so that (as in a step) the windows come from memory
  // rather than from the last iteration's cache. Laid out as WhisperModel's cross K/V (one
  // product for all layers: a key's row holds every layer's K and V, 2·layers·d values),
  // in a hark tensor (so on the large pages the model's buffers get).
  constexpr int64_t kLayers = 4;
  const int64_t ld = 2 * kLayers * d;
  std::vector<float> q(windows * tq * d), out(windows * tq * d);
  hark::Tensor kv_tensor = hark::Tensor::empty({windows * tk, ld}, hark::DType::F32);
  float* kv = kv_tensor.data<float>();
  for (size_t i = 0; i < q.size(); ++i) q[i] = 0.01f * static_cast<float>(i % 13);
  for (int64_t i = 0; i < kv_tensor.numel(); ++i) kv[i] = 0.02f * static_cast<float>(i % 7) - 0.05f;
  std::vector<std::vector<hark::AttentionRows>> layers(kLayers);
  std::vector<int64_t> offsets(windows, tk - tq);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t w = 0; w < windows; ++w) {
      if (panels) {  // the window's block as panels: layer l's K heads are panels 2l·heads + h
        const float* block = kv + w * tk * ld + 2 * l * heads * tk * hd;
        layers[l].push_back({q.data() + w * tq * d, d, block, hd, block + heads * tk * hd, hd, out.data() + w * tq * d, d,
                             tq, tk, tk * hd});
      } else {
        const float* base = kv + w * tk * ld + l * 2 * d;
        layers[l].push_back({q.data() + w * tq * d, d, base, ld, base + d, ld, out.data() + w * tq * d, d, tq, tk});
      }
    }
  int64_t layer = 0;
  for (auto _ : state) {
    hark::cpu_attend_many(pool, layers[layer], heads, hd, causal,
                          causal ? std::span<const int64_t>(offsets) : std::span<const int64_t>(), {});
    benchmark::DoNotOptimize(out.data());
    layer = (layer + 1) % kLayers;
  }
  state.SetBytesProcessed(state.iterations() * windows * tk * 2 * d * 4);
}

// The 7th argument: K/V in head panels (1), as the CPU keeps fp32 cross K/V, or as the
// product's rows (0).
// Cross-attention of tiny (6 heads) over 1, 5 and 8 windows of one row (and 7 in head
// panels, the batching server's step with 8 clients), and one window's 5 beams; base (8 heads) over 5 windows; the self-attention of 5 rows over 100 cached tokens;
// large-v3's 20 heads over 1 and 5 windows and one window's 5 beams.
BENCHMARK(BM_AttendMany)
    ->Args({7, 1, 1500, 8, 2, 0, 0})
    ->Args({7, 1, 1500, 8, 2, 0, 1})
    ->Args({1, 1, 1500, 8, 2, 0, 1})
    ->Args({1, 5, 1500, 8, 2, 0, 1})
    ->Args({1, 1, 1500, 6, 2, 0, 0})
    ->Args({5, 1, 1500, 6, 2, 0, 0})
    ->Args({8, 1, 1500, 6, 2, 0, 0})
    ->Args({7, 1, 1500, 6, 2, 0, 1})
    ->Args({1, 5, 1500, 6, 2, 0, 0})
    ->Args({5, 1, 1500, 8, 2, 0, 0})
    ->Args({5, 1, 100, 6, 2, 1, 0})
    ->Args({1, 1, 1500, 20, 2, 0, 0})
    ->Args({5, 1, 1500, 20, 2, 0, 0})
    ->Args({1, 5, 1500, 20, 2, 0, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The memory pattern alone, a sum instead of attention: `windows` windows of base's cross
// K/V (8 heads of 64, 4 layers), one layer's keys read as a few-row task reads them.
// layout 0: as WhisperModel keeps them (a key's row holds every layer's K and V, so a head
// group's slice of a key is `group`·64 values and the next key's is 2·4·512 values on);
// layout 1: head panels (each head's 1500 × 64 keys contiguous: `group` sequential
// streams). Tasks (window, head group) over the pool, as cpu_attend_many makes them.
// On the 2-core EPYC (2026-12-06) layout 1 reads 2-3x faster than layout 0, fastest a head
// a task; the CPU keeps fp32 cross K/V so since (docs/benchmarks.md, "The cross K/V layout").
void BM_KvReadPattern(benchmark::State& state) {
  const int64_t windows = state.range(0), group = state.range(1);
  const bool panels = state.range(2) != 0;
  constexpr int64_t tk = 1500, hd = 64, heads = 8, d = heads * hd, kLayers = 4, ld = 2 * kLayers * d;
  hark::ThreadPool pool(static_cast<int>(state.range(3)));
  hark::Tensor kv = hark::Tensor::empty({windows * tk, ld}, hark::DType::F32);
  float* base = kv.data<float>();
  for (int64_t i = 0; i < kv.numel(); ++i) base[i] = 1.0f;
  const int64_t groups = heads / group;
  std::vector<float> sums(windows * groups);
  int64_t layer = 0;
  for (auto _ : state) {
    pool.parallel_for(windows * groups, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t w = task / groups, h0 = (task % groups) * group;
        const float* win = base + w * tk * ld;
        float acc[16] = {};  // 16 lanes: the compiler's vector adds, whatever the ISA
        if (panels) {  // panel (2·layer)·heads + h holds head h's keys of that layer
          for (int64_t t = 0; t < tk; ++t)
            for (int64_t h = h0; h < h0 + group; ++h) {
              const float* row = win + ((2 * layer) * heads + h) * tk * hd + t * hd;
              for (int64_t j = 0; j < hd; j += 16)
                for (int l = 0; l < 16; ++l) acc[l] += row[j + l];
            }
        } else {
          for (int64_t t = 0; t < tk; ++t) {
            const float* row = win + t * ld + 2 * layer * d + h0 * hd;
            for (int64_t j = 0; j < group * hd && t + 8 < tk; j += 16)  // 8 keys ahead, as the loops fetch
              __builtin_prefetch(row + 8 * ld + j);
            for (int64_t j = 0; j < group * hd; j += 16)
              for (int l = 0; l < 16; ++l) acc[l] += row[j + l];
          }
        }
        float sum = 0;
        for (float a : acc) sum += a;
        sums[task] = sum;
      }
    });
    benchmark::DoNotOptimize(sums.data());
    layer = (layer + 1) % kLayers;
  }
  state.SetBytesProcessed(state.iterations() * windows * tk * d * 4);
}

// 7 windows (a CPU batching server's step at 8 clients), head groups of 1, 4 and 8.
BENCHMARK(BM_KvReadPattern)
    ->Args({7, 1, 0, 2})
    ->Args({7, 1, 1, 2})
    ->Args({7, 4, 0, 2})
    ->Args({7, 4, 1, 2})
    ->Args({7, 8, 0, 2})
    ->Args({7, 8, 1, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The copy that puts one window's fp32 cross K/V into head panels (CpuBackend::
// arrange_cross_kv), once per encoded window: {decoder layers, width, threads}. Reports
// the window's K/V bytes per second (each byte is read once and written once).
void BM_ArrangeCrossKv(benchmark::State& state) {
  const int64_t layers = state.range(0), d = state.range(1), tk = 1500;
  auto backend = hark::make_cpu_backend({static_cast<int>(state.range(2))});
  hark::Tensor kv = hark::Tensor::empty({tk, 2 * layers * d}, hark::DType::F32);
  float* v = kv.data<float>();
  for (int64_t i = 0; i < kv.numel(); ++i) v[i] = 0.01f * static_cast<float>(i % 11);
  for (auto _ : state) {
    hark::Tensor panels = backend->arrange_cross_kv(kv, tk, 64);
    benchmark::DoNotOptimize(panels.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * kv.nbytes());
}
// tiny (4 layers of 384), base (6 of 512), large-v3-turbo's decoder (4 of 1280).
BENCHMARK(BM_ArrangeCrossKv)->Args({4, 384, 2})->Args({6, 512, 2})->Args({4, 1280, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
