// Host entry points of the CUDA kernels (one family per .cu file). All take raw device
// pointers and the stream to run on; shapes are row-major. `dt` is the element type of
// activations (DType F32, F16 or BF16); functions dispatch on it inside the .cu file.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/tensor.h"

namespace hark::cuda {

// ---- elementwise.cu -------------------------------------------------------------------
void gelu(DType dt, void* x, int64_t n, cudaStream_t stream);
// x += y where y has n elements (same shape) or `y_n` elements broadcast over x's rows.
void add(DType dt, void* x, const void* y, int64_t n, int64_t y_n, cudaStream_t stream);
// dst = src converted between any two of f32 / f16 / bf16.
void convert(DType src_dt, const void* src, DType dst_dt, void* dst, int64_t n, cudaStream_t stream);
// y[rows, cols] = bias broadcast over rows (f32).
void fill_rows(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);
void transpose(DType dt, const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t stream);
// cols[cin·k, t_out] from x[cin, t_in] for a 1-D convolution (f32).
void im2col(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out, int stride, int padding,
            cudaStream_t stream);
// Time-major im2col: cols[t_out, cin·k] with cols[t, ci·k + j] = x[t·stride + j − padding, ci].
void im2col_time_major(DType dt, const void* x, void* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out,
                       int stride, int padding, cudaStream_t stream);
// out[i] = table[ids[i]] + positions[lengths[i / n_new] + i % n_new], all rows of width d.
void embedding(DType dt, const void* table, const void* positions, const int32_t* ids, const int32_t* lengths,
               int64_t n, int n_new, int64_t d, void* out, cudaStream_t stream);
// Sequence copies for several buffers of one layout in one launch (beam reordering): for
// each entry (to, from, rows) of the device array `entries` ([n_entries, 3]) and each buffer
// b, rows [0, rows) of sequence `from` of src[b] go to sequence `to` of dst[b]. src and dst
// are device arrays of `buffers` addresses; sequences are src_stride / dst_stride bytes
// apart; max_rows bounds every entry's rows.
void copy_sequences(const uint64_t* src, const uint64_t* dst, int buffers, const int32_t* entries, int n_entries,
                    int max_rows, int64_t src_stride, int64_t dst_stride, int64_t row_bytes, cudaStream_t stream);

// ---- softmax.cu (fp32 reference attention) ---------------------------------------------
// In-place softmax over rows of length tk; with causal, row i of each [tq, tk] block keeps
// entries [0, i + offset] and zeroes the rest.
void softmax(float* scores, int64_t blocks, int64_t tq, int64_t tk, bool causal, int64_t offset, cudaStream_t stream);

// ---- layer_norm.cu ---------------------------------------------------------------------
// y = (x − mean) / sqrt(var + eps) · gamma + beta per row; gamma/beta f32.
void layer_norm(DType dt, const void* x, const float* gamma, const float* beta, void* y, int64_t rows, int64_t d,
                float eps, cudaStream_t stream);
// The widest row the layer norm holds in registers (wider rows: a slower kernel).
constexpr int kLayerNormMaxRegisterWidth = 2048;
// The same layer norm written as e4m3 with one fp32 scale per row (fp8.cu's format), for
// an fp8 product (f16 / bf16 x; d a multiple of 8, at most kLayerNormMaxRegisterWidth).
void layer_norm_e4m3(DType dt, const void* x, const float* gamma, const float* beta, void* q, float* scale, int64_t rows,
                     int64_t d, float eps, cudaStream_t stream);

// ---- fp8.cu: e4m3 operands (device/e4m3.cuh) ---------------------------------------------
// q[r, ·] = x[r, ·] / scale[r] rounded to e4m3, scale[r] = max |x[r, ·]| / 448 (f16 / bf16 x;
// d a multiple of 8, at most kE4m3MaxWidth).
constexpr int64_t kE4m3MaxWidth = 8192;
void quantize_rows_e4m3(DType dt, const void* x, int64_t rows, int64_t d, void* q, float* scale, cudaStream_t stream);

// The one-row products load their weights with L2's evict-first policy and the
// cross-attention its K/V with evict-last, so that the windows' K/V (31 MB for
// large-v3-turbo) stay in L2 across steps while the weights (317 MB a step) stream past
// them. On unless HARK_CUDA_L2_HINTS=0 (a measurement switch, read once).
bool l2_hints();

// ---- gemv.cu: the decoder's few-row products, bound by weight reads ---------------------
constexpr int kGemvMaxRows = 8;
enum class GemvEpilogue : int { None = 0, Gelu = 1, Residual = 2 };
// A layer norm applied to x first (gamma, beta f32 of width k).
struct GemvNorm {
  const float *gamma, *beta;
  float eps;
  // Where set (one row of width gemv_one_row_folds): the norm folded into the product,
  // fold_scale[n] = Σ_k gamma_k·w[n, k] and fold_shift[n] = Σ_k beta_k·w[n, k] + bias[n]
  // (norm_fold_constants), so that the kernel multiplies x by gamma and corrects each output
  // with the row's statistics afterwards instead of normalising x first (one_row.cuh).
  const float* fold_scale = nullptr;
  const float* fold_shift = nullptr;
};
// ---- norm_fold.cu: the constants of a folded norm, once per weight -----------------------
// scale[n] = Σ_k gamma_k·w[n, k], shift[n] = Σ_k beta_k·w[n, k] + bias[n] (bias in dt, may
// be null), summed in double from w in dt (f16 or bf16) as the kernels read it.
void norm_fold_constants(DType dt, const void* w, int n, int k, const float* gamma, const float* beta,
                         const void* bias, float* scale, float* shift, cudaStream_t stream);
// y[m, n] (row stride ldy, element type y_dt = dt or F32) = x[m, k]·w[n, k]ᵀ + bias, then
// the epilogue; m ≤ kGemvMaxRows, k a multiple of 8; w, x, bias in dt (f16 or bf16).
// wide_one_row: one row wider than 2048 goes to gemv_one_row_wide.cu (the backend's default).
void gemv(DType dt, const void* x, int m, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
          int64_t ldy, GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm = nullptr,
          bool wide_one_row = false);
// Raises the kernels' shared-memory limit (once per device, before any graph capture).
void gemv_setup();
// ---- gemv_one_row.cu: gemv() for one row of width ≤ 2048 (the greedy step) --------------
bool gemv_one_row_applies(int m, int k);
// Whether the one-row kernels take a folded norm (GemvNorm::fold_scale) at width k.
bool gemv_one_row_folds(int k);
void gemv_one_row(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                  GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm);
// The greedy step's logits y[n] (f32) = norm(x)·wᵀ with its token chosen by the same
// launch: select_tokens for one row and k = 1 (the same rules, spec and out layout), fed
// back into the spec and `feed` when that is given (select_and_feed). `parts` holds
// logits_select_parts_floats() floats; `counter` one int, zero before and left zero.
// Returns false, launching nothing, where it does not apply (more rows a warp than the
// kernel keeps, or a width gemv_one_row does not take): the caller selects separately.
struct OneRowSelect {
  int32_t* spec;
  float* parts;
  int* counter;
  int32_t* out;
  int32_t* feed;
};
constexpr int kMaxSelectParts = 1024;
int64_t logits_select_parts_floats();
bool gemv_one_row_select(DType dt, const void* x, int k, const void* w, int n, float* y, const GemvNorm* norm,
                         const OneRowSelect& sel, cudaStream_t stream);
// ---- gemv_one_row_wide.cu: one row of width 2056..8192, no norm ---------------------------
bool gemv_one_row_wide_applies(int m, int k);
void gemv_one_row_wide(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                       GemvEpilogue epilogue, cudaStream_t stream);

// The attention kernels serve these head dims (every Whisper size and hark's bundled model
// have 64; 32 is kept for small custom checkpoints and covered by the op tests).
inline bool attention_head_dim_supported(int64_t head_dim) { return head_dim == 32 || head_dim == 64; }

// ---- flash_attention.cu: encoder self-attention, f16/bf16 -------------------------------
// qkv[batch·t, 3·d] packed (d = n_heads · head_dim), out[batch·t, d]; no score matrix.
void flash_attention(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads, int head_dim,
                     cudaStream_t stream);
// flash_attention_wgmma.cu: the same on Hopper's warpgroup MMA, head dim 64, where the
// current GPU is compute capability 9.0 and the module holds sm_90a code (HARK_CUDA_SM90A).
// The variants (HARK_CUDA_FLASH, docs/gpu.md): a tile's two products overlapped
// ("wgmma-pipe", the default on sm_90) or one after the other ("wgmma").
enum class WgmmaFlash { kSerial, kPipelined };
bool flash_attention_wgmma_applies(int head_dim);
void flash_attention_wgmma(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads,
                           cudaStream_t stream, WgmmaFlash variant = WgmmaFlash::kPipelined);


// ---- decoder_self_step.cu: the greedy step's self-attention block, f16/bf16 ------------
// One row, one new token: y = layer_norm(x)·wᵀ + bias into qkv[3d] (w the packed [3d, d]
// Q/K/V weight, bias [3d] or null), its K/V appended to the cache at lengths[0], and
// attention over the cache into out[d]; the same numbers as gemv_one_row then
// cached_attention. `counters`: kSelfStepCounters ints, zero (each launch leaves them so).
constexpr int kSelfStepCounters = 64;
bool self_attention_step_applies(int k, int n_heads, int head_dim);
void self_attention_step(DType dt, const void* x, int k, const void* w, const void* bias, const float* gamma,
                         const float* beta, float eps, void* qkv, void* cache_k, void* cache_v, const int32_t* lengths,
                         int64_t n_ctx, int n_heads, int head_dim, int* counters, void* out, cudaStream_t stream);

// ---- decoder_attention.cu: any activation dtype -----------------------------------------
// Appends the new K/V of each row to its cache and attends causally (see Backend).
void cached_attention(DType dt, const void* qkv, void* cache_k, void* cache_v, const int32_t* lengths, int rows,
                      int n_new, int64_t n_ctx, int n_heads, int head_dim, void* out, cudaStream_t stream);
// Split-K cross-attention: q[rows·n_new, d] against window row_window[row] of kv.
// `partials` is scratch of cross_attention_scratch() floats. With `counters` (zeroed ints,
// one per query row and head, left zeroed) the last chunk of each combines them in the
// same launch; without, a second kernel does.
// `kernel` picks the split kernel or cross_attention_stream.cu's (HARK_CUDA_CROSS); kAuto
// streams steps of one token a row on at least kCrossStreamMinWindows windows with at most
// two rows a window, in f16/bf16.
enum class CrossKernel { kAuto, kSplit, kStream };
constexpr int kCrossStreamMinWindows = 8;
int64_t cross_attention_scratch(int rows, int n_new, int n_heads, int head_dim, int64_t frames);
void cross_attention(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t v_col,
                     int64_t frames, int windows, const int32_t* row_window, int rows, int n_new, int n_heads,
                     int head_dim, float* partials, void* out, cudaStream_t stream, int* counters = nullptr,
                     CrossKernel kernel = CrossKernel::kAuto, int stream_tiles = 0, int stream_depth = 1);

// ---- cross_attention_stream.cu: the same for f16/bf16, warps streaming runs of keys --------
// A block takes `tiles` tiles a warp (of 64 keys for head dim 64, 128 for 32) and leaves
// one of `splits` partials per (query, head) in the split kernel's layout; with counters
// (at most kCrossStreamMaxSplits splits) the last block merges them, else the caller does.
constexpr int kCrossStreamMaxSplits = 64;
// depth: tiles a warp holds at once (1 or 2, HARK_CUDA_CROSS_DEPTH).
struct CrossStreamPlan {
  int tiles, splits, depth;
};
// tiles > 0: that many tiles a warp (HARK_CUDA_CROSS=stream-N), else the choice by shape.
CrossStreamPlan plan_cross_stream(int head_dim, int n_heads, int64_t frames, int windows, int tiles = 0,
                                  int depth = 1);
void cross_attention_stream(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t v_col,
                            int64_t frames, int windows, const int32_t* row_window, int rows, int n_new, int n_heads,
                            int head_dim, const CrossStreamPlan& plan, float* partials, void* out, cudaStream_t stream,
                            int* counters);
// Softmax weights [rows, n_heads, n_new, frames] (f32) of the same attention, for word timing.
void cross_attention_weights(DType dt, const void* q, const void* kv, int64_t kv_ld, int64_t k_col, int64_t frames,
                             const int32_t* row_window, int rows, int n_new, int n_heads, int head_dim, float* weights,
                             cudaStream_t stream);

// ---- token_select.cu -------------------------------------------------------------------
// Backend::select_tokens: out[rows, k, 2] i32 (token, log-probability bits), all on the
// device; `scratch` holds select_tokens_scratch() floats. With `feed` (the decoder's step
// inputs, Backend::select_and_feed) each row's best token is fed back into it and into
// the spec's row summary.
int64_t select_tokens_scratch(int rows, int k);
void select_tokens(const float* logits, int rows, int vocab, int32_t* spec, int k, float* scratch, int32_t* out,
                   cudaStream_t stream, int32_t* feed = nullptr);

// ---- mel.cu: the log-mel front end ------------------------------------------------------
// out[frames, 400]: Hann-windowed frames of `samples` (n of them) padded with zeros to
// `padded`, reflected at both ends.
void mel_frames(const float* samples, int64_t n, int64_t padded, int64_t frames, float* out, cudaStream_t stream);
// power[frames, 201] = re² + im² of spectrum[frames, 201, 2].
void mel_power(const float* spectrum, int64_t frames, float* power, cudaStream_t stream);
// out[n_mels, frames] = log10(max(mel[frames, n_mels], 1e-10)).
void mel_log_transpose(const float* mel, int64_t frames, int n_mels, float* out, cudaStream_t stream);

}  // namespace hark::cuda
