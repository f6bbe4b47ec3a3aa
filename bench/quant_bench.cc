// Quantized products (src/core/cpu/quant_gemm.cc) on the decoder's and encoder's shapes,
// next to the fp16 GEMV they replace, and the machine's read bandwidth for comparison.
// Bytes are the weight bytes each product reads.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "core/cpu/mem_bandwidth.h"
#include "core/cpu/quant_gemm.h"
#include "core/ops.h"
#include "core/quant_format.h"
#include "core/tensor.h"

namespace {

hark::Tensor weights(hark::DType dtype, int64_t n, int64_t k) {
  std::vector<float> values(n * k);
  for (int64_t i = 0; i < n * k; ++i) values[i] = 0.01f * static_cast<float>((i * 7919) % 23 - 11);
  hark::Tensor w = hark::Tensor::empty({n, k}, dtype);
  if (dtype == hark::DType::F32)
    std::copy(values.begin(), values.end(), w.data<float>());
  else if (dtype == hark::DType::F16)
    for (int64_t i = 0; i < n * k; ++i) w.data<uint16_t>()[i] = hark::float_to_half(values[i]);
  else
    hark::quant::quantize_row(dtype, values.data(), w.raw(), n * k);
  return w;
}

// {dtype, n, k, rows of x, threads}
void BM_Linear(benchmark::State& state) {
  const auto dtype = static_cast<hark::DType>(state.range(0));
  const int64_t n = state.range(1), k = state.range(2), m = state.range(3);
  auto backend = hark::make_cpu_backend({static_cast<int>(state.range(4))});
  const hark::Tensor w = weights(dtype, n, k);
  hark::Tensor x = hark::Tensor::empty({m, k});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 5 - 2);
  for (auto _ : state) {
    hark::Tensor y = hark::ops::linear(*backend, x, w, nullptr);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetLabel(std::string(hark::dtype_name(dtype)) + " " + hark::quant_isa());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.nbytes()));
}

constexpr int kF32 = static_cast<int>(hark::DType::F32), kF16 = static_cast<int>(hark::DType::F16), kQ8 = static_cast<int>(hark::DType::Q8_0),
              kQ5 = static_cast<int>(hark::DType::Q5_0), kQ4K = static_cast<int>(hark::DType::Q4_K);

// Tiny and base logits (vocabulary × width), a tiny MLP layer, 5 beams, the tiny encoder MLP.
BENCHMARK(BM_Linear)
    ->Args({kF16, 51865, 384, 1, 2})
    ->Args({kQ8, 51865, 384, 1, 2})
    ->Args({kQ5, 51865, 384, 1, 2})
    ->Args({kQ8, 51865, 512, 1, 2})
    ->Args({kQ4K, 51865, 512, 1, 2})
    ->Args({kQ8, 1536, 384, 1, 2})
    ->Args({kQ8, 1536, 384, 1, 1})
    ->Args({kF16, 1536, 384, 1, 1})
    ->Args({kF16, 51865, 384, 5, 2})
    ->Args({kQ8, 51865, 384, 5, 2})
    ->Args({kQ8, 51865, 384, 1, 1})
    ->Args({kF32, 1536, 384, 1500, 2})
    ->Args({kQ8, 1536, 384, 1500, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Reading a buffer of state.range(0) MB with 2 threads.
void BM_ReadBandwidth(benchmark::State& state) {
  hark::ThreadPool pool(2);
  double gbs = 0;
  for (auto _ : state) gbs = hark::read_bandwidth_gbs(pool, static_cast<size_t>(state.range(0)) << 20, 5);
  state.counters["GB/s"] = gbs;
}
BENCHMARK(BM_ReadBandwidth)->Arg(40)->Arg(80)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
