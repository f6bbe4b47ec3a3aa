// Pointers to every tensor a forward pass reads, looked up by name once when the model is
// built (a decoder step would otherwise build ~60 names per layer per token).
#pragma once

#include <string>
#include <vector>

#include "model/weights.h"

namespace hark {

struct Norm {
  const Tensor *weight = nullptr, *bias = nullptr;
};

struct Projection {
  const Tensor *weight = nullptr, *bias = nullptr;  // bias may be null (key projections)
};

struct AttentionLayer {
  Projection query, key, value, out;
};

struct MlpLayer {
  Projection up, down;  // mlp.0 and mlp.2
};

struct EncoderLayer {
  Norm attn_ln, mlp_ln;
  AttentionLayer attn;
  MlpLayer mlp;
};

struct DecoderLayer {
  Norm attn_ln, cross_attn_ln, mlp_ln;
  AttentionLayer attn, cross_attn;
  MlpLayer mlp;
};

struct ModelLayers {
  Projection conv1, conv2;
  const Tensor* encoder_positions = nullptr;
  Norm ln_post;
  std::vector<EncoderLayer> encoder;
  const Tensor *token_embedding = nullptr, *decoder_positions = nullptr;
  Norm decoder_ln;
  std::vector<DecoderLayer> decoder;
};

ModelLayers lookup_layers(const Weights& w, const HParams& hp);

}  // namespace hark
