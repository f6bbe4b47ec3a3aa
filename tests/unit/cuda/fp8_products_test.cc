// --compute-type fp8 on the GPU: inside an fp8 region of a chosen part (the convolutions and
// the MLP by default), products of at least 1024 rows take e4m3 operands (per-row activation scales, per-channel weight scales). Against the CPU's
// fp32 products on random data, within a relative L2 error of 0.06: e4m3 keeps 3 mantissa
// bits, so each operand carries up to 2⁻⁴ relative rounding (measured 0.037-0.039 for the
// product on an H200, cuBLASLt's fp8 against its f16 GEMM). Outside a region, and below
// 1024 rows, the backend's products are the f16 backend's, bit for bit. Skips without a
// GPU, and on GPUs without fp8 tensor cores (compute capability below 8.9).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "core/ops.h"
#include "test_support.h"

namespace hark {
namespace {

constexpr double kFp8Tolerance = 0.06;

class Fp8Products : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
    try {
      fp8 = make_cuda_backend(0, {.threads = 0, .compute_type = "fp8"});
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();  // a GPU without fp8 tensor cores
    }
    f16 = make_cuda_backend(0, {.threads = 0, .compute_type = "f16"});
    cpu = make_cpu_backend({2});
  }
  Tensor random(Shape shape, float scale = 1.0f) {
    std::uniform_real_distribution<float> u(-scale, scale);
    Tensor t = Tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  }
  static Tensor up(Backend& be, const Tensor& host) {
    Tensor t = be.alloc(host.shape(), be.act_dtype());
    be.copy(host, t);
    return t;
  }
  static Tensor down(Backend& be, const Tensor& t) { return be.to_host(t).to_f32(); }
  static bool same_bits(Backend& a, const Tensor& ta, Backend& b, const Tensor& tb) {
    Tensor ha = a.to_host(ta), hb = b.to_host(tb);
    return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw(), hb.raw(), ha.nbytes()) == 0;
  }
  std::mt19937 rng{77};
  std::unique_ptr<Backend> fp8, f16, cpu;
};

TEST_F(Fp8Products, NamesItselfAndRunsF16Activations) {
  EXPECT_EQ(fp8->act_dtype(), DType::F16);
  EXPECT_NE(fp8->name().find("fp8"), std::string::npos) << fp8->name();
}

// The encoder's shapes (1280 and 5120 wide, a window of 1500 rows and two of them) and
// tiny's 384, every epilogue.
TEST_F(Fp8Products, EveryEpilogueWithinTolerance) {
  struct Shape3 {
    int64_t m, k, n;
  };
  for (const Shape3 s : {Shape3{1500, 1280, 1280}, Shape3{1500, 1280, 5120}, Shape3{1500, 5120, 1280},
                         Shape3{3000, 384, 1536}, Shape3{1024, 3840, 1280}}) {
    Tensor x = random({s.m, s.k}), w = random({s.n, s.k}, 0.1f), b = random({s.n}), res = random({s.m, s.n});
    const Fp8Region region(*fp8, Backend::Fp8Part::Mlp);
    for (Epilogue e : {Epilogue::None, Epilogue::Gelu}) {
      Tensor y8 = ops::linear(*fp8, up(*fp8, x), w, &b, e), yc = ops::linear(*cpu, x, w, &b, e);
      const double err = test::relative_l2(down(*fp8, y8), yc);
      EXPECT_LT(err, kFp8Tolerance) << s.m << "x" << s.k << "x" << s.n << " epilogue " << static_cast<int>(e);
      EXPECT_GT(err, 1e-3) << "an e4m3 product differs from fp32; equality means it did not run in fp8";
    }
    Tensor r8 = up(*fp8, res), rc = res.clone();
    ops::linear_residual(*fp8, up(*fp8, x), w, &b, r8);
    ops::linear_residual(*cpu, x, w, &b, rc);
    // The residual's own values are exact: judge the product's part.
    Tensor d8 = down(*fp8, r8), dc = rc.clone();
    for (int64_t i = 0; i < dc.numel(); ++i) {
      d8.data<float>()[i] -= res.data<float>()[i];
      dc.data<float>()[i] -= res.data<float>()[i];
    }
    EXPECT_LT(test::relative_l2(d8, dc), kFp8Tolerance) << "residual " << s.m << "x" << s.k << "x" << s.n;
  }
}

