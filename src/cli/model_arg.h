// Turns a --model argument into a loaded checkpoint: a path, or "synthetic:SIZE" for the
// seeded random-weight checkpoints the parity tests use (benchmarks, smoke runs).
#pragma once

#include <memory>
#include <string>

#include "model/checkpoint.h"

namespace hark::cli {

std::shared_ptr<const Checkpoint> open_model_arg(const std::string& spec, const std::string& synthetic_dtype = "f32");

}  // namespace hark::cli
