// Half-precision products through cuBLASLt, with the bias, GELU and residual folded into
// the GEMM's epilogue: y[m, n] = epilogue(x[m, k] · w[n, k]ᵀ + bias). One descriptor set and
// the heuristic's best algorithm are kept per shape, so a call costs one cublasLtMatmul.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "core/tensor.h"

namespace hark::cuda {

enum class LtEpilogue : int {
  None,      // y = x·wᵀ (+ bias)
  Gelu,      // y = gelu_tanh(x·wᵀ + bias): cuBLASLt's GELU is the tanh approximation
  Residual,  // y += x·wᵀ (+ bias)
};

class LtGemm {
 public:
  LtGemm(cudaStream_t stream, void* workspace, size_t workspace_bytes);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // x, w, bias in `dt` (f16 or bf16); y in dt or f32 (y_dt). Row-major, contiguous.
  void run(DType dt, const void* x, int64_t m, int64_t k, const void* w, int64_t n, const void* bias, DType y_dt,
           void* y, LtEpilogue epilogue);

  // The fp8 product (--compute-type fp8): x [m, k] and w [n, k] in e4m3 with one fp32 scale
  // per row of x (x_scale[m]) and per row of w (w_scale[n]), multiplied back in by
  // cuBLASLt's outer-vector scaling; fp32 accumulation (two-level, cuBLASLt's fast
  // accumulation); bias and y in y_dt (f16 or bf16). n and k multiples of 16.
  void run_e4m3(const void* x, const float* x_scale, int64_t m, int64_t k, const void* w, const float* w_scale,
                int64_t n, const void* bias, DType y_dt, void* y, LtEpilogue epilogue);
  // Whether this GPU and cuBLASLt have an fp8 algorithm for the shape (asked once, then
  // kept): the backend falls back to the 16-bit product before quantizing anything.
  bool has_e4m3(int64_t m, int64_t k, int64_t n, bool bias, DType y_dt, LtEpilogue epilogue);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;  // false: cuBLASLt has no algorithm (kept, so that it is asked once)
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int, int, bool>;  // dt, m, n, k, y_dt, epilogue, bias
  // dt F8_E4M3: the fp8 product. Throws Unavailable (each time) where no algorithm exists.
  Plan& plan(const Key& key);
  Plan& find_plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<Key, Plan> plans_;
};

}  // namespace hark::cuda
