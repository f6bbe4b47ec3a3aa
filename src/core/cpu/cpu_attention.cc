// The attention family of the CPU backend. One strided kernel (cpu_attend) serves the
// plain op, the encoder's packed Q/K/V, the decoder's KV cache and its cross-attention.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu/attention_q8.h"
#include "core/cpu/attention_rows.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/gemm.h"
#include "core/cpu/vector_math.h"

namespace hark {

namespace {

// One attention call's (head, block of query rows) tasks.
struct AttendPlan {
  int64_t row_blocks = 1, rows_per_block = 0;
  bool few = false;            // (head group, query row) tasks of direct loops
  bool rows_together = false;  // few, every row over the same keys: (head, run of rows) tasks
  RowRuns runs{1, 0};          // of a rows_together call
  int group_heads = 1;         // heads a (head group, query row) task covers
};

AttendPlan plan_for(const AttentionRows& a, int n_heads, int64_t threads) {
  AttendPlan p;
  p.row_blocks = a.tq < 64 ? 1 : std::min<int64_t>((a.tq + 63) / 64, (2 * threads + n_heads - 1) / n_heads);
  p.rows_per_block = (a.tq + p.row_blocks - 1) / p.row_blocks;
  return p;
}

// Head h, query rows [r0, r1) of one call, with the score rows in `s`.
void attend_block(const AttentionRows& a, int64_t h, int64_t r0, int64_t r1, int64_t hd, float scale, bool causal,
                  int64_t causal_offset, int n_heads, float* s, float* wp) {
  const int64_t tk = a.tk, rows = r1 - r0;
  // scores = scale · Q_h K_hᵀ; the heads are column blocks.
  const int64_t hs = a.head_stride(hd);
  sgemm_serial(Trans::No, Trans::Yes, rows, tk, hd, scale, a.q + r0 * a.ldq + h * hd, a.ldq, a.k + h * hs, a.ldk, 0.0f,
               s, tk);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t visible = causal ? std::min<int64_t>(tk, r0 + i + causal_offset + 1) : tk;
    softmax_row(s + i * tk, visible, tk);
  }
  (void)n_heads;
  if (wp) std::memcpy(wp + (h * a.tq + r0) * tk, s, rows * tk * sizeof(float));
  sgemm_serial(Trans::No, Trans::No, rows, hd, tk, 1.0f, s, tk, a.v + h * hs, a.ldv, 0.0f, a.out + r0 * a.ldo + h * hd,
               a.ldo);
}

// Queries per call up to which each (head, query row) is one task of direct loops
// (attention_head_set_f32) instead of sgemm calls: decoder steps (one row, or a few beams)
// and short prompts. Their cross-attention is bound by reading every row's window once.
constexpr int64_t kFewQueries = 8;

// Heads [h, h + heads) of query row i of a few-query call; `s` holds a score row per head.
void attend_head_row(const AttentionRows& a, int64_t h, int heads, int64_t i, int64_t hd, bool causal,
                     int64_t causal_offset, float* s, float* wp) {
  const int64_t tk = a.tk, visible = causal ? std::min<int64_t>(tk, i + causal_offset + 1) : tk;
  const int64_t hs = a.head_stride(hd);
  attention_head_set_f32(a.q + i * a.ldq + h * hd, a.k + h * hs, a.ldk, a.v + h * hs, a.ldv, visible, hd,
                         HeadSet{heads, hd, hs, hd}, s, tk, a.out + i * a.ldo + h * hd);
  if (wp)
    for (int g = 0; g < heads; ++g) store_weights_row(s + g * tk, h + g, i, a.tq, tk, visible, wp);
}

// Head h of query rows [i0, i1) of a few-query call whose rows all see the same keys (a
// window's beams in the cross-attention): each key's slice is read once for those rows.
void attend_head_rows(const AttentionRows& a, int64_t h, int64_t i0, int64_t i1, int64_t hd, float* s, float* wp) {
  const int64_t tk = a.tk, hs = a.head_stride(hd);
  attention_head_set_f32(a.q + i0 * a.ldq + h * hd, a.k + h * hs, a.ldk, a.v + h * hs, a.ldv, tk, hd,
                         beam_rows(i1 - i0, a.ldq, a.ldo), s, tk, a.out + i0 * a.ldo + h * hd);
  if (wp)
    for (int64_t i = i0; i < i1; ++i) store_weights_row(s + (i - i0) * tk, h, i, a.tq, tk, tk, wp);
}

// Heads per few-query task. A head's slice of a key row is a few cache lines, and the rows
// of one layer's cross K/V lie a whole row of every layer's K and V apart (WhisperModel's
// one product), so each row is a new page the hardware prefetchers do not follow; adjacent
// heads read together make each visit one longer run. Fewer, larger tasks balance the pool
// worse, so heads are grouped only while a call set still has about four tasks a thread
// (a batched step of several windows; one window alone keeps a task a head while it has at
// most four heads a thread: tiny and base on two threads, not small or larger).
int group_heads_for(int64_t few_rows, int64_t other_tasks, int n_heads, int64_t threads) {
  if (few_rows <= 0) return 1;
  const int64_t wanted = std::max<int64_t>(1, 4 * threads - other_tasks);  // tasks still to make
  const int64_t groups = std::clamp<int64_t>((wanted + few_rows - 1) / few_rows, 1, n_heads);
  const int64_t heads = (n_heads + groups - 1) / groups;
  return static_cast<int>(heads);
}

// check_attention_spans for a few-query call, whose K and V may lie in head panels.
void check_few_spans(const AttentionRows& a, int n_heads, int64_t hd) {
  const int64_t hs = a.head_stride(hd);
  if (hs == hd)
    return check_attention_spans(a.q, a.ldq, a.k, a.ldk, a.v, a.ldv, a.out, a.ldo, a.tq, a.tk, n_heads * hd);
  check_strided(a.q, a.tq, a.ldq, n_heads * hd);
  check_strided(a.out, a.tq, a.ldo, n_heads * hd);
  if (a.tk > 0) {
    check_span(a.k, (n_heads - 1) * hs + (a.tk - 1) * a.ldk + hd);
    check_span(a.v, (n_heads - 1) * hs + (a.tk - 1) * a.ldv + hd);
  }
}

}  // namespace

