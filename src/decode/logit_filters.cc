#include "decode/logit_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/checked_span.h"

namespace hark {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void mask_range(std::span<float> logits, int begin, int end) {
  begin = std::max(begin, 0);
  end = std::min(end, static_cast<int>(logits.size()));
  for (int i = begin; i < end; ++i) logits[i] = kNegInf;
}

void mask_token(std::span<float> logits, int token) {
  if (token >= 0 && token < static_cast<int>(logits.size())) logits[token] = kNegInf;
}

// Uninstrumented in the sanitizer build (core/checked_span.h): log_sum_exp checks the span.
HARK_UNINSTRUMENTED double log_sum_exp_loop(std::span<const float> x) {
  // The peak in 16 lanes (a maximum is exact in any order), so that the loop vectorises.
  float peaks[16];
  std::fill(peaks, peaks + 16, kNegInf);
  const size_t blocks = x.size() / 16 * 16;
  for (size_t i = 0; i < blocks; i += 16)
    for (size_t l = 0; l < 16; ++l) peaks[l] = x[i + l] > peaks[l] ? x[i + l] : peaks[l];
  float peak = kNegInf;
  for (float v : peaks) peak = std::max(peak, v);
  for (size_t i = blocks; i < x.size(); ++i) peak = std::max(peak, x[i]);
  if (peak == kNegInf) return -std::numeric_limits<double>::infinity();
  // Eight running sums (one a vector lane), added in a fixed order at the end.
  constexpr size_t kLanes = 8;
  double lanes[kLanes] = {};
  const size_t whole = x.size() / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) lanes[l] += exp_nonpositive(static_cast<double>(x[i + l]) - peak);
  double sum = 0;
  for (double l : lanes) sum += l;
  for (size_t i = whole; i < x.size(); ++i) sum += exp_nonpositive(static_cast<double>(x[i]) - peak);
  return peak + std::log(sum);
}

}  // namespace

double log_sum_exp(std::span<const float> x) {
  check_span(x.data(), static_cast<int64_t>(x.size()));
  return log_sum_exp_loop(x);
}

void log_softmax(std::span<const float> logits, std::vector<float>& out) { log_softmax(logits, log_sum_exp(logits), out); }

void log_softmax(std::span<const float> logits, double lse, std::vector<float>& out) {
  out.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(logits[i] - lse);
}

SuppressBlank::SuppressBlank(const SpecialTokens& specials, int sample_begin)
    : blank_(specials.space), sample_begin_(sample_begin) {
  blank_.push_back(specials.eot);
}

void SuppressBlank::apply(std::span<float> logits, std::span<const int> tokens) const {
  if (static_cast<int>(tokens.size()) != sample_begin_) return;
  for (int t : blank_) mask_token(logits, t);
}

SuppressTokens::SuppressTokens(std::vector<int> tokens) : tokens_(std::move(tokens)) {}

void SuppressTokens::apply(std::span<float> logits, std::span<const int>) const {
  for (int t : tokens_) mask_token(logits, t);
}

std::vector<int> resolve_suppress_tokens(const std::vector<int>& user, const std::vector<int>& non_speech,
                                         const SpecialTokens& specials) {
  std::vector<int> out;
  const bool with_default = std::find(user.begin(), user.end(), -1) != user.end();
  for (int t : user)
    if (t >= 0) out.push_back(t);
  if (with_default) out.insert(out.end(), non_speech.begin(), non_speech.end());
  out.insert(out.end(), {specials.sot, specials.sot_prev, specials.sot_lm});
  // The no-speech probability is read separately at the start-of-transcript position.
  if (specials.no_speech >= 0) out.push_back(specials.no_speech);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ApplyTimestampRules::ApplyTimestampRules(const SpecialTokens& specials, int sample_begin,
                                         std::optional<int> max_initial_timestamp_index)
    : specials_(specials), sample_begin_(sample_begin), max_initial_timestamp_index_(max_initial_timestamp_index) {}

void ApplyTimestampRules::apply_pairing(std::span<float> logits, std::span<const int> sampled) const {
  const int ts_begin = specials_.timestamp_begin;
  const size_t n = sampled.size();
  const bool last_was_timestamp = n >= 1 && sampled[n - 1] >= ts_begin;
  const bool penultimate_was_timestamp = n < 2 || sampled[n - 2] >= ts_begin;
  if (last_was_timestamp) {
    if (penultimate_was_timestamp)
      mask_range(logits, ts_begin, static_cast<int>(logits.size()));  // a pair is closed: text next
    else
      mask_range(logits, 0, specials_.eot);  // an open pair: timestamp or EOT next
  }
  int last_timestamp = -1;
  for (int t : sampled)
    if (t >= ts_begin) last_timestamp = t;
  if (last_timestamp >= 0) {
    // Timestamps never decrease, and a segment that was just opened may end at the same
    // time only if it is the closing half of a pair; otherwise it must move forward so
    // that decoding cannot loop on zero-length segments.
    const int first_allowed = last_was_timestamp && !penultimate_was_timestamp ? last_timestamp : last_timestamp + 1;
    mask_range(logits, ts_begin, first_allowed);
  }
}

void ApplyTimestampRules::apply(std::span<float> logits, std::span<const int> tokens) const {
  (void)apply_normalized(logits, tokens);
}

std::optional<double> ApplyTimestampRules::apply_normalized(std::span<float> logits, std::span<const int> tokens) const {
  const int ts_begin = specials_.timestamp_begin;
  mask_token(logits, specials_.no_timestamps);
  const int begin = std::min<int>(sample_begin_, static_cast<int>(tokens.size()));
  apply_pairing(logits, tokens.subspan(begin));

  if (static_cast<int>(tokens.size()) == sample_begin_) {
    mask_range(logits, 0, ts_begin);  // the first sampled token is a timestamp
    if (max_initial_timestamp_index_)
      mask_range(logits, ts_begin + *max_initial_timestamp_index_ + 1, static_cast<int>(logits.size()));
  }

  // The reference's log-softmax of the row, read where the rule needs it: the timestamps'
  // log-probabilities (their log-sum-exp) and the largest text one. float(x - lse) grows
  // with x, so the largest text log-probability is that of the largest text logit: the same
  // numbers as from the whole log-softmax, without writing it.
  const double lse = log_sum_exp(logits);
  std::vector<float> stamps;
  log_softmax(std::span<const float>(logits).subspan(ts_begin), lse, stamps);
  const double timestamp_logprob = log_sum_exp(stamps);
  float max_text_logit = kNegInf;
  for (int i = 0; i < ts_begin; ++i) max_text_logit = std::max(max_text_logit, logits[i]);
  const float max_text_logprob = max_text_logit == kNegInf ? kNegInf : static_cast<float>(max_text_logit - lse);
  if (timestamp_logprob > max_text_logprob) {
    mask_range(logits, 0, ts_begin);
    return std::nullopt;
  }
  return lse;
}

}  // namespace hark
