// The k-quants (super-blocks of 256 values): exact dequantization in ggml's order of
// float operations, and a simple quantizer (scales from each sub-block's range, then
// the sub-block scales quantized against the super-block's f16 scale).
//
// Value e of a super-block (0..255) sits here:
//   q2_K  code (qs[e/128·32 + (e%32)/16·16 + e%16] >> 2·((e%128)/32)) & 3, sub-block e/16
//   q3_K  the same 2 bits, minus 4 unless bit (e/128·4 + (e%128)/32) of hmask[(e%32)/16·16 + e%16]
//   q4_K  nibble (low for e%64 < 32) of qs[e/64·32 + e%32], sub-block e/32
//   q5_K  the same plus 16 when bit 2·(e/64) + (e%64 ≥ 32) of qh[e%32] is set
//   q6_K  nibble of ql[e/128·64 + (quarter&1)·32 + e%32] (high for quarter ≥ 2) with two
//         bits of qh[e/128·32 + e%32] >> 2·quarter on top, minus 32; quarter = (e%128)/32
#include <algorithm>
#include <cmath>

#include "core/quant_format.h"

namespace hark::quant {
namespace {

int round_clamp(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  return static_cast<int>(std::clamp(r, static_cast<float>(lo), static_cast<float>(hi)));
}

float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// Position of value e in the 2-bit planes of q2_K / q3_K.
inline int low2_byte(int e) { return e / 128 * 32 + (e % 32) / 16 * 16 + e % 16; }
inline int low2_shift(int e) { return 2 * ((e % 128) / 32); }

int q2k_code(const BlockQ2_K& b, int e) { return (b.qs[low2_byte(e)] >> low2_shift(e)) & 3; }

int q3k_code(const BlockQ3_K& b, int e) {
  const int hbit = e / 128 * 4 + (e % 128) / 32;
  const bool high = (b.hmask[(e % 32) / 16 * 16 + e % 16] >> hbit) & 1;
  return ((b.qs[low2_byte(e)] >> low2_shift(e)) & 3) - (high ? 0 : 4);
}

int q4k_code(const uint8_t* qs, int e) {
  const uint8_t byte = qs[e / 64 * 32 + e % 32];
  return (e % 64) < 32 ? (byte & 0x0F) : (byte >> 4);
}

int q5k_code(const BlockQ5_K& b, int e) {
  const int bit = 2 * (e / 64) + ((e % 64) < 32 ? 0 : 1);
  return q4k_code(b.qs, e) + (((b.qh[e % 32] >> bit) & 1) ? 16 : 0);
}

int q6k_code(const BlockQ6_K& b, int e) {
  const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
  const uint8_t low = b.ql[half * 64 + (quarter & 1) * 32 + l];
  const int nib = quarter >= 2 ? (low >> 4) : (low & 0x0F);
  const int high = (b.qh[half * 32 + l] >> (2 * quarter)) & 3;
  return (nib | high << 4) - 32;
}

void dequantize_super(DType dtype, const uint8_t* block, float* y) {
  switch (dtype) {
    case DType::Q2_K: {
      const auto& b = *reinterpret_cast<const BlockQ2_K*>(block);
      const float d = load_f16(b.d), dmin = load_f16(b.dmin);
      for (int e = 0; e < kSuper; ++e) {
        const int sc = b.scales[e / 16];
        const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
        y[e] = dl * static_cast<float>(q2k_code(b, e)) - ml;
      }
      return;
    }
    case DType::Q3_K: {
      const auto& b = *reinterpret_cast<const BlockQ3_K*>(block);
      const float d = load_f16(b.d);
      for (int e = 0; e < kSuper; ++e)
        y[e] = d * static_cast<float>(q3k_scale(b.scales, e / 16)) * static_cast<float>(q3k_code(b, e));
      return;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = dtype == DType::Q5_K;
      const uint8_t* scales = five ? reinterpret_cast<const BlockQ5_K*>(block)->scales
                                   : reinterpret_cast<const BlockQ4_K*>(block)->scales;
      const float d = load_f16(block), dmin = load_f16(block + 2);
      for (int e = 0; e < kSuper; ++e) {
        int sc, m;
        q4k_scale_min(scales, e / 32, sc, m);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
        const int q = five ? q5k_code(*reinterpret_cast<const BlockQ5_K*>(block), e)
                           : q4k_code(reinterpret_cast<const BlockQ4_K*>(block)->qs, e);
        y[e] = dl * static_cast<float>(q) - ml;
      }
      return;
    }
    case DType::Q6_K: {
      const auto& b = *reinterpret_cast<const BlockQ6_K*>(block);
      const float d = load_f16(b.d);
      for (int e = 0; e < kSuper; ++e)
        y[e] = d * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q6k_code(b, e));
      return;
    }
    default:
      throw Error(ErrorCode::Internal, std::string("[quant] ") + dtype_name(dtype) + " is not a k-quant");
  }
}

// Sub-block ranges for the affine k-quants: scale = (max − min) / levels with min ≤ 0,
// stored as the positive offset −min.
void affine_ranges(const float* x, int subs, int len, int levels, float* scale, float* offset) {
  for (int s = 0; s < subs; ++s) {
    float lo = 0, hi = x[s * len];
    for (int j = 0; j < len; ++j) lo = std::min(lo, x[s * len + j]), hi = std::max(hi, x[s * len + j]);
    scale[s] = (hi - lo) / static_cast<float>(levels);
    offset[s] = -lo;
  }
}

float max_of(const float* v, int n) { return *std::max_element(v, v + n); }

void quantize_q2k(const float* x, BlockQ2_K& b) {
  float scale[16], offset[16];
  affine_ranges(x, 16, 16, 3, scale, offset);
  store_f16(b.d, max_of(scale, 16) / 15.0f);
  store_f16(b.dmin, max_of(offset, 16) / 15.0f);
  const float d = load_f16(b.d), dmin = load_f16(b.dmin);
  std::memset(b.qs, 0, sizeof(b.qs));
  for (int s = 0; s < 16; ++s) {
    const int sc = d > 0 ? round_clamp(scale[s] / d, 0, 15) : 0, mn = dmin > 0 ? round_clamp(offset[s] / dmin, 0, 15) : 0;
    b.scales[s] = static_cast<uint8_t>(sc | mn << 4);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
    for (int e = s * 16; e < s * 16 + 16; ++e) {
      const int q = dl > 0 ? round_clamp((x[e] + ml) / dl, 0, 3) : 0;
      b.qs[low2_byte(e)] |= static_cast<uint8_t>(q << low2_shift(e));
    }
  }
}

void quantize_q3k(const float* x, BlockQ3_K& b) {
  float sub[16];
  float amax = 0;
  for (int s = 0; s < 16; ++s) amax = std::max(amax, std::fabs(sub[s] = signed_absmax(x + 16 * s, 16) / -4.0f));
  store_f16(b.d, amax / 31.0f);
  const float d = load_f16(b.d);
  std::memset(b.qs, 0, sizeof(b.qs));
  std::memset(b.hmask, 0, sizeof(b.hmask));
  std::memset(b.scales, 0, sizeof(b.scales));
  for (int s = 0; s < 16; ++s) {
    const int sc = d > 0 ? round_clamp(sub[s] / d, -32, 31) : 0;
    const int u = sc + 32;  // 6 bits: low nibble in bytes 0..7, top two bits in bytes 8..11
    b.scales[s % 8] |= static_cast<uint8_t>((u & 0x0F) << (s < 8 ? 0 : 4));
    b.scales[8 + s % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (s / 4)));
    const float dl = d * static_cast<float>(sc);
    for (int e = s * 16; e < s * 16 + 16; ++e) {
      const int code = (dl != 0 ? round_clamp(x[e] / dl, -4, 3) : 0) + 4;
      b.qs[low2_byte(e)] |= static_cast<uint8_t>((code & 3) << low2_shift(e));
      if (code >= 4) b.hmask[(e % 32) / 16 * 16 + e % 16] |= static_cast<uint8_t>(1 << (e / 128 * 4 + (e % 128) / 32));
    }
  }
}

