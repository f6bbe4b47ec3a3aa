// The layout of Backend::select_tokens' spec buffer and the mask test of the logit
// filters, shared verbatim by the CPU reference (token_select.cc) and the CUDA kernel
// (cuda/token_select.cu) so that both apply the same rules.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define HARK_HOST_DEVICE __host__ __device__
#else
#define HARK_HOST_DEVICE
#endif

namespace hark {

namespace select_spec {
enum Field : int {
  kSuppressBlank = 0,  // 1: at the first sampled token, mask the blank tokens
  kTimestamps,         // 1: apply the timestamp rules
  kTimestampBegin,     // first timestamp token
  kNoTimestamps,       // <|notimestamps|>
  kEot,
  kMaxInitial,         // largest first timestamp offset (index from kTimestampBegin), −1: none
  kBlankCount,         // ≤ 4
  kBlank0,             // kBlank0 .. kBlank0 + 3: the blank tokens (space(s) and EOT)
  kMaskWords = kBlank0 + 4,
  kRows,
  kHeader = 16,
};
// Per row after the mask: sampled-token count, last and penultimate sampled token, and the
// last timestamp token sampled (−1: none).
constexpr int kRowFields = 4;
}  // namespace select_spec

// Whether the filters mask `token` for a row (all but the timestamps-versus-text rule,
// which needs the whole row): SuppressTokens, SuppressBlank and ApplyTimestampRules as the
// reference writes them.
HARK_HOST_DEVICE inline bool select_masked(const int32_t* spec, const int32_t* row, int token) {
  using namespace select_spec;
  const auto* mask = reinterpret_cast<const uint32_t*>(spec + kHeader);
  if ((mask[token >> 5] >> (token & 31)) & 1u) return true;
  const int count = row[0], last = row[1], penultimate = row[2], last_ts = row[3];
  const bool at_begin = count == 0;
  if (spec[kSuppressBlank] && at_begin)
    for (int i = 0; i < spec[kBlankCount]; ++i)
      if (token == spec[kBlank0 + i]) return true;
  if (!spec[kTimestamps]) return false;
  const int ts = spec[kTimestampBegin];
  if (token == spec[kNoTimestamps]) return true;
  const bool last_was_ts = count >= 1 && last >= ts;
  const bool penultimate_was_ts = count < 2 || penultimate >= ts;
  if (last_was_ts) {
    if (penultimate_was_ts && token >= ts) return true;          // a closed pair: text next
    if (!penultimate_was_ts && token < spec[kEot]) return true;  // an open pair: timestamp or EOT
  }
  if (last_ts >= 0) {
    // Timestamps never decrease; only the closing half of a pair may repeat the time.
    const int first_allowed = last_was_ts && !penultimate_was_ts ? last_ts : last_ts + 1;
    if (token >= ts && token < first_allowed) return true;
  }
  if (at_begin) {
    if (token < ts) return true;  // the first sampled token is a timestamp
    if (spec[kMaxInitial] >= 0 && token > ts + spec[kMaxInitial]) return true;
  }
  return false;
}

// Greedy decoding with the token fed back where it was chosen (Backend::select_and_feed):
// row r's choice `token` becomes the row's next step input — tokens follow the decoder's
// step inputs, i32 lengths[rows] | row_window[rows] | tokens[rows] — and the last entry of
// the row's summary in `spec`, so the next step may run before the host has read this
// one's choice. A row that has ended stays ended, as GreedyDecoder continues it with EOT.
// Returns the token fed back.
HARK_HOST_DEVICE inline int select_feed_back(int32_t* spec, int r, int token, int32_t* inputs, int rows) {
  using namespace select_spec;
  int32_t* row = spec + kHeader + spec[kMaskWords] + r * kRowFields;
  if (row[0] > 0 && row[1] == spec[kEot]) token = spec[kEot];
  row[2] = row[1];
  row[1] = token;
  row[0] += 1;
  if (token >= spec[kTimestampBegin]) row[3] = token;
  inputs[r] += 1;
  inputs[2 * rows + r] = token;
  return token;
}

}  // namespace hark
