#include "model/weights.h"

namespace hark {

void Weights::add(const std::string& name, Tensor tensor) { tensors_[name] = std::move(tensor); }

const Tensor& Weights::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(ErrorCode::ModelFormat, "[model] missing tensor '" + name + "'");
  return it->second;
}

const Tensor& Weights::get(const std::string& name, const Shape& expected) const {
  const Tensor& t = get(name);
  if (t.shape() != expected)
    throw Error(ErrorCode::ModelFormat, "[model] tensor '" + name + "' has shape " + shape_str(t.shape()) +
                                            ", expected " + shape_str(expected));
  return t;
}

std::vector<std::string> Weights::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : tensors_) out.push_back(name);
  return out;
}

size_t Weights::nbytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.nbytes();
  return n;
}

namespace {
void add_attention(std::vector<std::pair<std::string, Shape>>& out, const std::string& p, int64_t d) {
  out.push_back({p + ".query.weight", {d, d}});
  out.push_back({p + ".query.bias", {d}});
  out.push_back({p + ".key.weight", {d, d}});
  out.push_back({p + ".value.weight", {d, d}});
  out.push_back({p + ".value.bias", {d}});
  out.push_back({p + ".out.weight", {d, d}});
  out.push_back({p + ".out.bias", {d}});
}
void add_norm(std::vector<std::pair<std::string, Shape>>& out, const std::string& p, int64_t d) {
  out.push_back({p + ".weight", {d}});
  out.push_back({p + ".bias", {d}});
}
void add_mlp(std::vector<std::pair<std::string, Shape>>& out, const std::string& p, int64_t d) {
  out.push_back({p + ".mlp.0.weight", {4 * d, d}});
  out.push_back({p + ".mlp.0.bias", {4 * d}});
  out.push_back({p + ".mlp.2.weight", {d, 4 * d}});
  out.push_back({p + ".mlp.2.bias", {d}});
}
}  // namespace

std::vector<std::pair<std::string, Shape>> expected_tensors(const HParams& hp) {
  std::vector<std::pair<std::string, Shape>> out;
  const int64_t da = hp.n_audio_state, dt = hp.n_text_state;
  out.push_back({"encoder.conv1.weight", {da, hp.n_mels, 3}});
  out.push_back({"encoder.conv1.bias", {da}});
  out.push_back({"encoder.conv2.weight", {da, da, 3}});
  out.push_back({"encoder.conv2.bias", {da}});
  out.push_back({"encoder.positional_embedding", {hp.n_audio_ctx, da}});
  for (int i = 0; i < hp.n_audio_layer; ++i) {
    std::string p = "encoder.blocks." + std::to_string(i);
    add_attention(out, p + ".attn", da);
    add_norm(out, p + ".attn_ln", da);
    add_mlp(out, p, da);
    add_norm(out, p + ".mlp_ln", da);
  }
  add_norm(out, "encoder.ln_post", da);
  out.push_back({"decoder.token_embedding.weight", {hp.n_vocab, dt}});
  out.push_back({"decoder.positional_embedding", {hp.n_text_ctx, dt}});
  for (int i = 0; i < hp.n_text_layer; ++i) {
    std::string p = "decoder.blocks." + std::to_string(i);
    add_attention(out, p + ".attn", dt);
    add_norm(out, p + ".attn_ln", dt);
    add_attention(out, p + ".cross_attn", dt);
    add_norm(out, p + ".cross_attn_ln", dt);
    add_mlp(out, p, dt);
    add_norm(out, p + ".mlp_ln", dt);
  }
  add_norm(out, "decoder.ln", dt);
  return out;
}

void check_weights(const Weights& weights, const HParams& hp) {
  for (const auto& [name, shape] : expected_tensors(hp)) weights.get(name, shape);
}

}  // namespace hark
