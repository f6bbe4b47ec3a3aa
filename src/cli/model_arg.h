// Turns a --model argument into a loaded checkpoint: a path, or "synthetic:SIZE" for the
// seeded random-weight checkpoints the parity tests use (benchmarks, smoke runs).
#pragma once

#include <memory>
#include <string>

#include "model/checkpoint.h"

namespace hark::cli {

std::shared_ptr<const Checkpoint> open_model_arg(const std::string& spec, const std::string& synthetic_dtype = "f32");

// What EngineOptions::model takes for a --model argument: "synthetic:SIZE" as it is (the
// engine makes it), anything else resolved on disk (hub/resolve.h: NotFound names `hark get`).
std::string engine_model_arg(const std::string& spec);

}  // namespace hark::cli
