// Attention for a few query rows (decoder steps, beams) with direct loops instead of
// sgemm calls: the cross-attention over 1500 keys is bound by reading K and V (kept in
// f16 they are half the bytes; each head's slice is prefetched, a stride the hardware
// does not follow), and the self-attention over the short cache costs less than a GEMM
// library call. Scores, softmax and sums are fp32.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/checked_span.h"
#include "core/cpu/vector_math.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace hark {

// Query rows at most for the direct loops; longer queries go through sgemm.
constexpr int64_t kAttentionRowsMax = 16;

// One attention call over cached rows: query row i at q + i·ldq, key / value row t at
// k / v + t·ldk / t·ldv (in values of kv_dtype: f32, f16, or q8_0 for attention_q8), output
// row i at out + i·ldo. Heads are column blocks of head_dim.
struct CachedRows {
  const float* q;
  int64_t ldq;
  const void* k;
  int64_t ldk;
  const void* v;
  int64_t ldv;
  DType kv_dtype;
  float* out;
  int64_t ldo;
  int64_t tq, tk;
};

// Row (h, i) of captured attention weights [n_heads, tq, tk]: the softmax of the `visible`
// keys, zero past them.
inline void store_weights_row(const float* softmax, int64_t h, int64_t i, int64_t tq, int64_t tk, int64_t visible,
                              float* weights) {
  float* w = weights + (h * tq + i) * tk;
  std::copy(softmax, softmax + visible, w);
  std::fill(w + visible, w + tk, 0.0f);
}

// The loop every few-row attention shares (f32/f16 here, q8_0 in attention_q8.cc): one
// task per (head, query row), so the K and V columns of a head are read once per row and
// the rows of one step (beams) find them in cache. scores(h, i, visible, s) writes the
// scaled scores of keys [0, visible) to s; after the softmax (copied to `weights` when
// given), values(h, i, visible, s) writes the output row.
template <class Scores, class Values>
void for_each_head_row(ThreadPool& pool, const CachedRows& a, int n_heads, bool causal, int64_t causal_offset,
                       float* weights, Scores&& scores, Values&& values) {
  const int64_t tq = a.tq, tk = a.tk;
  pool.parallel_for(n_heads * tq, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> row;
    if (row.size() < static_cast<size_t>(tk)) row.resize(tk);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t h = task / tq, i = task % tq;
      const int64_t visible = causal ? std::min<int64_t>(tk, i + causal_offset + 1) : tk;
      float* s = row.data();
      scores(h, i, visible, s);
      softmax_row(s, visible, visible);
      if (weights) store_weights_row(s, h, i, tq, tk, visible, weights);
      values(h, i, visible, s);
    }
  });
}

// Whether the vectorised loops handle this head size (multiples of 8).
bool attention_rows_supported(int64_t head_dim);

// The spans an attention call's loops read and write, checked once per call in the
// sanitizer build, where the loops run uninstrumented (core/checked_span.h): tq query and
// output rows, tk key and value rows, `width` (heads · head size) values of each. Checking
// per head instead would scan a head's whole strided K and V span, every head's columns,
// for every (head, row) task.
template <class E>
void check_attention_spans(const float* q, int64_t ldq, const E* k, int64_t ldk, const E* v, int64_t ldv,
                           const float* out, int64_t ldo, int64_t tq, int64_t tk, int64_t width) {
  check_strided(q, tq, ldq, width);
  check_strided(k, tk, ldk, width);
  check_strided(v, tk, ldv, width);
  check_strided(out, tq, ldo, width);
}

// A set of (head, query row) pairs over the same `visible` key rows, computed together so
// that each key's and value's slice is read once for the whole set: pair i's query at
// q + i·q_step, its K and V columns at k, v + i·kv_step, its output at out + i·out_step,
// its score row at scores + i·lds. Adjacent heads of one row: steps of head_dim; a
// window's beams (one head, several rows): kv_step 0.
struct HeadSet {
  int n;
  int64_t q_step, kv_step, out_step;
};
inline HeadSet adjacent_heads(int heads, int64_t head_dim) { return {heads, head_dim, head_dim, head_dim}; }
inline HeadSet beam_rows(int64_t rows, int64_t ldq, int64_t ldo) { return {static_cast<int>(rows), ldq, 0, ldo}; }

// A HeadSet over fp32 keys and values (q, k, v, out at its first pair; k/v rows ldk/ldv
// floats apart; scores with room for n rows of lds ≥ visible, holding the softmax
// afterwards). Every score and output is summed in the same order whatever the set, so a
// (head, row)'s numbers do not depend on the other heads and rows of the call: the CPU's
// fp32 decoder steps run every window of a step through it in one parallel loop
// (cpu_attend_many), which checks each call's spans first (check_attention_spans): this
// function does not.
void attention_head_set_f32(const float* q, const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t visible,
                            int64_t head_dim, HeadSet set, float* scores, int64_t lds, float* out);

// A call of tq rows over the same keys (a window's beams) is split into tasks of a head and
// a run of rows: the fewest runs that still give every thread of the pool a task, so each
// task reads its head's keys once for as many rows as it can; no run is empty.
struct RowRuns {
  int64_t runs, per_run;
};
inline RowRuns shared_key_row_runs(int64_t tq, int n_heads, int64_t threads) {
  const int64_t wanted = std::clamp<int64_t>((threads + n_heads - 1) / n_heads, 1, tq);
  const int64_t per_run = (tq + wanted - 1) / wanted;
  return {(tq + per_run - 1) / per_run, per_run};
}

// out = softmax(scale · q Kᵀ) V per head for f32 or f16 K/V; `weights` (optional) receives
// the softmax [n_heads, tq, tk]. Causal: row i sees keys up to i + causal_offset.
void attention_rows(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t head_dim, bool causal,
                    int64_t causal_offset, float* weights);

}  // namespace hark