void cpu_attend_many(ThreadPool& pool, std::span<const AttentionRows> calls, int n_heads, int64_t hd, bool causal,
                     std::span<const int64_t> causal_offsets, std::span<float* const> weights) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Tasks are (call, head, block of query rows), each run start to finish on one thread
  // with its own score rows: heads alone already balance the pool for the usual 6-20
  // heads, and the row blocks keep every thread busy when heads are fewer than threads or
  // do not divide. Every call of a decoder step (one per row or window) shares one
  // parallel loop, so the pool wakes once per layer instead of once per row.
  std::vector<AttendPlan> plans;
  std::vector<int64_t> first_task;
  int64_t tasks = 0, scratch = 0;
  // Few-query calls: tasks are (call, head group, query row), the rows of one group next to
  // each other so that a thread's second row finds the group's keys and values in its
  // cache; the group's size is the same for every call of the set (group_heads_for). A
  // call of several rows over the same keys (not causal: a window's beams) is a task a
  // head covering all its rows instead.
  const auto few = [&](const AttentionRows& a) { return a.tq <= kFewQueries && attention_rows_supported(hd); };
  const auto together = [&](const AttentionRows& a) { return few(a) && !causal && a.tq > 1; };
  int64_t few_rows = 0, together_tasks = 0;
  for (const AttentionRows& a : calls) {
    if (together(a))
      together_tasks += n_heads * shared_key_row_runs(a.tq, n_heads, pool.size()).runs;
    else if (few(a))
      few_rows += a.tq;
  }
  // K/V in head panels: a head a task, one sequential stream each (grouped heads would be
  // several streams a task, 2-3x slower there: BM_AttendMany). The loops prefetch a set's
  // heads as one run of a key row, which holds only for heads side by side or a set of one.
  const bool panels =
      std::any_of(calls.begin(), calls.end(), [&](const AttentionRows& a) { return a.head_stride(hd) > hd; });
  const int group_heads = panels ? 1 : group_heads_for(few_rows, together_tasks, n_heads, pool.size());
  for (const AttentionRows& a : calls) {
    int64_t tasks_of_call = 0;
    AttendPlan p = plan_for(a, n_heads, pool.size());
    p.few = few(a);
    p.rows_together = together(a);
    if (p.few) check_few_spans(a, n_heads, hd);
    if (p.rows_together) {
      p.runs = shared_key_row_runs(a.tq, n_heads, pool.size());
      tasks_of_call = n_heads * p.runs.runs;
      scratch = std::max(scratch, p.runs.per_run * a.tk);
    } else if (p.few) {
      p.group_heads = group_heads;
      tasks_of_call = (n_heads + group_heads - 1) / group_heads * a.tq;
      scratch = std::max(scratch, p.group_heads * a.tk);
    } else {
      tasks_of_call = n_heads * p.row_blocks;
      scratch = std::max(scratch, p.rows_per_block * a.tk);
    }
    plans.push_back(p);
    first_task.push_back(tasks);
    tasks += tasks_of_call;
  }
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    // Per-thread scratch, kept between calls: a fresh 4 MB buffer per encoder layer would
    // cost page faults every time.
    thread_local std::vector<float> scores;
    if (scores.size() < static_cast<size_t>(scratch)) scores.resize(scratch);
    size_t c = std::upper_bound(first_task.begin(), first_task.end(), begin) - first_task.begin() - 1;
    for (int64_t task = begin; task < end; ++task) {
      while (c + 1 < calls.size() && task >= first_task[c + 1]) ++c;
      const AttendPlan& p = plans[c];
      const int64_t local = task - first_task[c];
      const int64_t offset = causal_offsets.empty() ? 0 : causal_offsets[c];
      float* wp = weights.empty() ? nullptr : weights[c];
      if (p.rows_together) {
        const int64_t i0 = (local % p.runs.runs) * p.runs.per_run;
        attend_head_rows(calls[c], local / p.runs.runs, i0, std::min(calls[c].tq, i0 + p.runs.per_run), hd,
                         scores.data(), wp);
        continue;
      }
      if (p.few) {
        const int64_t h = (local / calls[c].tq) * p.group_heads;
        const int heads = static_cast<int>(std::min<int64_t>(p.group_heads, n_heads - h));
        attend_head_row(calls[c], h, heads, local % calls[c].tq, hd, causal, offset, scores.data(), wp);
        continue;
      }
      const int64_t h = local / p.row_blocks;
      const int64_t r0 = (local % p.row_blocks) * p.rows_per_block, r1 = std::min(calls[c].tq, r0 + p.rows_per_block);
      if (r0 >= r1) continue;
      attend_block(calls[c], h, r0, r1, hd, scale, causal, offset, n_heads, scores.data(), wp);
    }
  });
}

