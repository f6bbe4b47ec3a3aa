// Quantized dot products with AVX-512 VNNI (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni). vpdpbusd multiplies unsigned bytes with signed ones: the weight codes
// are taken as stored (non-negative, e.g. q8_0's q + 128), the activations as signed
// int8, and each block's sum starts at −bias · Σx (ActivationBlocks::neg_half_lanes), so
// no per-weight correction is needed. Every format takes two chunks of 32 per 512-bit
// register, halving the per-chunk scaling work (a k-quant super-block is four such pairs,
// its scales decoded once per super-block).
#include <vector>

#include "core/cpu/quant_simd.h"

// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics as
// "may be used uninitialized" (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hark::quant {
namespace {

struct VnniDot {
  struct XChunk {
    __m256i x, start;
  };
  template <DType T>
  static XChunk load_x(const ActivationBlocks& x, int row, int64_t c) {
    const __m256i xq = load32(x.q + row * x.k + c * kBlock);
    if constexpr (code_bias<T>() == 0) return {xq, _mm256_setzero_si256()};
    const __m256i lanes = load32(x.neg_half_lanes + (row * (x.k / kBlock) + c) * 8);
    return {xq, _mm256_slli_epi32(lanes, code_bias_shift<T>())};
  }
  template <DType T>
  static __m256i weights(const uint8_t* row, int64_t c) {
    return chunk_unsigned_codes<T>(row, c);
  }
  static __m256i dot(__m256i w, const XChunk& x) { return _mm256_dpbusd_epi32(x.start, w, x.x); }
};

// The f16 scales of blocks c and c + 1 as [s_c × 8, s_c+1 × 8].
template <DType T>
inline __m512 pair_scales(const uint8_t* row, int64_t c) {
  uint16_t lo, hi;
  std::memcpy(&lo, row + c * block_info_bytes(T), 2);
  std::memcpy(&hi, row + (c + 1) * block_info_bytes(T), 2);
  const __m128 both = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(lo | static_cast<uint32_t>(hi) << 16)));
  const __m512i spread = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(spread, _mm512_zextps128_ps512(both));
}

// The sums of four vectors, as one 128-bit vector.
inline __m128 reduce4(const __m512* a) {
  __m256 h[4];
  for (int i = 0; i < 4; ++i)
    h[i] = _mm256_add_ps(_mm512_castps512_ps256(a[i]), _mm512_extractf32x8_ps(a[i], 1));
  const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// y[i][j0 + r] = Σ acc[r][i] + extra[r][i] (+ bias) for the weight rows below `end`.
template <int R, int M>
inline void store_sums(const __m512 (&acc)[R][M], const float (&extra)[R][M], int64_t j0, int64_t end,
                       const float* bias, float* y, int64_t ldy) {
  if constexpr (R == 4) {
    if (j0 + R <= end) {  // four rows' sums in one vector per row of x
      for (int i = 0; i < M; ++i) {
        __m512 sums[4] = {acc[0][i], acc[1][i], acc[2][i], acc[3][i]};
        __m128 v = _mm_add_ps(reduce4(sums), _mm_setr_ps(extra[0][i], extra[1][i], extra[2][i], extra[3][i]));
        if (bias) v = _mm_add_ps(v, _mm_loadu_ps(bias + j0));
        _mm_storeu_ps(y + i * ldy + j0, v);
      }
      return;
    }
  }
  for (int r = 0; r < R && j0 + r < end; ++r)
    for (int i = 0; i < M; ++i)
      y[i * ldy + j0 + r] = _mm512_reduce_add_ps(acc[r][i]) + extra[r][i] + (bias ? bias[j0 + r] : 0.0f);
}

// One pair of blocks of one row of x as the kernel consumes it: the int8 values, where
// the integer sums start (−bias · Σx per half block) and the scales [d_c × 8, d_c+1 × 8].
struct XPair {
  __m512i q, start;
  __m512 d;
};

// Built once per call, so that weight rows share it whatever the tile size.
template <DType T>
const XPair* x_pairs(const ActivationBlocks& x, int64_t pairs) {
  thread_local std::vector<XPair> buffer;
  buffer.resize(static_cast<size_t>(pairs * x.m));
  const int64_t chunks = x.k / kBlock;
  for (int64_t i = 0; i < x.m; ++i) {
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t c = 2 * p;
      XPair& out = buffer[i * pairs + p];
      out.q = _mm512_loadu_si512(x.q + i * x.k + c * kBlock);
      out.start = code_bias<T>() == 0 ? _mm512_setzero_si512()
                                      : _mm512_slli_epi32(_mm512_loadu_si512(x.neg_half_lanes + (i * chunks + c) * 8),
                                                          code_bias_shift<T>());
      const float* d = x.d + i * chunks + c;
      out.d = _mm512_insertf32x8(_mm512_set1_ps(d[0]), _mm256_set1_ps(d[1]), 1);
    }
  }
  return buffer.data();
}

