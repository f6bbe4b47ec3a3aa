// Temporary: replaced by the real loaders (hf_safetensors.cc, mlx.cc, ggml.cc).
#include "model/loaders/loaders.h"

namespace hark::loaders {
namespace {
[[noreturn]] void todo() { throw Error(ErrorCode::Unavailable, "[model] checkpoint loaders not built yet"); }
}  // namespace
bool looks_like_hf(const std::string&) { return false; }
bool looks_like_mlx(const std::string&) { return false; }
bool looks_like_ggml(const std::string&) { return false; }
Checkpoint load_hf(const std::string&) { todo(); }
Checkpoint load_mlx(const std::string&) { todo(); }
Checkpoint load_ggml(const std::string&) { todo(); }
void save_hf(const Checkpoint&, const std::string&, DType) { todo(); }
void save_mlx(const Checkpoint&, const std::string&, DType) { todo(); }
void save_ggml(const Checkpoint&, const std::string&, DType) { todo(); }
}  // namespace hark::loaders
