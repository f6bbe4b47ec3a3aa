// Whisper's tokenizer: byte-level BPE over the tiktoken rank files, plus the special
// tokens whose layout depends on the vocabulary size (51864 English-only, 51865
// multilingual, 51866 with Cantonese). Ids are identical to the reference tokenizer.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hark {

// Whisper's languages in token order: {"en", "english"}, {"zh", "chinese"}, ...
struct Language {
  std::string code, name;
};
const std::vector<Language>& whisper_languages();  // all 100 (yue last)

class Tokenizer {
 public:
  // Loads gpt2.tiktoken (n_vocab 51864) or multilingual.tiktoken from the assets folder.
  static std::shared_ptr<const Tokenizer> for_vocab_size(int n_vocab);
  static std::shared_ptr<const Tokenizer> from_file(const std::string& tiktoken_path, int n_vocab);

  std::vector<int> encode(std::string_view text) const;       // plain text, no special tokens
  // Whisper's decode(): timestamp tokens are dropped, other specials print their names,
  // broken UTF-8 becomes U+FFFD. Callers pass text tokens (ids < eot) in practice.
  std::string decode(std::span<const int> tokens) const;
  std::string decode_with_timestamps(std::span<const int> tokens) const;  // "<|1.08|>" marks kept
  std::string token_bytes(int id) const;                      // raw bytes of one text token
  std::string token_name(int id) const;                       // "<|en|>", "<|0.00|>", or the bytes
  // Id of a special token by its name ("<|en|>", "<|notimestamps|>", "<|1.08|>");
  // InvalidArgument when this vocabulary has no such token.
  int special_token(std::string_view name) const;

  int n_vocab() const { return n_vocab_; }
  bool multilingual() const { return n_vocab_ >= 51865; }
  int num_languages() const;  // languages present in this vocabulary

  int eot() const { return eot_; }
  int sot() const { return eot_ + 1; }
  int first_language_token() const { return eot_ + 2; }
  int translate() const;
  int transcribe() const;
  int sot_lm() const;
  int sot_prev() const;
  int no_speech() const;
  int no_timestamps() const;
  int timestamp_begin() const;

  // Throws InvalidArgument for an unknown code (accepts names too: "english").
  int language_token(const std::string& code_or_name) const;
  std::string language_code(int token) const;  // "" when not a language token
  std::vector<int> language_tokens() const;

  // <|startoftranscript|> [<|lang|> <|task|>] as the reference builds it.
  std::vector<int> sot_sequence(const std::string& language, bool translate) const;
  // The reference's non_speech_tokens set (symbols that are never speech).
  std::vector<int> non_speech_tokens() const;
  // Splits tokens into words for word timestamps: spaces-and-punctuation rule, or unicode
  // points for zh/ja/th/lo/my/yue. Returns the words and each word's tokens.
  void split_to_word_tokens(std::span<const int> tokens, const std::string& language,
                            std::vector<std::string>& words, std::vector<std::vector<int>>& word_tokens) const;

 private:
  Tokenizer() = default;
  std::string_view token_view(int id) const;  // bytes or special name of a valid id, no copy
  struct Impl;
  std::shared_ptr<const Impl> impl_;
  int n_vocab_ = 0;
  int eot_ = 0;
};

}  // namespace hark
