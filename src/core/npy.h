// NumPy .npy reading and writing (little-endian f4/f2/i4/i8/u2 arrays, C order). Used for
// oracle goldens and by the MLX .npz loader.
#pragma once

#include <string>
#include <string_view>

#include "core/tensor.h"

namespace hark {

// Parses an in-memory .npy image; `what` names it in error messages. int64 arrays are
// narrowed to i32; '<u2' is read as bf16 (how bf16 weights are usually saved).
Tensor parse_npy(const unsigned char* data, size_t size, const std::string& what);
Tensor read_npy(const std::string& path);
std::string encode_npy(const Tensor& t);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace hark
