// CudaBackend: construction, weights and the products. The attention family is in
// cuda_attention.cc; memory, copies and CUDA-graph replay in cuda_memory.cc.
#include "core/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {

using cuda::check;

namespace {

constexpr size_t kWorkspaceBytes = 64ull << 20;

cudaDataType_t blas_type(DType dt) {
  return dt == DType::F16 ? CUDA_R_16F : dt == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

// cudaMallocAsync's default pool gives its free memory back to the driver at every
// synchronisation (release threshold 0), so a server that synchronises once per decoder
// step or encoder batch mapped its activations afresh each time. The pool keeps what it
// has freed instead (up to the largest working set seen; other processes on the same GPU
// do not get it back until hark exits). HARK_CUDA_POOL_RELEASE=1 restores the driver's
// default, a measurement switch.
void keep_pool_memory(int device_index) {
  if (const char* env = std::getenv("HARK_CUDA_POOL_RELEASE"); env && std::string(env) == "1") return;
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, device_index), "cudaDeviceGetDefaultMemPool");
  uint64_t keep = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

}  // namespace

CudaBackend::CudaBackend(int device_index, DType act_dtype, bool fp8_products, bool lane)
    : device_index_(device_index), act_(act_dtype), fp8_products_(fp8_products) {
  if (act_ != DType::F32 && act_ != DType::F16 && act_ != DType::BF16)
    throw Error(ErrorCode::InvalidArgument, std::string("[cuda] unsupported compute type ") + dtype_name(act_));
  if (fp8_products_ && act_ == DType::F32)
    throw Error(ErrorCode::InvalidArgument, "[cuda] fp8 products run beside f16 or bf16 activations, not f32");
  int count = 0;
  check(cudaGetDeviceCount(&count), "no CUDA driver or device (use --device cpu)");
  if (device_index < 0 || device_index >= count)
    throw Error(ErrorCode::InvalidArgument, "[cuda] device cuda:" + std::to_string(device_index) + " does not exist (" +
                                                std::to_string(count) + " GPU(s) present)");
  cuda::use_device(device_index);
  if (fp8_products_) {
    int major = 0, minor = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index), "compute capability");
    check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_index), "compute capability");
    if (major * 10 + minor < 89)
      throw Error(ErrorCode::InvalidArgument, "[cuda] --compute-type fp8 needs fp8 tensor cores (compute capability 8.9 "
                                              "or newer: Ada, Hopper, Blackwell); cuda:" +
                                                  std::to_string(device_index) + " is " + std::to_string(major) + "." +
                                                  std::to_string(minor) + ": use --compute-type f16");
  }
  if (fp8_products_) fp8_parts_ = fp8_parts_setting();
  // The main stream outranks a lane's (make_lane): a batching scheduler's decoder steps are
  // short, memory-bound and on every running sequence's critical path, the lane's encoder
  // calls long and compute-bound; at equal rank a step's kernels wait behind encoder blocks
  // for free SMs. A CUDA graph launched into the stream runs at its rank. Alone (no lane)
  // the rank changes nothing. HARK_CUDA_STREAM_PRIORITY=0: equal ranks (measurements).
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  const char* rank_env = std::getenv("HARK_CUDA_STREAM_PRIORITY");
  const bool ranked = !(rank_env && std::string(rank_env) == "0");
  check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, lane || !ranked ? least : greatest),
        "cudaStreamCreate");
  keep_pool_memory(device_index);
  check(cublasCreate(&blas_), "cublasCreate");
  check(cublasSetStream(blas_, stream_), "cublasSetStream");
  // The reference path stays in true fp32: no TF32 tensor-op shortcuts.
  check(cublasSetMathMode(blas_, act_ == DType::F32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  // A fixed workspace: cuBLAS then allocates nothing while a CUDA graph is being recorded.
  check(cudaMalloc(&workspace_, kWorkspaceBytes), "allocating the cuBLAS workspace");
  check(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
  lt_ = std::make_unique<cuda::LtGemm>(stream_, workspace_, kWorkspaceBytes);
  cuda::gemv_setup();
  if (const char* env = std::getenv("HARK_CUDA_GRAPHS"); env && std::string(env) == "0") graphs_enabled_ = false;
  // The greedy step's self-attention block in one launch (decoder_self_step.cu): opt-in
  // until it has run on a GPU (written without one; docs/gpu.md).
  if (const char* env = std::getenv("HARK_CUDA_FUSED_SELF"); env && std::string(env) == "1") fused_self_step_ = true;
  // The greedy step's token chosen in the logits product's launch (gemv_one_row_select)
  // unless HARK_CUDA_FUSED_SELECT=0.
  if (const char* env = std::getenv("HARK_CUDA_FUSED_SELECT"); env && std::string(env) == "0") fused_select_ = false;
  // The one-row products' fused norms folded into the product (norm_fold.cu) unless
  // HARK_CUDA_NORM_FOLD=0, which normalises x first as before 2026-12-04.
  if (const char* env = std::getenv("HARK_CUDA_NORM_FOLD"); env && std::string(env) == "0") fold_norms_ = false;
  // Measurement switch: few-row products through cuBLASLt instead of gemv.cu.
  if (const char* env = std::getenv("HARK_CUDA_GEMV"); env && std::string(env) == "lt") lt_for_few_rows_ = true;
  // And the other way: every few-row product in gemv.cu, the MLP's wide ones included.
  if (const char* env = std::getenv("HARK_CUDA_GEMV"); env && std::string(env) == "all") wide_in_lt_ = false;
  // One row wider than 2048 (the MLP's second product) goes to gemv_one_row_wide.cu;
  // HARK_CUDA_GEMV_ONE_ROW=narrow (or =0, which turns off both one-row kernels) sends it
  // to cuBLASLt's split-K again.
  if (const char* env = std::getenv("HARK_CUDA_GEMV_ONE_ROW"); env && (std::string(env) == "narrow" || std::string(env) == "0"))
    wide_one_row_ = false;
  // The split or the streaming cross-attention kernel for every step (tests, A/B runs).
  if (const char* env = std::getenv("HARK_CUDA_CROSS"); env && std::string(env) == "split")
    cross_kernel_ = static_cast<int>(cuda::CrossKernel::kSplit);
  if (const char* env = std::getenv("HARK_CUDA_CROSS"); env && std::string(env).starts_with("stream")) {
    cross_kernel_ = static_cast<int>(cuda::CrossKernel::kStream);
    if (std::strlen(env) > 7 && env[6] == '-') cross_tiles_ = std::clamp(std::atoi(env + 7), 1, 64);
  }
  if (const char* env = std::getenv("HARK_CUDA_CROSS_DEPTH"); env && std::string(env) == "2") cross_depth_ = 2;
}

std::string CudaBackend::name() const {
  return "cuda:" + std::to_string(device_index_) + " (" + dtype_name(act_) + (fp8_products_ ? ", encoder in fp8" : "") +
         ")";
}

const void* CudaBackend::resident(const Tensor& t, DType dtype) {
  if (t.device() == Device::Cuda) {
    if (t.dtype() != dtype)
      throw Error(ErrorCode::Internal, std::string("[cuda] expected a ") + dtype_name(dtype) + " device tensor, got " +
                                           t.describe());
    return t.raw();
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const auto key = std::make_tuple(t.raw(), t.nbytes(), dtype);
  auto it = weights_.find(key);
  if (it == weights_.end()) {
    const PauseArena pause(arena_);  // resident weights outlive any recorded step
    Tensor dev = alloc(t.shape(), dtype);
    if (t.dtype() == dtype) {
      check(cudaMemcpyAsync(dev.raw(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream_), "uploading weights");
    } else {
      Tensor staging = alloc(t.shape(), t.dtype());
      check(cudaMemcpyAsync(staging.raw(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream_), "uploading weights");
      cuda::convert(t.dtype(), staging.raw(), dtype, dev.raw(), t.numel(), stream_);
      cuda::check_launch("convert");
    }
    check(cudaStreamSynchronize(stream_), "uploading weights");
    it = weights_.emplace(key, Resident{t, dev}).first;
  }
  return it->second.device.raw();
}

void CudaBackend::product_f32(const Tensor& x, const Tensor& w, const Tensor* bias, float* y, int64_t ldy, float beta) {
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  const float* wd = static_cast<const float*>(resident(w, DType::F32));
  if (bias) {
    if (beta == 0.0f) {
      cuda::fill_rows(y, static_cast<const float*>(resident(*bias, DType::F32)), m, n, stream_);
      cuda::check_launch("fill_rows");
      beta = 1.0f;
    } else {  // residual: y += b first, then y += x·wᵀ
      cuda::add(DType::F32, y, resident(*bias, DType::F32), m * n, n, stream_);
      cuda::check_launch("add");
    }
  }
  const float alpha = 1.0f;
  // Row-major y = x·wᵀ is column-major yᵀ = w·xᵀ: w is stored as wᵀ (k×n) → op T.
  check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                    &alpha, wd, static_cast<int>(k), x.data<float>(), static_cast<int>(k), &beta, y,
                    static_cast<int>(ldy)),
        "sgemm (linear)");
}

void CudaBackend::product_half(const void* x, int64_t m, int64_t k, const void* w, int64_t n, const void* bias,
                               DType y_dt, void* y, Epilogue epilogue) {
  if (m <= cuda::kGemvMaxRows && k % 8 == 0 && !lt_for_few_rows_ && !prefers_lt(m, n, k)) {
    const auto epi = epilogue == Epilogue::Gelu       ? cuda::GemvEpilogue::Gelu
                     : epilogue == Epilogue::Residual ? cuda::GemvEpilogue::Residual
                                                      : cuda::GemvEpilogue::None;
    cuda::gemv(act_, x, static_cast<int>(m), static_cast<int>(k), w, static_cast<int>(n), bias, y_dt, y, n, epi, stream_,
               nullptr, wide_one_row_);
    cuda::check_launch("gemv");
    return;
  }
  const auto lt_epi = epilogue == Epilogue::Gelu       ? cuda::LtEpilogue::Gelu
                      : epilogue == Epilogue::Residual ? cuda::LtEpilogue::Residual
                                                       : cuda::LtEpilogue::None;
  try {
    lt_->run(act_, x, m, k, w, n, bias, y_dt, y, lt_epi);
    return;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Unavailable) throw;
  }
  // No cuBLASLt algorithm for this shape: a plain GEMM, then the epilogue as kernels.
  if (bias && epilogue == Epilogue::Residual) {
    cuda::add(y_dt, y, bias, m * n, n, stream_);
    cuda::check_launch("add");
  }
  const float alpha = 1.0f, beta = epilogue == Epilogue::Residual ? 1.0f : 0.0f;
  check(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                     &alpha, w, blas_type(act_), static_cast<int>(k), x, blas_type(act_), static_cast<int>(k), &beta, y,
                     blas_type(y_dt), static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "gemm (linear)");
  if (bias && epilogue != Epilogue::Residual) {
    cuda::add(y_dt, y, bias, m * n, n, stream_);
    cuda::check_launch("add");
  }
  if (epilogue == Epilogue::Gelu) {
    cuda::gelu(y_dt, y, m * n, stream_);
    cuda::check_launch("gelu");
  }
}

bool CudaBackend::prefers_lt(int64_t m, int64_t n, int64_t k) const {
  // Measured with Nsight Compute on an H200 (large-v3-turbo, batch 1): cuBLASLt's split
  // kernels beat gemv.cu on the MLP's wide products, 7.4 µs against 14.7 (5120 × 1280
  // with the norm fused: 12.4 with a separate norm) and 11.1 against 13.6 (1280 × 5120);
  // gemv.cu wins on the square 1280 × 1280 ones and on the logits.
  // One row up to 2048 wide (the MLP's first product of a greedy step): gemv_one_row.cu
  // beats cuBLASLt there (0.267 against 0.273 ms per turbo step). One row 5120 wide (the
  // MLP's second): gemv_one_row_wide.cu, 0.264 -> 0.253 ms per step (run-all.sh ab).
  if (cuda::gemv_one_row_applies(static_cast<int>(m), static_cast<int>(k))) return false;
  if (wide_one_row_ && cuda::gemv_one_row_wide_applies(static_cast<int>(m), static_cast<int>(k))) return false;
  return wide_in_lt_ && m <= cuda::kGemvMaxRows && (k >= 4096 || (n >= 4096 && n <= 8192));
}

void CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, Epilogue epilogue) {
  cuda::use_device(device_index_);
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  if (act_ == DType::F32) {
    product_f32(x, w, bias, y.data<float>(), n, epilogue == Epilogue::Residual ? 1.0f : 0.0f);
    if (epilogue == Epilogue::Gelu) {
      cuda::gelu(DType::F32, y.raw(), y.numel(), stream_);
      cuda::check_launch("gelu");
    }
    return;
  }
  const void* w16 = resident(w, act_);
  const void* b16 = bias ? resident(*bias, act_) : nullptr;
  if (linear_e4m3(x, w, w16, b16, y, epilogue)) return;
  product_half(x.raw(), m, k, w16, n, b16, y.dtype(), y.raw(), epilogue);
}

const CudaBackend::Packed& CudaBackend::packed_weights(std::span<const Tensor* const> ws,
                                                       std::span<const Tensor* const> biases) {
  const int64_t k = ws[0]->dim(1);
  const auto key = std::make_pair(static_cast<const void*>(ws[0]->raw()), ws.size());
  auto it = packed_.find(key);
  if (it != packed_.end()) return it->second;
  const PauseArena pause(arena_);
  // One [ΣN, K] weight and one bias (zeros where a part has none), in the compute dtype.
  int64_t n = 0;
  bool any_bias = false;
  for (size_t i = 0; i < ws.size(); ++i) {
    n += ws[i]->dim(0);
    any_bias = any_bias || biases[i];
  }
  Tensor w = alloc({n, k}, act_), b;
  if (any_bias) {
    b = alloc({n}, act_);
    check(cudaMemsetAsync(b.raw(), 0, b.nbytes(), stream_), "packing biases");
  }
  Packed packed;
  int64_t row = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const int64_t rows = ws[i]->dim(0);
    Tensor dst = w.rows(row, row + rows);
    copy(*ws[i], dst);
    packed.parts.push_back(*ws[i]);
    if (biases[i]) {
      Tensor bdst = b.rows(row, row + rows);
      copy(*biases[i], bdst);
      packed.parts.push_back(*biases[i]);
    }
    row += rows;
  }
  packed.weight = w;
  packed.bias = b;
  return packed_.emplace(key, std::move(packed)).first->second;
}

