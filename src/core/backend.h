// The one interface every compute kernel sits behind. Model code calls these methods
// (through the checked front ends in core/ops.h) and so is written once for the CPU and
// CUDA backends. All tensors are contiguous and row-major. Activations live on the
// backend's device in its activation dtype (fp32 on the CPU; fp32, fp16 or bf16 on CUDA);
// weights are passed as the checkpoint's host tensors (any float dtype) and each backend
// keeps its own resident copy, made on first use.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/tensor.h"

namespace hark {

// What a linear layer does with its product before storing it.
enum class Epilogue : uint8_t {
  None,      // y = x·wᵀ + b
  Gelu,      // y = gelu(x·wᵀ + b)
  Residual,  // y += x·wᵀ + b (y holds the residual stream on entry)
};

// The rows of a packed K/V buffer that one attention call reads: row r of sequence s is
// row s·rows_per_seq + r of `kv`, whose columns hold several [rows, d] blocks side by side;
// K starts at column k_col and V at v_col. With `panel` > 0 each sequence's block of rows
// is stored in panels instead (Backend::cross_kv_panel): column c of row r at
// (c / panel)·rows_per_seq·panel + r·panel + c % panel from the block's start.
struct PackedKV {
  const Tensor* kv = nullptr;
  int64_t rows_per_seq = 0;
  int64_t k_col = 0, v_col = 0;
  int64_t panel = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual int threads() const = 0;
  // The dtype this backend keeps activations in.
  virtual DType act_dtype() const { return DType::F32; }

  // A new uninitialised tensor on this backend's device.
  virtual Tensor alloc(const Shape& shape, DType dtype) = 0;
  // A host tensor that asynchronous copies may read or write (page-locked on CUDA).
  virtual Tensor alloc_host(const Shape& shape, DType dtype) { return Tensor::empty(shape, dtype); }

  // y[M, N] = x[M, K] · w[N, K]ᵀ (+ bias[N]), then the epilogue. w may be stored as f32,
  // f16 or bf16. y is in the activation dtype, or f32 (logits) when the caller asks so.
  virtual void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, Epilogue epilogue) = 0;

  // Several products of one input written side by side: y[M, Σ Nᵢ] = x · [w₀; w₁; …]ᵀ
  // (+ [b₀; b₁; …], a null bias being zeros). Backends that can, run one GEMM.
  virtual void linear_packed(const Tensor& x, std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                             Tensor& y) = 0;

