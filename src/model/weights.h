// Weights: the immutable map from internal tensor names to tensors (usually views into a
// memory-mapped file). The internal naming is OpenAI's `whisper` package naming:
//   encoder.conv1.weight [d, n_mels, 3]     encoder.conv2.weight [d, d, 3]   (+ .bias)
//   encoder.positional_embedding [1500, d]  encoder.ln_post.{weight,bias}
//   encoder.blocks.N.attn.{query,key,value,out}.{weight,bias}   (key has no bias)
//   encoder.blocks.N.attn_ln / mlp_ln .{weight,bias}; .mlp.0 / .mlp.2 .{weight,bias}
//   decoder.token_embedding.weight [n_vocab, d]  decoder.positional_embedding [448, d]
//   decoder.blocks.N.{attn,cross_attn}.*, .{attn_ln,cross_attn_ln,mlp_ln}.*, .mlp.{0,2}.*
//   decoder.ln.{weight,bias}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/hparams.h"

namespace hark {

class Weights {
 public:
  void add(const std::string& name, Tensor tensor);
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws ModelFormat naming the tensor when it is missing.
  const Tensor& get(const std::string& name) const;
  // Also checks the shape: the error names the tensor, the expected and the found shape.
  const Tensor& get(const std::string& name, const Shape& expected) const;
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  size_t nbytes() const;

 private:
  std::map<std::string, Tensor> tensors_;
};

// Every internal tensor name with its expected shape for these hyper-parameters.
std::vector<std::pair<std::string, Shape>> expected_tensors(const HParams& hp);
// Checks that every expected tensor is present with the right shape (one clear error).
void check_weights(const Weights& weights, const HParams& hp);

}  // namespace hark