void CudaBackend::linear_packed(const Tensor& x, std::span<const Tensor* const> ws,
                                std::span<const Tensor* const> biases, Tensor& y) {
  cuda::use_device(device_index_);
  const Packed& p = packed_weights(ws, biases);
  linear(x, p.weight, p.bias.defined() ? &p.bias : nullptr, y, Epilogue::None);
}

bool CudaBackend::fuse_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                            const Tensor* bias, Tensor& y, Epilogue epilogue) {
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  // Every block of the product normalises the rows again: worth it for the layers' few
  // hundred blocks, not for the logits' thousands (fusing it there measured 0.343 ms per
  // step against 0.324 with a separate norm; through the one-row kernel, where each warp
  // normalises in registers, 0.273 both ways, and 0.221 against 0.222 ms with gamma and
  // beta staged: docs/benchmarks.md). The greedy step's logits fuse it anyway, in the
  // launch that also chooses the token (logits_select_and_feed). A folded norm (one row,
  // fold_norm) adds no pass over x to any block, so it is fused at every column count: the
  // logits of a step whose token the host or select_tokens chooses then see the same
  // arithmetic as logits_select_and_feed's (FastPath.GreedyAheadEqualsStepByStep).
  constexpr int64_t kMaxFusedColumns = 8192;
  const bool folds = fold_norms_ && cuda::gemv_one_row_applies(static_cast<int>(m), static_cast<int>(k)) &&
                     cuda::gemv_one_row_folds(static_cast<int>(k));
  if (act_ == DType::F32 || m > cuda::kGemvMaxRows || k % 8 != 0 || (n > kMaxFusedColumns && !folds) ||
      lt_for_few_rows_ || prefers_lt(m, n, k))
    return false;
  cuda::GemvNorm norm{static_cast<const float*>(resident(gamma, DType::F32)),
                      static_cast<const float*>(resident(beta, DType::F32)), eps};
  const auto epi = epilogue == Epilogue::Gelu       ? cuda::GemvEpilogue::Gelu
                   : epilogue == Epilogue::Residual ? cuda::GemvEpilogue::Residual
                                                    : cuda::GemvEpilogue::None;
  const void* w16 = resident(w, act_);
  const void* b16 = bias ? resident(*bias, act_) : nullptr;
  fold_norm(norm, w, w16, b16, m, k);
  cuda::gemv(act_, x.raw(), static_cast<int>(m), static_cast<int>(k), w16, static_cast<int>(n), b16, y.dtype(),
             y.raw(), n, epi, stream_, &norm);
  cuda::check_launch("gemv (layer norm fused)");
  return true;
}

