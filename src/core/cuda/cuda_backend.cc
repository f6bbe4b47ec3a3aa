#include "core/cuda/cuda_backend.h"

#include <cmath>
#include <cstring>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {

using cuda::check;

CudaBackend::CudaBackend(int device_index) : device_index_(device_index) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "no CUDA driver or device (use --device cpu)");
  if (device_index < 0 || device_index >= count)
    throw Error(ErrorCode::InvalidArgument, "[cuda] device cuda:" + std::to_string(device_index) + " does not exist (" +
                                                std::to_string(count) + " GPU(s) present)");
  check(cudaSetDevice(device_index), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasCreate(&blas_), "cublasCreate");
  check(cublasSetStream(blas_, stream_), "cublasSetStream");
  // The reference path stays in true fp32: no TF32 tensor-op shortcuts.
  check(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
}

CudaBackend::~CudaBackend() {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    weights_.clear();
  }
  if (stream_) cudaStreamSynchronize(stream_);
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

Tensor CudaBackend::alloc(const Shape& shape, DType dtype) {
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  void* ptr = nullptr;
  check(cudaMallocAsync(&ptr, bytes, stream_), "allocating device memory");
  cudaStream_t stream = stream_;
  std::shared_ptr<void> owner(ptr, [stream](void* p) { cudaFreeAsync(p, stream); });
  return Tensor::view(ptr, shape, dtype, std::move(owner), Device::Cuda);
}

const float* CudaBackend::resident(const Tensor& t) {
  if (t.device() == Device::Cuda) {
    if (t.dtype() != DType::F32) throw Error(ErrorCode::Internal, "[cuda] expected an fp32 device tensor");
    return t.data<float>();
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const auto key = std::make_pair(t.raw(), t.nbytes());
  auto it = weights_.find(key);
  if (it == weights_.end()) {
    Tensor dev = alloc(t.shape(), DType::F32);
    if (t.dtype() == DType::F32) {
      check(cudaMemcpyAsync(dev.raw(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream_), "uploading weights");
    } else {
      Tensor staging = alloc(t.shape(), t.dtype());
      check(cudaMemcpyAsync(staging.raw(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream_), "uploading weights");
      cuda::half_to_float(staging.data<uint16_t>(), t.dtype() == DType::F16 ? 1 : 2, dev.data<float>(), t.numel(),
                          stream_);
      check(cudaStreamSynchronize(stream_), "converting weights");  // staging is freed on return
    }
    it = weights_.emplace(key, dev).first;
  }
  return it->second.data<float>();
}

void CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  const float* wd = resident(w);
  float beta = 0.0f;
  if (bias) {
    cuda::fill_rows(y.data<float>(), resident(*bias), m, n, stream_);
    beta = 1.0f;
  }
  const float alpha = 1.0f;
  // Row-major y = x·wᵀ is column-major yᵀ = w·xᵀ: w is stored as wᵀ (k×n) → op T.
  check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                    &alpha, wd, static_cast<int>(k), x.data<float>(), static_cast<int>(k), &beta, y.data<float>(),
                    static_cast<int>(n)),
        "sgemm (linear)");
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  const int64_t d = x.dim(-1);
  cuda::layer_norm(x.data<float>(), resident(gamma), resident(beta), y.data<float>(), x.numel() / d, d, eps, stream_);
  cuda::check_launch("layer_norm");
}

void CudaBackend::gelu(Tensor& x) {
  cuda::gelu(x.data<float>(), x.numel(), stream_);
  cuda::check_launch("gelu");
}

void CudaBackend::add(Tensor& x, const Tensor& y) {
  cuda::add(x.data<float>(), resident(y), x.numel(), y.numel(), stream_);
  cuda::check_launch("add");
}

void CudaBackend::conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) {
  const int64_t cin = x.dim(0), t_in = x.dim(1), cout = w.dim(0), kw = w.dim(2), t_out = y.dim(1);
  Tensor cols = alloc({cin * kw, t_out}, DType::F32);
  cuda::im2col(x.data<float>(), cols.data<float>(), cin, t_in, kw, t_out, stride, padding, stream_);
  cuda::check_launch("im2col");
  // y[cout, t_out] = W[cout, cin·k] · cols[cin·k, t_out] + b (bias as a column broadcast).
  Tensor bias_rows = alloc({t_out, cout}, DType::F32);
  cuda::fill_rows(bias_rows.data<float>(), resident(b), t_out, cout, stream_);
  cuda::transpose(bias_rows.data<float>(), y.data<float>(), t_out, cout, stream_);
  const float alpha = 1.0f, beta = 1.0f;
  const int kk = static_cast<int>(cin * kw);
  // Column-major yᵀ[t_out, cout] = colsᵀ · Wᵀ.
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(t_out), static_cast<int>(cout), kk, &alpha,
                    cols.data<float>(), static_cast<int>(t_out), resident(w), kk, &beta, y.data<float>(),
                    static_cast<int>(t_out)),
        "sgemm (conv1d)");
}

void CudaBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                            int64_t causal_offset, Tensor& out, Tensor* weights) {
  const int64_t tq = q.dim(0), tk = k.dim(0), d = q.dim(1), hd = d / n_heads;
  Tensor scores = alloc({n_heads, tq, tk}, DType::F32);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd)), one = 1.0f, zero = 0.0f;
  // Per head: S = scale · Q_h K_hᵀ (heads are column blocks of width hd, leading dim d).
  check(cublasSgemmStridedBatched(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(tk), static_cast<int>(tq),
                                  static_cast<int>(hd), &scale, resident(k), static_cast<int>(d), hd, resident(q),
                                  static_cast<int>(d), hd, &zero, scores.data<float>(), static_cast<int>(tk), tq * tk,
                                  n_heads),
        "sgemm (attention scores)");
  cuda::softmax(scores.data<float>(), n_heads, tq, tk, causal, causal_offset, stream_);
  cuda::check_launch("softmax");
  check(cublasSgemmStridedBatched(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(hd), static_cast<int>(tq),
                                  static_cast<int>(tk), &one, resident(v), static_cast<int>(d), hd,
                                  scores.data<float>(), static_cast<int>(tk), tq * tk, &zero, out.data<float>(),
                                  static_cast<int>(d), hd, n_heads),
        "sgemm (attention values)");
  if (weights) {
    const cudaMemcpyKind kind = weights->device() == Device::Cuda ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    check(cudaMemcpyAsync(weights->raw(), scores.raw(), scores.nbytes(), kind, stream_), "copying attention weights");
    if (kind == cudaMemcpyDeviceToHost) check(cudaStreamSynchronize(stream_), "copying attention weights");
  }
}

void CudaBackend::embedding(const Tensor& table, std::span<const int32_t> ids, const Tensor* positions,
                            int64_t first_position, Tensor& out) {
  Tensor dev_ids = alloc({static_cast<int64_t>(ids.size())}, DType::I32);
  check(cudaMemcpyAsync(dev_ids.raw(), ids.data(), ids.size_bytes(), cudaMemcpyHostToDevice, stream_), "uploading ids");
  cuda::embedding(resident(table), dev_ids.data<int32_t>(), static_cast<int64_t>(ids.size()), table.dim(1),
                  positions ? resident(*positions) : nullptr, first_position, out.data<float>(), stream_);
  cuda::check_launch("embedding");
  // The id buffer is host-pageable memory: wait so the caller may reuse it.
  check(cudaStreamSynchronize(stream_), "embedding");
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.nbytes() != dst.nbytes())
    throw Error(ErrorCode::Internal, "[cuda] copy needs equal dtypes and sizes: " + src.describe() + " → " + dst.describe());
  const cudaMemcpyKind kind = src.device() == Device::Cuda
                                  ? (dst.device() == Device::Cuda ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                  : (dst.device() == Device::Cuda ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  check(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), kind, stream_), "copy");
  if (kind != cudaMemcpyDeviceToDevice) check(cudaStreamSynchronize(stream_), "copy");
}

void CudaBackend::transpose(const Tensor& x, Tensor& y) {
  cuda::transpose(x.data<float>(), y.data<float>(), x.dim(0), x.dim(1), stream_);
  cuda::check_launch("transpose");
}

Tensor CudaBackend::to_device(const Tensor& host) {
  if (host.device() == Device::Cuda) return host;
  Tensor t = alloc(host.shape(), host.dtype());
  check(cudaMemcpyAsync(t.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, stream_), "upload");
  check(cudaStreamSynchronize(stream_), "upload");
  return t;
}

Tensor CudaBackend::to_host(const Tensor& t) {
  if (t.device() == Device::Cpu) return t;
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  check(cudaMemcpyAsync(host.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, stream_), "download");
  check(cudaStreamSynchronize(stream_), "download");
  return host;
}

void CudaBackend::synchronize() { check(cudaStreamSynchronize(stream_), "synchronize"); }

}  // namespace hark
