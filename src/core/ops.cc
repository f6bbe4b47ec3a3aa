#include "core/ops.h"

#include <string>

#include "core/token_select.h"

namespace hark::ops {
namespace {

[[noreturn]] void shape_error(const char* op, const std::string& what) {
  throw Error(ErrorCode::Internal, std::string("[") + op + "] " + what);
}

// Activations must be in the backend's activation dtype (fp32 on the CPU).
void require_act(const char* op, const Backend& be, const Tensor& t, const char* name) {
  if (t.dtype() != be.act_dtype())
    shape_error(op, std::string(name) + " must be " + dtype_name(be.act_dtype()) + ", got " + t.describe());
}

void require_i32(const char* op, const Tensor& t, int64_t n, const char* name) {
  if (t.dtype() != DType::I32 || t.numel() < n)
    shape_error(op, std::string(name) + " must be i32 with at least " + std::to_string(n) + " values, got " +
                        t.describe());
}

void check_linear(const Tensor& x, const Tensor& w, const Tensor* bias) {
  if (w.rank() != 2 || x.dim(-1) != w.dim(1)) shape_error("linear", "input " + x.describe() + " vs weight " + w.describe());
  if (bias && bias->numel() != w.dim(0)) shape_error("linear", "bias " + bias->describe() + " vs weight " + w.describe());
}

// The output of a packed product, after checking every part: x's shape with ΣNᵢ columns.
Shape packed_output(const Backend& be, const Tensor& x, std::span<const Tensor* const> ws,
                    std::span<const Tensor* const> biases) {
  require_act("linear", be, x, "input");
  if (ws.empty() || ws.size() != biases.size()) shape_error("linear", "packed weights and biases do not pair up");
  int64_t n = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    check_linear(x, *ws[i], biases[i]);
    if (ws[i]->dtype() != ws[0]->dtype()) shape_error("linear", "packed weights must share one dtype");
    n += ws[i]->dim(0);
  }
  Shape out_shape = x.shape();
  out_shape.back() = n;
  return out_shape;
}

}  // namespace

Tensor linear(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias, Epilogue epilogue,
              std::optional<DType> out_dtype) {
  require_act("linear", be, x, "input");
  check_linear(x, w, bias);
  if (epilogue == Epilogue::Residual) shape_error("linear", "use linear_residual for a residual epilogue");
  const DType dt = out_dtype.value_or(be.act_dtype());
  if (dt != be.act_dtype() && dt != DType::F32) shape_error("linear", std::string("cannot write ") + dtype_name(dt));
  if (dt != be.act_dtype() && epilogue != Epilogue::None) shape_error("linear", "an f32 output takes no epilogue");
  Shape out_shape = x.shape();
  out_shape.back() = w.dim(0);
  Tensor y = be.alloc(out_shape, dt);
  be.linear(x, w, bias, y, epilogue);
  return y;
}

void linear_residual(Backend& be, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& residual) {
  require_act("linear", be, x, "input");
  require_act("linear", be, residual, "residual");
  check_linear(x, w, bias);
  if (residual.numel() != x.numel() / x.dim(-1) * w.dim(0))
    shape_error("linear", "residual " + residual.describe() + " does not match the output of " + w.describe());
  be.linear(x, w, bias, residual, Epilogue::Residual);
}

Tensor linear_packed(Backend& be, const Tensor& x, std::span<const Tensor* const> ws,
                     std::span<const Tensor* const> biases) {
  Tensor y = be.alloc(packed_output(be, x, ws, biases), be.act_dtype());
  be.linear_packed(x, ws, biases, y);
  return y;
}

Tensor layer_norm(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  require_act("layer_norm", be, x, "input");
  if (gamma.numel() != x.dim(-1) || beta.numel() != x.dim(-1))
    shape_error("layer_norm", "input " + x.describe() + " vs gamma " + gamma.describe());
  Tensor y = be.alloc(x.shape(), be.act_dtype());
  be.layer_norm(x, gamma, beta, eps, y);
  return y;
}

namespace {

void check_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  if (gamma.numel() != x.dim(-1) || beta.numel() != x.dim(-1))
    shape_error("layer_norm", "input " + x.describe() + " vs gamma " + gamma.describe());
}

}  // namespace

