// Choosing tokens next to the logits (Backend::select_tokens): the reference's logit
// filters (SuppressBlank, SuppressTokens, ApplyTimestampRules) and the best k tokens of
// each row with their log-probabilities, computed where the logits are, so that a GPU
// decoder step returns a few bytes per row instead of the whole vocabulary.
//
// Everything the filters need is in one i32 buffer (the "spec"): a header, the suppressed
// tokens as a bitmask, and per row the short summary of its sampled tokens that the
// timestamp rules read. The host writes it each step; the device reads it, so a recorded
// step (CUDA graph) stays valid.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/token_select_rules.h"

namespace hark {

// The summary of one row's sampled tokens (those after the task's initial tokens).
struct SampledSummary {
  int count = 0, last = -1, penultimate = -1, last_timestamp = -1;
  static SampledSummary of(std::span<const int> sampled, int timestamp_begin);
};

struct SelectionRules {
  bool suppress_blank = false;
  std::vector<int> blank;          // tokens masked at the first sampled token
  std::vector<int> suppress;       // always masked
  bool timestamps = false;
  int timestamp_begin = 0, no_timestamps = -1, eot = 0;
  int max_initial_timestamp = -1;  // index past timestamp_begin; −1: no limit
};

// A greedy row's next step on the host, as select_feed_back (token_select_rules.h) does it
// next to the logits: the token the row continues with (an ended row stays ended) and its
// summary advanced by that token. Returns the token.
int advance_summary(SampledSummary& summary, int chosen, const SelectionRules& rules);

// The spec buffer for `rows` rows over a vocabulary of `vocab` tokens.
std::vector<int32_t> make_select_spec(const SelectionRules& rules, int vocab, std::span<const SampledSummary> rows);
int64_t select_spec_size(int vocab, int rows);

struct TokenChoice {
  int token = 0;
  float logprob = 0;
};

// The reference implementation (fp32, the CPU backend's, and what the CUDA kernel is
// tested against): for each row of logits [rows, vocab], the k best tokens after the
// filters, best first (ties to the lower id), with log-probabilities of the filtered row.
// out is [rows, k, 2] i32: token, then the log-probability's float bits.
void select_tokens_reference(const float* logits, int rows, int vocab, const int32_t* spec, int k, int32_t* out);

// Choice `index` of an out buffer as above (`pair` points at its token), checked: a token
// outside [0, vocab) or a NaN log-probability throws an Internal error naming it. The
// selection ran on a device; what it wrote goes on as an embedding row index.
TokenChoice read_choice(const int32_t* pair, int vocab, size_t index);

}  // namespace hark
