// Internal to the quantized kernels: every format seen as chunks of 32 weights, value i
// = scale · code[i] + offset, with one scale/offset for values 0-15 and one for 16-31.
// Chunk c of a k-quant row is chunk c % 8 of super-block c / 8, and all its codes come
// from 32 consecutive bytes (quant_kquants.cc has the value positions).
//
// Everything here has internal linkage: the header is compiled into translation units
// built for different instruction sets, which must not share (and swap) inline copies.
#pragma once

#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "core/quant_format.h"
#include "core/cpu/quant_dot.h"

namespace hark::quant {
namespace {

// An f16 scale: the F16C instruction where the translation unit has it (the same value
// as half_to_float).
inline float scale_at(const uint8_t* p) {
#if defined(__F16C__)
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
#else
  return load_f16(p);
#endif
}

constexpr bool format_has_offsets(DType t) {
  return t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q2_K || t == DType::Q4_K || t == DType::Q5_K;
}
constexpr int64_t block_elems_of(DType t) { return t >= DType::Q2_K ? kSuper : kBlock; }
constexpr size_t block_info_bytes(DType t) {
  switch (t) {
    case DType::Q4_0: return sizeof(BlockQ4_0);
    case DType::Q4_1: return sizeof(BlockQ4_1);
    case DType::Q5_0: return sizeof(BlockQ5_0);
    case DType::Q5_1: return sizeof(BlockQ5_1);
    case DType::Q8_0: return sizeof(BlockQ8_0);
    case DType::Q2_K: return sizeof(BlockQ2_K);
    case DType::Q3_K: return sizeof(BlockQ3_K);
    case DType::Q4_K: return sizeof(BlockQ4_K);
    case DType::Q5_K: return sizeof(BlockQ5_K);
    case DType::Q6_K: return sizeof(BlockQ6_K);
    default: return 0;
  }
}

// The block holding chunk c, and c's index inside it.
inline const uint8_t* chunk_block(DType t, const uint8_t* row, int64_t c, int& sub) {
  if (block_elems_of(t) == kBlock) {
    sub = 0;
    return row + c * block_info_bytes(t);
  }
  sub = static_cast<int>(c % 8);
  return row + (c / 8) * block_info_bytes(t);
}

inline ChunkScales scales_of_chunk(DType t, const uint8_t* row, int64_t c) {
  int sub;
  const uint8_t* b = chunk_block(t, row, c, sub);
  ChunkScales s{{0, 0}, {0, 0}};
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
      s.scale[0] = s.scale[1] = scale_at(b);
      break;
    case DType::Q4_1:
    case DType::Q5_1:
      s.scale[0] = s.scale[1] = scale_at(b);
      s.offset[0] = s.offset[1] = scale_at(b + 2);
      break;
    case DType::Q2_K: {
      const auto& k = *reinterpret_cast<const BlockQ2_K*>(b);
      const float d = scale_at(k.d), dmin = scale_at(k.dmin);
      for (int h = 0; h < 2; ++h) {
        const int sc = k.scales[2 * sub + h];
        s.scale[h] = d * static_cast<float>(sc & 0xF);
        s.offset[h] = -(dmin * static_cast<float>(sc >> 4));
      }
      break;
    }
    case DType::Q3_K: {
      const auto& k = *reinterpret_cast<const BlockQ3_K*>(b);
      const float d = scale_at(k.d);
      for (int h = 0; h < 2; ++h) s.scale[h] = d * static_cast<float>(q3k_scale(k.scales, 2 * sub + h));
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const uint8_t* packed = t == DType::Q4_K ? reinterpret_cast<const BlockQ4_K*>(b)->scales
                                               : reinterpret_cast<const BlockQ5_K*>(b)->scales;
      int sc, mn;
      q4k_scale_min(packed, sub, sc, mn);
      s.scale[0] = s.scale[1] = scale_at(b) * static_cast<float>(sc);
      s.offset[0] = s.offset[1] = -(scale_at(b + 2) * static_cast<float>(mn));
      break;
    }
    case DType::Q6_K: {
      const auto& k = *reinterpret_cast<const BlockQ6_K*>(b);
      const float d = scale_at(k.d);
      for (int h = 0; h < 2; ++h) s.scale[h] = d * static_cast<float>(k.scales[2 * sub + h]);
      break;
    }
    default:
      break;
  }
  return s;
}

// The 32 bytes a k-quant chunk reads its low bits from, the shift of its bits there, and
// (q3_K, q5_K, q6_K) the 32 bytes of its high bits with their shift.
struct KChunkPlanes {
  const uint8_t* low;
  int low_shift;
  const uint8_t* high;
  int high_shift;
};

inline KChunkPlanes kquant_planes(DType t, const uint8_t* b, int sub) {
  switch (t) {
    case DType::Q2_K: return {reinterpret_cast<const BlockQ2_K*>(b)->qs + sub / 4 * 32, 2 * (sub % 4), nullptr, 0};
    case DType::Q3_K: {
      const auto* k = reinterpret_cast<const BlockQ3_K*>(b);
      return {k->qs + sub / 4 * 32, 2 * (sub % 4), k->hmask, sub};
    }
    case DType::Q4_K: return {reinterpret_cast<const BlockQ4_K*>(b)->qs + sub / 2 * 32, 4 * (sub % 2), nullptr, 0};
    case DType::Q5_K: {
      const auto* k = reinterpret_cast<const BlockQ5_K*>(b);
      return {k->qs + sub / 2 * 32, 4 * (sub % 2), k->qh, sub};
    }
    default: {  // Q6_K
      const auto* k = reinterpret_cast<const BlockQ6_K*>(b);
      const int half = sub / 4, quarter = sub % 4;
      return {k->ql + half * 64 + (quarter & 1) * 32, quarter >= 2 ? 4 : 0, k->qh + half * 32, 2 * quarter};
    }
  }
}

// Signed codes of chunk c, one byte at a time (the portable path and the reference).
inline void codes_of_chunk(DType t, const uint8_t* row, int64_t c, int8_t* out) {
  int sub;
  const uint8_t* b = chunk_block(t, row, c, sub);
  auto nib = [](const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4); };
  auto hbit = [](const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; };
  for (int j = 0; j < 32; ++j) {
    int v = 0;
    switch (t) {
      case DType::Q4_0: v = nib(b + 2, j) - 8; break;
      case DType::Q4_1: v = nib(b + 4, j); break;
      case DType::Q5_0: v = (nib(b + 6, j) | hbit(b + 2, j) << 4) - 16; break;
      case DType::Q5_1: v = nib(b + 8, j) | hbit(b + 4, j) << 4; break;
      case DType::Q8_0: v = reinterpret_cast<const BlockQ8_0*>(b)->qs[j]; break;
      default: {
        const KChunkPlanes p = kquant_planes(t, b, sub);
        if (t == DType::Q2_K || t == DType::Q3_K) {
          v = (p.low[j] >> p.low_shift) & 3;
          if (t == DType::Q3_K) v -= ((p.high[j] >> p.high_shift) & 1) ? 0 : 4;
        } else if (t == DType::Q4_K || t == DType::Q5_K) {
          v = (p.low[j] >> p.low_shift) & 0x0F;
          if (t == DType::Q5_K) v += ((p.high[j] >> p.high_shift) & 1) << 4;
        } else {
          v = (((p.low[j] >> p.low_shift) & 0x0F) | ((p.high[j] >> p.high_shift) & 3) << 4) - 32;
        }
      }
    }
    out[j] = static_cast<int8_t>(v);
  }
}

}  // namespace
}  // namespace hark::quant