Tensor norm_linear(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& w,
                   const Tensor* bias, Epilogue epilogue, std::optional<DType> out_dtype) {
  require_act("linear", be, x, "input");
  check_norm(x, gamma, beta);
  check_linear(x, w, bias);
  if (epilogue == Epilogue::Residual) shape_error("linear", "a norm's product takes no residual epilogue");
  const DType dt = out_dtype.value_or(be.act_dtype());
  if (dt != be.act_dtype() && (dt != DType::F32 || epilogue != Epilogue::None))
    shape_error("linear", std::string("cannot write ") + dtype_name(dt) + " with this epilogue");
  Shape out_shape = x.shape();
  out_shape.back() = w.dim(0);
  Tensor y = be.alloc(out_shape, dt);
  be.norm_linear(x, gamma, beta, 1e-5f, w, bias, y, epilogue);
  return y;
}

Tensor norm_linear_packed(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          std::span<const Tensor* const> ws, std::span<const Tensor* const> biases) {
  check_norm(x, gamma, beta);
  Tensor y = be.alloc(packed_output(be, x, ws, biases), be.act_dtype());
  be.norm_linear_packed(x, gamma, beta, 1e-5f, ws, biases, y);
  return y;
}

void gelu(Backend& be, Tensor& x) {
  require_act("gelu", be, x, "input");
  be.gelu(x);
}

void add(Backend& be, Tensor& x, const Tensor& y) {
  require_act("add", be, x, "x");
  if (y.numel() != x.numel() && (y.numel() != x.dim(-1)))
    shape_error("add", "cannot add " + y.describe() + " to " + x.describe());
  be.add(x, y);
}

Tensor conv1d(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding) {
  require_act("conv1d", be, x, "input");
  if (x.rank() != 2 || w.rank() != 3 || w.dim(1) != x.dim(0) || b.numel() != w.dim(0))
    shape_error("conv1d", "input " + x.describe() + " weight " + w.describe() + " bias " + b.describe());
  const int64_t t_out = (x.dim(1) + 2 * padding - w.dim(2)) / stride + 1;
  Tensor y = be.alloc({w.dim(0), t_out}, be.act_dtype());
  be.conv1d(x, w, b, stride, padding, y);
  return y;
}

Tensor conv1d_gelu_time_major(Backend& be, const Tensor& x, const Tensor& w, const Tensor& b, int stride,
                              int padding) {
  require_act("conv1d", be, x, "input");
  if (x.rank() != 2 || w.rank() != 3 || w.dim(1) != x.dim(1) || b.numel() != w.dim(0))
    shape_error("conv1d", "time-major input " + x.describe() + " weight " + w.describe() + " bias " + b.describe());
  const int64_t t_out = (x.dim(0) + 2 * padding - w.dim(2)) / stride + 1;
  Tensor y = be.alloc({t_out, w.dim(0)}, be.act_dtype());
  be.conv1d_gelu_time_major(x, w, b, stride, padding, y);
  return y;
}

Tensor attention(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                 int64_t causal_offset, Tensor* weights) {
  require_act("attention", be, q, "q");
  if (q.rank() != 2 || k.rank() != 2 || v.rank() != 2 || q.dim(1) != k.dim(1) || k.shape() != v.shape() ||
      q.dim(1) % n_heads != 0 || k.dtype() != v.dtype() || (k.dtype() != q.dtype() && k.dtype() != be.cross_kv_dtype()))
    shape_error("attention", "q " + q.describe() + " k " + k.describe() + " v " + v.describe());
  if (weights && (weights->numel() != n_heads * q.dim(0) * k.dim(0) || weights->dtype() != DType::F32))
    shape_error("attention", "weights buffer " + weights->describe() + " has the wrong size");
  Tensor out = be.alloc(q.shape(), be.act_dtype());
  be.attention(q, k, v, n_heads, causal, causal_offset, out, weights);
  return out;
}