  // y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension.
  virtual void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) = 0;

  // A layer norm and the product it feeds: y = epilogue(layer_norm(x)·wᵀ + b), or the
  // packed form. By default the two ops in turn; CUDA fuses them for the decoder's
  // few-row steps (one launch instead of two, per norm, per layer, per token).
  virtual void norm_linear(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                           const Tensor* bias, Tensor& y, Epilogue epilogue);
  virtual void norm_linear_packed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                  std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& y);

  // x = x · Φ(x) in place (exact, erf-based GELU as in the reference).
  virtual void gelu(Tensor& x) = 0;

  // x += y, where y has x's shape or is one row broadcast over x's rows (y may be a weight).
  virtual void add(Tensor& x, const Tensor& y) = 0;

  // y[Cout, Tout] = conv1d(x[Cin, T], w[Cout, Cin, K]) + b[Cout], zero padding on both sides.
  virtual void conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) = 0;

  // The encoder's convolutions in time-major layout: y[Tout, Cout] = gelu(conv1d(x) + b)
  // for x[T, Cin] (time-major too).
  virtual void conv1d_gelu_time_major(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding,
                                      Tensor& y) = 0;

  // Multi-head scaled dot-product attention for one sequence: q[Tq, D], k and v [Tk, D],
  // D = n_heads · head_dim, out[Tq, D]. With `causal`, query i sees keys [0, i + offset].
  // When `weights` is given it receives the softmax weights [n_heads, Tq, Tk].
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                         int64_t causal_offset, Tensor& out, Tensor* weights) = 0;

  // Non-causal self-attention of `batch` sequences from packed projections:
  // qkv[batch·T, 3D] (Q, K, V side by side), out[batch·T, D].
  virtual void self_attention(const Tensor& qkv, int batch, int n_heads, Tensor& out) = 0;

  // The decoder's causal self-attention over its KV cache. qkv[B·n_new, 3D] holds the
  // projections of n_new new tokens per row; cache_k/cache_v are [B·n_ctx, D]; lengths[B]
  // (i32, on the device) counts each row's cached tokens. Appends the new K/V at each row's
  // length, then attends query i of row b to keys [0, lengths[b] + i]. Does not change
  // `lengths`.
  virtual void cached_attention(const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths, int n_new,
                                int n_heads, Tensor& out) = 0;
  // The decoder's self-attention block before its output projection: the packed Q/K/V
  // product of layer_norm(x) into qkv (allocated by the caller: [rows·n_new, 3D]), then
  // cached_attention over it. By default the two ops in turn; CUDA may run a one-row step
  // in one launch (decoder_self_step.cu), with the same numbers.
  virtual void norm_cached_attention(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                     std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                                     Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths, int n_new,
                                     int n_heads, Tensor& out);

  // Cross-attention of the decoder: q[B·n_new, D]; row b reads sequence row_seq[b] (i32 on
  // the device; row_seq_host is the same on the host) of `kv`. When `weights` is given
  // (host or device, f32) it receives the softmax weights [B, n_heads, n_new, Tk].
  virtual void cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                               std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                               Tensor* weights) = 0;

  // out[b·n_new + i, :] = table[ids[b·n_new + i], :] + positions[lengths[b] + i, :], with
  // ids and lengths i32 tensors on the device.
  virtual void embedding(const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths,
                         int n_new, Tensor& out) = 0;

  // Copies src into dst (same element count), converting the dtype when they differ.
  // Either may live on the host; returns once dst may be read.
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // Like copy (same dtype) but queued: host tensors must come from alloc_host(), and the
  // copy is done at the next synchronize(). Allowed inside replay().
  virtual void copy_async(const Tensor& src, Tensor& dst) { copy(src, dst); }

  // y[C, R] = x[R, C]ᵀ.
  virtual void transpose(const Tensor& x, Tensor& y) = 0;

  // Beam bookkeeping on caches of `rows_per_seq` rows per sequence: sequence i of each
  // cache becomes old sequence source[i], of which the first lengths[i] rows are kept.
  virtual void gather_sequences(std::span<Tensor* const> caches, int64_t rows_per_seq, std::span<const int> source,
                                std::span<const int> lengths) = 0;

  // The k best tokens of each row of logits [rows, vocab] (f32) after the logit filters
  // that `spec` describes (i32, core/token_select.h), with their log-probabilities:
  // out is i32 [rows, k, 2] (token, float bits). All three live on this device.
  virtual void select_tokens(const Tensor& logits, const Tensor& spec, int k, Tensor& out) = 0;
  // Whether decoding should choose tokens with select_tokens (next to the logits) rather
  // than bring every row's logits to the host: the GPU fast path. The fp32 reference paths
  // keep the host filters, which compute the reference's double-precision sums.
  virtual bool prefers_device_selection() const { return false; }

  // The log10 mel energies of `samples` followed by `pad` zeros, before the clamp, as
  // log_mel_unclamped (audio/mel.h) computes them: f32 [n_mels, (n + pad) / 160] on the
  // host, for `filters` [n_mels, 201]. An undefined tensor where the backend leaves the
  // front end to audio/ (the CPU, and the fp32 reference path on CUDA).
  virtual Tensor log_mel(std::span<const float> samples, int64_t pad, const Tensor& filters) {
    (void)samples, (void)pad, (void)filters;
    return {};
  }

  // A copy of a host tensor on this backend's device (the CPU backend returns it as is).
  virtual Tensor to_device(const Tensor& host) { return host; }
  // A host copy of a tensor on this device (waits for pending work).
  virtual Tensor to_host(const Tensor& t) { return t; }

  // Runs `step`, a fixed sequence of the calls above, as one replayable unit. `key`
  // identifies the step's shapes and buffers: a backend that records work (CUDA graphs)
  // records the step on an early call and replays the record on later calls with the
  // same key, so every input that changes between calls must be read from device
  // buffers (written with copy_async inside the step), never passed as a value, and
  // tensors allocated inside must not outlive it. The CPU backend just runs it.
  virtual void replay(uint64_t key, const std::function<void()>& step) { (void)key, step(); }
  // Forgets what replay() recorded under `key` (its buffers are going away).
  virtual void forget_replay(uint64_t key) { (void)key; }
  virtual bool records_replays() const { return false; }

  // Waits until all queued work on the device is done (no-op on the CPU).
  virtual void synchronize() {}

  // The dtype the cross-attention K/V are kept in (WhisperModel::prepare_audio_batch casts
  // the packed K/V to it; cross_attention reads it): the activation dtype unless the
  // backend stores them more compactly (the CPU's quantized compute types).
  virtual DType cross_kv_dtype() const { return act_dtype(); }
  // The layout cross_attention reads the cross K/V in: 0, the product's rows (every
  // layer's K and V side by side); p > 0, each window's rows in panels of p columns
  // (PackedKV), so that one head's keys are one sequential run. arrange_cross_kv turns the
  // product's rows, `rows_per_seq` a window, into that layout.
  virtual int64_t cross_kv_panel(int64_t head_dim) const {
    (void)head_dim;
    return 0;
  }
  virtual Tensor arrange_cross_kv(const Tensor& kv, int64_t rows_per_seq, int64_t head_dim) {
    (void)rows_per_seq;
    (void)head_dim;
    return kv;
  }

  // select_tokens, then each row's best token fed back as the next step's input
  // (select_feed_back, core/token_select_rules.h): `inputs` are the decoder's i32 step
  // inputs (lengths[rows] | row_window[rows] | tokens[rows]) and `spec`'s row summaries
  // advance, both on this device. Greedy decoding may then launch step t + 1 before it has
  // read step t's choice (WhisperModel::decode_greedy). Allowed inside replay().
  virtual void select_and_feed(const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs);
  // The logits product and select_and_feed together: logits (f32) = layer_norm(x)·wᵀ, then
  // the selection and feed-back. By default the two in turn; CUDA chooses the greedy
  // step's token in the logits product's own launch (one row, k = 1).
  virtual void logits_select_and_feed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                      const Tensor& w, Tensor& logits, Tensor& spec, int k, Tensor& out,
                                      Tensor& inputs);
  // A point in the queue of device work, and a wait until the device has passed it (at
  // least: a mark may be waited for late, or twice). A backend without a queue (the CPU)
  // returns 0 and waits for nothing.
  virtual uint64_t mark() { return 0; }
  virtual void wait_for(uint64_t mark) { (void)mark, synchronize(); }

  // A second backend on the same device whose work runs beside this one's (CUDA: its own
  // stream, cuBLAS handle and weight copies), so that one thread can encode windows while
  // another steps the decoder here (batch/batch_encoder_lane.cc). nullptr where the device
  // has none; the CPU makes one only when asked (tests: there it splits the same cores).
  virtual std::unique_ptr<Backend> make_lane() { return nullptr; }
  // On a lane: memory for a result handed to the backend that made the lane. Its release
  // is queued behind that backend's work, which reads it last; the lane's own work on it
  // must be finished (synchronize()) before it is handed over or dropped.
  virtual Tensor alloc_handed(const Shape& shape, DType dtype) { return alloc(shape, dtype); }

  // --compute-type fp8 on a GPU: products inside an fp8 region may take e4m3 operands. The
  // model opens one (Fp8Region, below) around each part of the encoder and around the
  // cross-attention K/V products, naming the part; the backend decides which parts run in
  // fp8. The decoder's products, whose logits choose the tokens, never run in one. The
  // region is the calling thread's (an encoder lane's thread and a decoder's thread may
  // share a backend). Returns the part open before (None: none); other backends ignore it.
  enum class Fp8Part : uint8_t { None, Convolutions, Attention, Mlp, CrossKv };
  virtual Fp8Part set_fp8_region(Fp8Part part) { (void)part; return Fp8Part::None; }
};

