// Internal to the AVX2 and AVX-512 quantized kernels: the 32 codes of a chunk in one
// 256-bit register, per format, and the shared loop over weight rows. Included by
// translation units built for different instruction sets, so everything has internal
// linkage; `Dot` supplies the instruction-set-specific integer dot product.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "core/cpu/quant_chunk.h"

namespace hark::quant {
namespace {

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m256i bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Values 0-15 are the low nibbles of 16 bytes, values 16-31 the high ones.
inline __m256i nibbles32(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), bytes(0x0F));
}

// Byte j = 0x10 where bit j of the 32-bit little-endian word at p is set.
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  return _mm256_maskz_mov_epi8(bits, bytes(0x10));
#else
  const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread), select);
  return _mm256_and_si256(_mm256_cmpeq_epi8(v, select), bytes(0x10));
#endif
}

// (bytes at p >> shift) & mask, byte by byte (16-bit shifts: the mask drops the bits that
// cross from the neighbouring byte).
inline __m256i bit_field(const uint8_t* p, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(load32(p), _mm_cvtsi32_si128(shift)), bytes(mask));
}

// The codes of every format made non-negative by adding code_bias<T>() (q8_0: 128,
// q6_K: 32, q5_0: 16, q4_0: 8, q3_K: 4, the others 0), which is how the packed bits store
// them; Σ code·x = Σ unsigned·x − bias · Σ x.
template <DType T>
constexpr int code_bias() {
  return T == DType::Q8_0 ? 128 : T == DType::Q6_K ? 32 : T == DType::Q5_0 ? 16 : T == DType::Q4_0 ? 8
         : T == DType::Q3_K ? 4 : 0;
}
template <DType T>
constexpr int code_bias_shift() {
  return code_bias<T>() == 128 ? 7 : code_bias<T>() == 32 ? 5 : code_bias<T>() == 16 ? 4 : code_bias<T>() == 8 ? 3 : 2;
}

template <DType T>
inline __m256i chunk_unsigned_codes(const uint8_t* row, int64_t c) {
  if constexpr (T == DType::Q8_0) return _mm256_xor_si256(load32(row + c * sizeof(BlockQ8_0) + 2), bytes(0x80));
  if constexpr (T == DType::Q4_0) return nibbles32(row + c * sizeof(BlockQ4_0) + 2);
  if constexpr (T == DType::Q4_1) return nibbles32(row + c * sizeof(BlockQ4_1) + 4);
  if constexpr (T == DType::Q5_0) {
    const uint8_t* b = row + c * sizeof(BlockQ5_0);
    return _mm256_or_si256(nibbles32(b + 6), fifth_bits(b + 2));
  }
  if constexpr (T == DType::Q5_1) {
    const uint8_t* b = row + c * sizeof(BlockQ5_1);
    return _mm256_or_si256(nibbles32(b + 8), fifth_bits(b + 4));
  }
  if constexpr (block_elems_of(T) == kSuper) {
    int sub;
    const uint8_t* block = chunk_block(T, row, c, sub);
    const KChunkPlanes p = kquant_planes(T, block, sub);
    if constexpr (T == DType::Q2_K) return bit_field(p.low, p.low_shift, 3);
    if constexpr (T == DType::Q3_K)
      return _mm256_or_si256(bit_field(p.low, p.low_shift, 3), _mm256_slli_epi16(bit_field(p.high, p.high_shift, 1), 2));
    if constexpr (T == DType::Q4_K) return bit_field(p.low, p.low_shift, 0x0F);
    if constexpr (T == DType::Q5_K)
      return _mm256_or_si256(bit_field(p.low, p.low_shift, 0x0F), _mm256_slli_epi16(bit_field(p.high, p.high_shift, 1), 4));
    if constexpr (T == DType::Q6_K)
      return _mm256_or_si256(bit_field(p.low, p.low_shift, 0x0F), _mm256_slli_epi16(bit_field(p.high, p.high_shift, 3), 4));
  }
  return _mm256_setzero_si256();
}