Tensor self_attention(Backend& be, const Tensor& qkv, int batch, int n_heads) {
  require_act("attention", be, qkv, "qkv");
  if (qkv.rank() != 2 || batch <= 0 || qkv.dim(0) % batch != 0 || qkv.dim(1) % (3 * n_heads) != 0)
    shape_error("attention", "packed qkv " + qkv.describe() + " for batch " + std::to_string(batch));
  Tensor out = be.alloc({qkv.dim(0), qkv.dim(1) / 3}, be.act_dtype());
  be.self_attention(qkv, batch, n_heads, out);
  return out;
}

namespace {

// The shapes cached_attention takes (qkv's shape, of the tensor or of the one to be made).
void check_cached(const Backend& be, const Shape& qkv, const Tensor& cache_k, const Tensor& cache_v,
                  const Tensor& lengths, int n_new, int n_heads) {
  require_act("attention", be, cache_k, "cache_k");
  require_act("attention", be, cache_v, "cache_v");
  const std::string what = "packed qkv of " + std::to_string(qkv.size() == 2 ? qkv[0] : -1) + " x " +
                           std::to_string(qkv.empty() ? -1 : qkv.back()) + " vs cache " + cache_k.describe();
  if (qkv.size() != 2 || n_new <= 0 || n_heads <= 0 || qkv[0] % n_new != 0 || qkv[1] % 3 != 0)
    shape_error("attention", what);
  const int64_t d = qkv[1] / 3;
  if (d % n_heads != 0 || cache_k.shape() != cache_v.shape() || cache_k.rank() != 2 || cache_k.dim(1) != d)
    shape_error("attention", what);
  const int64_t rows = qkv[0] / n_new;
  if (cache_k.dim(0) % rows != 0) shape_error("attention", "cache " + cache_k.describe() + " for " + std::to_string(rows) + " rows");
  require_i32("attention", lengths, rows, "lengths");
}

}  // namespace

Tensor cached_attention(Backend& be, const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths,
                        int n_new, int n_heads) {
  require_act("attention", be, qkv, "qkv");
  check_cached(be, qkv.shape(), cache_k, cache_v, lengths, n_new, n_heads);
  Tensor out = be.alloc({qkv.dim(0), qkv.dim(1) / 3}, be.act_dtype());
  be.cached_attention(qkv, cache_k, cache_v, lengths, n_new, n_heads, out);
  return out;
}

Tensor norm_cached_attention(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                             std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& cache_k,
                             Tensor& cache_v, const Tensor& lengths, int n_new, int n_heads) {
  check_norm(x, gamma, beta);
  const Shape qkv_shape = packed_output(be, x, ws, biases);
  check_cached(be, qkv_shape, cache_k, cache_v, lengths, n_new, n_heads);
  Tensor qkv = be.alloc(qkv_shape, be.act_dtype());
  Tensor out = be.alloc({qkv_shape[0], qkv_shape[1] / 3}, be.act_dtype());
  be.norm_cached_attention(x, gamma, beta, 1e-5f, ws, biases, qkv, cache_k, cache_v, lengths, n_new, n_heads, out);
  return out;
}

Tensor cross_attention(Backend& be, const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                       std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor* weights) {
  require_act("attention", be, q, "q");
  if (!kv.kv) shape_error("attention", "no cross K/V");
  if (kv.kv->dtype() != be.cross_kv_dtype()) require_act("attention", be, *kv.kv, "cross K/V");
  const int64_t d = q.dim(1);
  if (q.rank() != 2 || n_new <= 0 || q.dim(0) % n_new != 0 || d % n_heads != 0 || kv.rows_per_seq <= 0 ||
      kv.kv->dim(0) % kv.rows_per_seq != 0 || kv.k_col + d > kv.kv->dim(1) || kv.v_col + d > kv.kv->dim(1))
    shape_error("attention", "q " + q.describe() + " vs packed K/V " + kv.kv->describe());
  if (kv.panel < 0 || (kv.panel > 0 && (kv.k_col % kv.panel || kv.v_col % kv.panel || kv.kv->dim(1) % kv.panel)))
    shape_error("attention", "panels of " + std::to_string(kv.panel) + " columns in packed K/V " + kv.kv->describe());
  const int64_t rows = q.dim(0) / n_new, seqs = kv.kv->dim(0) / kv.rows_per_seq;
  require_i32("attention", row_seq, rows, "row_seq");
  if (static_cast<int64_t>(row_seq_host.size()) != rows) shape_error("attention", "row_seq_host size");
  for (int32_t s : row_seq_host)
    if (s < 0 || s >= seqs) shape_error("attention", "row reads sequence " + std::to_string(s) + " of " + std::to_string(seqs));
  if (weights && (weights->numel() != rows * n_heads * n_new * kv.rows_per_seq || weights->dtype() != DType::F32))
    shape_error("attention", "weights buffer " + weights->describe() + " has the wrong size");
  Tensor out = be.alloc(q.shape(), be.act_dtype());
  be.cross_attention(q, kv, row_seq, row_seq_host, n_new, n_heads, out, weights);
  return out;
}

