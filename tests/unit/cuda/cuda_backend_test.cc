// The CUDA backend's ops against the CPU backend (fp32) on random data, for each compute
// type: fp32 (the reference path: relative L2 ≤ 1e-5), f16 (≤ 4e-3) and bf16 (≤ 3e-2),
// the half tolerances covering the rounding of inputs and outputs to 16 bits. Every test
// skips cleanly on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <random>

#include <bit>

#include "core/ops.h"
#include "core/token_select.h"
#include "test_support.h"

namespace hark {
namespace {

double tolerance(DType dt) { return dt == DType::F32 ? 1e-5 : dt == DType::F16 ? 4e-3 : 3e-2; }

class CudaOps : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
    gpu = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
    cpu = make_cpu_backend({2});
    tol = tolerance(gpu->act_dtype());
  }
  Tensor random(Shape shape, float scale = 1.0f) {
    std::uniform_real_distribution<float> u(-scale, scale);
    Tensor t = Tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  }
  // A host fp32 tensor as a GPU activation in the compute dtype.
  Tensor up(const Tensor& host) {
    Tensor t = gpu->alloc(host.shape(), gpu->act_dtype());
    gpu->copy(host, t);
    return t;
  }
  Tensor ints(std::vector<int32_t> values, bool on_gpu) {
    Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::I32);
    std::copy(values.begin(), values.end(), t.data<int32_t>());
    return on_gpu ? gpu->to_device(t) : t;
  }
  double compare(const Tensor& on_gpu, const Tensor& on_cpu) {
    return test::relative_l2(gpu->to_host(on_gpu).to_f32(), on_cpu);
  }
  std::mt19937 rng{1234};
  std::unique_ptr<Backend> gpu, cpu;
  double tol = 0;
};

TEST_P(CudaOps, LinearEveryEpilogueAndRowCount) {
  for (int64_t m : {1, 3, 8, 9, 40, 300}) {
    Tensor x = random({m, 96}), w = random({136, 96}, 0.2f), b = random({136}), res = random({m, 136});
    for (Epilogue e : {Epilogue::None, Epilogue::Gelu}) {
      Tensor yg = ops::linear(*gpu, up(x), w, &b, e), yc = ops::linear(*cpu, x, w, &b, e);
      EXPECT_LT(compare(yg, yc), tol) << "m " << m << " epilogue " << static_cast<int>(e);
    }
    Tensor rg = up(res), rc = res.clone();
    ops::linear_residual(*gpu, up(x), w, &b, rg);
    ops::linear_residual(*cpu, x, w, &b, rc);
    EXPECT_LT(compare(rg, rc), tol) << "residual, m " << m;
    // fp32 logits from activations in the compute dtype.
    Tensor lg = ops::linear(*gpu, up(x), w, nullptr, Epilogue::None, DType::F32);
    EXPECT_EQ(lg.dtype(), DType::F32);
    EXPECT_LT(compare(lg, ops::linear(*cpu, x, w, nullptr)), tol) << "f32 output, m " << m;
  }
}

// The greedy step's products: one row, the layer norm fused or not, every epilogue, widths
// of every Whisper size (the one-row kernel up to 2048, gemv.cu beyond), and enough
// columns that each warp of the one-row kernel serves several of them.
TEST_P(CudaOps, OneRowProductsWithAndWithoutNorm) {
  for (int64_t k : {384, 1280, 2048, 5120}) {
    for (int64_t n : {int64_t{136}, k <= 2048 ? int64_t{20000} : int64_t{1000}}) {
      Tensor x = random({1, k}, 3.0f), w = random({n, k}, 0.05f), b = random({n}), g = random({k}), beta = random({k});
      for (Epilogue e : {Epilogue::None, Epilogue::Gelu}) {
        Tensor yg = ops::norm_linear(*gpu, up(x), g, beta, w, &b, e), yc = ops::norm_linear(*cpu, x, g, beta, w, &b, e);
        EXPECT_LT(compare(yg, yc), tol) << "norm, k " << k << " n " << n << " epilogue " << static_cast<int>(e);
        Tensor pg = ops::linear(*gpu, up(x), w, &b, e), pc = ops::linear(*cpu, x, w, &b, e);
        EXPECT_LT(compare(pg, pc), tol) << "k " << k << " n " << n << " epilogue " << static_cast<int>(e);
      }
      Tensor lg = ops::norm_linear(*gpu, up(x), g, beta, w, nullptr, Epilogue::None, DType::F32);
      EXPECT_LT(compare(lg, ops::norm_linear(*cpu, x, g, beta, w, nullptr)), tol) << "f32 logits, k " << k << " n " << n;
      Tensor res = random({1, n}), rg = up(res), rc = res.clone();
      ops::linear_residual(*gpu, up(x), w, &b, rg);
      ops::linear_residual(*cpu, x, w, &b, rc);
      EXPECT_LT(compare(rg, rc), tol) << "residual, k " << k << " n " << n;
    }
  }
}

