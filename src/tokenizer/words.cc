// The reference tokenizer's text-level helpers: the non-speech symbol set and the
// word split used by word timestamps.
#include <algorithm>
#include <set>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace hark {
namespace tok {

std::vector<int> compute_non_speech_tokens(const Tokenizer& tokenizer) {
  // Speaker tags, brackets and music marks that Whisper should never sample; hyphens and
  // apostrophes stay allowed inside words, but not at the start of one.
  static const char* const symbols[] = {
      "\"", "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_", "`", "{", "|", "}",
      "~", "「", "」", "『", "』", "<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[", "('", "(\"", "((", "))", "(((",
      ")))", "[[", "]]", "{{", "}}", "♪♪", "♪♪♪"};
  // U+2640..U+267F symbols: when they take several tokens, the first one (shared lead
  // bytes of the 3-byte UTF-8 form) is suppressed.
  static const char* const miscellaneous[] = {"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  std::set<int> result = {tokenizer.encode(" -").front(), tokenizer.encode(" '").front()};
  for (const char* symbol : symbols) {
    for (const std::string& text : {std::string(symbol), " " + std::string(symbol)}) {
      std::vector<int> tokens = tokenizer.encode(text);
      if (tokens.size() == 1) result.insert(tokens.front());
    }
  }
  for (const char* symbol : miscellaneous) {
    result.insert(tokenizer.encode(symbol).front());
    result.insert(tokenizer.encode(" " + std::string(symbol)).front());
  }
  return {result.begin(), result.end()};
}

namespace {

// Python's `text.strip() in string.punctuation`: a substring test, so "" and runs such as
// "!\"#" count as punctuation too.
bool is_python_punctuation(std::u32string_view word) {
  static const std::u32string punctuation = U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  size_t begin = 0, end = word.size();
  while (begin < end && python_isspace(word[begin])) ++begin;
  while (end > begin && python_isspace(word[end - 1])) --end;
  return punctuation.find(word.substr(begin, end - begin)) != std::u32string::npos;
}

// split_tokens_on_unicode: close a word whenever the tokens so far decode without a
// replacement character, or when the one they decode to is also in the full text.
void split_on_unicode(const Tokenizer& tokenizer, std::span<const int> tokens, std::vector<std::u32string>& words,
                      std::vector<std::vector<int>>& word_tokens) {
  const std::u32string full = utf8_to_u32(tokenizer.decode_with_timestamps(tokens));
  std::vector<int> current;
  size_t offset = 0;
  for (int token : tokens) {
    current.push_back(token);
    std::u32string decoded = utf8_to_u32(tokenizer.decode_with_timestamps(current));
    size_t bad = decoded.find(kReplacementChar);
    // Past the end of the full text the reference would raise; keep collecting instead.
    bool complete = bad == std::u32string::npos ||
                    (offset + bad < full.size() && full[offset + bad] == kReplacementChar);
    if (complete) {
      offset += decoded.size();
      words.push_back(std::move(decoded));
      word_tokens.push_back(std::move(current));
      current.clear();
    }
  }
}

}  // namespace
}  // namespace tok

void Tokenizer::split_to_word_tokens(std::span<const int> tokens, const std::string& language,
                                     std::vector<std::string>& words,
                                     std::vector<std::vector<int>>& word_tokens) const {
  words.clear();
  word_tokens.clear();
  std::vector<std::u32string> subwords;
  std::vector<std::vector<int>> subword_tokens;
  tok::split_on_unicode(*this, tokens, subwords, subword_tokens);
  // Languages written without spaces split at every complete character sequence.
  static const char* const unspaced[] = {"zh", "ja", "th", "lo", "my", "yue"};
  bool by_unicode = std::any_of(std::begin(unspaced), std::end(unspaced),
                                [&](const char* code) { return language == code; });
  if (by_unicode) {
    for (size_t i = 0; i < subwords.size(); ++i) {
      words.push_back(tok::u32_to_utf8(subwords[i]));
      word_tokens.push_back(std::move(subword_tokens[i]));
    }
    return;
  }
  // split_tokens_on_spaces: a subword starts a new word when it is special, starts with
  // a space or is punctuation; otherwise it extends the previous word.
  for (size_t i = 0; i < subwords.size(); ++i) {
    const std::u32string& subword = subwords[i];
    bool special = subword_tokens[i].front() >= eot();
    bool with_space = !subword.empty() && subword.front() == U' ';
    if (special || with_space || tok::is_python_punctuation(subword) || words.empty()) {
      words.push_back(tok::u32_to_utf8(subword));
      word_tokens.push_back(std::move(subword_tokens[i]));
    } else {
      words.back() += tok::u32_to_utf8(subword);
      word_tokens.back().insert(word_tokens.back().end(), subword_tokens[i].begin(), subword_tokens[i].end());
    }
  }
}

}  // namespace hark
