// The portable quantized dot products, and the activation quantizer every path shares.
#include <algorithm>
#include <cmath>

#include "core/cpu/quant_chunk.h"

namespace hark::quant {

void quantize_activations(const float* x, int64_t m, int64_t k, int8_t* q, float* d, float* half_sums,
                          int32_t* neg_half_lanes) {
  const int64_t blocks = k / kBlock;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* v = x + r * k + b * kBlock;
      float amax = 0;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(v[j]));
      const float scale = amax / 127.0f, inverse = amax > 0 ? 127.0f / amax : 0.0f;
      int8_t* qb = q + r * k + b * kBlock;
      int sums[2] = {0, 0};
      for (int j = 0; j < kBlock; ++j) {
        const int code = static_cast<int>(std::nearbyint(v[j] * inverse));
        qb[j] = static_cast<int8_t>(std::clamp(code, -127, 127));
        sums[j / 16] += qb[j];
      }
      d[r * blocks + b] = scale;
      half_sums[(r * blocks + b) * 2] = scale * static_cast<float>(sums[0]);
      half_sums[(r * blocks + b) * 2 + 1] = scale * static_cast<float>(sums[1]);
      int32_t* lanes = neg_half_lanes + (r * blocks + b) * 8;
      for (int j = 0; j < 8; ++j) lanes[j] = j == 0 ? -sums[0] : j == 4 ? -sums[1] : 0;
    }
  }
}

void widen_row_scalar(DType dtype, const uint8_t* row, int64_t k, float* out) { dequantize_row(dtype, row, out, k); }

void dot_rows_scalar(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy) {
  const int64_t chunks = x.k / kBlock;
  int8_t codes[kBlock];
  for (int64_t j = begin; j < end; ++j) {
    const uint8_t* row = w + j * row_bytes;
    float acc[kQuantRowsMax] = {};
    for (int64_t c = 0; c < chunks; ++c) {
      codes_of_chunk(dtype, row, c, codes);
      const ChunkScales s = scales_of_chunk(dtype, row, c);
      for (int64_t r = 0; r < x.m; ++r) {
        const int8_t* xq = x.q + r * x.k + c * kBlock;
        int32_t dots[2] = {0, 0};
        for (int i = 0; i < kBlock; ++i) dots[i / 16] += static_cast<int32_t>(codes[i]) * xq[i];
        const float dx = x.d[r * chunks + c];
        const float* hs = x.half_sums + (r * chunks + c) * 2;
        acc[r] += (s.scale[0] * static_cast<float>(dots[0]) + s.scale[1] * static_cast<float>(dots[1])) * dx +
                  s.offset[0] * hs[0] + s.offset[1] * hs[1];
      }
    }
    for (int64_t r = 0; r < x.m; ++r) y[r * ldy + j] = acc[r] + (bias ? bias[j] : 0.0f);
  }
}

}  // namespace hark::quant
