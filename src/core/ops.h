// Checked front ends over the Backend: each validates shapes and dtypes, allocates the
// output on the backend's device, then dispatches. Model code calls only these.
#pragma once

#include "core/backend.h"

namespace hark::ops {

Tensor linear(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias);
Tensor layer_norm(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);
void gelu(Backend& be, Tensor& x);
void add(Backend& be, Tensor& x, const Tensor& y);
Tensor conv1d(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding);
Tensor attention(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset = 0, Tensor* weights = nullptr);
Tensor embedding(Backend& be, const Tensor& table, std::span<const int32_t> ids, const Tensor* positions = nullptr,
                 int64_t first_position = 0);
// y = xᵀ for a 2-D activation.
Tensor transpose(Backend& be, const Tensor& x);
// x stored as `dtype` on the backend (x itself when it already is).
Tensor cast(Backend& be, const Tensor& x, DType dtype);

}  // namespace hark::ops
