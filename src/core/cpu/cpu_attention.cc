// The attention family of the CPU backend. One strided kernel (cpu_attend) serves the
// plain op, the encoder's packed Q/K/V, the decoder's KV cache and its cross-attention.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu/attention_q8.h"
#include "core/cpu/attention_rows.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/gemm.h"
#include "core/cpu/vector_math.h"

namespace hark {
namespace {

// The sgemm form: scores and sums as two products per (head, block of query rows).
void gemm_attend(ThreadPool& pool, const AttentionRows& a, int n_heads, int64_t hd, bool causal, int64_t causal_offset,
                 float* wp) {
  const int64_t tq = a.tq, tk = a.tk;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Tasks are (head, block of query rows), each run start to finish on one thread with its
  // own score rows: heads alone already balance the pool for the usual 6-20 heads, and the
  // row blocks keep every thread busy when heads are fewer than threads or do not divide.
  const int64_t threads = pool.size();
  const int64_t row_blocks =
      tq < 64 ? 1 : std::min<int64_t>((tq + 63) / 64, (2 * threads + n_heads - 1) / n_heads);
  const int64_t rows_per_block = (tq + row_blocks - 1) / row_blocks;
  pool.parallel_for(n_heads * row_blocks, [&](int64_t begin, int64_t end) {
    // Per-thread scratch, kept between calls: a fresh 4 MB buffer per encoder layer would
    // cost page faults every time.
    thread_local std::vector<float> scores;
    if (scores.size() < static_cast<size_t>(rows_per_block * tk)) scores.resize(rows_per_block * tk);
    float* s = scores.data();
    for (int64_t task = begin; task < end; ++task) {
      const int64_t h = task / row_blocks;
      const int64_t r0 = (task % row_blocks) * rows_per_block, r1 = std::min(tq, r0 + rows_per_block);
      if (r0 >= r1) continue;
      const int64_t rows = r1 - r0;
      // scores = scale · Q_h K_hᵀ; the heads are column blocks.
      sgemm_serial(Trans::No, Trans::Yes, rows, tk, hd, scale, a.q + r0 * a.ldq + h * hd, a.ldq, a.k + h * hd, a.ldk,
                   0.0f, s, tk);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t visible = causal ? std::min<int64_t>(tk, r0 + i + causal_offset + 1) : tk;
        softmax_row(s + i * tk, visible, tk);
      }
      if (wp) std::memcpy(wp + (h * tq + r0) * tk, s, rows * tk * sizeof(float));
      sgemm_serial(Trans::No, Trans::No, rows, hd, tk, 1.0f, s, tk, a.v + h * hd, a.ldv, 0.0f,
                   a.out + r0 * a.ldo + h * hd, a.ldo);
    }
  });
}

// `n` values of a K or V row starting `offset` values into `base` (f16 or a 32-block type,
// offset a whole number of blocks), widened to fp32.
void widen_values(const void* base, DType dtype, int64_t offset, int64_t n, float* out) {
  convert_to_f32(static_cast<const char*>(base) + dtype_nbytes(dtype, offset), dtype, out, n);
}

// Attention over cached rows in any storage: the direct loops for a few query rows, else
// sgemm (compact K/V widened to fp32 first, for the rare long query).
void attend_cached(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t hd, bool causal, int64_t causal_offset,
                   float* weights) {
  const bool few = a.tq <= kAttentionRowsMax;
  if (a.kv_dtype == DType::Q8_0 && few && attention_q8_supported(hd))
    return attention_q8(pool, a, n_heads, hd, causal, causal_offset, weights);
  if (a.kv_dtype != DType::Q8_0 && few && attention_rows_supported(hd))
    return attention_rows(pool, a, n_heads, hd, causal, causal_offset, weights);
  if (a.kv_dtype == DType::F32) {
    const AttentionRows rows{a.q, a.ldq, static_cast<const float*>(a.k), a.ldk, static_cast<const float*>(a.v), a.ldv,
                             a.out, a.ldo, a.tq, a.tk};
    return gemm_attend(pool, rows, n_heads, hd, causal, causal_offset, weights);
  }
  const int64_t d = n_heads * hd;
  Tensor kf = Tensor::empty({a.tk, d}), vf = Tensor::empty({a.tk, d});
  for (int64_t t = 0; t < a.tk; ++t) {
    widen_values(a.k, a.kv_dtype, t * a.ldk, d, kf.data<float>() + t * d);
    widen_values(a.v, a.kv_dtype, t * a.ldv, d, vf.data<float>() + t * d);
  }
  const AttentionRows rows{a.q, a.ldq, kf.data<float>(), d, vf.data<float>(), d, a.out, a.ldo, a.tq, a.tk};
  gemm_attend(pool, rows, n_heads, hd, causal, causal_offset, weights);
}

// The address of value `offset` of a K/V tensor of any storage (offset: whole blocks).
const void* value_at(const Tensor& t, int64_t offset) {
  return static_cast<const char*>(t.raw()) + dtype_nbytes(t.dtype(), offset);
}

}  // namespace