void CudaBackend::fold_norm(cuda::GemvNorm& norm, const Tensor& w, const void* w16, const void* b16, int64_t m,
                            int64_t k) {
  if (!fold_norms_ || !cuda::gemv_one_row_applies(static_cast<int>(m), static_cast<int>(k)) ||
      !cuda::gemv_one_row_folds(static_cast<int>(k)))
    return;  // (fuse_norm's `folds` asks the same)
  const int64_t n = w.dim(0);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const auto key = std::make_tuple(w16, static_cast<const void*>(norm.gamma), static_cast<const void*>(norm.beta), b16);
  auto it = folded_norms_.find(key);
  if (it == folded_norms_.end()) {
    const PauseArena pause(arena_);  // kept for the backend's lifetime, like the weight
    FoldedNorm f{alloc({n}, DType::F32), alloc({n}, DType::F32), w.device() == Device::Cuda ? w : Tensor()};
    cuda::norm_fold_constants(act_, w16, static_cast<int>(n), static_cast<int>(k), norm.gamma, norm.beta, b16,
                              f.scale.data<float>(), f.shift.data<float>(), stream_);
    it = folded_norms_.emplace(key, std::move(f)).first;
  }
  if (it->second.scale.dim(0) != n) throw Error(ErrorCode::Internal, "[cuda] a folded norm was cached with another shape");
  norm.fold_scale = it->second.scale.data<float>();
  norm.fold_shift = it->second.shift.data<float>();
}

