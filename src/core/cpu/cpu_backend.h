// The CPU backend: every matrix product through sgemm (oneDNN, or OpenBLAS where oneDNN is
// absent; src/core/cpu/gemm.h), hand-written loops for the rest, all parallelised over one
// ThreadPool of the configured size.
#pragma once

#include <mutex>
#include <map>

#include "core/backend.h"
#include "core/thread_pool.h"

namespace hark {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads, DType cross_kv = DType::F32);

  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::Cpu; }
  int threads() const override { return pool_.size(); }
  Tensor alloc(const Shape& shape, DType dtype) override { return Tensor::empty(shape, dtype); }

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

  DType cross_kv_dtype() const override { return cross_kv_; }
  // Bytes of the fp32 copies made of half-precision weights (model memory beyond the file).
  size_t cached_weight_bytes();

  ThreadPool& pool() { return pool_; }

 private:
  // fp32 copy of a half-precision weight, made once and kept (keyed by its address).
  const float* f32_weights(const Tensor& w);

  ThreadPool pool_;
  DType cross_kv_;
  std::mutex cache_mutex_;
  std::map<std::pair<const void*, size_t>, Tensor> f32_cache_;  // (address, bytes) → fp32 copy
};

}  // namespace hark
