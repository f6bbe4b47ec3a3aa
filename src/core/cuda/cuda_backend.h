// The CUDA backend. Activations are fp32 (the reference path: cuBLAS in pedantic fp32 for
// every product), or f16 / bf16 (the fast path: cuBLASLt with fused epilogues, few-row
// products in gemv.cu, flash attention for the encoder, split-K decoder attention). All
// work runs on one stream; weights are uploaded once, on first use, in the dtype the
// kernels read. replay() records a step as a CUDA graph (cuda_replay.cc). make_lane()
// gives a second backend on its own stream for work that runs beside this one's. With fp8
// products (--compute-type fp8) the large products of the chosen fp8 regions take e4m3
// operands (cuda_fp8_products.cc).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "core/cuda/gemm_lt.h"

namespace hark {
namespace cuda {
struct GemvNorm;  // kernels.cuh
}

class CudaBackend final : public Backend {
 public:
  // lane: made by make_lane(), its stream ranks below the main one's.
  CudaBackend(int device_index, DType act_dtype, bool fp8_products = false, bool lane = false);
  ~CudaBackend() override;

  std::string name() const override;
  Device device() const override { return Device::Cuda; }
  int threads() const override { return 1; }
  DType act_dtype() const override { return act_; }
  Tensor alloc(const Shape& shape, DType dtype) override;
  Tensor alloc_host(const Shape& shape, DType dtype) override;

  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, Epilogue epilogue) override;
  void linear_packed(const Tensor& x, std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                     Tensor& y) override;
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) override;
  void norm_linear(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                   const Tensor* bias, Tensor& y, Epilogue epilogue) override;
  void norm_linear_packed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                          std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& y) override;
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
  void norm_cached_attention(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& qkv,
                             Tensor& cache_k, Tensor& cache_v, const Tensor& lengths, int n_new, int n_heads,
                             Tensor& out) override;
  void cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                       std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                       Tensor* weights) override;
  void embedding(const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths, int n_new,
                 Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void copy_async(const Tensor& src, Tensor& dst) override;
  void transpose(const Tensor& x, Tensor& y) override;
  void gather_sequences(std::span<Tensor* const> caches, int64_t rows_per_seq, std::span<const int> source,
                        std::span<const int> lengths) override;
  void select_tokens(const Tensor& logits, const Tensor& spec, int k, Tensor& out) override;
  void select_and_feed(const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) override;
  void logits_select_and_feed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                              Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) override;
  uint64_t mark() override;
  void wait_for(uint64_t mark) override;
  bool prefers_device_selection() const override { return act_ != DType::F32; }
  Tensor log_mel(std::span<const float> samples, int64_t pad, const Tensor& filters) override;
  Tensor to_device(const Tensor& host) override;
  Tensor to_host(const Tensor& t) override;
  void replay(uint64_t key, const std::function<void()>& step) override;
  void forget_replay(uint64_t key) override;
  bool records_replays() const override { return graphs_enabled_; }
  void synchronize() override;
  std::unique_ptr<Backend> make_lane() override;
  Tensor alloc_handed(const Shape& shape, DType dtype) override;
  Fp8Part set_fp8_region(Fp8Part part) override;

 private:
  // What replay() knows of one key: measured arena size, then the recorded graph.
  struct Replay {
    int calls = 0;
    size_t arena_bytes = 0;
    void* arena = nullptr;
    cudaGraphExec_t exec = nullptr;
    bool failed = false;  // recording did not work: run the step directly
  };
  // The device copy of `t` in `dtype`: t itself when it already lives on the device in
  // that dtype, else a cached upload of the host weight (keyed by address, size, dtype).
  const void* resident(const Tensor& t, DType dtype);
  // fp32 product through cuBLAS (the reference path): y (ld ldy) = x·wᵀ (+ bias).
  void product_f32(const Tensor& x, const Tensor& w, const Tensor* bias, float* y, int64_t ldy, float beta);
  // 16-bit product: gemv.cu for a few rows, cuBLASLt otherwise; w (and bias) resident.
  void product_half(const void* x, int64_t m, int64_t k, const void* w, int64_t n, const void* bias, DType y_dt,
                    void* y, Epilogue epilogue);
  struct Packed;
  // The concatenated weight and bias of a packed product, made on first use.
  const Packed& packed_weights(std::span<const Tensor* const> ws, std::span<const Tensor* const> biases);
  // The layer norm folded into the few-row product (gemv.cu); false where it does not apply.
  bool fuse_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                 const Tensor* bias, Tensor& y, Epilogue epilogue);
  // The greedy step's fused norms folded into their one-row products (GemvNorm's
  // fold_scale and fold_shift, norm_fold.cu): the constants of one (weight, gamma, beta,
  // bias), made on first use and kept for the backend's lifetime. A weight the caller passed
  // as a device tensor is kept with them, so that its address cannot name another later.
  struct FoldedNorm {
    Tensor scale, shift, device_weight;
  };
  // Sets norm.fold_scale and fold_shift where the one-row kernel folds a norm of width k
  // (HARK_CUDA_NORM_FOLD=0: never).
  void fold_norm(cuda::GemvNorm& norm, const Tensor& w, const void* w16, const void* b16, int64_t m, int64_t k);
  // Few-row shapes that cuBLASLt runs faster than gemv.cu.
  bool prefers_lt(int64_t m, int64_t n, int64_t k) const;
  // ---- fp8 products (cuda_fp8_products.cc) ----
  // Products with at least this many rows take e4m3 operands in an fp8 region: the
  // encoder's (1500 rows a window) and the cross-attention K/V's; a decoder step has a few.
  static constexpr int64_t kE4m3MinRows = 1024;
  // Whether y = epilogue(x·wᵀ + bias) runs as an fp8 product (an fp8 region of this
  // thread, enough rows, multiples of 16, a cuBLASLt algorithm for it, y in the act dtype).
  bool e4m3_applies(int64_t m, int64_t n, int64_t k, bool bias, DType y_dt, Epilogue epilogue);
  // fp8_parts_ from HARK_CUDA_FP8_PARTS ("conv,attention,mlp,kv", "all" or "none"; unset:
  // conv,mlp).
  static unsigned fp8_parts_setting();
  // The e4m3 copy of a resident 16-bit weight [n, k] and its per-row scales, made on first use.
  // The cache is keyed by the resident 16-bit weight's address (w16). A weight the caller
  // passed as a device tensor (a packed one) is kept with its copy, so that the address
  // cannot name another weight later; host weights are kept by weights_ already.
  struct E4m3Weight {
    Tensor values, scales, device_weight;
  };
  const E4m3Weight& e4m3_weight(const Tensor& w, const void* w16);
  // y = epilogue(x·wᵀ + bias) from x already in e4m3 (values [m, k], scales [m]); w16 and b16
  // the resident 16-bit copies of w and the bias.
  void product_e4m3(const Tensor& x_values, const Tensor& x_scales, const Tensor& w, const void* w16, const void* b16,
                    Tensor& y, Epilogue epilogue);
  // linear() and norm_linear() as fp8 products; false where e4m3_applies() says no (checked
  // before anything else is looked up: every product asks). linear_e4m3 takes the resident
  // copies linear() has already made.
  bool linear_e4m3(const Tensor& x, const Tensor& w, const void* w16, const void* b16, Tensor& y, Epilogue epilogue);
  bool norm_linear_e4m3(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                        const Tensor* bias, Tensor& y, Epilogue epilogue);

  struct Arena;
  // Device memory from the stream-ordered pool, allocated on this stream and released on
  // `release` (this stream, or a lane's consumer: alloc_handed); laid out in `arena` too
  // while a step is measured.
  Tensor pooled(const Shape& shape, DType dtype, cudaStream_t release, std::shared_ptr<Arena> arena);
  // A device buffer of at least `bytes`, reused between calls (i32 index uploads).
  int32_t* upload_ints(std::span<const int> values);

  int device_index_;
  DType act_;
  cudaStream_t stream_ = nullptr;
  // On a lane (make_lane): the stream of the backend that made it, where alloc_handed's
  // memory is released (that backend outlives what it was handed).
  cudaStream_t consumer_stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;  // cuBLAS/cuBLASLt workspace (fixed: graph capture allocates nothing)
  std::unique_ptr<cuda::LtGemm> lt_;
  std::mutex cache_mutex_;
  // Device copies keyed by the host tensor's address; each entry also holds the host
  // tensor, so that its address cannot be reused by another weight while cached.
  struct Resident {
    Tensor host, device;
  };
  std::map<std::tuple<const void*, size_t, DType>, Resident> weights_;
  struct Packed {
    std::vector<Tensor> parts;  // the host weights and biases packed (kept alive, see above)
    Tensor weight, bias;
  };
  std::map<std::pair<const void*, size_t>, Packed> packed_;
  Tensor index_buffer_, index_staging_;
  std::optional<uint64_t> index_uploaded_;  // mark() after the last upload from index_staging_
  Tensor dft_basis_;  // [400, 402] f32: cos and −sin of the 400-point DFT, bins 0..200
  std::map<const void*, Tensor> mel_filters_;  // [201, n_mels] f32 per filter bank
  Tensor mel_staging_;                          // page-locked f32: log_mel's samples in, frames out
  // Cross-attention's per-(query, head) chunk counters (decoder_attention.cu), zeroed once.
  static constexpr int64_t kCrossCounters = 1 << 16;
  Tensor cross_counters_;
  int* cross_counters();
  // The greedy logits product's count of finished blocks (gemv_one_row_select), zeroed once.
  Tensor select_counter_;
  // Which cross-attention kernel (HARK_CUDA_CROSS=split|stream|stream-N; cuda::CrossKernel
  // values) and, for stream-N, its tiles a warp: the choice by shape unless set.
  int cross_kernel_ = 0, cross_tiles_ = 0;
  int cross_depth_ = 1;  // the streaming kernel's tiles in flight a warp (HARK_CUDA_CROSS_DEPTH=1|2)
  // The fused self-attention step's per-head counters (decoder_self_step.cu), zeroed once.
  Tensor self_step_counters_;
  bool fused_select_ = true;       // HARK_CUDA_FUSED_SELECT=0: the greedy token chosen in separate launches
  bool fold_norms_ = true;         // HARK_CUDA_NORM_FOLD=0: one-row products normalise x first
  std::map<std::tuple<const void*, const void*, const void*, const void*>, FoldedNorm> folded_norms_;
  bool fused_self_step_ = false;  // HARK_CUDA_FUSED_SELF=1 (opt-in until run on a GPU)

  bool fp8_products_ = false;  // --compute-type fp8
  // The encoder parts whose products run in fp8, one bit per Fp8Part: the convolutions and
  // the MLP unless HARK_CUDA_FP8_PARTS says otherwise (cuda_fp8_products.cc).
  unsigned fp8_parts_ = 0;
  std::map<const void*, E4m3Weight> e4m3_weights_;  // keyed by the resident 16-bit weight

  bool graphs_enabled_ = true;
  bool wide_in_lt_ = true;        // HARK_CUDA_GEMV=all: the MLP's few-row products in gemv.cu too
  bool lt_for_few_rows_ = false;  // HARK_CUDA_GEMV=lt: cuBLASLt for decoder steps too (measurements)
  bool wide_one_row_ = true;      // one row wider than 2048 in gemv_one_row_wide.cu (=narrow: cuBLASLt)
  std::map<uint64_t, std::unique_ptr<Replay>> replays_;
  // mark()'s events, reused round robin (a caller waits for one of the last few marks).
  static constexpr uint64_t kMarks = 16;
  std::array<cudaEvent_t, kMarks> marks_{};
  std::atomic<uint64_t> next_mark_{0};
  std::mutex marks_mutex_;
  // While a step is measured or recorded, alloc() serves it from this arena: first fit
  // over the blocks its tensors gave back, so a step needs its peak of live memory, not
  // the sum of its temporaries (an encoder window: about 1.2 GB in all,
  // about 50 MB at once, computed from the shapes).
  // Reuse is safe within a step: its kernels run in stream order, on a recording too.
  struct Arena {
    char* base = nullptr;
    size_t size = 0, end = 0, peak = 0;
    bool measuring = false;
    bool closed = false;  // the step is over: later frees change nothing
    std::map<size_t, size_t> free_blocks;  // offset → bytes, neighbours merged
    size_t take(size_t bytes);
    void give_back(size_t offset, size_t bytes);
  };
  std::shared_ptr<Arena> arena_;
  // Serves allocations normally for its lifetime (weights made during a recorded step).
  struct PauseArena {
    std::shared_ptr<Arena>& slot;
    std::shared_ptr<Arena> saved;
    explicit PauseArena(std::shared_ptr<Arena>& a) : slot(a), saved(a) { slot.reset(); }
    ~PauseArena() { slot = saved; }
  };
};

}  // namespace hark
