// Light-weight look at a checkpoint on disk: format, hyper-parameters, stored dtype and
// size, read from config.json and file headers only (no tensor data is touched), so
// `hark models` stays instant even for multi-GB checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/checkpoint.h"
#include "model/hparams.h"

namespace hark::hub {

struct ModelInfo {
  std::string name;      // repo id ("openai/whisper-tiny") or ggml file stem ("ggml-tiny")
  std::string path;      // the checkpoint directory or ggml file
  CheckpointFormat format = CheckpointFormat::HuggingFace;
  std::string source;    // "hark", "hf-cache", "whisper.cpp" or "path"
  HParams hparams;
  std::string dtype;     // "f32", "f16", "bf16", or "mixed"
  std::uint64_t bytes = 0;  // weights on disk

  std::string size_class() const { return hparams.size_name(); }
};

// Describes `path` when it is a complete checkpoint hark can load, else nullopt with the
// reason in *why_not. Incomplete downloads (missing shards, truncated safetensors, ggml
// files cut short of their header) are rejected here, so nothing half-written is listed.
std::optional<ModelInfo> inspect_checkpoint(const std::string& path, std::string* why_not = nullptr);

// "1.6 GB", "75.5 MB", "900 B".
std::string human_bytes(std::uint64_t bytes);

}  // namespace hark::hub
