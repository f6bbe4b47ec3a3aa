// Turns what a user passes as --model into a checkpoint on disk. Used by the CLI and the
// server, so a model is named the same way everywhere.
#pragma once

#include <string>

#include "hub/paths.h"

namespace hark::hub {

// `spec` is, in this order:
//   1. an existing path: a checkpoint folder, a ggml file, or an HF cache repo folder
//      (models--org--name, resolved through refs/main);
//   2. a repo id ("openai/whisper-small") or repo file ("ggerganov/whisper.cpp/ggml-base.bin")
//      found in hark's folder or a Hugging Face cache;
//   3. a short name ("turbo", "small.en", "mlx:base", "ggml-tiny.en") matched against the
//      official checkpoints in any of the search locations.
// Returns the checkpoint's path. A model that is not on disk throws NotFound naming the
// exact `hark get` command; a path that is not a usable checkpoint throws ModelFormat.
std::string resolve_model(const std::string& spec, const SearchPaths& paths);
std::string resolve_model(const std::string& spec);  // SearchPaths::from_environment()

}  // namespace hark::hub

namespace hark {
using hub::resolve_model;
}  // namespace hark
