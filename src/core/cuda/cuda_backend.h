// The CUDA backend (fp32 reference path): cuBLAS for every matrix product, the kernels
// of kernels.cu for the rest, all on one stream. Weights are uploaded once, on first use,
// and converted to fp32 on the device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "core/backend.h"

namespace hark {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;

  std::string name() const override { return "cuda:" + std::to_string(device_index_); }
  Device device() const override { return Device::Cuda; }
  int threads() const override { return 1; }
  Tensor alloc(const Shape& shape, DType dtype) override;

  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) override;
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) override;
  void gelu(Tensor& x) override;
  void add(Tensor& x, const Tensor& y) override;
  void conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset, Tensor& out, Tensor* weights) override;
  void embedding(const Tensor& table, std::span<const int32_t> ids, const Tensor* positions,
                 int64_t first_position, Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void transpose(const Tensor& x, Tensor& y) override;
  Tensor to_device(const Tensor& host) override;
  Tensor to_host(const Tensor& t) override;
  void synchronize() override;

 private:
  // The fp32 device copy of `t`: t itself when it already lives on the device, else a
  // cached upload of the host weight (keyed by address and size).
  const float* resident(const Tensor& t);

  int device_index_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::mutex cache_mutex_;
  std::map<std::pair<const void*, size_t>, Tensor> weights_;
};

}  // namespace hark
