#include "core/cuda/gemm_lt.h"

#include <string>

#include "core/cuda/cuda_check.h"

namespace hark::cuda {
namespace {

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F32: return CUDA_R_32F;
    case DType::F8_E4M3: return CUDA_R_8F_E4M3;
    default: break;
  }
  throw Error(ErrorCode::Internal, std::string("[cuda] cuBLASLt has no mapping for ") + dtype_name(dt));
}

}  // namespace

LtGemm::LtGemm(cudaStream_t stream, void* workspace, size_t workspace_bytes)
    : stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  check(cublasLtCreate(&handle_), "cublasLtCreate");
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  if (handle_) cublasLtDestroy(handle_);
}

// Row-major y[m, n] = x[m, k]·w[n, k]ᵀ is column-major yᵀ[n, m] = w·xᵀ: A = w read
// transposed (k × n, ld k), B = xᵀ (k × m, ld k), C = D = yᵀ (n × m, ld n); the bias runs
// along n, the rows of D, as cuBLASLt's epilogue expects.
LtGemm::Plan& LtGemm::plan(const Key& key) {
  Plan& p = find_plan(key);
  if (!p.found) {
    const auto [dt_i, m, n, k, y_dt_i, epi_i, has_bias] = key;
    throw Error(ErrorCode::Unavailable, "[cuda] cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                            std::to_string(n) + "x" + std::to_string(k) + " " +
                                            dtype_name(static_cast<DType>(dt_i)) + " product");
  }
  return p;
}

LtGemm::Plan& LtGemm::find_plan(const Key& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const auto [dt_i, m, n, k, y_dt_i, epi_i, has_bias] = key;
  const DType dt = static_cast<DType>(dt_i), y_dt = static_cast<DType>(y_dt_i);
  const auto epilogue = static_cast<LtEpilogue>(epi_i);
  const bool fp8 = dt == DType::F8_E4M3;
  Plan p;
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // fp8 products exist only as "TN" (A transposed, B not), which this layout already is.
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "transa");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans), "transb");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue == LtEpilogue::Gelu) epi = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (has_bias) epi = CUBLASLT_EPILOGUE_BIAS;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "epilogue");
  if (has_bias) {
    // fp8 products take their bias in the output's dtype.
    const cudaDataType_t bias_type = cuda_type(fp8 ? y_dt : dt);
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
          "bias type");
  }
  if (fp8) {
    // A is the weight (its rows are D's rows: a scale per output channel), B the activation.
    const cublasLtMatmulMatrixScale_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &outer, sizeof outer), "A scale mode");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &outer, sizeof outer), "B scale mode");
    // The heuristic refuses outer-vector scaling (CUBLAS_STATUS_INVALID_VALUE) while the
    // scale pointers are unset (probed on an H200, cuBLASLt 13.0): any device address will
    // do here, run_e4m3 sets the real ones before each product.
    const void* placeholder = workspace_;
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder, sizeof placeholder),
          "A scale pointer");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder, sizeof placeholder),
          "B scale pointer");
    // Two-level accumulation: measured no less exact than the one-level path on the
    // encoder's shapes (relative error 0.037-0.039 of the product either way, H200) and
    // faster (a batch-32 turbo layer's four products 1 437 against 1 655 µs: docs/benchmarks.md).
    const int8_t fast_accumulation = 1;
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulation,
                                         sizeof fast_accumulation),
          "fast accumulation");
  }
  check(cublasLtMatrixLayoutCreate(&p.a, cuda_type(dt), k, n, k), "layout A");
  check(cublasLtMatrixLayoutCreate(&p.b, cuda_type(dt), k, m, k), "layout B");
  check(cublasLtMatrixLayoutCreate(&p.c, cuda_type(y_dt), n, m, n), "layout C");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                             sizeof workspace_bytes_),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p.found = status == CUBLAS_STATUS_SUCCESS && found > 0;
  if (p.found) p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void LtGemm::run(DType dt, const void* x, int64_t m, int64_t k, const void* w, int64_t n, const void* bias, DType y_dt,
                 void* y, LtEpilogue epilogue) {
  if (m <= 0 || n <= 0) return;
  Plan& p = plan(Key{static_cast<int>(dt), m, n, k, static_cast<int>(y_dt), static_cast<int>(epilogue), bias != nullptr});
  if (bias) check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias");
  const float alpha = 1.0f, beta = epilogue == LtEpilogue::Residual ? 1.0f : 0.0f;
  check(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                       workspace_bytes_, stream_),
        "cublasLtMatmul");
}

bool LtGemm::has_e4m3(int64_t m, int64_t k, int64_t n, bool bias, DType y_dt, LtEpilogue epilogue) {
  // e4m3 rows of A and B (the weight's and the activation's, k bytes each) start on 16 bytes;
  // any number of activation rows (1500 a window) works.
  if (n % 16 != 0 || k % 16 != 0) return false;
  return find_plan(Key{static_cast<int>(DType::F8_E4M3), m, n, k, static_cast<int>(y_dt), static_cast<int>(epilogue), bias})
      .found;
}

void LtGemm::run_e4m3(const void* x, const float* x_scale, int64_t m, int64_t k, const void* w, const float* w_scale,
                      int64_t n, const void* bias, DType y_dt, void* y, LtEpilogue epilogue) {
  if (m <= 0 || n <= 0) return;
  Plan& p = plan(Key{static_cast<int>(DType::F8_E4M3), m, n, k, static_cast<int>(y_dt), static_cast<int>(epilogue),
                     bias != nullptr});
  if (bias) check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale),
        "weight scales");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof x_scale),
        "activation scales");
  const float alpha = 1.0f, beta = epilogue == LtEpilogue::Residual ? 1.0f : 0.0f;
  check(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                       workspace_bytes_, stream_),
        "cublasLtMatmul (e4m3)");
}

}  // namespace hark::cuda
