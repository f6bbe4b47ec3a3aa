#include "core/quant_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace hark::quant {
namespace {

constexpr BlockInfo kFormats[] = {
    {DType::Q4_0, kBlock, sizeof(BlockQ4_0), 2, 2, "q4_0"},
    {DType::Q4_1, kBlock, sizeof(BlockQ4_1), 3, 3, "q4_1"},
    {DType::Q5_0, kBlock, sizeof(BlockQ5_0), 6, 8, "q5_0"},
    {DType::Q5_1, kBlock, sizeof(BlockQ5_1), 7, 9, "q5_1"},
    {DType::Q8_0, kBlock, sizeof(BlockQ8_0), 8, 7, "q8_0"},
    {DType::Q2_K, kSuper, sizeof(BlockQ2_K), 10, 10, "q2_k"},
    {DType::Q3_K, kSuper, sizeof(BlockQ3_K), 11, 11, "q3_k"},
    {DType::Q4_K, kSuper, sizeof(BlockQ4_K), 12, 12, "q4_k"},
    {DType::Q5_K, kSuper, sizeof(BlockQ5_K), 13, 13, "q5_k"},
    {DType::Q6_K, kSuper, sizeof(BlockQ6_K), 14, 14, "q6_k"},
};

void check_length(DType dtype, int64_t n) {
  const int64_t block = block_info(dtype).elems;
  if (n < 0 || n % block != 0)
    throw Error(ErrorCode::Internal, std::string("[quant] ") + block_info(dtype).name + " rows hold whole blocks of " +
                                         std::to_string(block) + " values, not " + std::to_string(n));
}

// The 5th bit of value j (0..31) of a q5 block.
inline int high_bit(const uint8_t* qh, int j) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return static_cast<int>((bits >> j) & 1u);
}

inline int nibble(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4); }

void dequantize_q4_0(const BlockQ4_0* b, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kBlock) {
    const float d = load_f16(b[i].d);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(nibble(b[i].qs, j) - 8) * d;
  }
}

void dequantize_q4_1(const BlockQ4_1* b, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kBlock) {
    const float d = load_f16(b[i].d), m = load_f16(b[i].m);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(nibble(b[i].qs, j)) * d + m;
  }
}

void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kBlock) {
    const float d = load_f16(b[i].d);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>((nibble(b[i].qs, j) | high_bit(b[i].qh, j) << 4) - 16) * d;
  }
}

void dequantize_q5_1(const BlockQ5_1* b, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kBlock) {
    const float d = load_f16(b[i].d), m = load_f16(b[i].m);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(nibble(b[i].qs, j) | high_bit(b[i].qh, j) << 4) * d + m;
  }
}

