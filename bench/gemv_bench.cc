// The decoder's weight-bound products at batch 1-5: x[m, k] · w[n, k]ᵀ with fp16 weights
// read directly (src/core/cpu/gemv_half.cc). Reports weight bytes read per second.
#include <benchmark/benchmark.h>

#include "core/ops.h"
#include "core/tensor.h"

namespace {

void BM_HalfGemv(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1), m = state.range(2);
  auto backend = hark::make_cpu_backend({static_cast<int>(state.range(3))});
  hark::Tensor w = hark::Tensor::empty({n, k}, hark::DType::F16);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<uint16_t>()[i] = hark::float_to_half(0.01f * static_cast<float>(i % 17));
  hark::Tensor x = hark::Tensor::empty({m, k});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 5);
  for (auto _ : state) {
    hark::Tensor y = hark::ops::linear(*backend, x, w, nullptr);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * n * k * 2);
}

// {n, k, rows of x, threads}: the tiny and base logits (vocabulary × width), a tiny MLP
// layer, and the logits for 5 beams.
BENCHMARK(BM_HalfGemv)
    ->Args({51865, 384, 1, 2})
    ->Args({51865, 512, 1, 2})
    ->Args({1536, 384, 1, 2})
    ->Args({51865, 384, 5, 2})
    ->Args({51865, 384, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
