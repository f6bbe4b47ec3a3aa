// Checked front ends over the Backend: each validates shapes and dtypes, allocates the
// output on the backend's device (in its activation dtype), then dispatches. Model code
// calls only these.
#pragma once

#include <optional>

#include "core/backend.h"

namespace hark::ops {

// x · wᵀ + b with an epilogue. `out_dtype` F32 asks for fp32 output (logits) whatever the
// activation dtype; by default the output is in the activation dtype.
Tensor linear(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias, Epilogue epilogue = Epilogue::None,
              std::optional<DType> out_dtype = std::nullopt);
// residual += x · wᵀ + b.
void linear_residual(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& residual);
// [x·w₀ᵀ + b₀ | x·w₁ᵀ + b₁ | …] (null biases are zeros).
Tensor linear_packed(Backend& be, const Tensor& x, std::span<const Tensor* const> ws,
                     std::span<const Tensor* const> biases);
Tensor layer_norm(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);
// epilogue(layer_norm(x) · wᵀ + b) (eps 1e-5), which a backend may fuse.
Tensor norm_linear(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& w,
                   const Tensor* bias, Epilogue epilogue = Epilogue::None, std::optional<DType> out_dtype = std::nullopt);
Tensor norm_linear_packed(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          std::span<const Tensor* const> ws, std::span<const Tensor* const> biases);
void gelu(Backend& be, Tensor& x);
void add(Backend& be, Tensor& x, const Tensor& y);
Tensor conv1d(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding);
// gelu(conv1d) on time-major input x[T, Cin] → [Tout, Cout].
Tensor conv1d_gelu_time_major(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding);
Tensor attention(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset = 0, Tensor* weights = nullptr);
// Encoder self-attention of `batch` sequences from packed [batch·T, 3D] projections.
Tensor self_attention(Backend& be, const Tensor& qkv, int batch, int n_heads);
Tensor cached_attention(Backend& be, const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths,
                        int n_new, int n_heads);
// cached_attention(norm_linear_packed(x, ...), ...), which a backend may fuse (one-row steps).
Tensor norm_cached_attention(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                             std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& cache_k,
                             Tensor& cache_v, const Tensor& lengths, int n_new, int n_heads);
Tensor cross_attention(Backend& be, const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                       std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor* weights = nullptr);
Tensor embedding(Backend& be, const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths,
                 int n_new);
// The k best filtered tokens of each row of f32 logits [rows, vocab] (core/token_select.h):
// writes i32 [rows, k, 2] into `out` (allocated by the caller on the backend's device).
void select_tokens(Backend& be, const Tensor& logits, const Tensor& spec, int k, Tensor& out);
// select_tokens, then each row's best token fed back into the spec's row summaries and the
// next step's i32 `inputs` (lengths | row_window | tokens, one token per row):
// Backend::select_and_feed.
void select_and_feed(Backend& be, const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs);
// norm_linear(x, gamma, beta, w) to f32 logits (returned), then select_and_feed on them:
// Backend::logits_select_and_feed, which may do both in one launch.
Tensor logits_select_and_feed(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& w,
                              Tensor& spec, int k, Tensor& out, Tensor& inputs);
// y = xᵀ for a 2-D activation.
Tensor transpose(Backend& be, const Tensor& x);
// x stored as `dtype` on the backend (x itself when it already is).
Tensor cast(Backend& be, const Tensor& x, DType dtype);

}  // namespace hark::ops
