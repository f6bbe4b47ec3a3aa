// The CUDA backend's ops against the CPU backend on random data (fp32 reference path:
// relative L2 ≤ 1e-5). Every test skips cleanly on a machine without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "core/ops.h"
#include "test_support.h"

namespace hark {
namespace {

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
    gpu = make_cuda_backend(0);
    cpu = make_cpu_backend({2});
  }
  Tensor random(Shape shape, float scale = 1.0f) {
    std::uniform_real_distribution<float> u(-scale, scale);
    Tensor t = Tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  }
  double compare(const Tensor& on_gpu, const Tensor& on_cpu) {
    return test::relative_l2(gpu->to_host(on_gpu), on_cpu);
  }
  std::mt19937 rng{1234};
  std::unique_ptr<Backend> gpu, cpu;
};

TEST_F(CudaOps, LinearLayerNormGelu) {
  Tensor x = random({37, 96}), w = random({130, 96}), b = random({130}), g = random({130}), beta = random({130});
  Tensor xg = gpu->to_device(x);
  Tensor yg = ops::linear(*gpu, xg, w, &b), yc = ops::linear(*cpu, x, w, &b);
  EXPECT_LT(compare(yg, yc), 1e-5);
  Tensor ng = ops::layer_norm(*gpu, yg, g, beta), nc = ops::layer_norm(*cpu, yc, g, beta);
  EXPECT_LT(compare(ng, nc), 1e-5);
  ops::gelu(*gpu, ng);
  ops::gelu(*cpu, nc);
  EXPECT_LT(compare(ng, nc), 1e-5);
  ops::add(*gpu, ng, b);
  ops::add(*cpu, nc, b);
  EXPECT_LT(compare(ng, nc), 1e-5);
}

TEST_F(CudaOps, HalfWeightsAreConvertedOnTheDevice) {
  Tensor x = random({3, 64}), w = random({50, 64});
  Tensor wh = Tensor::empty({50, 64}, DType::F16);
  for (int64_t i = 0; i < w.numel(); ++i) wh.data<uint16_t>()[i] = float_to_half(w.data<float>()[i]);
  EXPECT_LT(compare(ops::linear(*gpu, gpu->to_device(x), wh, nullptr), ops::linear(*cpu, x, wh, nullptr)), 1e-5);
}

TEST_F(CudaOps, ConvTransposeEmbedding) {
  Tensor x = random({8, 40}), w = random({16, 8, 3}), b = random({16});
  Tensor yg = ops::conv1d(*gpu, gpu->to_device(x), w, b, 2, 1), yc = ops::conv1d(*cpu, x, w, b, 2, 1);
  EXPECT_LT(compare(yg, yc), 1e-5);
  EXPECT_LT(compare(ops::transpose(*gpu, yg), ops::transpose(*cpu, yc)), 1e-6);
  Tensor table = random({100, 24}), pos = random({10, 24});
  std::vector<int32_t> ids = {5, 99, 0};
  EXPECT_LT(compare(ops::embedding(*gpu, table, ids, &pos, 4), ops::embedding(*cpu, table, ids, &pos, 4)), 1e-7);
}

TEST_F(CudaOps, AttentionCausalAndCapture) {
  const int heads = 4;
  Tensor q = random({7, 64}), k = random({19, 64}), v = random({19, 64});
  Tensor wg = Tensor::empty({heads, 7, 19}), wc = Tensor::empty({heads, 7, 19});
  for (bool causal : {false, true}) {
    Tensor og = ops::attention(*gpu, gpu->to_device(q), gpu->to_device(k), gpu->to_device(v), heads, causal, 12, &wg);
    Tensor oc = ops::attention(*cpu, q, k, v, heads, causal, 12, &wc);
    EXPECT_LT(compare(og, oc), 1e-5) << "causal " << causal;
    EXPECT_LT(test::relative_l2(wg, wc), 1e-5);
  }
}

}  // namespace
}  // namespace hark