// The greedy step's fused norms are folded into the product by default (the kernel scales x
// by gamma and corrects each output with the row's mean and deviation afterwards,
// norm_fold.cu): against the CPU and against the unfolded kernel (HARK_CUDA_NORM_FOLD=0),
// at every width it takes (words per lane 2, 3, 4 and 5) and one past it (1288: normalised
// first), rows whose mean is far from zero (the correction subtracts mean·Σγw from Σxγw),
// with and without a bias, every epilogue, one and several columns per warp.
TEST_P(CudaOps, FoldedNormEqualsNormalisingFirst) {
  if (gpu->act_dtype() == DType::F32) GTEST_SKIP() << "the one-row kernels are for the 16-bit compute types";
  setenv("HARK_CUDA_NORM_FOLD", "0", 1);
  std::unique_ptr<Backend> unfolded = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
  unsetenv("HARK_CUDA_NORM_FOLD");
  auto on = [&](Backend& b, const Tensor& host) {
    Tensor t = b.alloc(host.shape(), b.act_dtype());
    b.copy(host, t);
    return t;
  };
  for (int64_t k : {256, 384, 768, 1024, 1280, 1288}) {
    for (int64_t n : {int64_t{136}, int64_t{30000}}) {
      for (float offset : {0.0f, 3.0f, -25.0f}) {
        Tensor x = random({1, k}, 2.0f), w = random({n, k}, 0.05f), b = random({n}), g = random({k}),
               beta = random({k}), res = random({1, n});
        for (int64_t i = 0; i < k; ++i) x.data<float>()[i] += offset;
        const std::string where = "k " + std::to_string(k) + " n " + std::to_string(n) + " offset " +
                                  std::to_string(offset);
        for (Epilogue e : {Epilogue::None, Epilogue::Gelu}) {
          for (const Tensor* bias : {static_cast<const Tensor*>(&b), static_cast<const Tensor*>(nullptr)}) {
            const Tensor yc = ops::norm_linear(*cpu, x, g, beta, w, bias, e);
            const Tensor yf = gpu->to_host(ops::norm_linear(*gpu, up(x), g, beta, w, bias, e)).to_f32();
            const Tensor yu = unfolded->to_host(ops::norm_linear(*unfolded, on(*unfolded, x), g, beta, w, bias, e)).to_f32();
            const std::string what = where + " epilogue " + std::to_string(static_cast<int>(e)) + (bias ? " bias" : "");
            EXPECT_LT(test::relative_l2(yf, yc), tol) << "folded, " << what;
            EXPECT_LT(test::relative_l2(yu, yc), tol) << "unfolded, " << what;
            EXPECT_LT(test::relative_l2(yf, yu), tol) << "folded against unfolded, " << what;
          }
        }
        // fp32 logits (no bias), the way the logits product reads the final norm.
        const Tensor lc = ops::norm_linear(*cpu, x, g, beta, w, nullptr);
        const Tensor lf = gpu->to_host(ops::norm_linear(*gpu, up(x), g, beta, w, nullptr, Epilogue::None, DType::F32));
        EXPECT_LT(test::relative_l2(lf, lc), tol) << "f32 output, " << where;
      }
    }
  }
}

// The measurement switch HARK_CUDA_GEMV_ONE_ROW=wide: one row wider than 2048 (the MLP's
// second product) through gemv_one_row_wide.cu, against the CPU, every epilogue.
TEST_P(CudaOps, OneRowWideProducts) {
  setenv("HARK_CUDA_GEMV_ONE_ROW", "wide", 1);
  std::unique_ptr<Backend> wide = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
  unsetenv("HARK_CUDA_GEMV_ONE_ROW");
  auto on_wide = [&](const Tensor& host) {
    Tensor t = wide->alloc(host.shape(), wide->act_dtype());
    wide->copy(host, t);
    return t;
  };
  for (int64_t k : {3072, 4096, 5120, 8192}) {
    for (int64_t n : {136, 1280, 3000}) {
      Tensor x = random({1, k}, 2.0f), w = random({n, k}, 0.05f), b = random({n});
      for (Epilogue e : {Epilogue::None, Epilogue::Gelu}) {
        Tensor yg = ops::linear(*wide, on_wide(x), w, &b, e), yc = ops::linear(*cpu, x, w, &b, e);
        EXPECT_LT(test::relative_l2(wide->to_host(yg).to_f32(), yc), tol)
            << "k " << k << " n " << n << " epilogue " << static_cast<int>(e);
      }
      Tensor lg = ops::linear(*wide, on_wide(x), w, nullptr, Epilogue::None, DType::F32);
      EXPECT_LT(test::relative_l2(wide->to_host(lg).to_f32(), ops::linear(*cpu, x, w, nullptr)), tol) << "f32, k " << k;
      Tensor res = random({1, n}), rg = on_wide(res), rc = res.clone();
      ops::linear_residual(*wide, on_wide(x), w, &b, rg);
      ops::linear_residual(*cpu, x, w, &b, rc);
      EXPECT_LT(test::relative_l2(wide->to_host(rg).to_f32(), rc), tol) << "residual, k " << k << " n " << n;
    }
  }
}