// A layer norm in front of a product writes e4m3 directly (plain and packed, as the
// encoder's MLP and QKV products are).
TEST_F(Fp8Products, NormFusedProducts) {
  const int64_t m = 1500, d = 1280;
  Tensor x = random({m, d}, 4.0f), g = random({d}), beta = random({d}, 0.5f);
  Tensor w = random({4 * d, d}, 0.05f), b = random({4 * d});
  const Fp8Region region(*fp8, Backend::Fp8Part::Mlp);
  Tensor y8 = ops::norm_linear(*fp8, up(*fp8, x), g, beta, w, &b, Epilogue::Gelu);
  Tensor yc = ops::norm_linear(*cpu, x, g, beta, w, &b, Epilogue::Gelu);
  EXPECT_LT(test::relative_l2(down(*fp8, y8), yc), kFp8Tolerance);
  Tensor wq = random({d, d}, 0.05f), wk = random({d, d}, 0.05f), wv = random({d, d}, 0.05f);
  Tensor bq = random({d}), bv = random({d});
  const Tensor* ws[] = {&wq, &wk, &wv};
  const Tensor* bs[] = {&bq, nullptr, &bv};
  Tensor p8 = ops::norm_linear_packed(*fp8, up(*fp8, x), g, beta, ws, bs);
  Tensor pc = ops::norm_linear_packed(*cpu, x, g, beta, ws, bs);
  EXPECT_LT(test::relative_l2(down(*fp8, p8), pc), kFp8Tolerance);
}

// Rows that are all zero (padding) and rows of very different magnitudes each keep their
// own scale: a small row next to a large one is not flushed to zero.
TEST_F(Fp8Products, EachRowKeepsItsOwnScale) {
  const int64_t m = 1100, k = 1280, n = 256;
  Tensor x = random({m, k}), w = random({n, k}, 0.1f);
  for (int64_t c = 0; c < k; ++c) {
    x.data<float>()[5 * k + c] = 0.0f;   // an all-zero row
    x.data<float>()[6 * k + c] *= 1e-3f;  // a row a thousand times smaller than the rest
  }
  const Fp8Region region(*fp8, Backend::Fp8Part::Mlp);
  Tensor y8 = down(*fp8, ops::linear(*fp8, up(*fp8, x), w, nullptr)), yc = ops::linear(*cpu, x, w, nullptr);
  for (int64_t c = 0; c < n; ++c) EXPECT_EQ(y8.data<float>()[5 * n + c], 0.0f);
  EXPECT_LT(test::relative_l2(y8.rows(6, 7).clone(), yc.rows(6, 7).clone()), kFp8Tolerance) << "the small row";
  EXPECT_LT(test::relative_l2(y8, yc), kFp8Tolerance);
}

// The decoder's products (no region) and products of few rows stay the f16 backend's.
TEST_F(Fp8Products, OutsideTheRegionAndFewRowsStayF16) {
  Tensor x = random({1500, 1280}), w = random({1280, 1280}, 0.1f), b = random({1280});
  Tensor y8 = ops::linear(*fp8, up(*fp8, x), w, &b), y16 = ops::linear(*f16, up(*f16, x), w, &b);
  EXPECT_TRUE(same_bits(*fp8, y8, *f16, y16)) << "no fp8 region open";
  Tensor small = random({300, 1280});
  const Fp8Region region(*fp8, Backend::Fp8Part::Mlp);
  Tensor s8 = ops::linear(*fp8, up(*fp8, small), w, &b), s16 = ops::linear(*f16, up(*f16, small), w, &b);
  EXPECT_TRUE(same_bits(*fp8, s8, *f16, s16)) << "300 rows: below the fp8 threshold";
  // A width that is not a multiple of 16 (the first convolution's 240 columns) stays f16 too.
  Tensor odd = random({1500, 120}), wo = random({64, 120}, 0.1f);
  EXPECT_TRUE(same_bits(*fp8, ops::linear(*fp8, up(*fp8, odd), wo, nullptr), *f16,
                        ops::linear(*f16, up(*f16, odd), wo, nullptr)));
}