// The odd last block of a row (the 256-bit loop), per weight row and row of x.
template <DType T, int R, int M>
void odd_block(const ActivationBlocks& x, const uint8_t* const* rows, int64_t c, float (&tail)[R][M]) {
  const int64_t chunks = x.k / kBlock;
  for (int r = 0; r < R; ++r) {
    float offset[2] = {0, 0};
    const __m256 scale = chunk_scale<T>(rows[r], c, offset);
    const __m256i codes = VnniDot::weights<T>(rows[r], c);
    for (int i = 0; i < M; ++i) {
      const __m256 p = _mm256_cvtepi32_ps(VnniDot::dot(codes, VnniDot::load_x<T>(x, i, c)));
      const float* hs = x.half_sums + (i * chunks + c) * 2;
      tail[r][i] = hsum(_mm256_mul_ps(p, scale)) * x.d[i * chunks + c] + offset[0] * hs[0] + offset[1] * hs[1];
    }
  }
}

// Weight rows [begin, end) against the M rows of x, blocks two at a time (lanes 0-7 block
// c, lanes 8-15 block c + 1), for formats in blocks of 32; R weight rows per pass.
template <DType T, int M>
void pair_rows_kernel(const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin, int64_t end,
                      const float* bias, float* y, int64_t ldy) {
  constexpr int R = M <= 2 ? 4 : 2;
  constexpr bool kOffsets = format_has_offsets(T);
  const int64_t chunks = x.k / kBlock, pairs = chunks / 2;
  const XPair* xp = x_pairs<T>(x, pairs);
  for (int64_t j0 = begin; j0 < end; j0 += R) {
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + std::min(j0 + r, end - 1) * row_bytes;
    __m512 acc[R][M];
    float off[R][M], tail[R][M] = {};
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps(), off[r][i] = 0.0f;
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t c = 2 * p;
      for (int r = 0; r < R; ++r) {
        // 2 KB ahead in the weight stream (rows are consecutive): keeps enough loads in
        // flight to run at the memory's speed; a prefetch past the end never faults.
        _mm_prefetch(reinterpret_cast<const char*>(rows[r] + c * block_info_bytes(T) + 2048), _MM_HINT_T0);
        const __m512 scale = pair_scales<T>(rows[r], c);
        const __m512i codes = _mm512_inserti64x4(_mm512_zextsi256_si512(chunk_unsigned_codes<T>(rows[r], c)),
                                                 chunk_unsigned_codes<T>(rows[r], c + 1), 1);
        float offset[2] = {0, 0};
        if constexpr (kOffsets) {
          offset[0] = f16_at(rows[r] + c * block_info_bytes(T) + 2);
          offset[1] = f16_at(rows[r] + (c + 1) * block_info_bytes(T) + 2);
        }
        for (int i = 0; i < M; ++i) {
          const XPair& xv = xp[i * pairs + p];
          const __m512i sums = _mm512_dpbusd_epi32(xv.start, codes, xv.q);
          acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(scale, xv.d), acc[r][i]);
          if constexpr (kOffsets) {
            const float* hs = x.half_sums + (i * chunks + c) * 2;
            off[r][i] += offset[0] * (hs[0] + hs[1]) + offset[1] * (hs[2] + hs[3]);
          }
        }
      }
    }
    if (2 * pairs < chunks) odd_block<T, R, M>(x, rows, chunks - 1, tail);
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) off[r][i] += tail[r][i];
    store_sums<R, M>(acc, off, j0, end, bias, y, ldy);
  }
}

// ---- k-quants: a super-block of 256 values is four pairs of chunks of 32 ----

// Two 32-byte rows (lanes 0-31 from p0, 32-63 from p1), each shifted right by its own
// count and masked: the bit fields of chunks 2p and 2p + 1 (16-bit shifts, the mask drops
// the bits that cross from the neighbouring byte).
inline __m512i bit_fields2(const uint8_t* p0, const uint8_t* p1, int shift0, int shift1, int mask) {
  const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(load32(p0)), load32(p1), 1);
  const __m512i shifts = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(shift0)),
                                            _mm256_set1_epi16(static_cast<int16_t>(shift1)), 1);
  return _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(static_cast<char>(mask)));
}