void CudaBackend::norm_linear(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                              const Tensor* bias, Tensor& y, Epilogue epilogue) {
  cuda::use_device(device_index_);
  if (norm_linear_e4m3(x, gamma, beta, eps, w, bias, y, epilogue)) return;
  if (!fuse_norm(x, gamma, beta, eps, w, bias, y, epilogue)) Backend::norm_linear(x, gamma, beta, eps, w, bias, y, epilogue);
}

void CudaBackend::norm_linear_packed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                     std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                                     Tensor& y) {
  cuda::use_device(device_index_);
  const Packed& p = packed_weights(ws, biases);
  const Tensor* bias = p.bias.defined() ? &p.bias : nullptr;
  if (norm_linear_e4m3(x, gamma, beta, eps, p.weight, bias, y, Epilogue::None)) return;
  if (!fuse_norm(x, gamma, beta, eps, p.weight, bias, y, Epilogue::None)) {
    Tensor h = alloc(x.shape(), act_);
    layer_norm(x, gamma, beta, eps, h);
    linear(h, p.weight, bias, y, Epilogue::None);
  }
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  cuda::use_device(device_index_);
  const int64_t d = x.dim(-1);
  cuda::layer_norm(act_, x.raw(), static_cast<const float*>(resident(gamma, DType::F32)),
                   static_cast<const float*>(resident(beta, DType::F32)), y.raw(), x.numel() / d, d, eps, stream_);
  cuda::check_launch("layer_norm");
}