// Opens the calling thread's fp8 region for `part` on `be` for its lifetime
// (Backend::set_fp8_region), and restores the one open before.
class Fp8Region {
 public:
  Fp8Region(Backend& be, Backend::Fp8Part part) : be_(be), before_(be.set_fp8_region(part)) {}
  ~Fp8Region() { be_.set_fp8_region(before_); }
  Fp8Region(const Fp8Region&) = delete;
  Fp8Region& operator=(const Fp8Region&) = delete;

 private:
  Backend& be_;
  Backend::Fp8Part before_;
};

struct BackendOptions {
  int threads = 0;                   // CPU: 0 = all hardware threads
  std::string compute_type = "auto";  // activations: auto (f16 on a GPU, f32 on the CPU), f32, f16, bf16; the
                                      // GPU also takes fp8 (f16 activations, encoder products in e4m3),
                                      // the CPU int8 and the ggml types (fp32 activations)
  DType cross_kv = DType::F32;        // CPU: storage of the cross-attention K/V (f32, f16 or q8_0)
  // CPU: decode as the GPU fast path does, tokens chosen with select_tokens next to the
  // logits (one step ahead for greedy, the prompt in one pass). No faster on the CPU; it
  // lets the CI run that path's host logic (tests).
  bool select_next_to_logits = false;
};

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);
bool cuda_available();
int cuda_device_count();  // visible GPUs (0 without CUDA)
std::unique_ptr<Backend> make_cuda_backend(int device_index, const BackendOptions& options = {});

// "cpu", "cuda", "cuda:N" or "auto" (CUDA when a GPU is present, else CPU).
std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options);

// "f32" | "f16" | "bf16" | "auto" → the activation dtype on `device` (auto: f16 on a GPU,
// f32 on the CPU); "fp8" → f16 on a GPU (its encoder products in e4m3: compute_type_fp8);
// int8 and the ggml types (model/compute_type.h) → f32 on the CPU.
// Throws InvalidArgument naming the choices, or when the device cannot run the type.
DType parse_compute_type(const std::string& name, Device device);
// Whether the name asks for the GPU's fp8 encoder products ("fp8", "float8").
bool compute_type_fp8(const std::string& name);

}  // namespace hark
