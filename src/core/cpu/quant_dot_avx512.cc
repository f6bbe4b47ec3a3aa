// Quantized dot products with AVX-512 VNNI (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni). vpdpbusd multiplies unsigned bytes with signed ones: the weight codes
// are taken as stored (non-negative, e.g. q8_0's q + 128), the activations as signed
// int8, and each block's sum starts at −bias · Σx (ActivationBlocks::neg_half_lanes), so
// no per-weight correction is needed. Formats in blocks of 32 take two blocks per 512-bit
// register, halving the per-block scaling work; the k-quants run on 256-bit registers.
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
    if constexpr (R == 4) {
      if (j0 + R <= end) {  // four rows' sums in one vector per row of x
        for (int i = 0; i < M; ++i) {
          __m512 sums[4] = {acc[0][i], acc[1][i], acc[2][i], acc[3][i]};
          __m128 v = _mm_add_ps(reduce4(sums), _mm_setr_ps(off[0][i] + tail[0][i], off[1][i] + tail[1][i],
                                                           off[2][i] + tail[2][i], off[3][i] + tail[3][i]));
          if (bias) v = _mm_add_ps(v, _mm_loadu_ps(bias + j0));
          _mm_storeu_ps(y + i * ldy + j0, v);
        }
        continue;
      }
    }
    for (int r = 0; r < R && j0 + r < end; ++r)
      for (int i = 0; i < M; ++i)
        y[i * ldy + j0 + r] =
            _mm512_reduce_add_ps(acc[r][i]) + off[r][i] + tail[r][i] + (bias ? bias[j0 + r] : 0.0f);
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

void widen_row_avx512(DType dtype, const uint8_t* row, int64_t k, float* out) { widen_row_any(dtype, row, k, out); }

void dot_rows_avx512(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy) {
  find_kernel(dtype, x.m)(x, w, row_bytes, begin, end, bias, y, ldy);
}

}  // namespace hark::quant