TEST_P(CudaOps, HalfWeightsAreConvertedOnTheDevice) {
  Tensor x = random({3, 64}), w = random({50, 64});
  Tensor wh = Tensor::empty({50, 64}, DType::F16);
  for (int64_t i = 0; i < w.numel(); ++i) wh.data<uint16_t>()[i] = float_to_half(w.data<float>()[i]);
  EXPECT_LT(compare(ops::linear(*gpu, up(x), wh, nullptr), ops::linear(*cpu, x, wh, nullptr)), tol);
}

TEST_P(CudaOps, PackedProjections) {
  for (int64_t m : {2, 33}) {
    Tensor x = random({m, 64}), w0 = random({64, 64}), w1 = random({32, 64}), w2 = random({48, 64});
    Tensor b0 = random({64}), b2 = random({48});
    const Tensor* ws[] = {&w0, &w1, &w2};
    const Tensor* bs[] = {&b0, nullptr, &b2};
    EXPECT_LT(compare(ops::linear_packed(*gpu, up(x), ws, bs), ops::linear_packed(*cpu, x, ws, bs)), tol) << m;
  }
}

TEST_P(CudaOps, LayerNormGeluAdd) {
  Tensor x = random({7, 384}, 3.0f), g = random({384}), b = random({384});
  Tensor ng = ops::layer_norm(*gpu, up(x), g, b), nc = ops::layer_norm(*cpu, x, g, b);
  EXPECT_LT(compare(ng, nc), tol);
  ops::gelu(*gpu, ng);
  ops::gelu(*cpu, nc);
  EXPECT_LT(compare(ng, nc), tol);
  ops::add(*gpu, ng, b);  // one row broadcast (a host weight)
  ops::add(*cpu, nc, b);
  EXPECT_LT(compare(ng, nc), tol);
  Tensor other = random({7, 384});
  ops::add(*gpu, ng, up(other));
  ops::add(*cpu, nc, other);
  EXPECT_LT(compare(ng, nc), tol);
}

TEST_P(CudaOps, Convolutions) {
  Tensor x = random({8, 40}), w = random({16, 8, 3}, 0.3f), b = random({16});
  Tensor yg = ops::conv1d(*gpu, up(x), w, b, 2, 1), yc = ops::conv1d(*cpu, x, w, b, 2, 1);
  EXPECT_LT(compare(yg, yc), tol);
  EXPECT_LT(compare(ops::transpose(*gpu, yg), ops::transpose(*cpu, yc)), tol);
  for (int stride : {1, 2}) {
    Tensor xt = random({40, 8});
    Tensor tg = ops::conv1d_gelu_time_major(*gpu, up(xt), w, b, stride, 1);
    Tensor tc = ops::conv1d_gelu_time_major(*cpu, xt, w, b, stride, 1);
    ASSERT_EQ(tg.shape(), tc.shape());
    EXPECT_LT(compare(tg, tc), tol) << "stride " << stride;
  }
}

TEST_P(CudaOps, PlainAttentionWithCapture) {
  const int heads = 4;
  Tensor q = random({7, 64}), k = random({19, 64}), v = random({19, 64});
  Tensor wg = Tensor::empty({heads, 7, 19}), wc = Tensor::empty({heads, 7, 19});
  for (bool causal : {false, true}) {
    Tensor og = ops::attention(*gpu, up(q), up(k), up(v), heads, causal, 12, &wg);
    Tensor oc = ops::attention(*cpu, q, k, v, heads, causal, 12, &wc);
    EXPECT_LT(compare(og, oc), tol) << "causal " << causal;
    EXPECT_LT(test::relative_l2(wg, wc), tol);
  }
}