void dequantize_q8_0(const BlockQ8_0* b, float* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, y += kBlock) {
    const float d = load_f16(b[i].d);
    for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// Largest |x| in [x, x + n), and the signed value that has it (first one on ties).
float signed_absmax(const float* x, int64_t n) {
  float amax = 0, max = 0;
  for (int64_t j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max;
}

int clamped_round(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  return static_cast<int>(std::clamp(r, static_cast<float>(lo), static_cast<float>(hi)));
}

// Symmetric blocks with q in [lo, hi]: d = (signed max) / lo, so the largest magnitude
// lands exactly on the wider (negative) end of the range, as in ggml's q4_0/q5_0.
template <int Lo, int Hi>
float symmetric_codes(const float* x, int* q) {
  const float max = signed_absmax(x, kBlock);
  const float d = max / static_cast<float>(Lo);
  const float stored = half_to_float(float_to_half(d));
  for (int j = 0; j < kBlock; ++j) q[j] = stored == 0 ? 0 : clamped_round(x[j] / stored, Lo, Hi);
  return d;
}

// Affine blocks x ≈ d·q + m with q in [0, levels].
void affine_codes(const float* x, int levels, int* q, float& d_out, float& m_out) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kBlock; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  d_out = (hi - lo) / static_cast<float>(levels);
  m_out = lo;
  const float d = half_to_float(float_to_half(d_out)), m = half_to_float(float_to_half(m_out));
  for (int j = 0; j < kBlock; ++j) q[j] = d == 0 ? 0 : clamped_round((x[j] - m) / d, 0, levels);
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
}

void pack_high_bits(const int* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kBlock; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

void quantize_block(DType dtype, const float* x, uint8_t* out) {
  int q[kBlock];
  switch (dtype) {
    case DType::Q4_0: {
      auto* b = reinterpret_cast<BlockQ4_0*>(out);
      store_f16(b->d, symmetric_codes<-8, 7>(x, q));
      for (int& v : q) v += 8;
      pack_nibbles(q, b->qs);
      return;
    }
    case DType::Q5_0: {
      auto* b = reinterpret_cast<BlockQ5_0*>(out);
      store_f16(b->d, symmetric_codes<-16, 15>(x, q));
      for (int& v : q) v += 16;
      pack_nibbles(q, b->qs);
      pack_high_bits(q, b->qh);
      return;
    }
    case DType::Q4_1:
    case DType::Q5_1: {
      const bool five = dtype == DType::Q5_1;
      float d, m;
      affine_codes(x, five ? 31 : 15, q, d, m);
      uint8_t* block = out;
      store_f16(block, d);
      store_f16(block + 2, m);
      if (five) pack_high_bits(q, block + 4);
      pack_nibbles(q, block + (five ? 8 : 4));
      return;
    }
    case DType::Q8_0: {
      auto* b = reinterpret_cast<BlockQ8_0*>(out);
      float amax = 0;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127.0f;
      store_f16(b->d, d);
      const float stored = load_f16(b->d);
      for (int j = 0; j < kBlock; ++j)
        b->qs[j] = static_cast<int8_t>(stored == 0 ? 0 : clamped_round(x[j] / stored, -127, 127));
      return;
    }
    default:
      throw Error(ErrorCode::Internal, std::string("[quant] no block quantizer for ") + dtype_name(dtype));
  }
}

}  // namespace

std::span<const BlockInfo> formats() { return kFormats; }

const BlockInfo& block_info(DType dtype) {
  for (const BlockInfo& f : kFormats)
    if (f.dtype == dtype) return f;
  throw Error(ErrorCode::Internal, "[quant] dtype " + std::to_string(static_cast<int>(dtype)) + " is not quantized");
}

std::optional<DType> from_ggml_type(int32_t type) {
  for (const BlockInfo& f : kFormats)
    if (f.ggml_type == type) return f.dtype;
  return std::nullopt;
}

std::optional<DType> parse_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const BlockInfo& f : kFormats)
    if (lower == f.name) return f.dtype;
  return std::nullopt;
}

void dequantize_row(DType dtype, const void* blocks, float* out, int64_t n) {
  check_length(dtype, n);
  const int64_t count = n / block_info(dtype).elems;
  switch (dtype) {
    case DType::Q4_0: return dequantize_q4_0(static_cast<const BlockQ4_0*>(blocks), out, count);
    case DType::Q4_1: return dequantize_q4_1(static_cast<const BlockQ4_1*>(blocks), out, count);
    case DType::Q5_0: return dequantize_q5_0(static_cast<const BlockQ5_0*>(blocks), out, count);
    case DType::Q5_1: return dequantize_q5_1(static_cast<const BlockQ5_1*>(blocks), out, count);
    case DType::Q8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(blocks), out, count);
    default: return dequantize_row_kquant(dtype, blocks, out, n);
  }
}

void quantize_row(DType dtype, const float* in, void* blocks, int64_t n) {
  check_length(dtype, n);
  const BlockInfo& info = block_info(dtype);
  if (info.elems == kSuper) return quantize_row_kquant(dtype, in, blocks, n);
  auto* out = static_cast<uint8_t*>(blocks);
  for (int64_t i = 0; i < n / kBlock; ++i) quantize_block(dtype, in + i * kBlock, out + i * info.bytes);
}

}  // namespace hark::quant
