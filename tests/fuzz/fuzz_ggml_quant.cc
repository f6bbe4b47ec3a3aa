// libFuzzer target for whisper.cpp ggml files with quantized tensors: any byte string
// must load or throw hark::Error, never crash. Every tensor that loads must lie inside the
// input (or be an owned copy); quantized ones are then dequantized and multiplied with
// the integer kernels, so a block read past its tensor is an AddressSanitizer finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cpu/quant_gemm.h"
#include "model/loaders/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy the tensor views may keep alive, like a mapping.
  std::shared_ptr<unsigned char> bytes(new unsigned char[size + 1], std::default_delete<unsigned char[]>());
  if (size) std::memcpy(bytes.get(), data, size);
  static hark::ThreadPool pool(1);
  try {
    const hark::Checkpoint ckpt = hark::loaders::read_ggml(bytes.get(), size, bytes, "fuzz");
    for (const auto& name : ckpt.weights.names()) {
      const hark::Tensor& t = ckpt.weights.get(name);
      const auto* p = static_cast<const unsigned char*>(t.raw());
      const bool inside = p >= bytes.get() && p <= bytes.get() + size && t.nbytes() <= size - (p - bytes.get());
      const bool owned = p < bytes.get() || p > bytes.get() + size;
      if (!inside && !owned) std::abort();
      if (!hark::dtype_is_quantized(t.dtype()) || t.numel() > (int64_t{1} << 20)) continue;
      const std::vector<float> values = t.to_vector();
      if (t.rank() == 2) {
        std::vector<float> x(t.dim(1), 0.5f), y(t.dim(0));
        hark::quant_linear(pool, x.data(), 1, t.dim(1), t, nullptr, y.data(), t.dim(0));
      }
    }
  } catch (const hark::Error&) {
  }
  return 0;
}
