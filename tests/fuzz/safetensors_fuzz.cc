// libFuzzer target for the safetensors header parser: any byte string must parse or
// throw hark::Error, never crash, and every accepted entry must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model/loaders/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto header = hark::loaders::parse_safetensors_header(data, size, "fuzz");
    for (const auto& e : header.entries) {
      if (e.offset < header.data_start || e.offset > size || e.size > size - e.offset) std::abort();
      if (e.dtype && static_cast<size_t>(hark::shape_numel(e.shape)) * hark::dtype_size(*e.dtype) != e.size) std::abort();
    }
  } catch (const hark::Error&) {
  }
  return 0;
}