TEST_P(CudaOps, EncoderSelfAttention) {
  struct Case {
    int batch, heads, head_dim;
    int64_t t;
  };
  // Every encoder attention kernel of the 16-bit types against the CPU: the mma.sync
  // kernel with 128-row blocks (two row tiles per warp, "wide", the default) and with
  // 64-row blocks ("narrow"), and the warpgroup (wgmma) kernel of Hopper GPUs
  // (HARK_CUDA_FLASH=wgmma, head dim 64; "wgmma-pipe" with a tile's two products
  // overlapped); lengths that end mid-tile, one key tile, two, one row. The two
  // mma.sync kernels compute each output with the same products in the same order: equal
  // bit for bit. The wgmma kernel shares their softmax; whether its products round the
  // same is reported, not required. Where wgmma does not apply (another GPU, head dim 32)
  // its variant is skipped, unless HARK_EXPECT_WGMMA=1 (set by scripts/device/ on H200s).
  const std::vector<Case> cases = {Case{2, 4, 64, 100}, Case{1, 6, 64, 1500}, Case{3, 2, 32, 70},
                                   Case{1, 6, 32, 1500}, Case{2, 3, 64, 200},  Case{1, 2, 64, 1},
                                   Case{2, 2, 64, 64},   Case{1, 3, 64, 129},  Case{1, 2, 64, 128},
                                   Case{2, 3, 64, 65}};
  const bool expect_wgmma = std::getenv("HARK_EXPECT_WGMMA") && std::string(std::getenv("HARK_EXPECT_WGMMA")) == "1";
  std::vector<Tensor> inputs, wide(cases.size());
  for (const Case& c : cases) inputs.push_back(random({c.batch * c.t, 3 * c.heads * c.head_dim}, 2.0f));
  for (const char* variant : {"wide", "narrow", "wgmma", "wgmma-pipe"}) {
    setenv("HARK_CUDA_FLASH", variant, 1);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::string what = "batch " + std::to_string(c.batch) + " t " + std::to_string(c.t) + " head dim " +
                               std::to_string(c.head_dim) + " kernel " + variant;
      Tensor og;
      try {
        og = ops::self_attention(*gpu, up(inputs[i]), c.batch, c.heads);
      } catch (const Error& e) {
        if (std::string(variant).rfind("wgmma", 0) != 0 || e.code() != ErrorCode::Unavailable) throw;
        if (expect_wgmma && c.head_dim == 64) ADD_FAILURE() << what << ": " << e.what();
        continue;
      }
      Tensor oc = ops::self_attention(*cpu, inputs[i], c.batch, c.heads);
      EXPECT_LT(compare(og, oc), tol) << what;
      Tensor host = gpu->to_host(og);
      if (std::string(variant) == "wide") {
        wide[i] = host;
        continue;
      }
      ASSERT_EQ(host.nbytes(), wide[i].nbytes());
      const bool same = std::memcmp(host.raw(), wide[i].raw(), host.nbytes()) == 0;
      if (std::string(variant) == "narrow")
        EXPECT_TRUE(same) << "the 64- and 128-row kernels differ: " << what;
      else
        std::printf("[ wgmma    ] %s: %s the 128-row mma.sync kernel's output, relative L2 to it %.3g\n", what.c_str(),
                    same ? "bit-identical to" : "differs from", test::relative_l2(host.to_f32(), wide[i].to_f32()));
    }
  }
  unsetenv("HARK_CUDA_FLASH");
}

TEST_P(CudaOps, DecoderCachedAttention) {
  for (int head_dim : {64, 32}) {
    const int heads = 4, rows = 3;
    const int64_t d = heads * head_dim, ctx = 40;
    const std::vector<int32_t> lengths = {0, 5, 17};
    for (int n_new : {1, 3}) {
      Tensor qkv = random({rows * n_new, 3 * d}), ck = random({rows * ctx, d}), cv = random({rows * ctx, d});
      Tensor ckg = up(ck), cvg = up(cv);
      Tensor og = ops::cached_attention(*gpu, up(qkv), ckg, cvg, ints(lengths, true), n_new, heads);
      Tensor oc = ops::cached_attention(*cpu, qkv, ck, cv, ints(lengths, false), n_new, heads);
      EXPECT_LT(compare(og, oc), tol) << "n_new " << n_new << " head dim " << head_dim;
      // The new keys and values landed where the CPU put them.
      for (int r = 0; r < rows; ++r) {
        const int64_t begin = r * ctx + lengths[r], end = begin + n_new;
        EXPECT_LT(compare(ckg.rows(begin, end), ck.rows(begin, end)), tol);
        EXPECT_LT(compare(cvg.rows(begin, end), cv.rows(begin, end)), tol);
      }
    }
  }
}

