// Products of many rows with block-quantized weights on AVX-512 VNNI: the encoder's products
// when its weights are q8_0 (--compute-type int8, or a q8_0 ggml file) or another format
// whose every 32 values share one scale and offset (q4_0, q4_1, q5_0, q5_1, q4_K, q5_K).
//
// Why: the other path for many rows (quant_gemm.cc's panels) widens each weight panel to
// fp32 and runs sgemm, so an int8 encoder costs what an fp32 one does. VNNI's vpdpbusd
// does 64 multiply-adds of int8 pairs in one instruction where an fp32 FMA does 16. Here x
// is quantized per block of 32 the way the decoder's integer kernels quantize it
// (quantize_activations: d = max|x| / 127, codes rounded to nearest, in [-127, 127]), so
// every output is Σ_blocks d_x · (s_w · Σ_i q_x·c_w + o_w · Σ_i q_x) for weight codes c_w
// with the block's scale s_w and offset o_w (quant_chunk.h) — the semantics of ggml's own
// products with q8 activations, not the fp32 activations of the panel path.
//
// Layout. vpdpbusd multiplies unsigned bytes with signed ones, 4 by 4 per 32-bit lane:
// activations go in as u = q + 128 (unsigned), and each block's sum is corrected by
// 128 · Σ_i q_w, precomputed per weight column and block. Weights are packed per panel of
// 32 columns: for each block of 32 values and each group of 4 (8 groups a block), the 32
// columns' 4 bytes side by side (two 64-byte vectors), then the block's 32 scales (f32),
// corrections (int32) and offsets (f32). A tile of 4 rows × 32 columns keeps its 8 integer sums and 8 fp32
// sums in registers; each block costs 64 vpdpbusd, 32 broadcasts and 32 vector operations
// to scale and add its sums.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cpu/quant_dot.h"
#include "core/cpu/quant_chunk.h"
#include "core/quant_format.h"

// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics as
// "may be used uninitialized" (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hark::quant {
namespace {

constexpr int kCols = 32;            // columns per packed panel (two vectors of 16)
constexpr int kRows = 4;             // rows per register tile
constexpr int kGroups = kBlock / 4;  // groups of 4 values per block
// Bytes of one packed block of a panel: codes, scales, corrections, offsets.
constexpr int64_t kCodeBytes = kGroups * kCols * 4;
constexpr int64_t kPackedBlock = kCodeBytes + 3 * kCols * 4;

// Packs columns [c0, c0 + kCols) of weight rows (zeros past n) into `out`.
void pack_panel(DType dtype, const uint8_t* w, size_t row_bytes, int64_t n, int64_t blocks, int64_t c0, uint8_t* out) {
  int8_t block_codes[kBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* codes = out + b * kPackedBlock;
    auto* scales = reinterpret_cast<float*>(codes + kCodeBytes);
    auto* corrections = reinterpret_cast<int32_t*>(codes + kCodeBytes + kCols * 4);
    auto* offsets = reinterpret_cast<float*>(codes + kCodeBytes + 2 * kCols * 4);
    for (int c = 0; c < kCols; ++c) {
      const int64_t col = c0 + c;
      if (col >= n) {
        for (int g = 0; g < kGroups; ++g) std::memset(codes + (g * kCols + c) * 4, 0, 4);
        scales[c] = offsets[c] = 0.0f;
        corrections[c] = 0;
        continue;
      }
      const uint8_t* row = w + col * row_bytes;
      if (dtype == DType::Q8_0)  // the codes as stored
        std::memcpy(block_codes, reinterpret_cast<const BlockQ8_0*>(row)[b].qs, kBlock);
      else
        codes_of_chunk(dtype, row, b, block_codes);
      const ChunkScales cs = scales_of_chunk(dtype, row, b);
      int32_t sum = 0;
      for (int i = 0; i < kBlock; ++i) sum += block_codes[i];
      for (int g = 0; g < kGroups; ++g) std::memcpy(codes + (g * kCols + c) * 4, block_codes + g * 4, 4);
      scales[c] = cs.scale[0];
      offsets[c] = cs.offset[0];
      corrections[c] = 128 * sum;
    }
  }
}

// kRows rows of u (k bytes apart) and their block scales against one packed panel: writes
// the tile's valid rows and columns (bias added when given).
// kOffset: the format has offsets (o_w · d_x Σ q_x a block, sx = d_x Σ q_x per row and block).
template <bool kOffset>
void tile(const uint8_t* u, const float* du, const float* sx, int64_t k, int64_t blocks, const uint8_t* panel, int rows,
          int cols, const float* bias, float* y, int64_t ldy) {
  __m512 acc[kRows][2];
  for (auto& r : acc) r[0] = r[1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* codes = panel + b * kPackedBlock;
    __m512i sums[kRows][2];
    for (auto& r : sums) r[0] = r[1] = _mm512_setzero_si512();
    for (int g = 0; g < kGroups; ++g) {
      const __m512i w0 = _mm512_loadu_si512(codes + g * kCols * 4);
      const __m512i w1 = _mm512_loadu_si512(codes + g * kCols * 4 + 64);
      for (int r = 0; r < kRows; ++r) {
        int32_t four;
        std::memcpy(&four, u + r * k + b * kBlock + g * 4, 4);
        const __m512i a = _mm512_set1_epi32(four);
        sums[r][0] = _mm512_dpbusd_epi32(sums[r][0], a, w0);
        sums[r][1] = _mm512_dpbusd_epi32(sums[r][1], a, w1);
      }
    }
    const auto* scales = reinterpret_cast<const float*>(codes + kCodeBytes);
    const auto* corrections = reinterpret_cast<const int32_t*>(codes + kCodeBytes + kCols * 4);
    const __m512 s0 = _mm512_loadu_ps(scales), s1 = _mm512_loadu_ps(scales + 16);
    const __m512i c0 = _mm512_loadu_si512(corrections), c1 = _mm512_loadu_si512(corrections + 16);
    for (int r = 0; r < kRows; ++r) {
      const __m512 d = _mm512_set1_ps(du[r * blocks + b]);
      acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums[r][0], c0)), _mm512_mul_ps(s0, d), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums[r][1], c1)), _mm512_mul_ps(s1, d), acc[r][1]);
    }
    if constexpr (kOffset) {
      const auto* offsets = reinterpret_cast<const float*>(codes + kCodeBytes + 2 * kCols * 4);
      const __m512 o0 = _mm512_loadu_ps(offsets), o1 = _mm512_loadu_ps(offsets + 16);
      for (int r = 0; r < kRows; ++r) {
        const __m512 x = _mm512_set1_ps(sx[r * blocks + b]);
        acc[r][0] = _mm512_fmadd_ps(o0, x, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(o1, x, acc[r][1]);
      }
    }
  }
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, m0, _mm512_add_ps(acc[r][0], b0));
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, _mm512_add_ps(acc[r][1], b1));
  }
}

}  // namespace