void CudaBackend::gelu(Tensor& x) {
  cuda::use_device(device_index_);
  cuda::gelu(act_, x.raw(), x.numel(), stream_);
  cuda::check_launch("gelu");
}

void CudaBackend::add(Tensor& x, const Tensor& y) {
  cuda::use_device(device_index_);
  cuda::add(act_, x.raw(), resident(y, act_), x.numel(), y.numel(), stream_);
  cuda::check_launch("add");
}

void CudaBackend::conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) {
  cuda::use_device(device_index_);
  const int64_t cin = x.dim(0), t_in = x.dim(1), cout = w.dim(0), kw = w.dim(2), t_out = y.dim(1);
  // The channel-major convolution of the reference layout, computed in fp32.
  Tensor x32 = alloc(x.shape(), DType::F32), y32 = act_ == DType::F32 ? y : alloc(y.shape(), DType::F32);
  copy(x, x32);
  Tensor cols = alloc({cin * kw, t_out}, DType::F32);
  cuda::im2col(x32.data<float>(), cols.data<float>(), cin, t_in, kw, t_out, stride, padding, stream_);
  cuda::check_launch("im2col");
  Tensor bias_rows = alloc({t_out, cout}, DType::F32);
  cuda::fill_rows(bias_rows.data<float>(), static_cast<const float*>(resident(b, DType::F32)), t_out, cout, stream_);
  cuda::transpose(DType::F32, bias_rows.raw(), y32.raw(), t_out, cout, stream_);
  const float alpha = 1.0f, beta = 1.0f;
  const int kk = static_cast<int>(cin * kw);
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(t_out), static_cast<int>(cout), kk, &alpha,
                    cols.data<float>(), static_cast<int>(t_out), static_cast<const float*>(resident(w, DType::F32)), kk,
                    &beta, y32.data<float>(), static_cast<int>(t_out)),
        "sgemm (conv1d)");
  if (act_ != DType::F32) copy(y32, y);
}

