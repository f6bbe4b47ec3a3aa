#include "tokenizer/tokenizer.h"

#include <map>
#include <mutex>

#include "core/assets.h"
#include "core/mapped_file.h"
#include "hark/error.h"
#include "tokenizer/languages.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace hark {
namespace {

// Specials after the language tokens, in Whisper's order.
constexpr int kTasksAndMarkers = 6;  // translate, transcribe, startoflm, startofprev, nospeech, notimestamps
constexpr int kTimestamps = 1501;    // <|0.00|> .. <|30.00|> in steps of 0.02 s
constexpr int kFixedSpecials = 2 + kTasksAndMarkers + kTimestamps;

std::string timestamp_name(int index) {
  // index * 0.02 printed with two decimals, in integer arithmetic (same digits as Python).
  int hundredths = index * 2;
  std::string frac = std::to_string(hundredths % 100);
  if (frac.size() < 2) frac = "0" + frac;
  return "<|" + std::to_string(hundredths / 100) + "." + frac + "|>";
}

std::vector<std::string> special_token_names(int num_languages) {
  std::vector<std::string> names = {"<|endoftext|>", "<|startoftranscript|>"};
  for (int i = 0; i < num_languages; ++i) names.push_back("<|" + whisper_languages()[i].code + "|>");
  for (const char* name : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                           "<|notimestamps|>"})
    names.push_back(name);
  for (int i = 0; i < kTimestamps; ++i) names.push_back(timestamp_name(i));
  return names;
}

[[noreturn]] void bad_token(int id, int n_vocab) {
  throw Error(ErrorCode::InvalidArgument, "[tokenizer] token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                              std::to_string(n_vocab) + ")");
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::for_vocab_size(int n_vocab) {
  if (n_vocab != 51864 && n_vocab != 51865 && n_vocab != 51866)
    throw Error(ErrorCode::InvalidArgument, "[tokenizer] no Whisper tokenizer has " + std::to_string(n_vocab) +
                                                " tokens; expected 51864 (English-only), 51865 or 51866");
  // Loading takes a few milliseconds; every model of one vocabulary shares one instance.
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<const Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[n_vocab];
  if (!slot) slot = from_file(asset_path(n_vocab == 51864 ? "gpt2.tiktoken" : "multilingual.tiktoken"), n_vocab);
  return slot;
}

std::shared_ptr<const Tokenizer> Tokenizer::from_file(const std::string& tiktoken_path, int n_vocab) {
  auto file = MappedFile::open(tiktoken_path);
  auto impl = std::make_shared<Impl>();
  impl->ranks =
      tok::RankTable::parse(std::string_view(reinterpret_cast<const char*>(file->data()), file->size()), tiktoken_path);
  // The vocabulary size decides the layout: whatever is left after the ranks and the
  // fixed specials is the number of language tokens (99, or 100 with Cantonese).
  int n_ranks = impl->ranks.size();
  int num_languages = n_vocab - n_ranks - kFixedSpecials;
  int max_languages = static_cast<int>(whisper_languages().size());
  if (num_languages < 1 || num_languages > max_languages)
    throw Error(ErrorCode::ModelFormat,
                "[tokenizer] " + tiktoken_path + " has " + std::to_string(n_ranks) + " ranks, which cannot make a " +
                    std::to_string(n_vocab) + "-token Whisper vocabulary (that needs between " +
                    std::to_string(n_ranks + kFixedSpecials + 1) + " and " +
                    std::to_string(n_ranks + kFixedSpecials + max_languages) + "); is it the right rank file?");
  impl->num_languages = num_languages;
  impl->special_names = special_token_names(num_languages);

  std::shared_ptr<Tokenizer> tokenizer(new Tokenizer());
  tokenizer->impl_ = impl;
  tokenizer->n_vocab_ = n_vocab;
  tokenizer->eot_ = n_ranks;
  impl->non_speech = tok::compute_non_speech_tokens(*tokenizer);
  return tokenizer;
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::string sanitized;
  if (!tok::is_valid_utf8(text)) {
    // The reference takes Python strings; bytes reach it through decode(errors="replace").
    sanitized = tok::sanitize_utf8(text);
    text = sanitized;
  }
  // Pieces are found and merged one at a time: no piece list, nothing but `ids` allocated.
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 1);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = tok::gpt2_piece_end(text, pos);
    tok::byte_pair_encode(impl_->ranks, text.substr(pos, end - pos), ids);
    pos = end;
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int> tokens) const {
  // The reference drops timestamps here; other specials decode to their names.
  std::string bytes;
  for (int id : tokens) {
    if (id < 0 || id >= n_vocab_) bad_token(id, n_vocab_);
    if (id < timestamp_begin()) bytes += token_view(id);
  }
  return tok::is_valid_utf8(bytes) ? bytes : tok::sanitize_utf8(bytes);
}