// The unsigned codes (as stored, code_bias<T>() added) of chunks 2p and 2p + 1 of the
// super-block at b: the bit planes of quant_chunk.h's kquant_planes, two chunks at once.
template <DType T>
inline __m512i kquant_pair_codes(const uint8_t* b, int p) {
  if constexpr (T == DType::Q2_K || T == DType::Q3_K) {
    const uint8_t* qs = (T == DType::Q2_K ? reinterpret_cast<const BlockQ2_K*>(b)->qs
                                          : reinterpret_cast<const BlockQ3_K*>(b)->qs) + p / 2 * 32;
    const __m512i low = bit_fields2(qs, qs, 4 * (p % 2), 4 * (p % 2) + 2, 3);
    if constexpr (T == DType::Q2_K) return low;
    const uint8_t* hmask = reinterpret_cast<const BlockQ3_K*>(b)->hmask;
    return _mm512_or_si512(low, _mm512_slli_epi16(bit_fields2(hmask, hmask, 2 * p, 2 * p + 1, 1), 2));
  } else if constexpr (T == DType::Q4_K || T == DType::Q5_K) {
    const uint8_t* qs = (T == DType::Q4_K ? reinterpret_cast<const BlockQ4_K*>(b)->qs
                                          : reinterpret_cast<const BlockQ5_K*>(b)->qs) + p * 32;
    const __m512i low = bit_fields2(qs, qs, 0, 4, 0x0F);
    if constexpr (T == DType::Q4_K) return low;
    const uint8_t* qh = reinterpret_cast<const BlockQ5_K*>(b)->qh;
    return _mm512_or_si512(low, _mm512_slli_epi16(bit_fields2(qh, qh, 2 * p, 2 * p + 1, 1), 4));
  } else {  // Q6_K
    const auto* k = reinterpret_cast<const BlockQ6_K*>(b);
    const uint8_t* ql = k->ql + p / 2 * 64;
    const uint8_t* qh = k->qh + p / 2 * 32;
    const __m512i low = bit_fields2(ql, ql + 32, 4 * (p % 2), 4 * (p % 2), 0x0F);
    return _mm512_or_si512(low, _mm512_slli_epi16(bit_fields2(qh, qh, 4 * (p % 2), 4 * (p % 2) + 2, 3), 4));
  }
}

// The 16 half-chunk scales of a super-block (lane h: values 16h..16h+15) and their
// offsets (zero for formats without a min), with scales_of_chunk's float operations.
struct SuperHalves {
  __m512 scale, offset;
};

template <DType T>
inline SuperHalves kquant_halves(const uint8_t* b) {
  if constexpr (T == DType::Q2_K) {
    const auto* k = reinterpret_cast<const BlockQ2_K*>(b);
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k->scales)));
    const __m512 scale = _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(0x0F)));
    const __m512 min = _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4));
    return {_mm512_mul_ps(_mm512_set1_ps(f16_at(k->d)), scale),
            _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(_mm512_set1_ps(f16_at(k->dmin)), min))};
  } else if constexpr (T == DType::Q3_K) {
    // q3k_scale four sub-blocks at a time: the 12 bytes as words a, b, c; scale h's low
    // nibble is in a (h < 8: low nibbles of 0-3, then 8-11: high ones) or b (4-7, 12-15),
    // its top two bits in c's bytes, shifted by 2 · (h / 4).
    const auto* k = reinterpret_cast<const BlockQ3_K*>(b);
    uint32_t w[3];
    std::memcpy(w, k->scales, 12);
    const uint32_t nib = 0x0F0F0F0F, two = 0x03030303;
    const __m128i packed = _mm_setr_epi32(static_cast<int>((w[0] & nib) | (w[2] & two) << 4),
                                          static_cast<int>((w[1] & nib) | (w[2] >> 2 & two) << 4),
                                          static_cast<int>((w[0] >> 4 & nib) | (w[2] >> 4 & two) << 4),
                                          static_cast<int>((w[1] >> 4 & nib) | (w[2] >> 6 & two) << 4));
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_sub_epi8(packed, _mm_set1_epi8(32)));
    return {_mm512_mul_ps(_mm512_set1_ps(f16_at(k->d)), _mm512_cvtepi32_ps(sc)), _mm512_setzero_ps()};
  } else if constexpr (T == DType::Q4_K || T == DType::Q5_K) {
    // The 12 packed bytes as three words a, b, c: scales 0-3 are a's low 6 bits, mins 0-3
    // b's; scales 4-7 are c's low nibbles with a's top 2 bits above, mins 4-7 c's high
    // nibbles with b's top 2 bits (q4k_scale_min, four sub-blocks per operation).
    uint32_t w[3];
    std::memcpy(w, b + 4, 12);
    const uint32_t sc_lo = w[0] & 0x3F3F3F3F, mn_lo = w[1] & 0x3F3F3F3F;
    const uint32_t sc_hi = (w[2] & 0x0F0F0F0F) | ((w[0] >> 2) & 0x30303030);
    const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0F) | ((w[1] >> 2) & 0x30303030);
    // Each sub-block's byte twice (its two halves), then widened to 16 int32 lanes.
    const __m128i twice = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m128i sc = _mm_shuffle_epi8(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)), twice);
    const __m128i mn = _mm_shuffle_epi8(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)), twice);
    const __m512 scale = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc));
    const __m512 min = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn));
    return {_mm512_mul_ps(_mm512_set1_ps(f16_at(b)), scale),
            _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(_mm512_set1_ps(f16_at(b + 2)), min))};
  } else {  // Q6_K
    const auto* k = reinterpret_cast<const BlockQ6_K*>(b);
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k->scales)));
    return {_mm512_mul_ps(_mm512_set1_ps(f16_at(k->d)), _mm512_cvtepi32_ps(sc)), _mm512_setzero_ps()};
  }
}

