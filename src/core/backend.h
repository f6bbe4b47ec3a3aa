// The one interface every compute kernel sits behind. Model code calls these methods
// (through the checked front ends in core/ops.h) and so is written once for the CPU and
// CUDA backends. All tensors are contiguous and row-major. Activations live on the
// backend's device; weights are passed as the checkpoint's host tensors (any float
// dtype) and each backend keeps its own resident copy, made on first use.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/tensor.h"

namespace hark {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual int threads() const = 0;

  // A new uninitialised fp32 tensor on this backend's device.
  virtual Tensor alloc(const Shape& shape, DType dtype = DType::F32) = 0;

  // y[M, N] = x[M, K] · w[N, K]ᵀ (+ bias[N]). w may be stored as f32, f16 or bf16;
  // arithmetic is fp32.
  virtual void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) = 0;

  // y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension.
  virtual void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) = 0;

  // x = x · Φ(x) in place (exact, erf-based GELU as in the reference).
  virtual void gelu(Tensor& x) = 0;

  // x += y, where y has x's shape or is one row broadcast over x's rows.
  virtual void add(Tensor& x, const Tensor& y) = 0;

  // y[Cout, Tout] = conv1d(x[Cin, T], w[Cout, Cin, K]) + b[Cout], zero padding on both sides.
  virtual void conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) = 0;

  // Multi-head scaled dot-product attention for one sequence: q[Tq, D], k and v [Tk, D],
  // D = n_heads · head_dim, out[Tq, D]. With `causal`, query i sees keys [0, i + offset].
  // When `weights` is given it receives the softmax weights [n_heads, Tq, Tk].
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                         int64_t causal_offset, Tensor& out, Tensor* weights) = 0;

  // out[i, :] = table[ids[i], :] (+ positions[first_position + i, :] when given).
  virtual void embedding(const Tensor& table, std::span<const int32_t> ids, const Tensor* positions,
                         int64_t first_position, Tensor& out) = 0;

  // Copies src into dst (same element count), converting the dtype when they differ.
  // Both live on this backend's device.
  virtual void copy(const Tensor& src, Tensor& dst) = 0;

  // y[C, R] = x[R, C]ᵀ.
  virtual void transpose(const Tensor& x, Tensor& y) = 0;

  // A copy of a host tensor on this backend's device (the CPU backend returns it as is).
  virtual Tensor to_device(const Tensor& host) { return host; }
  // A host copy of a tensor on this device (waits for pending work).
  virtual Tensor to_host(const Tensor& t) { return t; }

  // Waits until all queued work on the device is done (no-op on the CPU).
  virtual void synchronize() {}

  // The dtype cross-attention K/V are kept in (WhisperModel::prepare_audio); attention()
  // then reads k and v in it.
  virtual DType cross_kv_dtype() const { return DType::F32; }
};

struct BackendOptions {
  int threads = 0;  // 0: all hardware threads
  DType cross_kv = DType::F32;  // CPU: f32 or f16 storage of the cross-attention K/V (--compute-type)
};

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);
bool cuda_available();
std::unique_ptr<Backend> make_cuda_backend(int device_index);

// "cpu", "cuda", "cuda:N" or "auto" (CUDA when a GPU is present, else CPU).
std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options);

}  // namespace hark
