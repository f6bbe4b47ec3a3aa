#include "core/ops.h"

#include <string>

namespace hark::ops {
namespace {

[[noreturn]] void shape_error(const char* op, const std::string& what) {
  throw Error(ErrorCode::Internal, std::string("[") + op + "] " + what);
}

void require_f32(const char* op, const Tensor& t, const char* name) {
  if (t.dtype() != DType::F32) shape_error(op, std::string(name) + " must be f32, got " + t.describe());
}

}  // namespace

Tensor linear(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias) {
  require_f32("linear", x, "input");
  if (w.rank() != 2 || x.dim(-1) != w.dim(1)) shape_error("linear", "input " + x.describe() + " vs weight " + w.describe());
  if (bias && bias->numel() != w.dim(0)) shape_error("linear", "bias " + bias->describe() + " vs weight " + w.describe());
  Shape out_shape = x.shape();
  out_shape.back() = w.dim(0);
  Tensor y = be.alloc(out_shape);
  be.linear(x, w, bias, y);
  return y;
}

Tensor layer_norm(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  require_f32("layer_norm", x, "input");
  if (gamma.numel() != x.dim(-1) || beta.numel() != x.dim(-1))
    shape_error("layer_norm", "input " + x.describe() + " vs gamma " + gamma.describe());
  Tensor y = be.alloc(x.shape());
  be.layer_norm(x, gamma, beta, eps, y);
  return y;
}

void gelu(Backend& be, Tensor& x) {
  require_f32("gelu", x, "input");
  be.gelu(x);
}

void add(Backend& be, Tensor& x, const Tensor& y) {
  require_f32("add", x, "x");
  if (y.numel() != x.numel() && (y.numel() != x.dim(-1)))
    shape_error("add", "cannot add " + y.describe() + " to " + x.describe());
  be.add(x, y);
}

Tensor conv1d(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding) {
  require_f32("conv1d", x, "input");
  if (x.rank() != 2 || w.rank() != 3 || w.dim(1) != x.dim(0) || b.numel() != w.dim(0))
    shape_error("conv1d", "input " + x.describe() + " weight " + w.describe() + " bias " + b.describe());
  const int64_t t_out = (x.dim(1) + 2 * padding - w.dim(2)) / stride + 1;
  Tensor y = be.alloc({w.dim(0), t_out});
  be.conv1d(x, w, b, stride, padding, y);
  return y;
}

Tensor attention(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset, Tensor* weights) {
  if (q.rank() != 2 || k.rank() != 2 || v.rank() != 2 || q.dim(1) != k.dim(1) || k.shape() != v.shape() ||
      q.dim(1) % n_heads != 0)
    shape_error("attention", "q " + q.describe() + " k " + k.describe() + " v " + v.describe());
  if (weights && (weights->numel() != n_heads * q.dim(0) * k.dim(0)))
    shape_error("attention", "weights buffer " + weights->describe() + " has the wrong size");
  Tensor out = be.alloc(q.shape());
  be.attention(q, k, v, n_heads, causal, causal_offset, out, weights);
  return out;
}

Tensor embedding(Backend& be, const Tensor& table, std::span<const int32_t> ids, const Tensor* positions,
                 int64_t first_position) {
  for (int32_t id : ids) {
    if (id < 0 || id >= table.dim(0))
      throw Error(ErrorCode::InvalidArgument, "[embedding] token id " + std::to_string(id) + " outside the vocabulary of " +
                                                  std::to_string(table.dim(0)));
  }
  if (positions && first_position + static_cast<int64_t>(ids.size()) > positions->dim(0))
    throw Error(ErrorCode::InvalidArgument, "[embedding] sequence of " + std::to_string(first_position + ids.size()) +
                                                " tokens exceeds the model's text context of " +
                                                std::to_string(positions->dim(0)));
  Tensor out = be.alloc({static_cast<int64_t>(ids.size()), table.dim(1)});
  be.embedding(table, ids, positions, first_position, out);
  return out;
}

Tensor transpose(Backend& be, const Tensor& x) {
  require_f32("transpose", x, "input");
  if (x.rank() != 2) shape_error("transpose", "expected a 2-D tensor, got " + x.describe());
  Tensor y = be.alloc({x.dim(1), x.dim(0)});
  be.transpose(x, y);
  return y;
}

Tensor cast(Backend& be, const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor y = be.alloc(x.shape(), dtype);
  be.copy(x, y);
  return y;
}

}  // namespace hark::ops
