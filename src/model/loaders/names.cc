#include "model/loaders/names.h"

#include <cstring>

#include "hark/error.h"

namespace hark::loaders {
namespace {

struct Rename {
  const char* hf;
  const char* internal;
};

// Per-layer modules ("<side>.layers.N.<module>.<weight|bias>").
constexpr Rename kLayerModules[] = {
    {"self_attn.q_proj", "attn.query"},
    {"self_attn.k_proj", "attn.key"},
    {"self_attn.v_proj", "attn.value"},
    {"self_attn.out_proj", "attn.out"},
    {"self_attn_layer_norm", "attn_ln"},
    {"encoder_attn.q_proj", "cross_attn.query"},
    {"encoder_attn.k_proj", "cross_attn.key"},
    {"encoder_attn.v_proj", "cross_attn.value"},
    {"encoder_attn.out_proj", "cross_attn.out"},
    {"encoder_attn_layer_norm", "cross_attn_ln"},
    {"fc1", "mlp.0"},
    {"fc2", "mlp.2"},
    {"final_layer_norm", "mlp_ln"},
};

// Whole tensors outside the layers.
constexpr Rename kTopLevel[] = {
    {"encoder.conv1.weight", "encoder.conv1.weight"},
    {"encoder.conv1.bias", "encoder.conv1.bias"},
    {"encoder.conv2.weight", "encoder.conv2.weight"},
    {"encoder.conv2.bias", "encoder.conv2.bias"},
    {"encoder.embed_positions.weight", "encoder.positional_embedding"},
    {"encoder.layer_norm.weight", "encoder.ln_post.weight"},
    {"encoder.layer_norm.bias", "encoder.ln_post.bias"},
    {"decoder.embed_tokens.weight", "decoder.token_embedding.weight"},
    {"decoder.embed_positions.weight", "decoder.positional_embedding"},
    {"decoder.layer_norm.weight", "decoder.ln.weight"},
    {"decoder.layer_norm.bias", "decoder.ln.bias"},
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Splits "<side>.<layers_word>.N.<module>.<leaf>" into its parts; false when it does not fit.
bool split_layer_name(const std::string& name, const std::string& layers_word, std::string& side, std::string& index,
                      std::string& module, std::string& leaf) {
  for (const char* s : {"encoder", "decoder"}) {
    const std::string prefix = std::string(s) + "." + layers_word + ".";
    if (!starts_with(name, prefix)) continue;
    const size_t index_end = name.find('.', prefix.size());
    const size_t leaf_start = name.rfind('.');
    if (index_end == std::string::npos || leaf_start <= index_end) return false;
    side = s;
    index = name.substr(prefix.size(), index_end - prefix.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return false;
    module = name.substr(index_end + 1, leaf_start - index_end - 1);
    leaf = name.substr(leaf_start + 1);
    return leaf == "weight" || leaf == "bias";
  }
  return false;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

// Table-driven in both directions so the two mappings cannot drift apart.
std::optional<std::string> hf_to_internal(const std::string& hf_name) {
  const std::string name = starts_with(hf_name, "model.") ? hf_name.substr(6) : hf_name;
  std::string side, index, module, leaf;
  if (split_layer_name(name, "layers", side, index, module, leaf)) {
    for (const auto& r : kLayerModules)
      if (module == r.hf) return side + ".blocks." + index + "." + r.internal + "." + leaf;
    return std::nullopt;
  }
  for (const auto& r : kTopLevel)
    if (name == r.hf) return std::string(r.internal);
  return std::nullopt;
}

std::string internal_to_hf(const std::string& name) {
  std::string side, index, module, leaf;
  if (split_layer_name(name, "blocks", side, index, module, leaf)) {
    for (const auto& r : kLayerModules)
      if (module == r.internal) return "model." + side + ".layers." + index + "." + r.hf + "." + leaf;
  }
  for (const auto& r : kTopLevel)
    if (name == r.internal) return std::string("model.") + r.hf;
  throw Error(ErrorCode::Internal, "[convert] no Hugging Face name for tensor '" + name + "'");
}

// ".mlp1." cannot occur in any other internal name, so plain substitution is safe.
std::string mlx_to_internal(const std::string& mlx_name) {
  return replace_once(replace_once(mlx_name, ".mlp1.", ".mlp.0."), ".mlp2.", ".mlp.2.");
}

std::string internal_to_mlx(const std::string& name) {
  return replace_once(replace_once(name, ".mlp.0.", ".mlp1."), ".mlp.2.", ".mlp2.");
}

}  // namespace hark::loaders
