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

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int, int, bool>;  // dt, m, n, k, y_dt, epilogue, bias
  Plan& plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<Key, Plan> plans_;
};

}  // namespace hark::cuda