// The greedy step's self-attention block in one launch (HARK_CUDA_FUSED_SELF=1,
// decoder_self_step.cu) against the two launches it replaces (the packed product with the
// norm fused, then the cached kernel): the same attention output and cache rows bit for
// bit, and both within the tolerance of the CPU. Widths of the one-row kernel's word
// counts (2, 4, 5 and 8 words a lane), head dims 64 and 32, empty and filled caches.
TEST_P(CudaOps, FusedSelfAttentionStepEqualsTwoLaunches) {
  if (gpu->act_dtype() == DType::F32) GTEST_SKIP() << "the fused step is for the 16-bit compute types";
  setenv("HARK_CUDA_FUSED_SELF", "1", 1);
  std::unique_ptr<Backend> fused = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
  unsetenv("HARK_CUDA_FUSED_SELF");
  // The fused step normalises x first, as the two launches do with the norm unfolded; its
  // comparison with the default (folded) path is the tolerance against the CPU below.
  setenv("HARK_CUDA_NORM_FOLD", "0", 1);
  gpu = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
  unsetenv("HARK_CUDA_NORM_FOLD");
  struct Case {
    int heads, head_dim;
  };
  for (Case c : {Case{6, 64}, Case{8, 32}, Case{16, 64}, Case{20, 64}, Case{32, 64}}) {
    const int64_t d = static_cast<int64_t>(c.heads) * c.head_dim, ctx = 120;
    for (int32_t past : {0, 1, 37, 119}) {
      const std::string what = "d " + std::to_string(d) + " head dim " + std::to_string(c.head_dim) + " past " +
                               std::to_string(past);
      Tensor x = random({1, d}, 2.0f), g = random({d}), beta = random({d});
      Tensor wq = random({d, d}, 0.1f), wk = random({d, d}, 0.1f), wv = random({d, d}, 0.1f);
      Tensor bq = random({d}), bv = random({d});
      const Tensor* ws[] = {&wq, &wk, &wv};
      const Tensor* bs[] = {&bq, nullptr, &bv};
      Tensor ck = random({ctx, d}), cv = random({ctx, d});
      Tensor ck2 = up(ck), cv2 = up(cv), ckf = up(ck), cvf = up(cv);
      Tensor len_g = ints({past}, true);
      Tensor two = ops::norm_cached_attention(*gpu, up(x), g, beta, ws, bs, ck2, cv2, len_g, 1, c.heads);
      Tensor xf = fused->alloc({1, d}, fused->act_dtype());
      fused->copy(x, xf);
      Tensor ckf2 = fused->alloc(ck.shape(), fused->act_dtype()), cvf2 = fused->alloc(cv.shape(), fused->act_dtype());
      fused->copy(ck, ckf2);
      fused->copy(cv, cvf2);
      Tensor len_f = fused->to_device(ints({past}, false));
      Tensor one = ops::norm_cached_attention(*fused, xf, g, beta, ws, bs, ckf2, cvf2, len_f, 1, c.heads);
      const Tensor a = gpu->to_host(two), b = fused->to_host(one);
      ASSERT_EQ(a.nbytes(), b.nbytes());
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "attention output, " << what;
      const Tensor k2 = gpu->to_host(ck2), kf = fused->to_host(ckf2), v2 = gpu->to_host(cv2), vf = fused->to_host(cvf2);
      EXPECT_EQ(std::memcmp(k2.raw(), kf.raw(), k2.nbytes()), 0) << "key cache, " << what;
      EXPECT_EQ(std::memcmp(v2.raw(), vf.raw(), v2.nbytes()), 0) << "value cache, " << what;
      Tensor ckc = ck.clone(), cvc = cv.clone();
      Tensor oc = ops::norm_cached_attention(*cpu, x, g, beta, ws, bs, ckc, cvc, ints({past}, false), 1, c.heads);
      EXPECT_LT(test::relative_l2(b.to_f32(), oc), tol) << "against the CPU, " << what;
    }
  }
}

TEST_P(CudaOps, DecoderCrossAttentionWithWeights) {
  for (int head_dim : {64, 32}) {
    const int heads = 2, layers = 2;
    const int64_t d = heads * head_dim, frames = 150;
    Tensor kv = random({2 * frames, 2 * layers * d}, 2.0f);
    const std::vector<int32_t> row_window = {0, 1, 1, 0};
    const int rows = static_cast<int>(row_window.size());
    Tensor kvg = up(kv);
    for (int n_new : {1, 3}) {
      Tensor q = random({rows * n_new, d}, 2.0f);
      const PackedKV pc{&kv, frames, 2 * d, 3 * d}, pg{&kvg, frames, 2 * d, 3 * d};  // layer 1
      Tensor wg = Tensor::empty({rows, heads, n_new, frames}), wc = Tensor::empty({rows, heads, n_new, frames});
      Tensor og = ops::cross_attention(*gpu, up(q), pg, ints(row_window, true), row_window, n_new, heads, &wg);
      Tensor oc = ops::cross_attention(*cpu, q, pc, ints(row_window, false), row_window, n_new, heads, &wc);
      EXPECT_LT(compare(og, oc), tol) << "n_new " << n_new << " head dim " << head_dim;
      EXPECT_LT(test::relative_l2(wg, wc), tol);
      Tensor plain = ops::cross_attention(*gpu, up(q), pg, ints(row_window, true), row_window, n_new, heads);
      EXPECT_LT(compare(plain, oc), tol);
    }
  }
}