void cpu_attend(ThreadPool& pool, const AttentionRows& a, int n_heads, int64_t hd, bool causal, int64_t causal_offset,
                float* weights) {
  attend_cached(pool, CachedRows{a.q, a.ldq, a.k, a.ldk, a.v, a.ldv, DType::F32, a.out, a.ldo, a.tq, a.tk}, n_heads,
                hd, causal, causal_offset, weights);
}

void CpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                           int64_t causal_offset, Tensor& out, Tensor* weights) {
  const int64_t d = q.dim(1);
  if (k.dtype() != v.dtype())
    throw Error(ErrorCode::Internal, "[cpu] attention needs K and V of one dtype, got " + k.describe() + " and " +
                                         v.describe());
  const CachedRows a{q.data<float>(), d, k.raw(), d, v.raw(), d, k.dtype(), out.data<float>(), d, q.dim(0), k.dim(0)};
  attend_cached(pool_, a, n_heads, d / n_heads, causal, causal_offset, weights ? weights->data<float>() : nullptr);
}

void CpuBackend::self_attention(const Tensor& qkv, int batch, int n_heads, Tensor& out) {
  const int64_t d = out.dim(1), t = qkv.dim(0) / batch;
  for (int b = 0; b < batch; ++b) {
    const float* base = qkv.data<float>() + b * t * 3 * d;
    AttentionRows a{base, 3 * d, base + d, 3 * d, base + 2 * d, 3 * d, out.data<float>() + b * t * d, d, t, t};
    cpu_attend(pool_, a, n_heads, d / n_heads, false, 0, nullptr);
  }
}

void CpuBackend::cached_attention(const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths,
                                  int n_new, int n_heads, Tensor& out) {
  const int64_t d = out.dim(1), rows = qkv.dim(0) / n_new, ctx = cache_k.dim(0) / rows;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t past = lengths.data<int32_t>()[r];
    if (past < 0 || past + n_new > ctx) throw Error(ErrorCode::Internal, "[attention] KV cache overflow");
    const float* src = qkv.data<float>() + r * n_new * 3 * d;
    float* kc = cache_k.data<float>() + (r * ctx + past) * d;
    float* vc = cache_v.data<float>() + (r * ctx + past) * d;
    for (int i = 0; i < n_new; ++i) {
      std::memcpy(kc + i * d, src + i * 3 * d + d, d * sizeof(float));
      std::memcpy(vc + i * d, src + i * 3 * d + 2 * d, d * sizeof(float));
    }
    AttentionRows a{src, 3 * d, cache_k.data<float>() + r * ctx * d, d, cache_v.data<float>() + r * ctx * d, d,
                    out.data<float>() + r * n_new * d, d, n_new, past + n_new};
    cpu_attend(pool_, a, n_heads, d / n_heads, true, past, nullptr);
  }
}

void CpuBackend::cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                                 std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                                 Tensor* weights) {
  (void)row_seq;
  const int64_t d = q.dim(1), rows = q.dim(0) / n_new, tk = kv.rows_per_seq, ld = kv.kv->dim(1);
  auto attend = [&](int64_t r0, int64_t r1, float* w) {
    // The K/V may be kept in f16 or q8_0 (cross_kv_dtype()); columns are whole blocks.
    const int64_t base = row_seq_host[r0] * tk * ld;
    const CachedRows a{q.data<float>() + r0 * n_new * d, d, value_at(*kv.kv, base + kv.k_col), ld,
                       value_at(*kv.kv, base + kv.v_col), ld, kv.kv->dtype(), out.data<float>() + r0 * n_new * d, d,
                       (r1 - r0) * n_new, tk};
    attend_cached(pool_, a, n_heads, d / n_heads, false, 0, w);
  };
  if (!weights) {
    // Rows that read the same sequence (the beams of one window) go through one call, so
    // the cross K/V is read once per step instead of once per beam.
    for (int64_t r0 = 0; r0 < rows;) {
      int64_t r1 = r0 + 1;
      while (r1 < rows && row_seq_host[r1] == row_seq_host[r0]) ++r1;
      attend(r0, r1, nullptr);
      r0 = r1;
    }
    return;
  }
  // Captured weights are laid out [row, head, token, frame]: one call per row.
  Tensor host = weights->device() == Device::Cpu ? *weights : Tensor::empty(weights->shape(), DType::F32);
  const int64_t per_row = n_heads * n_new * tk;
  for (int64_t r = 0; r < rows; ++r) attend(r, r + 1, host.data<float>() + r * per_row);
}

}  // namespace hark
