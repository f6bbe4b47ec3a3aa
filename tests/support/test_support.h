// Helpers shared by the test binaries: data paths and numeric comparisons.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace hark::test {

// tests/data/<relative>
std::string data_path(const std::string& relative);
// A fresh empty directory under the build tree, removed at exit of the test binary.
std::string temp_dir(const std::string& name);
// ‖a − b‖₂ / ‖b‖₂ over all elements (any float dtypes).
double relative_l2(const Tensor& a, const Tensor& b);
double max_abs_diff(const Tensor& a, const Tensor& b);
std::string read_file(const std::string& path);

}  // namespace hark::test
