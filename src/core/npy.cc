#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "core/mapped_file.h"

namespace hark {
namespace {

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::ModelFormat, "[npy] '" + what + "': " + why);
}

}  // namespace

Tensor parse_npy(const unsigned char* data, size_t size, const std::string& what) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) bad(what, "not a .npy array (bad magic)");
  const int major = data[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = data[8] | (data[9] << 8);
    offset = 10;
  } else {
    if (size < 12) bad(what, "truncated header");
    header_len = data[8] | (data[9] << 8) | (data[10] << 16) | (static_cast<size_t>(data[11]) << 24);
    offset = 12;
  }
  if (offset + header_len > size) bad(what, "truncated header");
  std::string header(reinterpret_cast<const char*>(data + offset), header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) bad(what, "no dtype in header");
  std::string descr = m[1];
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True"))) bad(what, "Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) bad(what, "no shape in header");
  Shape shape;
  std::string dims = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  const unsigned char* body = data + offset + header_len;
  const size_t body_size = size - offset - header_len;
  const int64_t n = shape_numel(shape);
  auto need = [&](size_t elem) {
    if (n < 0 || static_cast<size_t>(n) > body_size / elem) bad(what, "data shorter than shape " + shape_str(shape));
  };
  Tensor t;
  if (descr == "<f4") {
    need(4);
    t = Tensor::empty(shape, DType::F32);
    std::memcpy(t.raw(), body, n * 4);
  } else if (descr == "<f2") {
    need(2);
    t = Tensor::empty(shape, DType::F16);
    std::memcpy(t.raw(), body, n * 2);
  } else if (descr == "<u2" || descr == "<V2") {
    need(2);
    t = Tensor::empty(shape, DType::BF16);
    std::memcpy(t.raw(), body, n * 2);
  } else if (descr == "<i4") {
    need(4);
    t = Tensor::empty(shape, DType::I32);
    std::memcpy(t.raw(), body, n * 4);
  } else if (descr == "<i8") {
    need(8);
    t = Tensor::empty(shape, DType::I32);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, body + i * 8, 8);
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
  } else if (descr == "<f8") {
    need(8);
    t = Tensor::empty(shape, DType::F32);
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, body + i * 8, 8);
      t.data<float>()[i] = static_cast<float>(v);
    }
  } else {
    bad(what, "unsupported dtype '" + descr + "'");
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  auto file = MappedFile::open(path);
  return parse_npy(file->data(), file->size(), path);
}

std::string encode_npy(const Tensor& t) {
  const char* descr = t.dtype() == DType::F32 ? "<f4" : t.dtype() == DType::F16 ? "<f2" : t.dtype() == DType::I32 ? "<i4" : "<u2";
  std::string shape;
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + ", ";
  if (t.shape().size() > 1) shape.resize(shape.size() - 1);
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::Io, "[npy] cannot write '" + path + "'");
  std::string bytes = encode_npy(t);
  f.write(bytes.data(), bytes.size());
}

}  // namespace hark
