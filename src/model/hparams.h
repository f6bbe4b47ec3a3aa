// Whisper hyper-parameters in OpenAI's naming, filled by every loader.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hark {

struct HParams {
  int n_mels = 80;
  int n_audio_ctx = 1500;
  int n_audio_state = 384;
  int n_audio_head = 6;
  int n_audio_layer = 4;
  int n_vocab = 51865;
  int n_text_ctx = 448;
  int n_text_state = 384;
  int n_text_head = 6;
  int n_text_layer = 4;

  bool multilingual() const { return n_vocab >= 51865; }
  int head_dim() const { return n_audio_state / n_audio_head; }
  // "tiny", "base", ..., "large-v3-turbo" when the shape matches an official size, else "custom".
  std::string size_name() const;
  void validate() const;  // throws ModelFormat on impossible values

  nlohmann::json to_openai_json() const;  // MLX-style config.json
  static HParams from_openai_json(const nlohmann::json& j);
  nlohmann::json to_hf_json() const;  // Hugging Face WhisperConfig fields
  static HParams from_hf_json(const nlohmann::json& j);
};

// (decoder layer, head) pairs whose cross-attention tracks time, for word timestamps.
using AlignmentHeads = std::vector<std::pair<int, int>>;

}  // namespace hark
