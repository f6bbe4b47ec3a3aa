// Tensor: a dense, contiguous, row-major array with a dtype and a device. Storage is
// shared (copies of a Tensor alias the same bytes); memory-mapped weights are views that
// keep their mapping alive through the same shared handle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hark/error.h"

namespace hark {

// Q* are ggml's block-quantized weight formats (core/quant_format.h): a tensor of such a
// dtype stores its last dimension as packed blocks of dtype_block_elems() values.
// F8_E4M3 (one byte: sign, 4 exponent bits biased by 7, 3 mantissa bits; largest finite
// value 448) holds the GPU's fp8 product operands (--compute-type fp8); it comes last so that
// the other values, which the CUDA module's entry point passes as ints, keep their numbers.
enum class DType : uint8_t { F32, F16, BF16, I32, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F8_E4M3 };
enum class Device : uint8_t { Cpu, Cuda };

// Bytes per element of a plain dtype; throws Internal for a block-quantized one (use
// dtype_nbytes, whose answer depends on the element count).
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool dtype_is_quantized(DType dtype);
// Elements per block (1 for plain dtypes) and bytes per block.
int64_t dtype_block_elems(DType dtype);
size_t dtype_block_bytes(DType dtype);
// Bytes of n consecutive elements along the last dimension (n a multiple of the block).
size_t dtype_nbytes(DType dtype, int64_t n);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // A new zero-filled CPU tensor that owns its memory (64-byte aligned).
  static Tensor zeros(Shape shape, DType dtype = DType::F32);
  // Like zeros() without clearing: for outputs that are fully overwritten.
  static Tensor empty(Shape shape, DType dtype = DType::F32);
  // A view of memory owned by `keepalive` (an mmap, a loaded file, a device buffer).
  static Tensor view(void* data, Shape shape, DType dtype, std::shared_ptr<void> keepalive,
                     Device device = Device::Cpu);
  static Tensor from_vector(const std::vector<float>& values, Shape shape);

  bool defined() const { return !shape_.empty() || data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(i < 0 ? i + rank() : i); }
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  size_t nbytes() const { return dtype_nbytes(dtype_, numel()); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }

  // Same storage, new shape with the same element count.
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) of the first dimension, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;
  // A deep copy (always CPU, same dtype).
  Tensor clone() const;
  // Values converted to fp32 (a copy unless already fp32 and `allow_alias`); quantized
  // tensors are dequantized exactly as their format defines.
  Tensor to_f32(bool allow_alias = true) const;
  std::vector<float> to_vector() const;

  std::string describe() const;  // "f16[384, 80, 3]"

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::Cpu;
};

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
inline float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f);
// e4m3 (OCP FP8) to fp32: 0x7f and 0xff are NaN, exponent 0 holds the subnormals.
float e4m3_to_float(uint8_t v);
// Converts n elements of `src` (any float dtype, or whole blocks of a quantized one) to fp32.
void convert_to_f32(const void* src, DType dtype, float* dst, int64_t n);

}  // namespace hark
