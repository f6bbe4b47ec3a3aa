#include "core/cpu/attention_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/checked_span.h"
#include "core/cpu/vector_math.h"
#include "core/tensor.h"

// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics as
// "may be used uninitialized" (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hark {
namespace {

HARK_UNINSTRUMENTED inline float value(float x) { return x; }
HARK_UNINSTRUMENTED inline float value(uint16_t h) { return half_to_float(h); }

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
HARK_UNINSTRUMENTED inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
HARK_UNINSTRUMENTED inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }

// Sums of each of 8 vectors, as one vector.
HARK_UNINSTRUMENTED inline __m256 reduce8(const __m256* a) {
  const __m256 s01 = _mm256_hadd_ps(a[0], a[1]), s23 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 s45 = _mm256_hadd_ps(a[4], a[5]), s67 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
  return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

// One head's slice of a K or V row lies `d` values after the previous row's: a stride
// beyond what the hardware prefetchers follow, so the loops fetch rows ahead themselves.
// 8 rows ahead (bench/attention_bench.cc, 2026-12-01, 0-160 rows tried: 8 was best or level
// for 1-8 windows and 5 beams; 48 had one window's 5 beams at 551-575 µs against 365-390).
constexpr int64_t kPrefetchRows = 8;
template <class E>
HARK_UNINSTRUMENTED inline void prefetch_slice(const E* p, int64_t hd) {
  for (int64_t j = 0; j < hd; j += 64 / sizeof(E)) _mm_prefetch(reinterpret_cast<const char*>(p + j), _MM_HINT_T0);
}

#if defined(__AVX512F__)
HARK_UNINSTRUMENTED inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
HARK_UNINSTRUMENTED inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
// The 512-bit accumulators' halves added, so reduce8 can finish the sums.
HARK_UNINSTRUMENTED inline void fold8(const __m512* wide, __m256* narrow) {
  for (int u = 0; u < 8; ++u)
    narrow[u] = _mm256_add_ps(_mm512_castps512_ps256(wide[u]),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(wide[u]), 1)));
}
#endif

// scores[0, 8) = scale · q · K[u] for the 8 key rows k + u·d, u < 8, over one head's hd
// columns: one accumulator a key, so every score has the same summation order wherever
// its block lies.
template <class E>
HARK_UNINSTRUMENTED inline void score_block8(const float* q, const E* k, int64_t d, int64_t hd, float scale, float* scores) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    __m512 acc[8];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t j = 0; j < hd; j += 16) {
      const __m512 qv = _mm512_loadu_ps(q + j);
      for (int u = 0; u < 8; ++u) acc[u] = _mm512_fmadd_ps(load16(k + u * d + j), qv, acc[u]);
    }
    __m256 folded[8];
    fold8(acc, folded);
    _mm256_storeu_ps(scores, _mm256_mul_ps(reduce8(folded), _mm256_set1_ps(scale)));
    return;
  }
#endif
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t j = 0; j < hd; j += 8) {
    const __m256 qv = _mm256_loadu_ps(q + j);
    for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(load8(k + u * d + j), qv, acc[u]);
  }
  _mm256_storeu_ps(scores, _mm256_mul_ps(reduce8(acc), _mm256_set1_ps(scale)));
}

// The score of one key row past the last whole block of 8.
template <class E>
HARK_UNINSTRUMENTED inline float score_one(const float* q, const E* k, int64_t hd, float scale) {
  float s = 0;
  for (int64_t j = 0; j < hd; ++j) s += q[j] * value(k[j]);
  return s * scale;
}

// scores[t] = scale · q · K[t] over one head's hd columns of K (row stride d).
template <class E>
HARK_UNINSTRUMENTED void head_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, float scale,
                                     float* scores) {
  int64_t t = 0;
  for (; t + 8 <= tk; t += 8) {
    for (int u = 0; u < 8; ++u) prefetch_slice(k + (t + kPrefetchRows + u) * d, hd);
    score_block8(q, k + t * d, d, hd, scale, scores + t);
  }
  for (; t < tk; ++t) scores[t] = score_one(q, k + t * d, hd, scale);
}

