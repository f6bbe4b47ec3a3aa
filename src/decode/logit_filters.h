// Logit filters, one small class per rule of the reference decoder. Each edits the
// logits of one sequence in place, given every token of that sequence so far
// (initial tokens included); `sample_begin` is where sampled tokens start.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "decode/special_tokens.h"

namespace hark {

class LogitFilter {
 public:
  virtual ~LogitFilter() = default;
  virtual void apply(std::span<float> logits, std::span<const int> tokens) const = 0;
};

// At the first sampled position, forbids a blank start (" " or an immediate EOT).
class SuppressBlank : public LogitFilter {
 public:
  SuppressBlank(const SpecialTokens& specials, int sample_begin);
  void apply(std::span<float> logits, std::span<const int> tokens) const override;

 private:
  std::vector<int> blank_;
  int sample_begin_;
};

// Forbids a fixed token set at every position.
class SuppressTokens : public LogitFilter {
 public:
  explicit SuppressTokens(std::vector<int> tokens);
  void apply(std::span<float> logits, std::span<const int> tokens) const override;
  const std::vector<int>& tokens() const { return tokens_; }

 private:
  std::vector<int> tokens_;
};

// Builds the reference's suppression list from the user list: -1 expands to the
// non-speech set; the start/prev/lm/no-speech specials are always added. Sorted, unique.
std::vector<int> resolve_suppress_tokens(const std::vector<int>& user, const std::vector<int>& non_speech,
                                         const SpecialTokens& specials);

// The timestamp grammar: no <|notimestamps|>; timestamps come in pairs (except just
// before EOT); timestamps never decrease and a segment has non-zero length; the first
// token is a timestamp no later than max_initial_timestamp; and when the timestamps
// together are likelier than any single text token, only a timestamp may follow.
class ApplyTimestampRules : public LogitFilter {
 public:
  ApplyTimestampRules(const SpecialTokens& specials, int sample_begin, std::optional<int> max_initial_timestamp_index);
  void apply(std::span<float> logits, std::span<const int> tokens) const override;

 private:
  void apply_pairing(std::span<float> logits, std::span<const int> sampled) const;
  SpecialTokens specials_;
  int sample_begin_;
  std::optional<int> max_initial_timestamp_index_;
};

// log(sum(exp(x))) and log-softmax helpers shared by the filters and decoders; -inf
// entries are handled (an all -inf row gives -inf).
double log_sum_exp(std::span<const float> x);
void log_softmax(std::span<const float> logits, std::vector<float>& out);

}  // namespace hark
