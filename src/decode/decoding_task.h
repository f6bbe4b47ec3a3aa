// One 30 s window decoded as the reference's DecodingTask does: build the initial tokens
// (prompt, start-of-transcript sequence, prefix), optionally detect the language, run
// the filters and the token decoder step by step, then rank the candidates.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/token_select.h"
#include "decode/logit_filters.h"
#include "decode/special_tokens.h"
#include "hark/options.h"

namespace hark {

// The decoder forward pass behind the task, so the search logic can run on hand-made
// logits in tests. begin() starts `rows` empty sequences on the current audio.
class Inference {
 public:
  virtual ~Inference() = default;
  virtual void begin(int rows) = 0;
  // Appends `n_new` tokens to every row (row-major) and returns the logits at each row's
  // last position: [rows × n_vocab].
  virtual std::vector<float> step(std::span<const int32_t> tokens, int n_new) = 0;
  // Row i continues row source[i] (beam bookkeeping).
  virtual void reorder(std::span<const int> source) = 0;
  // Whether step_select() may be used: the decoder chooses next to the logits (GPU fast
  // path) instead of returning them.
  virtual bool can_select() const { return false; }
  // Appends one token to every row; returns each row's k best next tokens after the
  // filters of `rules` with log-probabilities ([rows × k], best first).
  virtual std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                               std::span<const SampledSummary> rows, int k);
  // Greedy decoding of one row from `token`, choosing next to the logits (step_select
  // with k = 1): hands each step's choice to `on_choice` until it returns false or
  // max_steps are done; returns the choices handed over. The row's summary advances as
  // GreedyDecoder advances the row (an ended row stays ended). The default steps one at a
  // time; ModelInference lets the device run one step ahead of the host.
  virtual int greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                           const std::function<bool(const TokenChoice&)>& on_choice);
  // The window's prompt (n_new tokens per row, row-major): the logits of every row at
  // `position` of the new tokens, then at the last, [2 × rows × n_vocab]. The default
  // steps twice (up to `position`, then the rest); ModelInference may take one pass.
  virtual std::vector<float> step_two_positions(std::span<const int32_t> tokens, int n_new, int position);
  // The prompt in one pass with the first step chosen as step_select() chooses, where
  // can_select_prompt(): row 0's logits at `position` ([n_vocab], for the no-speech
  // probability) and each row's k best next tokens at the last position after the filters
  // of `rules` ([rows × k], best first), instead of both positions' logits of every row.
  // The default takes step_two_positions() and chooses on the host with the reference
  // selection (core/token_select.h); ModelInference chooses on the device.
  virtual bool can_select_prompt() const { return can_select(); }
  struct PromptChoices {
    std::vector<float> row0_at_position;
    std::vector<TokenChoice> choices;
  };
  virtual PromptChoices step_two_positions_select(std::span<const int32_t> tokens, int n_new, int position,
                                                  const SelectionRules& rules, std::span<const SampledSummary> rows,
                                                  int k);
};

// The options of one window, as the reference's DecodingOptions. 0 / empty = unset.
struct DecodingOptions {
  Task task = Task::Transcribe;
  std::string language;  // a code; "" = detect on this window
  float temperature = 0;
  int sample_len = 0;    // 0 = n_text_ctx / 2
  int best_of = 0;
  int beam_size = 0;
  std::optional<float> patience;
  std::optional<float> length_penalty;
  std::vector<int> prompt;  // previous-context tokens (only the last n_text_ctx/2 − 1 are used)
  std::vector<int> prefix;
  bool suppress_blank = true;
  std::vector<int> suppress_tokens = {-1};
  bool without_timestamps = false;
  std::optional<float> max_initial_timestamp = 1.0f;
  uint64_t seed = 0;  // sampling seed of this window and temperature
};

struct DecodingResult {
  std::string language;
  std::map<std::string, float> language_probs;  // only when detected here
  std::vector<int> tokens;                      // sampled tokens, EOT excluded
  std::string text;
  double avg_logprob = 0;
  double sum_logprob = 0;
  double no_speech_prob = 0;
  double temperature = 0;
  double compression_ratio = 0;
  // Where the run's time went (hark bench --e2e): inside the model's calls (the state, the
  // prompt, the steps and their waits for the device), of which beam reordering; the rest
  // is the decoding task's own bookkeeping on the host.
  double model_ms = 0, reorder_ms = 0;
};

// What stays fixed for a model: the vocabulary layout and the text helpers.
struct DecodingVocabulary {
  SpecialTokens specials;
  std::vector<std::string> language_codes;  // parallel to specials.language_tokens
  std::vector<int> non_speech;              // the reference's non-speech symbol tokens
  std::function<std::string(std::span<const int>)> decode_text;  // may be empty (tests)
  bool multilingual = true;
  int n_text_ctx = 448;
  int n_audio_ctx = 1500;
};

// OpenAI's compression ratio: UTF-8 bytes over zlib-compressed bytes (default level).
double compression_ratio(const std::string& text);

// Language probabilities for every language token, from the logits after <|startoftranscript|>.
std::vector<float> detect_language_probs(Inference& inference, const SpecialTokens& specials);

class DecodingTask {
 public:
  DecodingTask(const DecodingVocabulary& vocab, DecodingOptions options);

  DecodingResult run(Inference& inference);

  const std::vector<int>& initial_tokens() const { return initial_tokens_; }
  int sample_begin() const { return static_cast<int>(initial_tokens_.size()); }
  int sot_index() const { return sot_index_; }
  int n_group() const { return n_group_; }

 private:
  void verify_options() const;
  void build_initial_tokens();
  void build_filters();
  std::string language_code(int token) const;

  const DecodingVocabulary& vocab_;
  DecodingOptions options_;
  std::vector<int> initial_tokens_;
  int sot_index_ = 0;
  int n_group_ = 1;
  int sample_len_ = 0;
  std::vector<std::unique_ptr<LogitFilter>> filters_;
  SelectionRules selection_;  // the same filters, for Inference::step_select
};

}  // namespace hark
