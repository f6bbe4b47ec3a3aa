// Quantized dot products with AVX-512 VNNI on 256-bit registers (built with -mavx512f
// -mavx512bw -mavx512vl -mavx512vnni): vpdpbusd multiplies the activations, stored as
// unsigned q + 128, with the signed weight codes; 128 · Σ codes per group of four,
// computed once per chunk and row, is where each sum starts.
#include "core/cpu/quant_simd.h"

namespace hark::quant {
namespace {

struct VnniDot {
  static __m256i prepare(__m256i codes) {
    const __m256i bias = _mm256_dpbusd_epi32(_mm256_setzero_si256(), bytes(0x80), codes);
    return _mm256_sub_epi32(_mm256_setzero_si256(), bias);
  }
  static __m256i load_x(const ActivationBlocks& x, int row, int64_t c) { return load32(x.u + row * x.k + c * kBlock); }
  static __m256i dot(__m256i start, __m256i codes, __m256i xv) { return _mm256_dpbusd_epi32(start, xv, codes); }
};

}  // namespace

void dot_rows_avx512(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                     int64_t end, const float* bias, float* y, int64_t ldy) {
  KernelTable<VnniDot>::find(dtype, x.m)(x, w, row_bytes, begin, end, bias, y, ldy);
}

}  // namespace hark::quant
