// Half-precision products through cuBLASLt, with the bias, GELU and residual folded into
// the GEMM's epilogue: y[m, n] = epilogue(x[m, k] · w[n, k]ᵀ + bias). One descriptor set and
// one algorithm are kept per shape, so a call costs one cublasLtMatmul. The algorithm is
// the fastest of the heuristic's first eight candidates, timed on the shape's first call
// (HARK_CUDA_GEMM_TUNE=0: the heuristic's first choice, untimed).
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
  // x, w, bias and y of the first call: the candidates are timed on them (y's contents are
  // not touched; a scratch buffer takes the results).
  Plan& plan(const Key& key, const void* x, const void* w, const void* bias, DType y_dt);
  int fastest(Plan& p, const cublasLtMatmulHeuristicResult_t* candidates, int count, const void* x, const void* w,
              size_t y_bytes, float beta);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<Key, Plan> plans_;
  bool tune_ = true;
};

}  // namespace hark::cuda
