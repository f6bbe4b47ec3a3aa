#include "decode/model_inference.h"

#include "hark/error.h"

namespace hark {

ModelInference::ModelInference(WhisperModel& model, std::shared_ptr<const AudioContext> audio)
    : model_(model), audio_(std::move(audio)) {}

void ModelInference::begin(int rows) { state_ = model_.new_state(audio_, rows); }

std::vector<float> ModelInference::step(std::span<const int32_t> tokens, int n_new) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] step() before begin()");
  Tensor logits = model_.decode(*state_, tokens, n_new, false);
  return model_.backend().to_host(logits).to_vector();
}

std::vector<TokenChoice> ModelInference::step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                                    std::span<const SampledSummary> rows, int k) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] step_select() before begin()");
  return model_.decode_select(*state_, tokens, rules, rows, k);
}

int ModelInference::greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                                 const std::function<bool(const TokenChoice&)>& on_choice) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] greedy_steps() before begin()");
  if (!model_.selects_on_device() || state_->batch() != 1)
    return Inference::greedy_steps(token, rules, summary, max_steps, on_choice);
  return model_.decode_greedy(*state_, token, rules, summary, max_steps, on_choice);
}

std::vector<float> ModelInference::step_two_positions(std::span<const int32_t> tokens, int n_new, int position) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] step_two_positions() before begin()");
  if (!model_.selects_on_device()) return Inference::step_two_positions(tokens, n_new, position);
  return model_.decode_two_positions(*state_, tokens, n_new, position).to_vector();
}

Inference::PromptChoices ModelInference::step_two_positions_select(std::span<const int32_t> tokens, int n_new,
                                                                   int position, const SelectionRules& rules,
                                                                   std::span<const SampledSummary> rows, int k) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] step_two_positions_select() before begin()");
  WhisperModel::PromptChoices p = model_.decode_prompt_select(*state_, tokens, n_new, position, rules, rows, k);
  return {p.row0_at_position.to_vector(), std::move(p.choices)};
}

void ModelInference::reorder(std::span<const int> source) {
  if (!state_) throw Error(ErrorCode::Internal, "[decode] reorder() before begin()");
  model_.reorder(*state_, source);
}

}  // namespace hark
