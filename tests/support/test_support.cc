#include "test_support.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace hark::test {

std::string data_path(const std::string& relative) { return std::string(HARK_TEST_DATA) + "/" + relative; }

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("hark-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

double relative_l2(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  if (va.size() != vb.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    double d = static_cast<double>(va[i]) - vb[i];
    num += d * d;
    den += static_cast<double>(vb[i]) * vb[i];
  }
  return std::sqrt(num) / std::sqrt(den > 0 ? den : 1.0);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  if (va.size() != vb.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(va[i]) - vb[i]));
  return m;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace hark::test