// q4_K / q5_K: 8 sub-blocks of 32 with 6-bit scales and mins (get_scale_min's packing).
void quantize_q45k(const float* x, int levels, uint8_t* block, uint8_t* scales, uint8_t* qs, uint8_t* qh) {
  float scale[8], offset[8];
  affine_ranges(x, 8, 32, levels, scale, offset);
  store_f16(block, max_of(scale, 8) / 63.0f);
  store_f16(block + 2, max_of(offset, 8) / 63.0f);
  const float d = load_f16(block), dmin = load_f16(block + 2);
  std::memset(scales, 0, 12);
  std::memset(qs, 0, 128);
  if (qh) std::memset(qh, 0, 32);
  for (int s = 0; s < 8; ++s) {
    const int sc = d > 0 ? round_clamp(scale[s] / d, 0, 63) : 0, mn = dmin > 0 ? round_clamp(offset[s] / dmin, 0, 63) : 0;
    if (s < 4) {
      scales[s] |= static_cast<uint8_t>(sc);
      scales[s + 4] |= static_cast<uint8_t>(mn);
    } else {
      scales[s + 4] = static_cast<uint8_t>((sc & 0x0F) | (mn & 0x0F) << 4);
      scales[s - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
      scales[s] |= static_cast<uint8_t>((mn >> 4) << 6);
    }
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
    for (int e = s * 32; e < s * 32 + 32; ++e) {
      const int q = dl > 0 ? round_clamp((x[e] + ml) / dl, 0, levels) : 0;
      qs[e / 64 * 32 + e % 32] |= static_cast<uint8_t>((q & 0x0F) << ((e % 64) < 32 ? 0 : 4));
      if (qh && q >= 16) qh[e % 32] |= static_cast<uint8_t>(1 << (2 * (e / 64) + ((e % 64) < 32 ? 0 : 1)));
    }
  }
}

void quantize_q6k(const float* x, BlockQ6_K& b) {
  float sub[16];
  float amax = 0;
  for (int s = 0; s < 16; ++s) amax = std::max(amax, std::fabs(sub[s] = signed_absmax(x + 16 * s, 16) / -32.0f));
  store_f16(b.d, amax / 127.0f);
  const float d = load_f16(b.d);
  std::memset(b.ql, 0, sizeof(b.ql));
  std::memset(b.qh, 0, sizeof(b.qh));
  for (int s = 0; s < 16; ++s) {
    const int sc = d > 0 ? round_clamp(sub[s] / d, -127, 127) : 0;
    b.scales[s] = static_cast<int8_t>(sc);
    const float dl = d * static_cast<float>(sc);
    for (int e = s * 16; e < s * 16 + 16; ++e) {
      const int code = (dl != 0 ? round_clamp(x[e] / dl, -32, 31) : 0) + 32;
      const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
      b.ql[half * 64 + (quarter & 1) * 32 + l] |= static_cast<uint8_t>((code & 0x0F) << (quarter >= 2 ? 4 : 0));
      b.qh[half * 32 + l] |= static_cast<uint8_t>((code >> 4) << (2 * quarter));
    }
  }
}

}  // namespace

