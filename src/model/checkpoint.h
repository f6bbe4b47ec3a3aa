// A loaded checkpoint: hyper-parameters, weights in the internal naming, and the extras
// some formats carry (alignment heads, the tokenizer choice, generation settings).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/hparams.h"
#include "model/weights.h"

namespace hark {

enum class CheckpointFormat { HuggingFace, Mlx, Ggml };
const char* to_string(CheckpointFormat format);
// Parses "hf", "mlx" or "ggml".
CheckpointFormat parse_checkpoint_format(const std::string& name);

struct Checkpoint {
  HParams hparams;
  Weights weights;
  CheckpointFormat format = CheckpointFormat::HuggingFace;
  std::string path;                 // the directory or file it came from
  DType dtype = DType::F32;         // the dtype most weights are stored in
  AlignmentHeads alignment_heads;   // empty when the checkpoint names none
  nlohmann::json generation_config; // HF generation_config.json when present, else null
};

// Detects the format of `path` (a directory or a ggml file) without loading tensors.
std::optional<CheckpointFormat> detect_checkpoint_format(const std::string& path);

// Loads any supported checkpoint; every tensor is checked against the hyper-parameters.
// "synthetic:SIZE" gives the seeded random-weight checkpoint of an official shape.
std::shared_ptr<const Checkpoint> load_checkpoint(const std::string& path);

// Writes `checkpoint` to `out` (a directory for hf/mlx, a file for ggml) in `format`,
// keeping the stored dtype unless `dtype` is given.
void save_checkpoint(const Checkpoint& checkpoint, CheckpointFormat format, const std::string& out,
                     std::optional<DType> dtype = std::nullopt);

}  // namespace hark
