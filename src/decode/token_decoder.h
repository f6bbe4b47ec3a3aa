// How the next token is chosen (greedy/sampling or beam search) and how the finished
// candidates are ranked, as in the reference's TokenDecoder and SequenceRanker. One
// decoder works on the rows of one audio window: `n_group` rows (beams or samples).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "core/token_select.h"

namespace hark {

using TokenRows = std::vector<std::vector<int>>;

// A finished candidate: its tokens (initial tokens included, ending with EOT) and the
// sum of the log-probabilities of its sampled tokens.
struct Candidate {
  std::vector<int> tokens;
  double sum_logprob = 0;
};

struct StepResult {
  bool completed = false;
  std::vector<int> source;  // row i continues old row source[i]; empty when rows kept their place
};

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  virtual void reset() {}
  // logits: [rows × n_vocab] after the filters. Appends one token to every row. row_lse,
  // where given, holds each row's log-sum-exp as a filter computed it (NaN where none did),
  // so that the log-softmax needs no second pass.
  virtual StepResult update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs,
                            std::span<const double> row_lse) = 0;
  StepResult update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs) {
    return update(tokens, logits, sum_logprobs, {});
  }
  // The same step from each row's k best filtered tokens with their log-probabilities
  // ([rows × k], best first; ties to the lower id), as the device chooses them.
  virtual StepResult update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                                    std::vector<double>& sum_logprobs) = 0;
  // The candidates to rank once the loop stops.
  virtual std::vector<Candidate> finalize(const TokenRows& tokens, const std::vector<double>& sum_logprobs) = 0;
};

// temperature 0: argmax; otherwise a sample from softmax(logits / temperature). Rows that
// reached EOT stay there and stop accumulating log-probability.
class GreedyDecoder : public TokenDecoder {
 public:
  GreedyDecoder(float temperature, int eot, uint64_t seed);
  using TokenDecoder::update;
  StepResult update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs,
                    std::span<const double> row_lse) override;
  // Only at temperature 0 (the choice is the argmax).
  StepResult update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                            std::vector<double>& sum_logprobs) override;
  std::vector<Candidate> finalize(const TokenRows& tokens, const std::vector<double>& sum_logprobs) override;

 private:
  int sample(std::span<const float> logits);
  float temperature_;
  int eot_;
  std::mt19937_64 rng_;
};

// The reference's beam search: each beam proposes its beam_size + 1 best continuations,
// the best beam_size unfinished ones survive, and finished ones are collected until
// round(beam_size · patience) of them exist.
class BeamSearchDecoder : public TokenDecoder {
 public:
  BeamSearchDecoder(int beam_size, int eot, std::optional<float> patience);
  void reset() override { finished_.clear(); }
  using TokenDecoder::update;
  StepResult update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs,
                    std::span<const double> row_lse) override;
  // Needs k ≥ beam_size + 1 choices per row.
  StepResult update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                            std::vector<double>& sum_logprobs) override;
  std::vector<Candidate> finalize(const TokenRows& tokens, const std::vector<double>& sum_logprobs) override;
  int max_candidates() const { return max_candidates_; }

 private:
  int beam_size_;
  int eot_;
  int max_candidates_;
  std::vector<Candidate> finished_;  // insertion order, unique sequences
};

// Picks the candidate with the best length-normalised log-probability: sum / length,
// or sum / ((5 + length) / 6)^alpha (Google NMT) when a length penalty is given.
// `lengths` counts sampled tokens (EOT excluded). Ties go to the earliest candidate.
class MaximumLikelihoodRanker {
 public:
  explicit MaximumLikelihoodRanker(std::optional<float> length_penalty) : length_penalty_(length_penalty) {}
  int rank(std::span<const int> lengths, std::span<const double> sum_logprobs) const;

 private:
  std::optional<float> length_penalty_;
};

}  // namespace hark
