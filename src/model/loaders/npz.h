// NumPy .npz archives (a zip of .npy members, stored or deflated, zip64 aware), as
// written by np.savez / np.savez_compressed and by MLX's mx.savez.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "model/loaders/safetensors.h"

namespace hark::loaders {

// Every member array by name (".npy" stripped), in archive order. Members are copied
// out of the archive (deflated ones must be inflated anyway). ModelFormat on a damaged
// archive, naming the member.
std::vector<NamedTensor> read_npz(const std::string& path);
// Parses an in-memory archive image; `what` names it in errors.
std::vector<NamedTensor> parse_npz(const unsigned char* data, size_t size, const std::string& what);

// Writes an uncompressed archive like np.savez, each array converted to `dtype`
// (bf16 is stored as '<u2', which numpy cannot tell from uint16).
void write_npz(const std::string& path, const std::vector<NamedTensor>& tensors, DType dtype);

}  // namespace hark::loaders
