#include "model/hparams.h"

#include <nlohmann/json.hpp>

#include "hark/error.h"

namespace hark {

std::string HParams::size_name() const {
  struct Known {
    const char* name;
    int state, audio_layers, text_layers, mels, vocab;
  };
  static const Known kKnown[] = {
      {"tiny", 384, 4, 4, 80, 51865},     {"tiny.en", 384, 4, 4, 80, 51864},
      {"base", 512, 6, 6, 80, 51865},     {"base.en", 512, 6, 6, 80, 51864},
      {"small", 768, 12, 12, 80, 51865},  {"small.en", 768, 12, 12, 80, 51864},
      {"medium", 1024, 24, 24, 80, 51865}, {"medium.en", 1024, 24, 24, 80, 51864},
      {"large-v2", 1280, 32, 32, 80, 51865}, {"large-v3", 1280, 32, 32, 128, 51866},
      {"large-v3-turbo", 1280, 32, 4, 128, 51866},
  };
  for (const auto& k : kKnown) {
    if (k.state == n_audio_state && k.audio_layers == n_audio_layer && k.text_layers == n_text_layer &&
        k.mels == n_mels && k.vocab == n_vocab)
      return k.name;
  }
  if (n_audio_state == 1280 && n_text_layer < n_audio_layer) return "distil-large";
  return "custom";
}

void HParams::validate() const {
  auto bad = [](const std::string& what) { throw Error(ErrorCode::ModelFormat, "[model] invalid hyper-parameter: " + what); };
  if (n_mels != 80 && n_mels != 128) bad("n_mels = " + std::to_string(n_mels) + " (expected 80 or 128)");
  if (n_audio_ctx <= 0 || n_audio_ctx > 1500) bad("n_audio_ctx = " + std::to_string(n_audio_ctx));
  if (n_audio_state <= 0 || n_audio_head <= 0 || n_audio_state % n_audio_head) bad("n_audio_state/n_audio_head");
  if (n_text_state <= 0 || n_text_head <= 0 || n_text_state % n_text_head) bad("n_text_state/n_text_head");
  if (n_audio_layer <= 0 || n_text_layer <= 0 || n_audio_layer > 256 || n_text_layer > 256) bad("layer count");
  if (n_vocab < 51864 || n_vocab > 51866) bad("n_vocab = " + std::to_string(n_vocab) + " (expected 51864..51866)");
  if (n_text_ctx <= 0 || n_text_ctx > 4096) bad("n_text_ctx = " + std::to_string(n_text_ctx));
}

nlohmann::json HParams::to_openai_json() const {
  return {{"n_mels", n_mels},           {"n_audio_ctx", n_audio_ctx},   {"n_audio_state", n_audio_state},
          {"n_audio_head", n_audio_head}, {"n_audio_layer", n_audio_layer}, {"n_vocab", n_vocab},
          {"n_text_ctx", n_text_ctx},   {"n_text_state", n_text_state}, {"n_text_head", n_text_head},
          {"n_text_layer", n_text_layer}};
}

HParams HParams::from_openai_json(const nlohmann::json& j) {
  HParams hp;
  try {
    hp.n_mels = j.at("n_mels");
    hp.n_audio_ctx = j.at("n_audio_ctx");
    hp.n_audio_state = j.at("n_audio_state");
    hp.n_audio_head = j.at("n_audio_head");
    hp.n_audio_layer = j.at("n_audio_layer");
    hp.n_vocab = j.at("n_vocab");
    hp.n_text_ctx = j.at("n_text_ctx");
    hp.n_text_state = j.at("n_text_state");
    hp.n_text_head = j.at("n_text_head");
    hp.n_text_layer = j.at("n_text_layer");
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::ModelFormat, std::string("[model] config.json (MLX/OpenAI layout): ") + e.what());
  }
  hp.validate();
  return hp;
}

nlohmann::json HParams::to_hf_json() const {
  return {{"architectures", {"WhisperForConditionalGeneration"}},
          {"model_type", "whisper"},
          {"num_mel_bins", n_mels},
          {"max_source_positions", n_audio_ctx},
          {"d_model", n_audio_state},
          {"encoder_attention_heads", n_audio_head},
          {"encoder_layers", n_audio_layer},
          {"encoder_ffn_dim", 4 * n_audio_state},
          {"vocab_size", n_vocab},
          {"max_target_positions", n_text_ctx},
          {"decoder_attention_heads", n_text_head},
          {"decoder_layers", n_text_layer},
          {"decoder_ffn_dim", 4 * n_text_state},
          {"activation_function", "gelu"},
          {"scale_embedding", false},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"}};
}

HParams HParams::from_hf_json(const nlohmann::json& j) {
  HParams hp;
  try {
    hp.n_mels = j.value("num_mel_bins", 80);
    hp.n_audio_ctx = j.value("max_source_positions", 1500);
    hp.n_audio_state = j.at("d_model");
    hp.n_text_state = hp.n_audio_state;
    hp.n_audio_head = j.at("encoder_attention_heads");
    hp.n_audio_layer = j.at("encoder_layers");
    hp.n_vocab = j.at("vocab_size");
    hp.n_text_ctx = j.value("max_target_positions", 448);
    hp.n_text_head = j.at("decoder_attention_heads");
    hp.n_text_layer = j.at("decoder_layers");
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::ModelFormat, std::string("[model] config.json (Hugging Face layout): ") + e.what());
  }
  hp.validate();
  return hp;
}

}  // namespace hark