void dequantize_row_kquant(DType dtype, const void* blocks, float* out, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(blocks);
  const size_t bytes = block_info(dtype).bytes;
  for (int64_t i = 0; i < n / kSuper; ++i) dequantize_super(dtype, p + i * bytes, out + i * kSuper);
}

void quantize_row_kquant(DType dtype, const float* in, void* blocks, int64_t n) {
  auto* p = static_cast<uint8_t*>(blocks);
  const size_t bytes = block_info(dtype).bytes;
  for (int64_t i = 0; i < n / kSuper; ++i) {
    const float* x = in + i * kSuper;
    uint8_t* block = p + i * bytes;
    switch (dtype) {
      case DType::Q2_K: quantize_q2k(x, *reinterpret_cast<BlockQ2_K*>(block)); break;
      case DType::Q3_K: quantize_q3k(x, *reinterpret_cast<BlockQ3_K*>(block)); break;
      case DType::Q4_K: {
        auto& b = *reinterpret_cast<BlockQ4_K*>(block);
        quantize_q45k(x, 15, block, b.scales, b.qs, nullptr);
        break;
      }
      case DType::Q5_K: {
        auto& b = *reinterpret_cast<BlockQ5_K*>(block);
        quantize_q45k(x, 31, block, b.scales, b.qs, b.qh);
        break;
      }
      case DType::Q6_K: quantize_q6k(x, *reinterpret_cast<BlockQ6_K*>(block)); break;
      default: throw Error(ErrorCode::Internal, std::string("[quant] ") + dtype_name(dtype) + " is not a k-quant");
    }
  }
}

}  // namespace hark::quant
