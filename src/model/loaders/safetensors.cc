#include "model/loaders/safetensors.h"

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

// Headers of real checkpoints are a few hundred KB; anything beyond this is corruption.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::ModelFormat, "[safetensors] '" + what + "': " + why);
}

// Element size of every dtype the format defines, so sizes can be checked even for the
// ones hark refuses to compute with.
size_t element_size(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4}, {"F16", 2}, {"BF16", 2},
      {"I16", 2}, {"U16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

std::optional<DType> float_dtype(const std::string& dtype) {
  if (dtype == "F32") return DType::F32;
  if (dtype == "F16") return DType::F16;
  if (dtype == "BF16") return DType::BF16;
  return std::nullopt;
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& info, size_t data_size,
                             const std::string& what) {
  const std::string where = "tensor '" + name + "': ";
  if (!info.is_object()) bad(what, where + "header entry is not an object");
  SafetensorsEntry e;
  e.name = name;
  auto dt = info.find("dtype");
  if (dt == info.end() || !dt->is_string()) bad(what, where + "missing dtype");
  e.dtype_name = dt->get<std::string>();
  const size_t elem = element_size(e.dtype_name);
  if (elem == 0) bad(what, where + "unknown dtype '" + e.dtype_name + "'");
  e.dtype = float_dtype(e.dtype_name);
  auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array() || shape->size() > 8) bad(what, where + "missing or invalid shape");
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) bad(what, where + "shape holds a non-integer or negative dimension");
    const uint64_t dim = d.get<uint64_t>();
    if (dim > (1ull << 40)) bad(what, where + "dimension " + std::to_string(dim) + " is absurd");
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim / elem) bad(what, where + "shape overflows");
    numel *= dim;
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    bad(what, where + "data_offsets must be [begin, end]");
  const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > data_size)
    bad(what, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                  "] fall outside the " + std::to_string(data_size) + "-byte data section (truncated file?)");
  if (end - begin != numel * elem)
    bad(what, where + "holds " + std::to_string(end - begin) + " bytes but " + e.dtype_name + shape_str(e.shape) +
                  " needs " + std::to_string(numel * elem));
  e.offset = static_cast<size_t>(begin);
  e.size = static_cast<size_t>(end - begin);
  return e;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const unsigned char* data, size_t size, const std::string& what) {
  if (size < 8) bad(what, "file is " + std::to_string(size) + " bytes, too short for a safetensors header");
  const uint64_t header_len = read_u64_le(data);
  if (header_len > size - 8 || header_len > kMaxHeaderBytes)
    bad(what, "header length " + std::to_string(header_len) + " exceeds the file size " + std::to_string(size) +
                  " (truncated, or not a safetensors file)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(data + 8, data + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    bad(what, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) bad(what, "header is not a JSON object");
  SafetensorsHeader out;
  out.data_start = 8 + static_cast<size_t>(header_len);
  const size_t data_size = size - out.data_start;
  // Offsets in the header are relative to the data section; entries store absolute ones.
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(what, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items())
        if (mv.is_string()) out.metadata[mk] = mv.get<std::string>();
      continue;
    }
    SafetensorsEntry e = parse_entry(key, value, data_size, what);
    e.offset += out.data_start;
    out.entries.push_back(std::move(e));
  }
  return out;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  f.header_ = parse_safetensors_header(f.file_->data(), f.file_->size(), path);
  return f;
}

Tensor SafetensorsFile::tensor(const SafetensorsEntry& entry) const {
  if (!entry.dtype)
    throw Error(ErrorCode::UnsupportedFormat, "[safetensors] '" + path() + "': tensor '" + entry.name +
                                                  "' is stored as " + entry.dtype_name +
                                                  "; hark reads F32, F16 and BF16 weights (quantized checkpoints "
                                                  "are not supported: convert from an unquantized one)");
  return view_or_copy(file_, file_->data() + entry.offset, entry.shape, *entry.dtype);
}

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    default: return "?";  // block-quantized: never written to safetensors
  }
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors, DType dtype,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // One dtype for the whole file keeps every tensor aligned to its element size.
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(dtype);
    header[name] = {{"dtype", safetensors_dtype_name(dtype)}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Pad so the data section starts 8-byte aligned, as the reference writer does.
  while ((8 + text.size()) % 8 != 0) text += ' ';
  write_file_atomically(path, [&](std::FILE* f) {
    unsigned char len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    write_bytes(f, len, 8, path);
    write_bytes(f, text.data(), text.size(), path);
    for (const auto& [name, t] : tensors) {
      Tensor c = cast_tensor(t, dtype);
      write_bytes(f, c.raw(), c.nbytes(), path);
    }
  });
}

}  // namespace hark::loaders
