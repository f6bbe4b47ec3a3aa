#include "core/cpu/attention_q8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu/quant_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/quant_format.h"

// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics as
// "may be used uninitialized" (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hark {
namespace {

constexpr int64_t kBlockBytes = sizeof(quant::BlockQ8_0);
// Rows ahead to fetch: a head's blocks of consecutive rows are a row apart, a stride the
// hardware prefetchers do not follow.
constexpr int64_t kQ8PrefetchRows = 48;

// out[0, hd) = Σ_t p[t] · V[t] over one head's blocks of the q8_0 rows of V.
void head_values(const float* p, const uint8_t* v, size_t row_bytes, int64_t tk, int64_t hd, float* out) {
  const int64_t blocks = hd / quant::kBlock;
#if defined(__AVX512F__)
  for (int64_t b0 = 0; b0 < blocks; b0 += 4) {
    const int64_t nb = std::min<int64_t>(4, blocks - b0);
    __m512 acc[8];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t t = 0; t < tk; ++t) {
      const uint8_t* row = v + t * row_bytes + b0 * kBlockBytes;
      for (int64_t off = 0; off < nb * kBlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(row + kQ8PrefetchRows * row_bytes + off), _MM_HINT_T0);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* block = row + b * kBlockBytes;
        uint16_t h16;
        std::memcpy(&h16, block, 2);
        const __m512 f = _mm512_set1_ps(p[t] * _cvtsh_ss(h16));
        for (int h = 0; h < 2; ++h) {
          const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * h));
          acc[2 * b + h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), f, acc[2 * b + h]);
        }
      }
    }
    for (int64_t i = 0; i < 2 * nb; ++i) _mm512_storeu_ps(out + b0 * quant::kBlock + 16 * i, acc[i]);
  }
#else
  std::fill(out, out + hd, 0.0f);
  for (int64_t t = 0; t < tk; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const auto* block = reinterpret_cast<const quant::BlockQ8_0*>(v + t * row_bytes + b * kBlockBytes);
      const float f = p[t] * quant::load_f16(block->d);
      for (int j = 0; j < quant::kBlock; ++j) out[b * quant::kBlock + j] += f * static_cast<float>(block->qs[j]);
    }
  }
#endif
}

}  // namespace

bool attention_q8_supported(int64_t head_dim) { return head_dim % quant::kBlock == 0; }

void attention_q8(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t hd, bool causal, int64_t causal_offset,
                  float* weights) {
  const size_t k_row = dtype_nbytes(DType::Q8_0, a.ldk), v_row = dtype_nbytes(DType::Q8_0, a.ldv);
  const size_t head_bytes = dtype_nbytes(DType::Q8_0, hd);
  const auto* k = static_cast<const uint8_t*>(a.k);
  const auto* v = static_cast<const uint8_t*>(a.v);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for_each_head_row(
      pool, a, n_heads, causal, causal_offset, weights,
      [&](int64_t h, int64_t i, int64_t visible, float* s) {
        quant_dot_serial(a.q + i * a.ldq + h * hd, hd, DType::Q8_0, k + h * head_bytes, k_row, visible, s);
        for (int64_t t = 0; t < visible; ++t) s[t] *= scale;
      },
      [&](int64_t h, int64_t i, int64_t visible, const float* s) {
        head_values(s, v + h * head_bytes, v_row, visible, hd, a.out + i * a.ldo + h * hd);
      });
}

}  // namespace hark