// The signed codes (the values the format's definition multiplies by the scale).
template <DType T>
inline __m256i chunk_codes(const uint8_t* row, int64_t c) {
  if constexpr (T == DType::Q8_0) return load32(row + c * sizeof(BlockQ8_0) + 2);
  if constexpr (code_bias<T>() == 0) return chunk_unsigned_codes<T>(row, c);
  return _mm256_sub_epi8(chunk_unsigned_codes<T>(row, c), bytes(code_bias<T>()));
}

// The weight-side scale of chunk c as 8 lanes (lanes 0-3 hold values 0-15, 4-7 values
// 16-31, matching the layout of the integer dot products), and its offsets.
template <DType T>
inline __m256 chunk_scale(const uint8_t* row, int64_t c, float offset[2]) {
  if constexpr (T == DType::Q8_0 || T == DType::Q4_0 || T == DType::Q5_0) {
    return _mm256_set1_ps(f16_at(row + c * block_info_bytes(T)));
  } else if constexpr (T == DType::Q4_1 || T == DType::Q5_1) {
    const uint8_t* b = row + c * block_info_bytes(T);
    offset[0] = offset[1] = f16_at(b + 2);
    return _mm256_set1_ps(f16_at(b));
  } else {
    const ChunkScales s = scales_of_chunk(T, row, c);
    offset[0] = s.offset[0];
    offset[1] = s.offset[1];
    return _mm256_set_m128(_mm_set1_ps(s.scale[1]), _mm_set1_ps(s.scale[0]));
  }
}

// The scales of the 8 chunks of one k-quant super-block, decoded once for all of them.
struct SuperScales {
  __m256 scale[8];
  float offset[8][2];
};

template <DType T>
inline void decode_super(const uint8_t* row, int64_t super, SuperScales& out) {
  for (int sub = 0; sub < 8; ++sub) {
    const ChunkScales s = scales_of_chunk(T, row, super * 8 + sub);
    out.scale[sub] = _mm256_set_m128(_mm_set1_ps(s.scale[1]), _mm_set1_ps(s.scale[0]));
    out.offset[sub][0] = s.offset[0];
    out.offset[sub][1] = s.offset[1];
  }
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Weight rows [begin, end) against the M rows of x, R weight rows per pass (independent
// accumulator chains). Dot::load_x<T>(x, i, c) reads row i's chunk c in the form Dot
// needs, Dot::weights<T>(row, c) the weight chunk once per weight row, and
// Dot::dot(weights, xs) gives 8 int32 partial sums (lanes 0-3: values 0-15).
template <DType T, int M, class Dot>
void rows_kernel(const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin, int64_t end,
                 const float* bias, float* y, int64_t ldy) {
  constexpr int R = M == 1 ? 4 : M == 2 ? 2 : 1;
  constexpr bool kOffsets = format_has_offsets(T);
  const int64_t chunks = x.k / kBlock;
  // The activations as Dot takes them, built once per call and shared by all weight rows.
  struct XEntry {
    typename Dot::XChunk chunk;
    __m256 d;
  };
  thread_local std::vector<XEntry> xs;
  xs.resize(static_cast<size_t>(chunks * M));
  for (int i = 0; i < M; ++i)
    for (int64_t c = 0; c < chunks; ++c)
      xs[i * chunks + c] = {Dot::template load_x<T>(x, i, c), _mm256_set1_ps(x.d[i * chunks + c])};
  for (int64_t j0 = begin; j0 < end; j0 += R) {
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + std::min(j0 + r, end - 1) * row_bytes;
    __m256 acc[R][M];
    float off[R][M];
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps(), off[r][i] = 0.0f;
    SuperScales supers[block_elems_of(T) == kSuper ? R : 1];
    for (int64_t c = 0; c < chunks; ++c) {
      for (int r = 0; r < R; ++r) {
        // 2 KB ahead in the weight stream (rows are consecutive): enough loads in flight to
        // run at the memory's speed; a prefetch past the end never faults.
        const size_t at = c * block_info_bytes(T) / block_elems_of(T) * kBlock;
        if (c % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(rows[r] + at + 2048), _MM_HINT_T0);
        const auto wc = Dot::template weights<T>(rows[r], c);
        float offset[2] = {0, 0};
        __m256 scale;
        if constexpr (block_elems_of(T) == kSuper) {
          if (c % 8 == 0) decode_super<T>(rows[r], c / 8, supers[r]);
          scale = supers[r].scale[c % 8];
          offset[0] = supers[r].offset[c % 8][0];
          offset[1] = supers[r].offset[c % 8][1];
        } else {
          scale = chunk_scale<T>(rows[r], c, offset);
        }
        for (int i = 0; i < M; ++i) {
          const XEntry& e = xs[i * chunks + c];
          acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Dot::dot(wc, e.chunk)), _mm256_mul_ps(scale, e.d), acc[r][i]);
          if constexpr (kOffsets) {
            const float* hs = x.half_sums + (i * chunks + c) * 2;
            off[r][i] += offset[0] * hs[0] + offset[1] * hs[1];
          }
        }
      }
    }
    for (int r = 0; r < R && j0 + r < end; ++r)
      for (int i = 0; i < M; ++i) y[i * ldy + j0 + r] = hsum(acc[r][i]) + off[r][i] + (bias ? bias[j0 + r] : 0.0f);
  }
}

