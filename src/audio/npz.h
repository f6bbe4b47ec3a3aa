// A small reader for NumPy .npz archives (zip, stored or deflated, zip64 sizes), enough
// for assets/mel_filters.npz. Members are parsed with core/npy.h.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace hark {

// Names of the arrays in the archive (member names without ".npy").
std::vector<std::string> npz_array_names(const std::string& path);
// One array; NotFound when the archive has no member `name` (or `name`.npy).
Tensor read_npz_array(const std::string& path, const std::string& name);

}  // namespace hark
