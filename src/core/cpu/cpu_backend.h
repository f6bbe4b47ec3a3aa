// The CPU backend: every matrix product through sgemm (oneDNN, or OpenBLAS where oneDNN is
// absent; src/core/cpu/gemm.h), hand-written loops for the rest, all parallelised over one
// ThreadPool of the configured size. Activations are fp32. The attention family lives in
// cpu_attention.cc.
#pragma once

#include <map>
#include <mutex>

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
  std::unique_ptr<Backend> make_lane() override;

  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, Epilogue epilogue) override;
  void linear_packed(const Tensor& x, std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                     Tensor& y) override;
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) override;
  void gelu(Tensor& x) override;
  void add(Tensor& x, const Tensor& y) override;
  void conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) override;
  void conv1d_gelu_time_major(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding,
                              Tensor& y) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset, Tensor& out, Tensor* weights) override;
  void self_attention(const Tensor& qkv, int batch, int n_heads, Tensor& out) override;
  void cached_attention(const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths, int n_new,
                        int n_heads, Tensor& out) override;
  void cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                       std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                       Tensor* weights) override;
  void embedding(const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths, int n_new,
                 Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void transpose(const Tensor& x, Tensor& y) override;
  void gather_sequences(std::span<Tensor* const> caches, int64_t rows_per_seq, std::span<const int> source,
                        std::span<const int> lengths) override;
  void select_tokens(const Tensor& logits, const Tensor& spec, int k, Tensor& out) override;

  DType cross_kv_dtype() const override { return cross_kv_; }
  // fp32 cross K/V in head panels, read a head a task: the few-row loops then stream each
  // head's keys instead of fetching a slice of every key's row of all layers (7 windows'
  // cross-attention 1.2-1.6x faster on a 2-core EPYC, decoder steps 12-24 %:
  // docs/benchmarks.md, "The cross K/V layout"). f16 and q8_0 keep rows.
  // HARK_CPU_KV_PANELS=0 keeps rows (for comparisons).
  int64_t cross_kv_panel(int64_t head_dim) const override {
    return cross_kv_ == DType::F32 && kv_panels_enabled() ? head_dim : 0;
  }
  Tensor arrange_cross_kv(const Tensor& kv, int64_t rows_per_seq, int64_t head_dim) override;
  bool prefers_device_selection() const override { return select_next_to_logits_; }
  void set_select_next_to_logits(bool on) { select_next_to_logits_ = on; }
  // Bytes of the fp32 copies made of half-precision weights (model memory beyond the file).
  size_t cached_weight_bytes();

  ThreadPool& pool() { return pool_; }

 private:
  static bool kv_panels_enabled();
  // fp32 copy of a half-precision weight, made once and kept (keyed by its address).
  const float* f32_weights(const Tensor& w);
  // y (row stride ldy) = x · wᵀ + b: the product behind linear and linear_packed.
  void product(const Tensor& x, const Tensor& w, const Tensor* bias, float* y, int64_t ldy);

  ThreadPool pool_;
  DType cross_kv_;
  bool select_next_to_logits_ = false;  // BackendOptions::select_next_to_logits
  std::mutex cache_mutex_;
  // (address, bytes) → (the weight itself, kept alive so its address is not reused; its
  // fp32 copy).
  std::map<std::pair<const void*, size_t>, std::pair<Tensor, Tensor>> f32_cache_;
};

// Strided multi-head attention on fp32 rows (cpu_attention.cc): query row i of q (stride
// ldq) attends to rows of k/v (strides ldk/ldv); heads are column blocks of head_dim.
struct AttentionRows {
  const float* q;
  int64_t ldq;
  const float* k;
  int64_t ldk;
  const float* v;
  int64_t ldv;
  float* out;
  int64_t ldo;
  int64_t tq, tk;
  int64_t head_step = 0;  // K and V values from one head to the next (0: head_dim, heads side by side)
  int64_t head_stride(int64_t head_dim) const { return head_step ? head_step : head_dim; }
};
void cpu_attend(ThreadPool& pool, const AttentionRows& a, int n_heads, int64_t head_dim, bool causal,
                int64_t causal_offset, float* weights);
// Several independent attention calls in one parallel loop (each call's numbers are those
// of cpu_attend alone). causal_offsets and weights: one per call, or empty.
void cpu_attend_many(ThreadPool& pool, std::span<const AttentionRows> calls, int n_heads, int64_t head_dim,
                     bool causal, std::span<const int64_t> causal_offsets, std::span<float* const> weights);

}  // namespace hark