void cpu_attend(ThreadPool& pool, const AttentionRows& a, int n_heads, int64_t hd, bool causal, int64_t causal_offset,
                float* wp) {
  const int64_t offsets[] = {causal_offset};
  float* const weights[] = {wp};
  cpu_attend_many(pool, std::span(&a, 1), n_heads, hd, causal, offsets, std::span(weights, 1));
}

namespace {

// `n` values of a K or V row starting `offset` values into `base` (f16 or a 32-block type,
// offset a whole number of blocks), widened to fp32.
void widen_values(const void* base, DType dtype, int64_t offset, int64_t n, float* out) {
  convert_to_f32(static_cast<const char*>(base) + dtype_nbytes(dtype, offset), dtype, out, n);
}

// Attention over compact K/V (f16 or q8_0: the CPU's quantized modes keep the cross K/V so)
// and fp32 K/V alike: the direct loops for a few query rows, else the sgemm form (compact
// K/V widened to fp32 first, for the rare long query). The fp32 decoder paths below use
// cpu_attend_many instead (one parallel loop per layer for a batch of rows).
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
    return cpu_attend(pool, rows, n_heads, hd, causal, causal_offset, weights);
  }
  const int64_t d = n_heads * hd;
  Tensor kf = Tensor::empty({a.tk, d}), vf = Tensor::empty({a.tk, d});
  for (int64_t t = 0; t < a.tk; ++t) {
    widen_values(a.k, a.kv_dtype, t * a.ldk, d, kf.data<float>() + t * d);
    widen_values(a.v, a.kv_dtype, t * a.ldv, d, vf.data<float>() + t * d);
  }
  const AttentionRows rows{a.q, a.ldq, kf.data<float>(), d, vf.data<float>(), d, a.out, a.ldo, a.tq, a.tk};
  cpu_attend(pool, rows, n_heads, hd, causal, causal_offset, weights);
}

// The address of value `offset` of a K/V tensor of any storage (offset: whole blocks).
const void* value_at(const Tensor& t, int64_t offset) {
  return static_cast<const char*>(t.raw()) + dtype_nbytes(t.dtype(), offset);
}

}  // namespace

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
  std::vector<AttentionRows> calls;
  std::vector<int64_t> offsets;
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
    calls.push_back({src, 3 * d, cache_k.data<float>() + r * ctx * d, d, cache_v.data<float>() + r * ctx * d, d,
                     out.data<float>() + r * n_new * d, d, n_new, past + n_new});
    offsets.push_back(past);
  }
  cpu_attend_many(pool_, calls, n_heads, d / n_heads, true, offsets, {});
}