// Bytes are joined first and decoded once, so a character split across tokens (or around
// a timestamp) decodes exactly as tiktoken's bytes.decode(errors="replace") does.
std::string Tokenizer::decode_with_timestamps(std::span<const int> tokens) const {
  std::string bytes;
  for (int id : tokens) {
    if (id < 0 || id >= n_vocab_) bad_token(id, n_vocab_);
    bytes += token_view(id);
  }
  return tok::is_valid_utf8(bytes) ? bytes : tok::sanitize_utf8(bytes);
}

std::string Tokenizer::token_bytes(int id) const {
  if (id < 0 || id >= n_vocab_) bad_token(id, n_vocab_);
  return std::string(token_view(id));
}

std::string_view Tokenizer::token_view(int id) const {
  return id < eot_ ? impl_->ranks.bytes(id) : std::string_view(impl_->special_names[id - eot_]);
}

std::string Tokenizer::token_name(int id) const { return token_bytes(id); }

int Tokenizer::special_token(std::string_view name) const {
  const auto& names = impl_->special_names;
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return eot_ + static_cast<int>(k);
  throw Error(ErrorCode::InvalidArgument,
              "[tokenizer] '" + std::string(name) + "' is not a special token of this vocabulary");
}

int Tokenizer::num_languages() const { return impl_->num_languages; }
int Tokenizer::translate() const { return first_language_token() + impl_->num_languages; }
int Tokenizer::transcribe() const { return translate() + 1; }
int Tokenizer::sot_lm() const { return translate() + 2; }
int Tokenizer::sot_prev() const { return translate() + 3; }
int Tokenizer::no_speech() const { return translate() + 4; }
int Tokenizer::no_timestamps() const { return translate() + 5; }
int Tokenizer::timestamp_begin() const { return translate() + kTasksAndMarkers; }

int Tokenizer::language_token(const std::string& code_or_name) const {
  int index = tok::language_index(code_or_name);
  if (index < 0)
    throw Error(ErrorCode::InvalidArgument, "[tokenizer] unknown language '" + code_or_name +
                                                "'; use a code such as 'en' or a name such as 'english'");
  if (index >= impl_->num_languages)
    throw Error(ErrorCode::InvalidArgument, "[tokenizer] language '" + code_or_name + "' is not in this model's " +
                                                std::to_string(n_vocab_) + "-token vocabulary");
  return first_language_token() + index;
}

std::string Tokenizer::language_code(int token) const {
  int index = token - first_language_token();
  if (index < 0 || index >= impl_->num_languages) return "";
  return whisper_languages()[index].code;
}

std::vector<int> Tokenizer::language_tokens() const {
  std::vector<int> tokens(impl_->num_languages);
  for (int i = 0; i < impl_->num_languages; ++i) tokens[i] = first_language_token() + i;
  return tokens;
}

std::vector<int> Tokenizer::sot_sequence(const std::string& language, bool translate_task) const {
  // As get_tokenizer() builds it: English-only models take no language or task token;
  // multilingual ones default to English.
  if (!multilingual()) return {sot()};
  return {sot(), language_token(language.empty() ? "en" : language), translate_task ? translate() : transcribe()};
}

std::vector<int> Tokenizer::non_speech_tokens() const { return impl_->non_speech; }

}  // namespace hark
