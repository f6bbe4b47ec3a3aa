// One loader (and writer) per checkpoint format; each maps its own tensor names and
// layouts onto the internal naming documented in model/weights.h.
#pragma once

#include <string>

#include "model/checkpoint.h"

namespace hark::loaders {

bool looks_like_hf(const std::string& dir);    // config.json + model.safetensors[.index.json]
bool looks_like_mlx(const std::string& dir);   // config.json (n_mels...) + weights.{safetensors,npz}
bool looks_like_ggml(const std::string& file); // whisper.cpp magic

Checkpoint load_hf(const std::string& dir);
Checkpoint load_mlx(const std::string& dir);
Checkpoint load_ggml(const std::string& file);

void save_hf(const Checkpoint& ckpt, const std::string& dir, DType dtype);
void save_mlx(const Checkpoint& ckpt, const std::string& dir, DType dtype);
void save_ggml(const Checkpoint& ckpt, const std::string& file, DType dtype);

}  // namespace hark::loaders
