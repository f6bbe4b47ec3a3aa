// ggml's block-quantized weight formats, as whisper.cpp writes them into ggml-*.bin files
// (q4_0 … q8_0 in blocks of 32 values, the k-quants q2_K … q6_K in super-blocks of 256):
// the byte layout of every block, the dequantization that defines each format, and
// hark's own quantizers (`hark convert --dtype q5_0`, `--compute-type int8`).
//
// Blocks are plain byte arrays (alignment 1): ggml files put tensor data at any offset,
// so a block may start at an odd address; f16 fields are read with memcpy.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#include "core/tensor.h"

namespace hark::quant {

constexpr int64_t kBlock = 32;    // values per block of q4_0, q4_1, q5_0, q5_1, q8_0
constexpr int64_t kSuper = 256;   // values per super-block of the k-quants

struct BlockQ4_0 { uint8_t d[2]; uint8_t qs[16]; };                    // x = d·(q − 8)
struct BlockQ4_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qs[16]; };      // x = d·q + m
struct BlockQ5_0 { uint8_t d[2]; uint8_t qh[4]; uint8_t qs[16]; };     // x = d·(q − 16)
struct BlockQ5_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint8_t d[2]; int8_t qs[32]; };                     // x = d·q
// k-quants: 16 sub-blocks of 16 (q2_K, q3_K, q6_K) or 8 of 32 (q4_K, q5_K), each with
// its own small scale (and min) that the super-block's f16 d (and dmin) multiply.
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint8_t d[2]; uint8_t dmin[2]; };
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint8_t d[2]; };
struct BlockQ4_K { uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5_K { uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint8_t d[2]; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

struct BlockInfo {
  DType dtype;
  int64_t elems;      // values per block
  size_t bytes;       // bytes per block
  int32_t ggml_type;  // ggml_type in the file's tensor records
  int32_t ggml_ftype; // the file header's ftype when (most) tensors have this type
  const char* name;   // "q8_0", "q4_k", ... (whisper-quantize's spelling)
};

// Every quantized format hark reads and writes, in DType order.
std::span<const BlockInfo> formats();
// Throws Internal for a plain dtype.
const BlockInfo& block_info(DType dtype);
std::optional<DType> from_ggml_type(int32_t type);
// "q8_0", "q5_K", "Q4_k", ...
std::optional<DType> parse_name(std::string_view name);

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}
inline void store_f16(uint8_t* p, float v) {
  const uint16_t h = float_to_half(v);
  std::memcpy(p, &h, 2);
}

// The format's definition, value by value (scalar, in ggml's order of float operations):
// every faster kernel is tested against it. n is a multiple of the block size.
void dequantize_row(DType dtype, const void* blocks, float* out, int64_t n);
// Quantizes n values into blocks (round to nearest against the stored f16 scales).
void quantize_row(DType dtype, const float* in, void* blocks, int64_t n);

// The k-quants (quant_kquants.cc).
void dequantize_row_kquant(DType dtype, const void* blocks, float* out, int64_t n);
void quantize_row_kquant(DType dtype, const float* in, void* blocks, int64_t n);

// q3_K, q4_K and q5_K pack their sub-block scales into 12 bytes. (Internal linkage: the
// kernels of each instruction set inline their own copy.)
// The signed 6-bit scale of q3_K sub-block 0..15: low nibble in bytes 0-7, top two bits
// in bytes 8-11.
static inline int q3k_scale(const uint8_t* scales, int sub) {
  const int low = sub < 8 ? (scales[sub] & 0x0F) : (scales[sub - 8] >> 4);
  const int high = (scales[8 + sub % 4] >> (2 * (sub / 4))) & 3;
  return (low | high << 4) - 32;
}
// The 6-bit scale and min of q4_K / q5_K sub-block 0..7.
static inline void q4k_scale_min(const uint8_t* q, int sub, int& scale, int& min) {
  if (sub < 4) {
    scale = q[sub] & 63;
    min = q[sub + 4] & 63;
  } else {
    scale = (q[sub + 4] & 0x0F) | ((q[sub - 4] >> 6) << 4);
    min = (q[sub + 4] >> 4) | ((q[sub] >> 6) << 4);
  }
}

}  // namespace hark::quant
