#include "core/token_select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "hark/error.h"

namespace hark {

using namespace select_spec;

SampledSummary SampledSummary::of(std::span<const int> sampled, int timestamp_begin) {
  SampledSummary s;
  s.count = static_cast<int>(sampled.size());
  if (s.count >= 1) s.last = sampled[s.count - 1];
  if (s.count >= 2) s.penultimate = sampled[s.count - 2];
  for (int t : sampled)
    if (t >= timestamp_begin) s.last_timestamp = t;
  return s;
}

int advance_summary(SampledSummary& s, int chosen, const SelectionRules& rules) {
  const int token = s.count > 0 && s.last == rules.eot ? rules.eot : chosen;
  s.penultimate = s.last;
  s.last = token;
  s.count += 1;
  if (token >= rules.timestamp_begin) s.last_timestamp = token;
  return token;
}

int64_t select_spec_size(int vocab, int rows) {
  return kHeader + (vocab + 31) / 32 + static_cast<int64_t>(rows) * kRowFields;
}

std::vector<int32_t> make_select_spec(const SelectionRules& rules, int vocab, std::span<const SampledSummary> rows) {
  if (rules.blank.size() > 4) throw Error(ErrorCode::Internal, "[decode] more than 4 blank tokens");
  const int words = (vocab + 31) / 32;
  std::vector<int32_t> spec(select_spec_size(vocab, static_cast<int>(rows.size())), 0);
  spec[kSuppressBlank] = rules.suppress_blank;
  spec[kTimestamps] = rules.timestamps;
  spec[kTimestampBegin] = rules.timestamp_begin;
  spec[kNoTimestamps] = rules.no_timestamps;
  spec[kEot] = rules.eot;
  spec[kMaxInitial] = rules.max_initial_timestamp;
  spec[kBlankCount] = static_cast<int32_t>(rules.blank.size());
  for (size_t i = 0; i < rules.blank.size(); ++i) spec[kBlank0 + i] = rules.blank[i];
  spec[kMaskWords] = words;
  spec[kRows] = static_cast<int32_t>(rows.size());
  auto* mask = reinterpret_cast<uint32_t*>(spec.data() + kHeader);
  for (int t : rules.suppress)
    if (t >= 0 && t < vocab) mask[t >> 5] |= 1u << (t & 31);
  int32_t* row = spec.data() + kHeader + words;
  for (const SampledSummary& s : rows) {
    row[0] = s.count, row[1] = s.last, row[2] = s.penultimate, row[3] = s.last_timestamp;
    row += kRowFields;
  }
  return spec;
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

void select_tokens_reference(const float* logits, int rows, int vocab, const int32_t* spec, int k, int32_t* out) {
  const int words = spec[kMaskWords];
  const int ts = spec[kTimestamps] ? spec[kTimestampBegin] : vocab;
  std::vector<float> x(vocab);
  for (int r = 0; r < rows; ++r) {
    const float* in = logits + static_cast<int64_t>(r) * vocab;
    const int32_t* row = spec + kHeader + words + r * kRowFields;
    for (int i = 0; i < vocab; ++i) x[i] = select_masked(spec, row, i) ? kNegInf : in[i];
    if (spec[kTimestamps]) {
      // Text is masked when the timestamps together are likelier than any text token.
      float max_text = kNegInf, max_ts = kNegInf;
      for (int i = 0; i < ts; ++i) max_text = std::max(max_text, x[i]);
      for (int i = ts; i < vocab; ++i) max_ts = std::max(max_ts, x[i]);
      float lse_ts = kNegInf;
      if (max_ts > kNegInf) {
        float sum = 0;
        for (int i = ts; i < vocab; ++i) sum += std::exp(x[i] - max_ts);
        lse_ts = max_ts + std::log(sum);
      }
      if (lse_ts > max_text)
        for (int i = 0; i < ts; ++i) x[i] = kNegInf;
    }
    const float peak = *std::max_element(x.begin(), x.end());
    float lse = kNegInf;
    if (peak > kNegInf) {
      float sum = 0;
      for (int i = 0; i < vocab; ++i) sum += std::exp(x[i] - peak);
      lse = peak + std::log(sum);
    }
    int32_t* o = out + static_cast<int64_t>(r) * k * 2;
    for (int c = 0; c < k; ++c) {
      int best = -1;
      for (int i = 0; i < vocab; ++i)
        if (x[i] > kNegInf && (best < 0 || x[i] > x[best])) best = i;
      if (best < 0) {  // nothing left (only possible when k exceeds the unmasked tokens)
        o[2 * c] = spec[kEot];
        o[2 * c + 1] = std::bit_cast<int32_t>(kNegInf);
        continue;
      }
      o[2 * c] = best;
      o[2 * c + 1] = std::bit_cast<int32_t>(x[best] - lse);
      x[best] = kNegInf;
    }
  }
}

TokenChoice read_choice(const int32_t* pair, int vocab, size_t index) {
  const TokenChoice choice{pair[0], std::bit_cast<float>(pair[1])};
  if (choice.token < 0 || choice.token >= vocab || std::isnan(choice.logprob))
    throw Error(ErrorCode::Internal, "[select] choice " + std::to_string(index) + " is token " +
                                         std::to_string(choice.token) + " with log-probability " +
                                         std::to_string(choice.logprob) + ": not a token of the " +
                                         std::to_string(vocab) + "-token vocabulary");
  return choice;
}

}  // namespace hark
