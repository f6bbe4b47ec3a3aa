// Tensor-name mappings between the formats' own namings and the internal (OpenAI
// whisper package) naming documented in model/weights.h.
#pragma once

#include <optional>
#include <string>

namespace hark::loaders {

// "model.encoder.layers.3.self_attn.q_proj.weight" → "encoder.blocks.3.attn.query.weight".
// The "model." prefix is optional (WhisperModel vs WhisperForConditionalGeneration);
// nullopt for names that are not Whisper weights (proj_out.weight included).
std::optional<std::string> hf_to_internal(const std::string& hf_name);
// The WhisperForConditionalGeneration name of an internal tensor (with "model.").
std::string internal_to_hf(const std::string& name);

// MLX's whisper names its MLP layers mlp1/mlp2 instead of mlp.0/mlp.2; the rest matches.
std::string mlx_to_internal(const std::string& mlx_name);
std::string internal_to_mlx(const std::string& name);

}  // namespace hark::loaders
