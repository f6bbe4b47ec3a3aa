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

// Scores and values of `heads` adjacent heads of one query row: each key row's slice of
// all of them is read in one pass (heads · hd contiguous values where one head reads hd),
// so a row's K and V are streamed once instead of once a head. Every score and every
// output value is summed in the same order as head_scores / head_values compute it.
template <class E>
HARK_UNINSTRUMENTED void group_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, int heads,
                                      float scale, float* scores, int64_t lds) {
  int64_t t = 0;
  for (; t + 8 <= tk; t += 8) {
    for (int u = 0; u < 8; ++u) prefetch_slice(k + (t + kPrefetchRows + u) * d, heads * hd);
    for (int g = 0; g < heads; ++g) score_block8(q + g * hd, k + t * d + g * hd, d, hd, scale, scores + g * lds + t);
  }
  for (; t < tk; ++t)
    for (int g = 0; g < heads; ++g) scores[g * lds + t] = score_one(q + g * hd, k + t * d + g * hd, hd, scale);
}

#if defined(__AVX512F__)
// Up to kGroupAccumulators 16-wide accumulators: a group's heads · hd/16 of them.
constexpr int kGroupAccumulators = 24;
template <class E, int Blocks>
HARK_UNINSTRUMENTED void group_values_wide(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, int heads,
                                           float* out) {
  constexpr int64_t hd = 16 * Blocks;
  __m512 acc[kGroupAccumulators];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t t = 0; t < tk; ++t) {
    prefetch_slice(v + (t + kPrefetchRows) * d, heads * hd);
    const E* row = v + t * d;
    for (int g = 0; g < heads; ++g) {
      const __m512 pv = _mm512_set1_ps(p[g * lds + t]);
      for (int b = 0; b < Blocks; ++b)
        acc[g * Blocks + b] = _mm512_fmadd_ps(load16(row + g * hd + 16 * b), pv, acc[g * Blocks + b]);
    }
  }
  for (int g = 0; g < heads; ++g)
    for (int b = 0; b < Blocks; ++b) _mm512_storeu_ps(out + g * hd + 16 * b, acc[g * Blocks + b]);
}
#endif

// Whether group_values streams the heads together (else it runs head_values a head at a
// time, the same sums).
[[maybe_unused]] bool group_values_fused(int64_t hd, int heads) {
#if defined(__AVX512F__)
  return (hd == 64 && heads * 4 <= kGroupAccumulators) || (hd == 128 && heads * 8 <= kGroupAccumulators);
#else
  (void)hd, (void)heads;
  return false;
#endif
}

template <class E>
HARK_UNINSTRUMENTED void group_values(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, int64_t hd,
                                      int heads, float* out) {
#if defined(__AVX512F__)
  if (group_values_fused(hd, heads))
    return hd == 64 ? group_values_wide<E, 4>(p, lds, v, tk, d, heads, out)
                    : group_values_wide<E, 8>(p, lds, v, tk, d, heads, out);
#endif
  for (int g = 0; g < heads; ++g) head_values(p + g * lds, v + g * hd, tk, d, hd, out + g * hd);
}

// Scores and values of `rows` query rows over one head's keys (a window's beams): each key's
// slice is fetched once for all rows. Every score and output value is summed in the order
// head_scores / head_values use for one row.
template <class E>
HARK_UNINSTRUMENTED void rows_scores(const float* q, int64_t ldq, int rows, const E* k, int64_t tk, int64_t d,
                                     int64_t hd, float scale, float* scores, int64_t lds) {
  int64_t t = 0;
  for (; t + 8 <= tk; t += 8) {
    for (int u = 0; u < 8; ++u) prefetch_slice(k + (t + kPrefetchRows + u) * d, hd);
    for (int r = 0; r < rows; ++r) score_block8(q + r * ldq, k + t * d, d, hd, scale, scores + r * lds + t);
  }
  for (; t < tk; ++t)
    for (int r = 0; r < rows; ++r) scores[r * lds + t] = score_one(q + r * ldq, k + t * d, hd, scale);
}

