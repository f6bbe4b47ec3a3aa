// What a Tokenizer shares between its copies: the ranks and the special-token layout.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

namespace hark {

struct Tokenizer::Impl {
  tok::RankTable ranks;
  int num_languages = 0;
  std::vector<std::string> special_names;  // special_names[id - eot]
  std::vector<int> non_speech;             // sorted
};

namespace tok {
// Whisper's non_speech_tokens, computed from the tokenizer's own encode().
std::vector<int> compute_non_speech_tokens(const Tokenizer& tokenizer);
}  // namespace tok

}  // namespace hark