// The region is the calling thread's, restored when it closes (nested regions included).
TEST_F(Fp8Products, RegionIsScopedAndNests) {
  using Part = Backend::Fp8Part;
  EXPECT_EQ(fp8->set_fp8_region(Part::None), Part::None);
  {
    const Fp8Region outer(*fp8, Part::Attention);
    {
      const Fp8Region inner(*fp8, Part::Mlp);
      EXPECT_EQ(fp8->set_fp8_region(Part::Mlp), Part::Mlp);
    }
    EXPECT_EQ(fp8->set_fp8_region(Part::Attention), Part::Attention) << "the outer region again after the inner one";
  }
  EXPECT_EQ(fp8->set_fp8_region(Part::None), Part::None) << "closed again";
}

// By default the convolutions and the MLP run in fp8; the attention's products and the
// cross-attention K/V stay f16.
TEST_F(Fp8Products, DefaultPartsAreTheConvolutionsAndTheMlp) {
  Tensor x = random({1500, 256}), w = random({256, 256}, 0.1f);
  Tensor y16 = ops::linear(*f16, up(*f16, x), w, nullptr);
  for (auto part : {Backend::Fp8Part::Attention, Backend::Fp8Part::CrossKv}) {
    const Fp8Region region(*fp8, part);
    EXPECT_TRUE(same_bits(*fp8, ops::linear(*fp8, up(*fp8, x), w, nullptr), *f16, y16)) << static_cast<int>(part);
  }
  for (auto part : {Backend::Fp8Part::Convolutions, Backend::Fp8Part::Mlp}) {
    const Fp8Region region(*fp8, part);
    EXPECT_FALSE(same_bits(*fp8, ops::linear(*fp8, up(*fp8, x), w, nullptr), *f16, y16)) << static_cast<int>(part);
  }
}

// HARK_CUDA_FP8_PARTS picks the parts (read when a backend is made): the others stay f16.
TEST_F(Fp8Products, PartsSwitchLeavesTheOthersInF16) {
  setenv("HARK_CUDA_FP8_PARTS", "mlp,kv", 1);
  auto some = make_cuda_backend(0, {.threads = 0, .compute_type = "fp8"});
  setenv("HARK_CUDA_FP8_PARTS", "mlp,bogus", 1);
  EXPECT_THROW(make_cuda_backend(0, {.threads = 0, .compute_type = "fp8"}), Error);
  unsetenv("HARK_CUDA_FP8_PARTS");
  Tensor x = random({1500, 256}), w = random({256, 256}, 0.1f);
  Tensor y16 = ops::linear(*f16, up(*f16, x), w, nullptr);
  {
    const Fp8Region region(*some, Backend::Fp8Part::Attention);
    EXPECT_TRUE(same_bits(*some, ops::linear(*some, up(*some, x), w, nullptr), *f16, y16)) << "attention: not chosen";
  }
  const Fp8Region region(*some, Backend::Fp8Part::CrossKv);
  EXPECT_FALSE(same_bits(*some, ops::linear(*some, up(*some, x), w, nullptr), *f16, y16)) << "kv: chosen";
}

// The e4m3 copy of a weight is made once and reused: the second product reads the same
// copy (same bits out), also for a second model's weights at other addresses.
TEST_F(Fp8Products, WeightCopiesAreReused) {
  Tensor x = random({1500, 384}), w = random({384, 384}, 0.1f), w2 = random({384, 384}, 0.1f);
  const Fp8Region region(*fp8, Backend::Fp8Part::Mlp);
  Tensor xg = up(*fp8, x);
  Tensor a = ops::linear(*fp8, xg, w, nullptr), b = ops::linear(*fp8, xg, w, nullptr);
  EXPECT_TRUE(same_bits(*fp8, a, *fp8, b));
  Tensor c = ops::linear(*fp8, xg, w2, nullptr);
  EXPECT_LT(test::relative_l2(down(*fp8, c), ops::linear(*cpu, x, w2, nullptr)), kFp8Tolerance);
}

}  // namespace
}  // namespace hark