bool vnni_tiles_take(DType dtype) {
  switch (dtype) {
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
      return true;
    default:  // q2_K, q3_K, q6_K: a scale per 16 values
      return false;
  }
}

void quantize_rows_unsigned(const float* x, int64_t rows, int64_t k, uint8_t* u, float* d, float* sx) {
  const int64_t blocks = k / kBlock;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* v = x + r * k + b * kBlock;
      const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
      const __m512 inverse = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
      // Rounded to nearest even as quantize_activations' nearbyint (the default rounding).
      auto codes = [&](__m512 x16) {
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(x16, inverse));
        return _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
      };
      const __m512i q0 = codes(v0), q1 = codes(v1);
      const __m512i offset = _mm512_set1_epi32(128);
      uint8_t* ub = u + r * k + b * kBlock;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ub), _mm512_cvtepi32_epi8(_mm512_add_epi32(q0, offset)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ub + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(q1, offset)));
      const float scale = amax / 127.0f;
      d[r * blocks + b] = scale;
      if (sx) sx[r * blocks + b] = scale * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1)));
    }
  }
}

int64_t packed_panel_bytes(int64_t k) { return (k / kBlock) * kPackedBlock; }
int64_t panel_columns() { return kCols; }
int64_t tile_rows() { return kRows; }

void pack_panel_vnni(DType dtype, const uint8_t* w, size_t row_bytes, int64_t n, int64_t k, int64_t c0, uint8_t* out) {
  pack_panel(dtype, w, row_bytes, n, k / kBlock, c0, out);
}

void tiles_vnni(DType dtype, const uint8_t* u, const float* du, const float* sx, int64_t rows, int64_t k,
                const uint8_t* panel, int64_t c0, int64_t n, const float* bias, float* y, int64_t ldy) {
  const int64_t blocks = k / kBlock;
  const int cols = static_cast<int>(std::min<int64_t>(kCols, n - c0));
  for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
    // The buffers hold whole tiles (rows rounded up, zero codes and scales): the rows past
    // `rows` are computed and not stored.
    const int tile_rows = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
    if (format_has_offsets(dtype))
      tile<true>(u + r0 * k, du + r0 * blocks, sx + r0 * blocks, k, blocks, panel, tile_rows, cols,
                 bias ? bias + c0 : nullptr, y + r0 * ldy + c0, ldy);
    else
      tile<false>(u + r0 * k, du + r0 * blocks, nullptr, k, blocks, panel, tile_rows, cols, bias ? bias + c0 : nullptr,
                  y + r0 * ldy + c0, ldy);
  }
}

}  // namespace hark::quant
