#include "core/cuda/gemm_lt.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"

namespace hark::cuda {
namespace {

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F32: return CUDA_R_32F;
    default: break;
  }
  throw Error(ErrorCode::Internal, std::string("[cuda] cuBLASLt has no mapping for ") + dtype_name(dt));
}

bool lt_stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone;
}

constexpr int kCandidates = 8;
constexpr int kTimedRuns = 3;

}  // namespace

LtGemm::LtGemm(cudaStream_t stream, void* workspace, size_t workspace_bytes)
    : stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  check(cublasLtCreate(&handle_), "cublasLtCreate");
  if (const char* env = std::getenv("HARK_CUDA_GEMM_TUNE"); env && std::string(env) == "0") tune_ = false;
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
LtGemm::Plan& LtGemm::plan(const Key& key, const void* x, const void* w, const void* bias, DType y_dt) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const auto [dt_i, m, n, k, y_dt_i, epi_i, has_bias] = key;
  const DType dt = static_cast<DType>(dt_i);
  const auto epilogue = static_cast<LtEpilogue>(epi_i);
  Plan p;
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "transa");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans), "transb");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue == LtEpilogue::Gelu) epi = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (has_bias) epi = CUBLASLT_EPILOGUE_BIAS;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "epilogue");
  if (has_bias) {
    const cudaDataType_t bias_type = cuda_type(dt);
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
          "bias type");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias");
  }
  check(cublasLtMatrixLayoutCreate(&p.a, cuda_type(dt), k, n, k), "layout A");
  check(cublasLtMatrixLayoutCreate(&p.b, cuda_type(dt), k, m, k), "layout B");
  check(cublasLtMatrixLayoutCreate(&p.c, cuda_type(y_dt), n, m, n), "layout C");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                             sizeof workspace_bytes_),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, tune_ ? kCandidates : 1, results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
    throw Error(ErrorCode::Unavailable, "[cuda] cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                            std::to_string(n) + "x" + std::to_string(k) + " " + dtype_name(dt) +
                                            " product");
  }
  // A graph being recorded cannot be timed: the first candidate then (hark measures every
  // recorded step once before recording it, so its shapes are tuned by then).
  int chosen = 0;
  if (found > 1 && !lt_stream_capturing(stream_))
    chosen = fastest(p, results, found, x, w, static_cast<size_t>(m * n) * dtype_size(y_dt),
                     epilogue == LtEpilogue::Residual ? 1.0f : 0.0f);
  p.algo = results[chosen].algo;
  return plans_.emplace(key, p).first->second;
}

// Times each candidate on the call's own operands (a warm-up, then kTimedRuns launches
// between two events) into a scratch result, and returns the index of the fastest. The
// heuristic's first choice keeps the shape unless another is more than 3 % faster, so that
// timing noise does not change the algorithm — and with it the low bits of f16 results —
// from one process to the next where the two are alike.
int LtGemm::fastest(Plan& p, const cublasLtMatmulHeuristicResult_t* candidates, int count, const void* x,
                    const void* w, size_t y_bytes, float beta) {
  void* scratch = nullptr;
  if (cudaMallocAsync(&scratch, std::max<size_t>(y_bytes, 1), stream_) != cudaSuccess) {
    cudaGetLastError();  // no room for a scratch result: the heuristic's choice, untimed
    return 0;
  }
  check(cudaMemsetAsync(scratch, 0, y_bytes, stream_), "clearing the GEMM tuning scratch");
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  const float alpha = 1.0f;
  std::vector<float> ms(count, -1.0f);
  for (int i = 0; i < count; ++i) {
    if (candidates[i].state != CUBLAS_STATUS_SUCCESS) continue;
    auto launch = [&] {
      return cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, scratch, p.c, scratch, p.c,
                            &candidates[i].algo, workspace_, workspace_bytes_, stream_);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;
    check(cudaEventRecord(start, stream_), "cudaEventRecord");
    bool ok = true;
    for (int r = 0; r < kTimedRuns && ok; ++r) ok = launch() == CUBLAS_STATUS_SUCCESS;
    check(cudaEventRecord(stop, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "timing a GEMM candidate");
    float elapsed = 0.0f;
    if (ok && cudaEventElapsedTime(&elapsed, start, stop) == cudaSuccess) ms[i] = elapsed;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check(cudaFreeAsync(scratch, stream_), "freeing the GEMM tuning scratch");
  int best = 0;
  for (int i = 1; i < count; ++i)
    if (ms[i] >= 0.0f && (ms[best] < 0.0f || ms[i] < ms[best])) best = i;
  if (ms[0] >= 0.0f && ms[best] > 0.97f * ms[0]) best = 0;
  return best;
}

void LtGemm::run(DType dt, const void* x, int64_t m, int64_t k, const void* w, int64_t n, const void* bias, DType y_dt,
                 void* y, LtEpilogue epilogue) {
  if (m <= 0 || n <= 0) return;
  Plan& p = plan(Key{static_cast<int>(dt), m, n, k, static_cast<int>(y_dt), static_cast<int>(epilogue), bias != nullptr},
                 x, w, bias, y_dt);
  if (bias) check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias");
  const float alpha = 1.0f, beta = epilogue == LtEpilogue::Residual ? 1.0f : 0.0f;
  check(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                       workspace_bytes_, stream_),
        "cublasLtMatmul");
}

}  // namespace hark::cuda
