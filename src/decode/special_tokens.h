// The special token ids the decoding rules need, separated from the Tokenizer so the
// rules can be unit-tested with hand-made vocabularies.
#pragma once

#include <vector>

namespace hark {

class Tokenizer;

struct SpecialTokens {
  int n_vocab = 0;
  int eot = 0;
  int sot = 0;
  int sot_prev = 0;
  int sot_lm = 0;
  int no_speech = -1;  // -1 when the vocabulary has none
  int no_timestamps = 0;
  int timestamp_begin = 0;
  int translate = 0;
  int transcribe = 0;
  std::vector<int> language_tokens;  // in the tokenizer's language order
  std::vector<int> space;            // encode(" "): suppressed with EOT at the first step

  static SpecialTokens from_tokenizer(const Tokenizer& tokenizer);
  // The layout the reference uses for n_vocab 51864 / 51865 / 51866 (and any larger
  // vocabulary with the same offsets): for tests and for checkpoints of known shape.
  static SpecialTokens for_vocab_size(int n_vocab);

  bool is_timestamp(int token) const { return token >= timestamp_begin; }
};

}  // namespace hark