// out[0, hd) = Σ_t p[t] · V[t] over one head's columns of V.
template <class E>
HARK_UNINSTRUMENTED void head_values(const float* p, const E* v, int64_t tk, int64_t d, int64_t hd, float* out) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    for (int64_t j0 = 0; j0 < hd; j0 += 128) {
      const int64_t blocks = std::min<int64_t>(8, (hd - j0) / 16);
      __m512 acc[8];
      for (auto& a : acc) a = _mm512_setzero_ps();
      for (int64_t t = 0; t < tk; ++t) {
        prefetch_slice(v + (t + kPrefetchRows) * d + j0, std::min<int64_t>(128, hd - j0));
        const __m512 pv = _mm512_set1_ps(p[t]);
        const E* row = v + t * d + j0;
        for (int64_t b = 0; b < blocks; ++b) acc[b] = _mm512_fmadd_ps(load16(row + 16 * b), pv, acc[b]);
      }
      for (int64_t b = 0; b < blocks; ++b) _mm512_storeu_ps(out + j0 + 16 * b, acc[b]);
    }
    return;
  }
#endif
  for (int64_t j0 = 0; j0 < hd; j0 += 64) {
    const int64_t blocks = std::min<int64_t>(8, (hd - j0) / 8);
    __m256 acc[8];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t t = 0; t < tk; ++t) {
      prefetch_slice(v + (t + kPrefetchRows) * d + j0, std::min<int64_t>(64, hd - j0));
      const __m256 pv = _mm256_set1_ps(p[t]);
      const E* row = v + t * d + j0;
      for (int64_t b = 0; b < blocks; ++b) acc[b] = _mm256_fmadd_ps(load8(row + 8 * b), pv, acc[b]);
    }
    for (int64_t b = 0; b < blocks; ++b) _mm256_storeu_ps(out + j0 + 8 * b, acc[b]);
  }
}

// Scores and values of a HeadSet (attention_rows.h): each key row's slice of the whole set
// is fetched once (adjacent heads: one contiguous run; a window's beams: the same slice for
// every row). Every score and output value is summed in the order head_scores /
// head_values use for one head of one row.
template <class E>
HARK_UNINSTRUMENTED void set_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, HeadSet set,
                                    float scale, float* scores, int64_t lds) {
  const int64_t span = set.kv_step * (set.n - 1) + hd;
  int64_t t = 0;
  for (; t + 8 <= tk; t += 8) {
    for (int u = 0; u < 8; ++u) prefetch_slice(k + (t + kPrefetchRows + u) * d, span);
    for (int i = 0; i < set.n; ++i)
      score_block8(q + i * set.q_step, k + t * d + i * set.kv_step, d, hd, scale, scores + i * lds + t);
  }
  for (; t < tk; ++t)
    for (int i = 0; i < set.n; ++i)
      scores[i * lds + t] = score_one(q + i * set.q_step, k + t * d + i * set.kv_step, hd, scale);
}

#if defined(__AVX512F__)
// The set's value sums in registers: up to 24 16-wide accumulators (n · hd/16 of them).
constexpr int kSetAccumulators = 24;
template <class E, int Blocks>
HARK_UNINSTRUMENTED void set_values_wide(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, HeadSet set,
                                         float* out) {
  constexpr int64_t hd = 16 * Blocks;
  const int64_t span = set.kv_step * (set.n - 1) + hd;
  __m512 acc[kSetAccumulators];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t t = 0; t < tk; ++t) {
    prefetch_slice(v + (t + kPrefetchRows) * d, span);
    const E* row = v + t * d;
    for (int i = 0; i < set.n; ++i) {
      const __m512 pv = _mm512_set1_ps(p[i * lds + t]);
      for (int b = 0; b < Blocks; ++b)
        acc[i * Blocks + b] = _mm512_fmadd_ps(load16(row + i * set.kv_step + 16 * b), pv, acc[i * Blocks + b]);
    }
  }
  for (int i = 0; i < set.n; ++i)
    for (int b = 0; b < Blocks; ++b) _mm512_storeu_ps(out + i * set.out_step + 16 * b, acc[i * Blocks + b]);
}
#endif