#if defined(__AVX512F__)
template <class E, int Blocks>
HARK_UNINSTRUMENTED void rows_values_wide(const float* p, int64_t lds, int rows, const E* v, int64_t tk, int64_t d,
                                          float* out, int64_t ldo) {
  __m512 acc[kGroupAccumulators];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t t = 0; t < tk; ++t) {
    prefetch_slice(v + (t + kPrefetchRows) * d, 16 * Blocks);
    const E* row = v + t * d;
    __m512 vv[Blocks];
    for (int b = 0; b < Blocks; ++b) vv[b] = load16(row + 16 * b);
    for (int r = 0; r < rows; ++r) {
      const __m512 pv = _mm512_set1_ps(p[r * lds + t]);
      for (int b = 0; b < Blocks; ++b) acc[r * Blocks + b] = _mm512_fmadd_ps(vv[b], pv, acc[r * Blocks + b]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) _mm512_storeu_ps(out + r * ldo + 16 * b, acc[r * Blocks + b]);
}
#endif

template <class E>
HARK_UNINSTRUMENTED void rows_values(const float* p, int64_t lds, int rows, const E* v, int64_t tk, int64_t d,
                                     int64_t hd, float* out, int64_t ldo) {
#if defined(__AVX512F__)
  if (hd == 64 && rows * 4 <= kGroupAccumulators) return rows_values_wide<E, 4>(p, lds, rows, v, tk, d, out, ldo);
  if (hd == 128 && rows * 8 <= kGroupAccumulators) return rows_values_wide<E, 8>(p, lds, rows, v, tk, d, out, ldo);
#endif
  for (int r = 0; r < rows; ++r) head_values(p + r * lds, v, tk, d, hd, out + r * ldo);
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
HARK_UNINSTRUMENTED void group_scores(const float* q, const E* k, int64_t tk, int64_t d, int64_t hd, int heads,
                                      float scale, float* scores, int64_t lds) {
  for (int g = 0; g < heads; ++g) head_scores(q + g * hd, k + g * hd, tk, d, hd, scale, scores + g * lds);
}
template <class E>
HARK_UNINSTRUMENTED void group_values(const float* p, int64_t lds, const E* v, int64_t tk, int64_t d, int64_t hd,
                                      int heads, float* out) {
  for (int g = 0; g < heads; ++g) head_values(p + g * lds, v + g * hd, tk, d, hd, out + g * hd);
}
template <class E>
HARK_UNINSTRUMENTED void rows_scores(const float* q, int64_t ldq, int rows, const E* k, int64_t tk, int64_t d,
                                     int64_t hd, float scale, float* scores, int64_t lds) {
  for (int r = 0; r < rows; ++r) head_scores(q + r * ldq, k, tk, d, hd, scale, scores + r * lds);
}
template <class E>
HARK_UNINSTRUMENTED void rows_values(const float* p, int64_t lds, int rows, const E* v, int64_t tk, int64_t d,
                                     int64_t hd, float* out, int64_t ldo) {
  for (int r = 0; r < rows; ++r) head_values(p + r * lds, v, tk, d, hd, out + r * ldo);
}
constexpr bool kVectorised = false;
#endif

}  // namespace

bool attention_rows_supported(int64_t head_dim) { return !kVectorised || head_dim % 8 == 0; }

namespace {

template <class E>
void attention_rows_of(ThreadPool& pool, const CachedRows& a, const E* k, const E* v, int n_heads, int64_t hd,
                       bool causal, int64_t causal_offset, float* weights) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  check_attention_spans(a.q, a.ldq, k, a.ldk, v, a.ldv, a.out, a.ldo, a.tq, a.tk, n_heads * hd);
  if (!causal && a.tq > 1) {
    // A window's beams: a task a head, each key's and value's slice read once for all rows
    // (the same sums as a row alone).
    const int64_t tq = a.tq, tk = a.tk, runs = shared_key_row_runs(tq, n_heads, pool.size());
    const int64_t per_run = (tq + runs - 1) / runs;
    pool.parallel_for(n_heads * runs, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> scores;
      if (scores.size() < static_cast<size_t>(per_run * tk)) scores.resize(per_run * tk);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t h = task / runs, i0 = (task % runs) * per_run, i1 = std::min(tq, i0 + per_run);
        if (i0 >= i1) continue;
        const int rows = static_cast<int>(i1 - i0);
        rows_scores(a.q + i0 * a.ldq + h * hd, a.ldq, rows, k + h * hd, tk, a.ldk, hd, scale, scores.data(), tk);
        for (int64_t i = i0; i < i1; ++i) {
          float* s = scores.data() + (i - i0) * tk;
          softmax_row(s, tk, tk);
          if (weights) store_weights_row(s, h, i, tq, tk, tk, weights);
        }
        rows_values(scores.data(), tk, rows, v + h * hd, tk, a.ldv, hd, a.out + i0 * a.ldo + h * hd, a.ldo);
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

void attention_head_row_f32(const float* q, const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t visible,
                            int64_t head_dim, float* scores, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  head_scores(q, k, visible, ldk, head_dim, scale, scores);
  softmax_row(scores, visible, visible);
  head_values(scores, v, visible, ldv, head_dim, out);
}

void attention_head_group_row_f32(const float* q, const float* k, int64_t ldk, const float* v, int64_t ldv,
                                  int64_t visible, int64_t head_dim, int heads, float* scores, int64_t lds, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  group_scores(q, k, visible, ldk, head_dim, heads, scale, scores, lds);
  for (int g = 0; g < heads; ++g) softmax_row(scores + g * lds, visible, visible);
  group_values(scores, lds, v, visible, ldv, head_dim, heads, out);
}

void attention_head_rows_f32(const float* q, int64_t ldq, int rows, const float* k, int64_t ldk, const float* v,
                             int64_t ldv, int64_t visible, int64_t head_dim, float* scores, int64_t lds, float* out,
                             int64_t ldo) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  rows_scores(q, ldq, rows, k, visible, ldk, head_dim, scale, scores, lds);
  for (int r = 0; r < rows; ++r) softmax_row(scores + r * lds, visible, visible);
  rows_values(scores, lds, rows, v, visible, ldv, head_dim, out, ldo);
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