void CudaBackend::conv1d_gelu_time_major(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding,
                                         Tensor& y) {
  cuda::use_device(device_index_);
  const int64_t t_in = x.dim(0), cin = x.dim(1), kw = w.dim(2), t_out = y.dim(0);
  // Time-major im2col, then the convolution is one product with a GELU epilogue whose
  // output is already [T, C].
  Tensor cols = alloc({t_out, cin * kw}, act_);
  cuda::im2col_time_major(act_, x.raw(), cols.raw(), cin, t_in, kw, t_out, stride, padding, stream_);
  cuda::check_launch("im2col_time_major");
  linear(cols, w.reshape({w.dim(0), cin * kw}), &b, y, Epilogue::Gelu);
}

void CudaBackend::transpose(const Tensor& x, Tensor& y) {
  cuda::use_device(device_index_);
  cuda::transpose(act_, x.raw(), y.raw(), x.dim(0), x.dim(1), stream_);
  cuda::check_launch("transpose");
}

void CudaBackend::embedding(const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths,
                            int n_new, Tensor& out) {
  cuda::use_device(device_index_);
  if (ids.device() != Device::Cuda || lengths.device() != Device::Cuda)
    throw Error(ErrorCode::Internal, "[cuda] embedding ids and lengths must be on the GPU");
  cuda::embedding(act_, resident(table, act_), resident(positions, act_), ids.data<int32_t>(), lengths.data<int32_t>(),
                  ids.numel(), n_new, table.dim(1), out.raw(), stream_);
  cuda::check_launch("embedding");
}

