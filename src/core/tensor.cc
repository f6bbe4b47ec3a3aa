#include "core/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/quant_format.h"

namespace hark {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::I32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F8_E4M3: return 1;
    default:
      throw Error(ErrorCode::Internal, std::string("[tensor] ") + dtype_name(dtype) +
                                           " is block-quantized: it has no size per element");
  }
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::F8_E4M3: return "f8_e4m3";
    default: return quant::block_info(dtype).name;
  }
}

bool dtype_is_quantized(DType dtype) { return dtype >= DType::Q4_0 && dtype <= DType::Q6_K; }

int64_t dtype_block_elems(DType dtype) { return dtype_is_quantized(dtype) ? quant::block_info(dtype).elems : 1; }

size_t dtype_block_bytes(DType dtype) {
  return dtype_is_quantized(dtype) ? quant::block_info(dtype).bytes : dtype_size(dtype);
}

size_t dtype_nbytes(DType dtype, int64_t n) {
  if (!dtype_is_quantized(dtype)) return static_cast<size_t>(n) * dtype_size(dtype);
  const quant::BlockInfo& info = quant::block_info(dtype);
  return static_cast<size_t>(n / info.elems) * info.bytes;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
std::shared_ptr<void> aligned_storage(size_t bytes) {
  // Round up so that SIMD loops may read whole vectors past the last element.
  size_t padded = ((bytes + 63) / 64) * 64 + 64;
  // Large buffers (weights, the decoder's cross-attention keys and values, the encoder's
  // activations) on 2 MiB pages where the kernel offers them on request: a decoder step
  // reads one head's keys and values a row apart, a stride of kilobytes that touches a new
  // 4 KiB page at every row and runs out of TLB entries long before it runs out of cache.
  constexpr size_t kHugePage = size_t{2} << 20;
  const bool huge = padded >= 2 * kHugePage;
  if (huge) padded = (padded + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(huge ? kHugePage : 64, padded);
  if (!p) throw Error(ErrorCode::OutOfMemory, "[tensor] cannot allocate " + std::to_string(bytes) + " bytes");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) madvise(p, padded, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
#endif
  return std::shared_ptr<void>(p, std::free);
}
}  // namespace

namespace {
// A quantized tensor packs its last dimension in whole blocks.
void check_blocks(const Shape& shape, DType dtype) {
  if (!dtype_is_quantized(dtype)) return;
  const int64_t block = dtype_block_elems(dtype);
  if (shape.empty() || shape.back() % block != 0)
    throw Error(ErrorCode::InvalidArgument, std::string("[tensor] a ") + dtype_name(dtype) + " tensor needs a last "
                                                "dimension that is a multiple of " + std::to_string(block) +
                                                ", got " + shape_str(shape));
}
}  // namespace

Tensor Tensor::empty(Shape shape, DType dtype) {
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorCode::InvalidArgument, "[tensor] negative dimension in " + shape_str(shape));
  }
  check_blocks(shape, dtype);
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = aligned_storage(t.nbytes());
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::view(void* data, Shape shape, DType dtype, std::shared_ptr<void> keepalive, Device device) {
  check_blocks(shape, dtype);
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = std::move(keepalive);
  t.data_ = data;
  t.device_ = device;
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, Shape shape) {
  if (shape_numel(shape) != static_cast<int64_t>(values.size())) {
    throw Error(ErrorCode::InvalidArgument, "[tensor] " + std::to_string(values.size()) +
                                                " values do not fill shape " + shape_str(shape));
  }
  Tensor t = empty(std::move(shape));
  std::memcpy(t.data_, values.data(), values.size() * 4);
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  if (shape_numel(shape) != numel()) {
    throw Error(ErrorCode::InvalidArgument, "[tensor] cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  }
  check_blocks(shape, dtype_);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0]) {
    throw Error(ErrorCode::InvalidArgument, "[tensor] rows [" + std::to_string(begin) + ", " +
                                                std::to_string(end) + ") out of range for " + shape_str(shape_));
  }
  Tensor t = *this;
  int64_t row_elems = shape_[0] ? numel() / shape_[0] : 0;
  t.data_ = static_cast<char*>(data_) + begin * dtype_nbytes(dtype_, row_elems);
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::to_f32(bool allow_alias) const {
  if (dtype_ == DType::F32 && allow_alias) return *this;
  Tensor t = empty(shape_, DType::F32);
  convert_to_f32(data_, dtype_, t.data<float>(), numel());
  return t;
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(numel());
  convert_to_f32(data_, dtype_, out.data(), numel());
  return out;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float e4m3_to_float(uint8_t v) {
  const int exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
  const float sign = v & 0x80 ? -1.0f : 1.0f;
  if (exponent == 0xF && mantissa == 0x7) return __builtin_nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // 2^-6 · m/8
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

void convert_to_f32(const void* src, DType dtype, float* dst, int64_t n) {
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(s[i]);
      return;
    }
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    case DType::I32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::F8_E4M3: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = e4m3_to_float(s[i]);
      return;
    }
    default:
      quant::dequantize_row(dtype, src, dst, n);
      return;
  }
}

}  // namespace hark