void CpuBackend::cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                                 std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                                 Tensor* weights) {
  (void)row_seq;
  const int64_t d = q.dim(1), rows = q.dim(0) / n_new, tk = kv.rows_per_seq, ld = kv.kv->dim(1);
  if (kv.kv->dtype() != DType::F32) {
    // Compact K/V (f16 or q8_0, cross_kv_dtype()); columns are whole blocks. Rows that
    // read one window go through one call; captured weights take one call per row.
    auto attend = [&](int64_t r0, int64_t r1, float* w) {
      const int64_t base = row_seq_host[r0] * tk * ld;
      const CachedRows a{q.data<float>() + r0 * n_new * d, d, value_at(*kv.kv, base + kv.k_col), ld,
                         value_at(*kv.kv, base + kv.v_col), ld, kv.kv->dtype(), out.data<float>() + r0 * n_new * d, d,
                         (r1 - r0) * n_new, tk};
      attend_cached(pool_, a, n_heads, d / n_heads, false, 0, w);
    };
    Tensor host;
    if (weights) host = weights->device() == Device::Cpu ? *weights : Tensor::empty(weights->shape(), DType::F32);
    for (int64_t r0 = 0; r0 < rows;) {
      int64_t r1 = r0 + 1;
      while (!weights && r1 < rows && row_seq_host[r1] == row_seq_host[r0]) ++r1;
      attend(r0, r1, weights ? host.data<float>() + r0 * n_heads * n_new * tk : nullptr);
      r0 = r1;
    }
    return;
  }
  // Rows [r0, r1) of the step, all over sequence row_seq_host[r0]: its K/V as the rows of
  // the product, or in head panels (kv.panel, arrange_cross_kv).
  const int64_t hd = d / n_heads;
  if (kv.panel != 0 && kv.panel != hd)
    throw Error(ErrorCode::Internal, "[cpu] cross K/V panels of " + std::to_string(kv.panel) + " columns for heads of " +
                                         std::to_string(hd));
  auto rows_of = [&](int64_t r0, int64_t r1) {
    const float* base = kv.kv->data<float>() + row_seq_host[r0] * tk * ld;
    AttentionRows a{q.data<float>() + r0 * n_new * d, d, base + kv.k_col, ld, base + kv.v_col, ld,
                    out.data<float>() + r0 * n_new * d, d, (r1 - r0) * n_new, tk};
    if (kv.panel) {
      a.k = base + kv.k_col / hd * tk * hd;
      a.v = base + kv.v_col / hd * tk * hd;
      a.ldk = a.ldv = hd;
      a.head_step = tk * hd;
    }
    return a;
  };
  auto attend = [&](int64_t r0, int64_t r1, float* w) { cpu_attend(pool_, rows_of(r0, r1), n_heads, hd, false, 0, w); };
  if (!weights) {
    // Rows that read the same sequence (the beams of one window) go through one call, so
    // the cross K/V is read once per step instead of once per beam; all calls share one
    // parallel loop.
    std::vector<AttentionRows> calls;
    for (int64_t r0 = 0; r0 < rows;) {
      int64_t r1 = r0 + 1;
      while (r1 < rows && row_seq_host[r1] == row_seq_host[r0]) ++r1;
      calls.push_back(rows_of(r0, r1));
      r0 = r1;
    }
    cpu_attend_many(pool_, calls, n_heads, hd, false, {}, {});
    return;
  }
  // Captured weights are laid out [row, head, token, frame]: one call per row.
  Tensor host = weights->device() == Device::Cpu ? *weights : Tensor::empty(weights->shape(), DType::F32);
  const int64_t per_row = n_heads * n_new * tk;
  for (int64_t r = 0; r < rows; ++r) attend(r, r + 1, host.data<float>() + r * per_row);
}

bool CpuBackend::kv_panels_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("HARK_CPU_KV_PANELS");
    return !(env && std::string(env) == "0");
  }();
  return enabled;
}

Tensor CpuBackend::arrange_cross_kv(const Tensor& kv, int64_t rows_per_seq, int64_t head_dim) {
  const int64_t panel = cross_kv_panel(head_dim);
  if (panel == 0 || kv.dtype() != DType::F32) return kv;
  const int64_t rows = kv.dim(0), cols = kv.dim(1);
  if (rows_per_seq <= 0 || rows % rows_per_seq != 0 || cols % panel != 0)
    throw Error(ErrorCode::Internal, "[cpu] cross K/V of " + kv.describe() + " do not split into windows of " +
                                         std::to_string(rows_per_seq) + " rows and panels of " +
                                         std::to_string(panel) + " columns");
  Tensor out = alloc({rows, cols}, DType::F32);
  const int64_t panels = cols / panel;
  const float* src = kv.data<float>();
  float* dst = out.data<float>();
  // A task per (window, panel): the panel's rows, one after another.
  pool_.parallel_for(rows / rows_per_seq * panels, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t window = task / panels, p = task % panels;
      const float* from = src + window * rows_per_seq * cols + p * panel;
      float* to = dst + window * rows_per_seq * cols + p * rows_per_seq * panel;
      for (int64_t r = 0; r < rows_per_seq; ++r) std::memcpy(to + r * panel, from + r * cols, panel * sizeof(float));
    }
  });
  return out;
}

}  // namespace hark
