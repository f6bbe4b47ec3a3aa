#include "model/layer_weights.h"

namespace hark {
namespace {

Norm norm(const Weights& w, const std::string& p) { return {&w.get(p + ".weight"), &w.get(p + ".bias")}; }

Projection projection(const Weights& w, const std::string& p, bool has_bias = true) {
  return {&w.get(p + ".weight"), has_bias ? &w.get(p + ".bias") : nullptr};
}

AttentionLayer attention(const Weights& w, const std::string& p) {
  return {projection(w, p + ".query"), projection(w, p + ".key", false), projection(w, p + ".value"),
          projection(w, p + ".out")};
}

MlpLayer mlp(const Weights& w, const std::string& p) { return {projection(w, p + ".0"), projection(w, p + ".2")}; }

}  // namespace

ModelLayers lookup_layers(const Weights& w, const HParams& hp) {
  ModelLayers m;
  m.conv1 = projection(w, "encoder.conv1");
  m.conv2 = projection(w, "encoder.conv2");
  m.encoder_positions = &w.get("encoder.positional_embedding");
  m.ln_post = norm(w, "encoder.ln_post");
  for (int i = 0; i < hp.n_audio_layer; ++i) {
    const std::string p = "encoder.blocks." + std::to_string(i);
    m.encoder.push_back({norm(w, p + ".attn_ln"), norm(w, p + ".mlp_ln"), attention(w, p + ".attn"), mlp(w, p + ".mlp")});
  }
  m.token_embedding = &w.get("decoder.token_embedding.weight");
  m.decoder_positions = &w.get("decoder.positional_embedding");
  m.decoder_ln = norm(w, "decoder.ln");
  for (int i = 0; i < hp.n_text_layer; ++i) {
    const std::string p = "decoder.blocks." + std::to_string(i);
    m.decoder.push_back({norm(w, p + ".attn_ln"), norm(w, p + ".cross_attn_ln"), norm(w, p + ".mlp_ln"),
                         attention(w, p + ".attn"), attention(w, p + ".cross_attn"), mlp(w, p + ".mlp")});
  }
  return m;
}

}  // namespace hark
