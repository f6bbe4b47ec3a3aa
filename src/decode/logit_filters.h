// Logit filters, one small class per rule of the reference decoder. Each edits the
// logits of one sequence in place, given every token of that sequence so far
// (initial tokens included); `sample_begin` is where sampled tokens start.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/checked_span.h"
#include "decode/special_tokens.h"

namespace hark {

class LogitFilter {
 public:
  virtual ~LogitFilter() = default;
  virtual void apply(std::span<float> logits, std::span<const int> tokens) const = 0;
  // apply(), returning the log-sum-exp of the row as the filter leaves it where the filter
  // computed it on the way (the decoders' log-softmax then needs no second pass over the
  // vocabulary), else nothing.
  virtual std::optional<double> apply_normalized(std::span<float> logits, std::span<const int> tokens) const {
    apply(logits, tokens);
    return std::nullopt;
  }
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
  // Its timestamps-versus-text test takes the row's log-sum-exp: returned unless that test
  // then masked the text (the row changed after it).
  std::optional<double> apply_normalized(std::span<float> logits, std::span<const int> tokens) const override;

 private:
  void apply_pairing(std::span<float> logits, std::span<const int> sampled) const;
  SpecialTokens specials_;
  int sample_begin_;
  std::optional<int> max_initial_timestamp_index_;
};

// e^x for x ≤ 0 in double precision, within a few units in the last place of std::exp, and
// branch-free so that a loop over the vocabulary runs 8 at a time (std::exp took most of
// the decoder's host work: two log-sum-exps of 51 865 terms per row and step). Range
// reduction x = n·ln2 + r, |r| ≤ ln2/2 (Cody–Waite split of ln2), and the Taylor series
// of e^r to degree 13 (truncation below 1e-17). Below -708, where std::exp turns
// subnormal, the result is 0: such a term cannot change a sum that holds e^0 = 1. The
// same method as fast_exp (core/cpu/vector_math.h) at double precision: fast_exp's float
// polynomial (2e-7) would change the reference's double-precision filter sums.
HARK_UNINSTRUMENTED inline double exp_nonpositive(double x) {
  const double clamped = x < -708.0 ? -708.0 : x;
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kRound = 6755399441055744.0;  // 1.5·2⁵²: adding it rounds to an integer
  const double n = (clamped * kLog2e + kRound) - kRound;
  const double r = (clamped - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const double scaled = p * std::bit_cast<double>((static_cast<int64_t>(n) + 1023) << 52);
  return x < -708.0 ? 0.0 : scaled;
}

// log(sum(exp(x))) and log-softmax helpers shared by the filters and decoders; -inf
// entries are handled (an all -inf row gives -inf).
double log_sum_exp(std::span<const float> x);
void log_softmax(std::span<const float> logits, std::vector<float>& out);
// The same with the row's log-sum-exp already known (log_sum_exp(logits), bit for bit).
void log_softmax(std::span<const float> logits, double lse, std::vector<float>& out);

}  // namespace hark