// The streaming cross-attention (HARK_CUDA_CROSS=stream[-N], cross_attention_stream.cu)
// and the split kernel (=split) against the CPU, on shapes at its edges: head dims 64 and
// 32; frames that end mid-tile and mid-block (1500, 150, 37); runs of 1, 2, 3 (odd: the
// pipeline's tail) and 8 tiles a warp and the choice by shape, at depths 2 and 1
// (HARK_CUDA_CROSS_DEPTH); one row a window, beams
// (five rows on a window), windows no row reads, a row on a window past the others, and
// more rows on one window than a block lists (the walk over every row); one and three
// new tokens a row.
TEST_P(CudaOps, CrossAttentionStreamingAndSplitKernels) {
  if (gpu->act_dtype() == DType::F32) GTEST_SKIP() << "the streaming kernel is for the 16-bit compute types";
  auto backend = [&](const std::string& which) {
    const size_t slash = which.find('/');  // "stream-3/2": three tiles a warp, depth 2
    setenv("HARK_CUDA_CROSS", which.substr(0, slash).c_str(), 1);
    if (slash != std::string::npos) setenv("HARK_CUDA_CROSS_DEPTH", which.substr(slash + 1).c_str(), 1);
    std::unique_ptr<Backend> b = make_cuda_backend(0, {.threads = 0, .compute_type = GetParam()});
    unsetenv("HARK_CUDA_CROSS");
    unsetenv("HARK_CUDA_CROSS_DEPTH");
    return b;
  };
  struct Case {
    int heads, head_dim;
    int64_t frames;
    int windows;
    std::vector<int32_t> row_window;
  };
  std::vector<int32_t> forty(40, 1);
  forty.push_back(2);
  const Case cases[] = {
      {20, 64, 1500, 3, {0, 1, 2}},
      {6, 64, 150, 9, {0, 1, 2, 3, 5, 6, 7, 8}},
      {8, 32, 37, 4, {0, 0, 0, 0, 0, 3, 3, 3, 3, 3}},
      {2, 64, 150, 3, forty},
      {4, 32, 1500, 2, {1, 0, 1}},
  };
  for (const std::string which :
       {"stream", "stream-1", "stream-2", "stream-3", "stream-8", "stream/2", "stream-3/2", "split"}) {
    std::unique_ptr<Backend> be = backend(which);
    for (const Case& c : cases) {
      const int64_t d = static_cast<int64_t>(c.heads) * c.head_dim;
      const int rows = static_cast<int>(c.row_window.size());
      Tensor kv = random({c.windows * c.frames, 4 * d}, 2.0f);  // two layers' K and V
      Tensor kvg = be->alloc(kv.shape(), be->act_dtype());
      be->copy(kv, kvg);
      const PackedKV pc{&kv, c.frames, 2 * d, 3 * d}, pg{&kvg, c.frames, 2 * d, 3 * d};  // layer 1
      Tensor rw = be->to_device(ints(c.row_window, false));
      for (int n_new : {1, 3}) {
        Tensor q = random({rows * n_new, d}, 2.0f);
        Tensor qg = be->alloc(q.shape(), be->act_dtype());
        be->copy(q, qg);
        Tensor og = ops::cross_attention(*be, qg, pg, rw, c.row_window, n_new, c.heads);
        Tensor oc = ops::cross_attention(*cpu, q, pc, ints(c.row_window, false), c.row_window, n_new, c.heads);
        EXPECT_LT(test::relative_l2(be->to_host(og).to_f32(), oc), tol)
            << which << ", heads " << c.heads << " head dim " << c.head_dim << " frames " << c.frames << " rows "
            << rows << " n_new " << n_new;
      }
    }
  }
}

TEST_P(CudaOps, EmbeddingAtEachRowsPosition) {
  Tensor table = random({100, 64}), pos = random({20, 64});
  const std::vector<int32_t> ids = {5, 99, 0, 7, 7, 1}, lengths = {2, 7};
  Tensor eg = ops::embedding(*gpu, table, pos, ints(ids, true), ints(lengths, true), 3);
  Tensor ec = ops::embedding(*cpu, table, pos, ints(ids, false), ints(lengths, false), 3);
  EXPECT_LT(compare(eg, ec), tol);
}

TEST_P(CudaOps, CopiesConvertAcrossDevices) {
  Tensor x = random({33, 17});
  Tensor g = up(x);
  EXPECT_EQ(g.dtype(), gpu->act_dtype());
  Tensor back = Tensor::empty(x.shape());
  gpu->copy(g, back);
  EXPECT_LT(test::relative_l2(back, x), tol);
  Tensor h16 = gpu->alloc_host(x.shape(), gpu->act_dtype());
  gpu->copy_async(g, h16);
  gpu->synchronize();
  EXPECT_LT(test::relative_l2(h16.to_f32(), x), tol);
}

TEST_P(CudaOps, GatherSequencesForBeams) {
  const int64_t rows_per_seq = 6, d = 16;
  // Two caches at once; sequences 0 and 1 swap (each must be read before it is written), 2
  // takes 0's first row, 3 keeps its own and must not change at all.
  Tensor k = random({4 * rows_per_seq, d}), v = random({4 * rows_per_seq, d});
  Tensor gk = up(k), gv = up(v), ck = k.clone(), cv = v.clone();
  const std::vector<int> source = {1, 0, 0, 3}, lengths = {3, 5, 1, 4};
  Tensor* gp[] = {&gk, &gv};
  Tensor* cp[] = {&ck, &cv};
  const void* address = gk.raw();
  gpu->gather_sequences(gp, rows_per_seq, source, lengths);
  cpu->gather_sequences(cp, rows_per_seq, source, lengths);
  EXPECT_EQ(gk.raw(), address) << "the GPU gathers in place (recorded steps keep the address)";
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 4; ++i) {
      const int64_t begin = i * rows_per_seq;
      Tensor& g = c ? gv : gk;
      Tensor& h = c ? cv : ck;
      EXPECT_LT(compare(g.rows(begin, begin + lengths[i]), h.rows(begin, begin + lengths[i])), tol) << c << " " << i;
    }
  // The sequence that kept its place is untouched past its length too.
  const int64_t begin = 3 * rows_per_seq;
  EXPECT_LT(compare(gk.rows(begin, begin + rows_per_seq), k.rows(begin, begin + rows_per_seq)), tol);
  // Nothing moves: no work, nothing changes.
  const std::vector<int> same = {0, 1, 2, 3};
  Tensor before = Tensor::empty(k.shape());
  gpu->copy(gk, before);
  gpu->gather_sequences(gp, rows_per_seq, same, lengths);
  Tensor after = Tensor::empty(k.shape());
  gpu->copy(gk, after);
  EXPECT_EQ(test::relative_l2(after, before), 0.0);
}