// Weight rows [begin, end) against the M rows of x for a k-quant T: per super-block the
// scales are decoded once, in vectors, and its 8 chunks go two per 512-bit register as
// in pair_rows_kernel (the chunk pair's half scales picked from the 16 by a permute); the
// mins' part, Σ offset · (x's half-block sums), is one vector product per super-block.
template <DType T, int M>
void kquant_rows_kernel(const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin, int64_t end,
                        const float* bias, float* y, int64_t ldy) {
  constexpr int R = M <= 2 ? 4 : 2;
  constexpr size_t kBytes = block_info_bytes(T);
  const int64_t chunks = x.k / kBlock, pairs = chunks / 2, supers = x.k / kSuper;
  const XPair* xp = x_pairs<T>(x, pairs);
  const __m512i lane_quarters = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512i pick[4];  // lane L of pair p holds half 4p + L/4
  for (int p = 0; p < 4; ++p) pick[p] = _mm512_add_epi32(_mm512_set1_epi32(4 * p), lane_quarters);
  for (int64_t j0 = begin; j0 < end; j0 += R) {
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + std::min(j0 + r, end - 1) * row_bytes;
    __m512 acc[R][M];
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
    for (int64_t s = 0; s < supers; ++s) {
#pragma GCC unroll 4  // the accumulators stay in registers only when every row is unrolled
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = rows[r] + s * kBytes;
        for (size_t at = 0; at < kBytes; at += 64)  // 2 KB ahead in the weight stream, as above
          _mm_prefetch(reinterpret_cast<const char*>(b + at + 2048), _MM_HINT_T0);
        const SuperHalves halves = kquant_halves<T>(b);
        for (int p = 0; p < 4; ++p) {
          const __m512i codes = kquant_pair_codes<T>(b, p);
          const __m512 scale = _mm512_permutexvar_ps(pick[p], halves.scale);
          for (int i = 0; i < M; ++i) {
            const XPair& xv = xp[i * pairs + s * 4 + p];
            const __m512i sums = _mm512_dpbusd_epi32(xv.start, codes, xv.q);
            acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(scale, xv.d), acc[r][i]);
          }
        }
        if constexpr (format_has_offsets(T)) {
          for (int i = 0; i < M; ++i) {
            const __m512 half_sums = _mm512_loadu_ps(x.half_sums + i * 2 * chunks + s * 16);
            acc[r][i] = _mm512_fmadd_ps(halves.offset, half_sums, acc[r][i]);
          }
        }
      }
    }
    const float none[R][M] = {};
    store_sums<R, M>(acc, none, j0, end, bias, y, ldy);
  }
}

template <DType T, int... Ms>
constexpr std::array<RowsKernel, kQuantRowsMax> pair_row(std::integer_sequence<int, Ms...>) {
  return {pair_rows_kernel<T, Ms + 1>...};
}

template <DType T, int... Ms>
constexpr std::array<RowsKernel, kQuantRowsMax> kquant_row(std::integer_sequence<int, Ms...>) {
  return {kquant_rows_kernel<T, Ms + 1>...};
}

RowsKernel find_kernel(DType t, int64_t m) {
  using Seq = std::make_integer_sequence<int, kQuantRowsMax>;
  static const std::array<std::array<RowsKernel, kQuantRowsMax>, 10> kernels = {
      pair_row<DType::Q4_0>(Seq{}),   pair_row<DType::Q4_1>(Seq{}),   pair_row<DType::Q5_0>(Seq{}),
      pair_row<DType::Q5_1>(Seq{}),   pair_row<DType::Q8_0>(Seq{}),   kquant_row<DType::Q2_K>(Seq{}),
      kquant_row<DType::Q3_K>(Seq{}), kquant_row<DType::Q4_K>(Seq{}), kquant_row<DType::Q5_K>(Seq{}),
      kquant_row<DType::Q6_K>(Seq{})};
  return kernels[static_cast<int>(t) - static_cast<int>(DType::Q4_0)][m - 1];
}

}  // namespace

void widen_row_avx512(DType dtype, const uint8_t* row, int64_t k, float* out) { widen_row_any(dtype, row, k, out); }

void dot_rows_avx512(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy) {
  find_kernel(dtype, x.m)(x, w, row_bytes, begin, end, bias, y, ldy);
}

}  // namespace hark::quant
