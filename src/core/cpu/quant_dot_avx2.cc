// Quantized dot products with AVX2 (built with -mavx2 -mfma -mf16c and no AVX-512, so the
// path runs on any x86-64 from Haswell on): |w| · sign(x, w) with maddubs, as AVX2 has
// no signed × signed byte product.
#include "core/cpu/quant_simd.h"

namespace hark::quant {
namespace {

struct Avx2Dot {
  using XChunk = __m256i;
  struct Weights {
    __m256i codes, magnitudes;
  };
  template <DType T>
  static __m256i load_x(const ActivationBlocks& x, int row, int64_t c) { return load32(x.q + row * x.k + c * kBlock); }
  template <DType T>
  static Weights weights(const uint8_t* row, int64_t c) {
    const __m256i codes = chunk_codes<T>(row, c);
    return {codes, _mm256_abs_epi8(codes)};
  }
  static __m256i dot(const Weights& w, __m256i x) {
    const __m256i signed_x = _mm256_sign_epi8(x, w.codes);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.magnitudes, signed_x), _mm256_set1_epi16(1));
  }
};

}  // namespace

void widen_row_avx2(DType dtype, const uint8_t* row, int64_t k, float* out) { widen_row_any(dtype, row, k, out); }

void dot_rows_avx2(DType dtype, const ActivationBlocks& x, const uint8_t* w, size_t row_bytes, int64_t begin,
                   int64_t end, const float* bias, float* y, int64_t ldy) {
  KernelTable<Avx2Dot>::find(dtype, x.m)(x, w, row_bytes, begin, end, bias, y, ldy);
}

}  // namespace hark::quant
