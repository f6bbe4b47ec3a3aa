// Quantized dot products with AVX-512 VNNI (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni): vpdpbusd multiplies the activations, stored as unsigned q + 128, with the
// signed weight codes; 128 · Σ codes per group of four, computed once per chunk and weight
// row, is where each sum starts. Formats in blocks of 32 take two chunks per 512-bit
// register, halving the per-chunk scaling work; the k-quants run on 256-bit registers.
#include "core/cpu/quant_simd.h"

// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics as
// "may be used uninitialized" (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hark::quant {
namespace {

struct VnniDot {
  static __m256i load_x(const ActivationBlocks& x, int row, int64_t c) { return load32(x.u + row * x.k + c * kBlock); }
  static __m256i prepare(__m256i codes) {
    const __m256i bias = _mm256_dpbusd_epi32(_mm256_setzero_si256(), bytes(0x80), codes);
    return _mm256_sub_epi32(_mm256_setzero_si256(), bias);
  }
  static __m256i dot(__m256i start, __m256i codes, __m256i xv) { return _mm256_dpbusd_epi32(start, xv, codes); }
};

inline __m512 pair_of(float lo, float hi) { return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1); }
inline __m512i pair_of(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1); }

// Weight rows [begin, end) against the M rows of x, chunks two at a time (lanes 0-7 chunk
// c, lanes 8-15 chunk c + 1); an odd last chunk pairs with a zero chunk.
template <DType T, int M>
void pair_rows_kernel(const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin, int64_t end,
                      const float* bias, float* y, int64_t ldy) {
  constexpr int R = M == 1 ? 4 : M == 2 ? 2 : 1;
  constexpr bool kOffsets = format_has_offsets(T);
  const int64_t chunks = x.k / kBlock;
  const __m512i unsigned_bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t j0 = begin; j0 < end; j0 += R) {
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + std::min(j0 + r, end - 1) * row_bytes;
    __m512 acc[R][M];
    float off[R][M];
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps(), off[r][i] = 0.0f;
    for (int64_t c = 0; c < chunks; c += 2) {
      const bool pair = c + 1 < chunks;
      __m512i xv[M];
      __m512 dx[M];
      for (int i = 0; i < M; ++i) {
        const uint8_t* xu = x.u + i * x.k + c * kBlock;
        const float* d = x.d + i * chunks + c;
        xv[i] = pair ? _mm512_loadu_si512(xu) : _mm512_zextsi256_si512(load32(xu));
        dx[i] = pair_of(d[0], pair ? d[1] : 0.0f);
      }
      for (int r = 0; r < R; ++r) {
        float offset[4] = {0, 0, 0, 0};
        const __m256 s0 = chunk_scale<T>(rows[r], c, offset);
        const __m256 s1 = pair ? chunk_scale<T>(rows[r], c + 1, offset + 2) : _mm256_setzero_ps();
        const __m512 scale = _mm512_insertf32x8(_mm512_zextps256_ps512(s0), s1, 1);
        const __m512i codes =
            pair_of(chunk_codes<T>(rows[r], c), pair ? chunk_codes<T>(rows[r], c + 1) : _mm256_setzero_si256());
        const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                               _mm512_dpbusd_epi32(_mm512_setzero_si512(), unsigned_bias, codes));
        for (int i = 0; i < M; ++i) {
          const __m512i p = _mm512_dpbusd_epi32(start, xv[i], codes);
          acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(scale, dx[i]), acc[r][i]);
          if constexpr (kOffsets) {
            const float* hs = x.half_sums + (i * chunks + c) * 2;
            off[r][i] += offset[0] * hs[0] + offset[1] * hs[1];
            if (pair) off[r][i] += offset[2] * hs[2] + offset[3] * hs[3];
          }
        }
      }
    }
    for (int r = 0; r < R && j0 + r < end; ++r)
      for (int i = 0; i < M; ++i)
        y[i * ldy + j0 + r] = _mm512_reduce_add_ps(acc[r][i]) + off[r][i] + (bias ? bias[j0 + r] : 0.0f);
  }
}

template <DType T, int... Ms>
constexpr std::array<RowsKernel, kQuantRowsMax> pair_row(std::integer_sequence<int, Ms...>) {
  return {pair_rows_kernel<T, Ms + 1>...};
}

RowsKernel find_kernel(DType t, int64_t m) {
  using Seq = std::make_integer_sequence<int, kQuantRowsMax>;
  static const std::array<std::array<RowsKernel, kQuantRowsMax>, 5> pairs = {
      pair_row<DType::Q4_0>(Seq{}), pair_row<DType::Q4_1>(Seq{}), pair_row<DType::Q5_0>(Seq{}),
      pair_row<DType::Q5_1>(Seq{}), pair_row<DType::Q8_0>(Seq{})};
  if (block_elems_of(t) == kBlock) return pairs[static_cast<int>(t) - static_cast<int>(DType::Q4_0)][m - 1];
  return KernelTable<VnniDot>::find(t, m);
}

}  // namespace

void dot_rows_avx512(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy) {
  find_kernel(dtype, x.m)(x, w, row_bytes, begin, end, bias, y, ldy);
}

}  // namespace hark::quant
