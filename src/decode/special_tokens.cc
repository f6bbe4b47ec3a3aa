#include "decode/special_tokens.h"

#include "hark/error.h"
#include "tokenizer/tokenizer.h"

namespace hark {

SpecialTokens SpecialTokens::from_tokenizer(const Tokenizer& tokenizer) {
  SpecialTokens s;
  s.n_vocab = tokenizer.n_vocab();
  s.eot = tokenizer.eot();
  s.sot = tokenizer.sot();
  s.sot_prev = tokenizer.sot_prev();
  s.sot_lm = tokenizer.sot_lm();
  s.no_speech = tokenizer.no_speech();
  s.no_timestamps = tokenizer.no_timestamps();
  s.timestamp_begin = tokenizer.timestamp_begin();
  s.translate = tokenizer.translate();
  s.transcribe = tokenizer.transcribe();
  s.language_tokens = tokenizer.language_tokens();
  s.space = tokenizer.encode(" ");
  return s;
}

SpecialTokens SpecialTokens::for_vocab_size(int n_vocab) {
  if (n_vocab < 51864)
    throw Error(ErrorCode::InvalidArgument,
                "[decode] vocabulary of " + std::to_string(n_vocab) + " tokens is smaller than Whisper's 51864");
  // English-only vocabularies start the specials at 50256, multilingual at 50257; the
  // 51866 vocabulary adds one language (yue), shifting everything after the languages.
  const bool multilingual = n_vocab >= 51865;
  const int n_languages = n_vocab >= 51866 ? 100 : 99;
  SpecialTokens s;
  s.n_vocab = n_vocab;
  s.eot = multilingual ? 50257 : 50256;
  s.sot = s.eot + 1;
  for (int i = 0; i < n_languages; ++i) s.language_tokens.push_back(s.sot + 1 + i);
  s.translate = s.sot + 1 + n_languages;
  s.transcribe = s.translate + 1;
  s.sot_lm = s.transcribe + 1;
  s.sot_prev = s.sot_lm + 1;
  s.no_speech = s.sot_prev + 1;
  s.no_timestamps = s.no_speech + 1;
  s.timestamp_begin = s.no_timestamps + 1;
  s.space = {220};  // " " in both GPT-2 and multilingual ranks
  return s;
}

}  // namespace hark