// Choosing tokens on the GPU equals the CPU reference (core/token_select.h) on a Whisper-sized
// vocabulary, for rows in every timestamp state, greedy (k = 1) and beam (k = 6), with 6 rows
// (128 parts a row) and 48 (fewer, larger parts).
TEST_P(CudaOps, SelectTokensEqualsTheReference) {
  const int vocab = 51866, ts = 50365;
  std::normal_distribution<float> noise(0.0f, 4.0f);
  SelectionRules rules;
  rules.suppress_blank = true;
  rules.blank = {220, 50257};
  rules.suppress = {1, 2, 7, 8, 50258, 50359, 50363};
  rules.timestamps = true;
  rules.timestamp_begin = ts;
  rules.no_timestamps = 50364;
  rules.eot = 50257;
  rules.max_initial_timestamp = 50;
  const std::vector<SampledSummary> states = {{0, -1, -1, -1},        {1, ts + 3, -1, ts + 3}, {2, 400, ts + 3, ts + 3},
                                              {3, ts + 9, 400, ts + 9}, {4, ts + 9, ts + 9, ts + 9}, {5, 17, 30, ts + 2}};
  for (int rows : {6, 48}) {
    Tensor logits = Tensor::empty({rows, vocab});
    for (int64_t i = 0; i < logits.numel(); ++i) logits.data<float>()[i] = noise(rng);
    // Make the timestamps likelier in some rows so the timestamp-versus-text rule fires.
    for (int r = 2; r < rows; r += 6)
      for (int i = ts; i < vocab; ++i) logits.data<float>()[static_cast<int64_t>(r) * vocab + i] += 6.0f;
    std::vector<SampledSummary> summaries;
    for (int r = 0; r < rows; ++r) summaries.push_back(states[r % states.size()]);
    const std::vector<int32_t> spec = make_select_spec(rules, vocab, summaries);
    Tensor spec_host = Tensor::empty({static_cast<int64_t>(spec.size())}, DType::I32);
    std::copy(spec.begin(), spec.end(), spec_host.data<int32_t>());
    for (int k : {1, 6}) {
      Tensor want = Tensor::empty({rows, k, 2}, DType::I32), got = gpu->alloc({rows, k, 2}, DType::I32);
      ops::select_tokens(*cpu, logits, spec_host, k, want);
      ops::select_tokens(*gpu, gpu->to_device(logits), gpu->to_device(spec_host), k, got);
      Tensor back = gpu->to_host(got);
      for (int64_t i = 0; i < rows * k; ++i) {
        EXPECT_EQ(back.data<int32_t>()[2 * i], want.data<int32_t>()[2 * i]) << "rows " << rows << " k " << k << " entry " << i;
        EXPECT_NEAR(std::bit_cast<float>(back.data<int32_t>()[2 * i + 1]),
                    std::bit_cast<float>(want.data<int32_t>()[2 * i + 1]), 1e-3)
            << "rows " << rows << " k " << k << " entry " << i;
      }
    }
  }
}