Tensor embedding(Backend& be, const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths,
                 int n_new) {
  if (table.rank() != 2 || positions.rank() != 2 || positions.dim(1) != table.dim(1) || n_new <= 0 ||
      ids.numel() % n_new != 0)
    shape_error("embedding", "table " + table.describe() + " positions " + positions.describe());
  require_i32("embedding", ids, ids.numel(), "ids");
  require_i32("embedding", lengths, ids.numel() / n_new, "lengths");
  Tensor out = be.alloc({ids.numel(), table.dim(1)}, be.act_dtype());
  be.embedding(table, positions, ids, lengths, n_new, out);
  return out;
}

void select_tokens(Backend& be, const Tensor& logits, const Tensor& spec, int k, Tensor& out) {
  if (logits.rank() != 2 || logits.dtype() != DType::F32) shape_error("select_tokens", "logits " + logits.describe());
  const int rows = static_cast<int>(logits.dim(0)), vocab = static_cast<int>(logits.dim(1));
  require_i32("select_tokens", spec, select_spec_size(vocab, rows), "spec");
  if (k < 1 || k > 16) shape_error("select_tokens", "k must be 1..16, got " + std::to_string(k));
  require_i32("select_tokens", out, static_cast<int64_t>(rows) * k * 2, "out");
  be.select_tokens(logits, spec, k, out);
}

void select_and_feed(Backend& be, const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) {
  if (logits.rank() != 2 || logits.dtype() != DType::F32) shape_error("select_and_feed", "logits " + logits.describe());
  const int rows = static_cast<int>(logits.dim(0)), vocab = static_cast<int>(logits.dim(1));
  require_i32("select_and_feed", spec, select_spec_size(vocab, rows), "spec");
  if (k < 1 || k > 16) shape_error("select_and_feed", "k must be 1..16, got " + std::to_string(k));
  require_i32("select_and_feed", out, static_cast<int64_t>(rows) * k * 2, "out");
  require_i32("select_and_feed", inputs, 3LL * rows, "inputs");
  be.select_and_feed(logits, spec, k, out, inputs);
}

Tensor logits_select_and_feed(Backend& be, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& w,
                              Tensor& spec, int k, Tensor& out, Tensor& inputs) {
  require_act("logits_select_and_feed", be, x, "input");
  check_norm(x, gamma, beta);
  check_linear(x, w, nullptr);
  Shape shape = x.shape();
  shape.back() = w.dim(0);
  Tensor logits = be.alloc(shape, DType::F32);
  if (logits.rank() != 2) shape_error("logits_select_and_feed", "logits " + logits.describe());
  const int rows = static_cast<int>(logits.dim(0)), vocab = static_cast<int>(logits.dim(1));
  require_i32("logits_select_and_feed", spec, select_spec_size(vocab, rows), "spec");
  if (k < 1 || k > 16) shape_error("logits_select_and_feed", "k must be 1..16, got " + std::to_string(k));
  require_i32("logits_select_and_feed", out, static_cast<int64_t>(rows) * k * 2, "out");
  require_i32("logits_select_and_feed", inputs, 3LL * rows, "inputs");
  be.logits_select_and_feed(x, gamma, beta, 1e-5f, w, logits, spec, k, out, inputs);
  return logits;
}

Tensor transpose(Backend& be, const Tensor& x) {
  require_act("transpose", be, x, "input");
  if (x.rank() != 2) shape_error("transpose", "expected a 2-D tensor, got " + x.describe());
  Tensor y = be.alloc({x.dim(1), x.dim(0)}, be.act_dtype());
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
