// The decoder's weight-bound products at batch 1-8: x[m, k] · w[n, k]ᵀ with fp16 or fp32
// weights read directly (src/core/cpu/gemv_half.cc). Reports weight bytes read per second.
#include <benchmark/benchmark.h>

#include "core/ops.h"
#include "core/tensor.h"

namespace {

void BM_HalfGemv(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1), m = state.range(2);
  const bool f32 = state.range(4) == 32;
  auto backend = hark::make_cpu_backend({static_cast<int>(state.range(3))});
  hark::Tensor w = hark::Tensor::empty({n, k}, f32 ? hark::DType::F32 : hark::DType::F16);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float v = 0.01f * static_cast<float>(i % 17);
    if (f32)
      w.data<float>()[i] = v;
    else
      w.data<uint16_t>()[i] = hark::float_to_half(v);
  }
  hark::Tensor x = hark::Tensor::empty({m, k});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 5);
  for (auto _ : state) {
    hark::Tensor y = hark::ops::linear(*backend, x, w, nullptr);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * n * k * (f32 ? 4 : 2));
}

// {n, k, rows of x, threads, weight bits}: the tiny and base logits (vocabulary × width), a
// tiny MLP layer, and the logits for 3, 5 and 8 rows (beams, or a batching server's step);
// fp32 weights (the reference path) for 1, 5, 6 and 7 rows (7: the batching server's step
// with 8 clients on the CPU, docs/benchmarks.md).
BENCHMARK(BM_HalfGemv)
    ->Args({51865, 384, 1, 2, 16})
    ->Args({51865, 512, 1, 2, 16})
    ->Args({1536, 384, 1, 2, 16})
    ->Args({51865, 384, 3, 2, 16})
    ->Args({51865, 384, 5, 2, 16})
    ->Args({51865, 384, 8, 2, 16})
    ->Args({51865, 384, 1, 1, 16})
    ->Args({51865, 384, 1, 2, 32})
    ->Args({51865, 384, 5, 2, 32})
    ->Args({51865, 384, 6, 2, 32})
    ->Args({1536, 384, 6, 2, 32})
    ->Args({51865, 384, 7, 2, 32})
    ->Args({51865, 512, 1, 2, 32})
    ->Args({51865, 512, 7, 2, 32})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
