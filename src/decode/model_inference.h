// The Inference of a DecodingTask backed by the real network: every row attends to the
// same prepared audio window; beams are reordered in the model's cache without copying
// the cross-attention K/V.
#pragma once

#include <memory>

#include "decode/decoding_task.h"
#include "model/whisper_model.h"

namespace hark {

class ModelInference : public Inference {
 public:
  ModelInference(WhisperModel& model, std::shared_ptr<const AudioContext> audio);
  void begin(int rows) override;
  std::vector<float> step(std::span<const int32_t> tokens, int n_new) override;
  void reorder(std::span<const int> source) override;
  bool can_select() const override { return model_.selects_on_device(); }
  std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                       std::span<const SampledSummary> rows, int k) override;
  // On the fast path: the device one step ahead (WhisperModel::decode_greedy), the prompt
  // in one pass (decode_two_positions). Elsewhere Inference's defaults.
  int greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                   const std::function<bool(const TokenChoice&)>& on_choice) override;
  std::vector<float> step_two_positions(std::span<const int32_t> tokens, int n_new, int position) override;
  PromptChoices step_two_positions_select(std::span<const int32_t> tokens, int n_new, int position,
                                          const SelectionRules& rules, std::span<const SampledSummary> rows,
                                          int k) override;

 private:
  WhisperModel& model_;
  std::shared_ptr<const AudioContext> audio_;
  std::unique_ptr<DecoderState> state_;
};

}  // namespace hark