// Row of k values to fp32: value = code · scale (+ offset), the definition's operations.
template <DType T>
void widen_row(const uint8_t* row, int64_t k, float* out) {
  for (int64_t c = 0; c < k / kBlock; ++c) {
    const __m256i codes = chunk_codes<T>(row, c);
    float offset[2] = {0, 0};
    const __m256 scale = chunk_scale<T>(row, c, offset);
    const __m128 s_lo = _mm256_castps256_ps128(scale), s_hi = _mm256_extractf128_ps(scale, 1);
    const __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int p = 0; p < 4; ++p) {
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[p])),
                               _mm256_set_m128(p < 2 ? s_lo : s_hi, p < 2 ? s_lo : s_hi));
      if constexpr (format_has_offsets(T)) v = _mm256_add_ps(v, _mm256_set1_ps(offset[p / 2]));
      _mm256_storeu_ps(out + c * kBlock + 8 * p, v);
    }
  }
}

inline void widen_row_any(DType t, const uint8_t* row, int64_t k, float* out) {
  switch (t) {
    case DType::Q4_0: return widen_row<DType::Q4_0>(row, k, out);
    case DType::Q4_1: return widen_row<DType::Q4_1>(row, k, out);
    case DType::Q5_0: return widen_row<DType::Q5_0>(row, k, out);
    case DType::Q5_1: return widen_row<DType::Q5_1>(row, k, out);
    case DType::Q8_0: return widen_row<DType::Q8_0>(row, k, out);
    case DType::Q2_K: return widen_row<DType::Q2_K>(row, k, out);
    case DType::Q3_K: return widen_row<DType::Q3_K>(row, k, out);
    case DType::Q4_K: return widen_row<DType::Q4_K>(row, k, out);
    case DType::Q5_K: return widen_row<DType::Q5_K>(row, k, out);
    case DType::Q6_K: return widen_row<DType::Q6_K>(row, k, out);
    default: return dequantize_row(t, row, out, k);
  }
}

// The kernels for every format and row count, indexed [format][M - 1].
using RowsKernel = void (*)(const ActivationBlocks&, const uint8_t*, size_t, int64_t, int64_t, const float*, float*,
                            int64_t);
template <class Dot>
struct KernelTable {
  template <DType T, int... Ms>
  static constexpr std::array<RowsKernel, kQuantRowsMax> row(std::integer_sequence<int, Ms...>) {
    return {rows_kernel<T, Ms + 1, Dot>...};
  }
  static RowsKernel find(DType t, int64_t m) {
    using Seq = std::make_integer_sequence<int, kQuantRowsMax>;
    static const std::array<std::array<RowsKernel, kQuantRowsMax>, 10> table = {
        row<DType::Q4_0>(Seq{}), row<DType::Q4_1>(Seq{}), row<DType::Q5_0>(Seq{}), row<DType::Q5_1>(Seq{}),
        row<DType::Q8_0>(Seq{}), row<DType::Q2_K>(Seq{}), row<DType::Q3_K>(Seq{}), row<DType::Q4_K>(Seq{}),
        row<DType::Q5_K>(Seq{}), row<DType::Q6_K>(Seq{})};
    return table[static_cast<int>(t) - static_cast<int>(DType::Q4_0)][m - 1];
  }
};

}  // namespace
}  // namespace hark::quant