// The greedy step's logits with its token chosen in the same launch (gemv_one_row_select
// in f16/bf16; the two ops in turn in f32): the choice, its log-probability, the fed-back
// step inputs and row summary must be what the CPU's select_and_feed makes of the same
// logits, under the timestamp rules in each state a row can be in, and again on a second
// call (the kernel's counter is left zero).
TEST_P(CudaOps, GreedyLogitsChooseTheirTokenInOneLaunch) {
  const int ts = 50365;
  SelectionRules rules;
  rules.suppress_blank = true;
  rules.blank = {220, 50257};
  rules.suppress = {1, 2, 7, 8, 50258, 50359, 50363};
  rules.timestamp_begin = ts;
  rules.no_timestamps = 50364;
  rules.eot = 50257;
  rules.max_initial_timestamp = 50;
  const std::vector<SampledSummary> states = {{0, -1, -1, -1},          {1, ts + 3, -1, ts + 3},   {2, 400, ts + 3, ts + 3},
                                              {3, ts + 9, 400, ts + 9}, {4, ts + 9, ts + 9, ts + 9}, {5, 17, 30, ts + 2},
                                              {6, 50257, 17, ts + 2}};
  for (int64_t k : {384, 1280}) {
    const int64_t vocab = 51866;
    Tensor x = random({1, k}, 2.0f), quiet = random({vocab, k}, 0.05f), g = random({k}), beta = random({k});
    // The timestamps together likelier than any text token in some states. (A tensor of
    // its own: the backend keeps device copies of weights by their host address.)
    Tensor loud = quiet.clone();
    for (int64_t i = ts * k; i < vocab * k; ++i) loud.data<float>()[i] += 0.02f;
    for (bool loud_stamps : {false, true}) {
      const Tensor& w = loud_stamps ? loud : quiet;
      for (bool timestamps : {true, false}) {
        rules.timestamps = timestamps;
        for (const SampledSummary& state : states) {
          const std::vector<int32_t> spec = make_select_spec(rules, static_cast<int>(vocab), std::span<const SampledSummary>(&state, 1));
          Tensor spec_host = Tensor::empty({static_cast<int64_t>(spec.size())}, DType::I32);
          std::copy(spec.begin(), spec.end(), spec_host.data<int32_t>());
          const Tensor inputs_host = ints({7, 0, 123}, false);
          Tensor spec_gpu = gpu->to_device(spec_host), inputs_gpu = gpu->to_device(inputs_host);
          Tensor out_gpu = gpu->alloc({1, 1, 2}, DType::I32);
          for (int call = 0; call < 2; ++call) {
            gpu->copy(spec_host, spec_gpu);
            gpu->copy(inputs_host, inputs_gpu);
            Tensor logits = ops::logits_select_and_feed(*gpu, up(x), g, beta, w, spec_gpu, 1, out_gpu, inputs_gpu);
            const std::string where = "k " + std::to_string(k) + (loud_stamps ? " loud stamps" : "") +
                                      (timestamps ? " timestamps" : "") + " state " + std::to_string(state.count) +
                                      " call " + std::to_string(call);
            Tensor logits_host = gpu->to_host(logits);
            EXPECT_LT(compare(logits, ops::norm_linear(*cpu, x, g, beta, w, nullptr)), tol) << where;
            Tensor spec_want = spec_host.clone(), inputs_want = inputs_host.clone();
            Tensor out_want = Tensor::empty({1, 1, 2}, DType::I32);
            ops::select_and_feed(*cpu, logits_host, spec_want, 1, out_want, inputs_want);
            const Tensor out = gpu->to_host(out_gpu), spec_got = gpu->to_host(spec_gpu);
            const Tensor inputs_got = gpu->to_host(inputs_gpu);
            EXPECT_EQ(out.data<int32_t>()[0], out_want.data<int32_t>()[0]) << where;
            EXPECT_NEAR(std::bit_cast<float>(out.data<int32_t>()[1]), std::bit_cast<float>(out_want.data<int32_t>()[1]),
                        1e-3)
                << where;
            for (int i = 0; i < 3; ++i) EXPECT_EQ(inputs_got.data<int32_t>()[i], inputs_want.data<int32_t>()[i]) << where;
            EXPECT_EQ(std::memcmp(spec_got.data<int32_t>(), spec_want.data<int32_t>(), spec_want.nbytes()), 0) << where;
          }
        }
      }
    }
  }
}

// A recorded step must compute what the same calls compute directly, for new inputs
// written into its input buffer before each replay.
TEST_P(CudaOps, ReplayedStepsSeeNewInputs) {
  Tensor table = random({50, 64}), pos = random({10, 64}), w = random({40, 64}), g = random({64}), b = random({64});
  Tensor staged = gpu->alloc_host({2}, DType::I32), inputs = gpu->alloc({2}, DType::I32);
  Tensor out = gpu->alloc_host({1, 40}, DType::F32);
  for (int call = 0; call < 4; ++call) {
    const int32_t id = 3 + 11 * call, length = call;
    staged.data<int32_t>()[0] = length;
    staged.data<int32_t>()[1] = id;
    gpu->replay(777, [&] {
      gpu->copy_async(staged, inputs);
      Tensor x = ops::embedding(*gpu, table, pos, inputs.rows(1, 2), inputs.rows(0, 1), 1);
      Tensor n = ops::layer_norm(*gpu, x, g, b);
      Tensor y = ops::linear(*gpu, n, w, nullptr, Epilogue::None, DType::F32);
      gpu->copy_async(y, out);
    });
    gpu->synchronize();
    Tensor x = ops::embedding(*cpu, table, pos, ints({id}, false), ints({length}, false), 1);
    Tensor expect = ops::linear(*cpu, ops::layer_norm(*cpu, x, g, b), w, nullptr);
    EXPECT_LT(test::relative_l2(out, expect), tol) << "call " << call;
  }
  gpu->forget_replay(777);
}

INSTANTIATE_TEST_SUITE_P(ComputeTypes, CudaOps, ::testing::Values("f32", "f16", "bf16"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hark
