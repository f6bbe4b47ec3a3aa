// Internal to the quantized kernels: activations quantized per block of 32, and the
// per-instruction-set dot-product loops (quant_dot_{scalar,avx2,avx512}.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace hark::quant {

constexpr int64_t kQuantRowsMax = 8;  // rows of x per call of a DotRowsFn

// m rows of k activations as int8 blocks of 32 with an fp32 scale each (x ≈ d · q),
// q in [-127, 127]; `half_sums` the scaled sums d · Σq over each half-block of 16 (for
// formats with a min). `neg_half_lanes` holds −Σq of each half-block in lanes 0 and 4 of
// 8 int32 per block (0 elsewhere): the VNNI kernels start each block's sum there, scaled
// by the format's code bias, to multiply unsigned codes with signed activations.
struct ActivationBlocks {
  int64_t m = 0, k = 0;
  const int8_t* q = nullptr;              // [m][k]
  const float* d = nullptr;               // [m][k / 32]
  const float* half_sums = nullptr;       // [m][k / 16]
  const int32_t* neg_half_lanes = nullptr;  // [m][k / 32][8]
};

// Quantizes x[m][k] into caller-provided buffers of the sizes above.
void quantize_activations(const float* x, int64_t m, int64_t k, int8_t* q, float* d, float* half_sums,
                          int32_t* neg_half_lanes);

// y[r][j] = dot(x row r, w row j) (+ bias[j]) for weight rows j in [begin, end), every
// row r < x.m (at most 8). Rows of w are `row_bytes` apart; y rows `ldy` apart.
using DotRowsFn = void (*)(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                           int64_t end, const float* bias, float* y, int64_t ldy);

// One weight row of k values widened to fp32, bit for bit as quant_format's definition.
using WidenRowFn = void (*)(DType dtype, const uint8_t* row, int64_t k, float* out);
void widen_row_scalar(DType dtype, const uint8_t* row, int64_t k, float* out);
void widen_row_avx2(DType dtype, const uint8_t* row, int64_t k, float* out);
void widen_row_avx512(DType dtype, const uint8_t* row, int64_t k, float* out);

void dot_rows_scalar(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy);
void dot_rows_avx2(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                   int64_t end, const float* bias, float* y, int64_t ldy);
void dot_rows_avx512(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy);

// Products of many rows on AVX-512 VNNI (quant_gemm_avx512.cc), for the formats whose every
// 32 values share one scale and offset (vnni_tiles_take): x's rows quantized as
// quantize_activations does, stored as unsigned codes q + 128 (u[rows][k]) with their scales
// (d[rows][k / 32]) and, for formats with offsets, d · Σq per block (sx, else may be null);
// the weights packed in panels of panel_columns() columns (packed_panel_bytes(k) each);
// tiles of tile_rows() rows, so u, d and sx must hold `rows` rounded up to whole tiles
// (zeros past the end).
bool vnni_tiles_take(DType dtype);
void quantize_rows_unsigned(const float* x, int64_t rows, int64_t k, uint8_t* u, float* d, float* sx);
int64_t packed_panel_bytes(int64_t k);
int64_t panel_columns();
int64_t tile_rows();
void pack_panel_vnni(DType dtype, const uint8_t* w, size_t row_bytes, int64_t n, int64_t k, int64_t c0, uint8_t* out);
// y[r][c0 + j] = Σ_blocks d_x (s_w Σ q_x c_w + o_w Σ q_x) (+ bias[c0 + j]) for rows r <
// rows and the panel's columns below n; y rows `ldy` apart.
void tiles_vnni(DType dtype, const uint8_t* u, const float* du, const float* sx, int64_t rows, int64_t k,
                const uint8_t* panel, int64_t c0, int64_t n, const float* bias, float* y, int64_t ldy);

// What one chunk of 32 weights holds, whatever the format: value i = scale · code[i] +
// offset, with the scale and offset of values 0-15 (index 0) and 16-31 (index 1)
// (quant_chunk.h).
struct ChunkScales {
  float scale[2];
  float offset[2];
};

}  // namespace hark::quant