void CudaBackend::select_tokens(const Tensor& logits, const Tensor& spec, int k, Tensor& out) {
  cuda::use_device(device_index_);
  if (logits.device() != Device::Cuda || spec.device() != Device::Cuda || out.device() != Device::Cuda)
    throw Error(ErrorCode::Internal, "[cuda] select_tokens reads and writes GPU tensors");
  const int rows = static_cast<int>(logits.dim(0));
  Tensor scratch = alloc({cuda::select_tokens_scratch(rows, k)}, DType::F32);
  // The kernel writes the spec only when feeding back (select_and_feed).
  cuda::select_tokens(logits.data<float>(), rows, static_cast<int>(logits.dim(1)), const_cast<int32_t*>(spec.data<int32_t>()),
                      k, scratch.data<float>(), out.data<int32_t>(), stream_);
  cuda::check_launch("select_tokens");
}

void CudaBackend::select_and_feed(const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) {
  cuda::use_device(device_index_);
  if (logits.device() != Device::Cuda || spec.device() != Device::Cuda || out.device() != Device::Cuda ||
      inputs.device() != Device::Cuda)
    throw Error(ErrorCode::Internal, "[cuda] select_and_feed reads and writes GPU tensors");
  const int rows = static_cast<int>(logits.dim(0));
  Tensor scratch = alloc({cuda::select_tokens_scratch(rows, k)}, DType::F32);
  cuda::select_tokens(logits.data<float>(), rows, static_cast<int>(logits.dim(1)), spec.data<int32_t>(), k,
                      scratch.data<float>(), out.data<int32_t>(), stream_, inputs.data<int32_t>());
  cuda::check_launch("select_and_feed");
}

void CudaBackend::logits_select_and_feed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                         const Tensor& w, Tensor& logits, Tensor& spec, int k, Tensor& out,
                                         Tensor& inputs) {
  cuda::use_device(device_index_);
  const int64_t width = x.dim(-1), m = x.numel() / width, n = w.dim(0);
  const bool on_device = x.device() == Device::Cuda && logits.device() == Device::Cuda &&
                         spec.device() == Device::Cuda && out.device() == Device::Cuda && inputs.device() == Device::Cuda;
  if (fused_select_ && on_device && k == 1 && m == 1 && act_ != DType::F32 && !lt_for_few_rows_ &&
      cuda::gemv_one_row_applies(1, static_cast<int>(width)) &&
      !e4m3_applies(1, n, width, false, DType::F32, Epilogue::None)) {
    if (!select_counter_.defined()) {
      const PauseArena pause(arena_);
      select_counter_ = alloc({1}, DType::I32);
      check(cudaMemsetAsync(select_counter_.raw(), 0, select_counter_.nbytes(), stream_), "zeroing the counter");
    }
    Tensor parts = alloc({cuda::logits_select_parts_floats()}, DType::F32);
    cuda::GemvNorm norm{static_cast<const float*>(resident(gamma, DType::F32)),
                        static_cast<const float*>(resident(beta, DType::F32)), eps};
    const void* w16 = resident(w, act_);
    fold_norm(norm, w, w16, nullptr, 1, width);
    const cuda::OneRowSelect sel{spec.data<int32_t>(), parts.data<float>(), select_counter_.data<int32_t>(),
                                 out.data<int32_t>(), inputs.data<int32_t>()};
    if (cuda::gemv_one_row_select(act_, x.raw(), static_cast<int>(width), w16, static_cast<int>(n),
                                  logits.data<float>(), &norm, sel, stream_)) {
      cuda::check_launch("logits with the token chosen");
      return;
    }
  }
  Backend::logits_select_and_feed(x, gamma, beta, eps, w, logits, spec, k, out, inputs);
}

uint64_t CudaBackend::mark() {
  cuda::use_device(device_index_);
  const uint64_t id = next_mark_.fetch_add(1);
  cudaEvent_t& event = marks_[id % kMarks];
  {
    std::lock_guard<std::mutex> lock(marks_mutex_);
    if (!event) check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  }
  check(cudaEventRecord(event, stream_), "cudaEventRecord");
  return id;
}

void CudaBackend::wait_for(uint64_t mark) {
  cuda::use_device(device_index_);
  // An event recorded again since marks the later point: waiting for it waits longer, never
  // too little (stream order).
  cudaEvent_t event = marks_[mark % kMarks];
  if (!event) return synchronize();
  check(cudaEventSynchronize(event), "waiting for the GPU");
}

}  // namespace hark