template <class E>
HARK_UNINSTRUMENTED void set_values(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, int64_t hd,
                                    HeadSet set, float* out) {
#if defined(__AVX512F__)
  if (hd == 64 && set.n * 4 <= kSetAccumulators) return set_values_wide<E, 4>(p, lds, v, tk, d, set, out);
  if (hd == 128 && set.n * 8 <= kSetAccumulators) return set_values_wide<E, 8>(p, lds, v, tk, d, set, out);
#endif
  for (int i = 0; i < set.n; ++i)
    head_values(p + i * lds, v + i * set.kv_step, tk, d, hd, out + i * set.out_step);
}
constexpr bool kVectorised = true;
#else
template <class E>
HARK_UNINSTRUMENTED void head_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, float scale,
                                     float* scores) {
  for (int64_t t = 0; t < tk; ++t) {
    float s = 0;
    for (int64_t j = 0; j < hd; ++j) s += q[j] * value(k[t * d + j]);
    scores[t] = s * scale;
  }
}
template <class E>
HARK_UNINSTRUMENTED void head_values(const float* p, const E* v, int64_t tk, int64_t d, int64_t hd, float* out) {
  for (int64_t j = 0; j < hd; ++j) out[j] = 0;
  for (int64_t t = 0; t < tk; ++t)
    for (int64_t j = 0; j < hd; ++j) out[j] += p[t] * value(v[t * d + j]);
}
template <class E>
HARK_UNINSTRUMENTED void set_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, HeadSet set,
                                    float scale, float* scores, int64_t lds) {
  for (int i = 0; i < set.n; ++i)
    head_scores(q + i * set.q_step, k + i * set.kv_step, tk, d, hd, scale, scores + i * lds);
}
template <class E>
HARK_UNINSTRUMENTED void set_values(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, int64_t hd,
                                    HeadSet set, float* out) {
  for (int i = 0; i < set.n; ++i)
    head_values(p + i * lds, v + i * set.kv_step, tk, d, hd, out + i * set.out_step);
}
constexpr bool kVectorised = false;
#endif

}  // namespace

bool attention_rows_supported(int64_t head_dim) { return !kVectorised || head_dim % 8 == 0; }

namespace {

// A HeadSet's scores, softmax and values (attention_head_set_f32 for f32 or f16 K/V).
template <class E>
void head_set(const float* q, const E* k, int64_t ldk, const E* v, int64_t ldv, int64_t visible, int64_t hd,
              HeadSet set, float scale, float* scores, int64_t lds, float* out) {
  set_scores(q, k, visible, ldk, hd, set, scale, scores, lds);
  for (int i = 0; i < set.n; ++i) softmax_row(scores + i * lds, visible, visible);
  set_values(scores, lds, v, visible, ldv, hd, set, out);
}

template <class E>
void attention_rows_of(ThreadPool& pool, const CachedRows& a, const E* k, const E* v, int n_heads, int64_t hd,
                       bool causal, int64_t causal_offset, float* weights) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  check_attention_spans(a.q, a.ldq, k, a.ldk, v, a.ldv, a.out, a.ldo, a.tq, a.tk, n_heads * hd);
  if (!causal && a.tq > 1) {
    // A window's beams: a task a head, each key's and value's slice read once for all rows
    // (the same sums as a row alone).
    const int64_t tq = a.tq, tk = a.tk;
    const RowRuns runs = shared_key_row_runs(tq, n_heads, pool.size());
    pool.parallel_for(n_heads * runs.runs, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> scores;
      if (scores.size() < static_cast<size_t>(runs.per_run * tk)) scores.resize(runs.per_run * tk);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t h = task / runs.runs, i0 = (task % runs.runs) * runs.per_run;
        const int64_t i1 = std::min(tq, i0 + runs.per_run);
        head_set(a.q + i0 * a.ldq + h * hd, k + h * hd, a.ldk, v + h * hd, a.ldv, tk, hd,
                 beam_rows(i1 - i0, a.ldq, a.ldo), scale, scores.data(), tk, a.out + i0 * a.ldo + h * hd);
        if (weights)
          for (int64_t i = i0; i < i1; ++i) store_weights_row(scores.data() + (i - i0) * tk, h, i, tq, tk, tk, weights);
      }
    });
    return;
  }
  for_each_head_row(
      pool, a, n_heads, causal, causal_offset, weights,
      [&](int64_t h, int64_t i, int64_t visible, float* s) {
        head_scores(a.q + i * a.ldq + h * hd, k + h * hd, visible, a.ldk, hd, scale, s);
      },
      [&](int64_t h, int64_t i, int64_t visible, const float* s) {
        head_values(s, v + h * hd, visible, a.ldv, hd, a.out + i * a.ldo + h * hd);
      });
}

}  // namespace

void attention_head_set_f32(const float* q, const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t visible,
                            int64_t head_dim, HeadSet set, float* scores, int64_t lds, float* out) {
  head_set(q, k, ldk, v, ldv, visible, head_dim, set, 1.0f / std::sqrt(static_cast<float>(head_dim)), scores, lds, out);
}

void attention_rows(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t head_dim, bool causal,
                    int64_t causal_offset, float* weights) {
  if (a.kv_dtype == DType::F16)
    attention_rows_of(pool, a, static_cast<const uint16_t*>(a.k), static_cast<const uint16_t*>(a.v), n_heads,
                      head_dim, causal, causal_offset, weights);
  else
    attention_rows_of(pool, a, static_cast<const float*>(a.k), static_cast<const float*>(a.v), n_heads, head_dim,
                      causal, causal_offset, weights);
}

}  // namespace hark
