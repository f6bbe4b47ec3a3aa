// The safetensors container: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets:[begin, end]}, "__metadata__": {...}}, then the raw
// little-endian data. Every header entry is bounds-checked before any byte is touched,
// and tensors are zero-copy views into the memory-mapped file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace hark::loaders {

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;      // as written in the header ("F16", "U32", ...)
  std::optional<DType> dtype;  // set for the float types hark computes with (F32/F16/BF16)
  Shape shape;
  size_t offset = 0;  // from the start of the file
  size_t size = 0;    // bytes
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // sorted by name
  std::map<std::string, std::string> metadata;
  size_t data_start = 0;
};

// Validates and parses the header of an in-memory safetensors image (whole file);
// `what` names it in errors. Throws ModelFormat on any inconsistency.
SafetensorsHeader parse_safetensors_header(const unsigned char* data, size_t size, const std::string& what);

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  const std::vector<SafetensorsEntry>& entries() const { return header_.entries; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const std::string& path() const { return file_->path(); }
  // A view of the entry (or an aligned copy); UnsupportedFormat for non-float dtypes.
  Tensor tensor(const SafetensorsEntry& entry) const;

 private:
  std::shared_ptr<MappedFile> file_;
  SafetensorsHeader header_;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Writes `tensors` in order, each converted to `dtype` (F32, F16 or BF16).
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors, DType dtype,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
const char* safetensors_dtype_name(DType dtype);

}  // namespace hark::loaders
