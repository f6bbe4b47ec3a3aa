#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode.h"

namespace hark::tok {
namespace {

struct CharAt {
  CharClass cls;
  size_t len;
};

CharAt char_at(std::string_view text, size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  if (*p < 0x80) return {char_class(*p), 1};
  char32_t cp;
  size_t len = decode_utf8_char(p, text.size() - pos, cp);
  return {char_class(cp), len};
}

// End of the run of characters of class `cls` starting at pos (text[pos] is in it).
size_t run_end(std::string_view text, size_t pos, CharClass cls) {
  while (pos < text.size()) {
    CharAt c = char_at(text, pos);
    if (c.cls != cls) break;
    pos += c.len;
  }
  return pos;
}

size_t previous_char_start(std::string_view text, size_t pos) {
  do {
    --pos;
  } while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
  return pos;
}

// 's 't 'm 'd (2 bytes), 're 've 'll (3 bytes) -- lower case only, like the pattern.
size_t contraction_length(std::string_view text, size_t pos) {
  if (pos + 1 >= text.size()) return 0;
  char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  char b = text[pos + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

size_t gpt2_piece_end(std::string_view text, size_t start) {
  const size_t n = text.size();
  if (text[start] == '\'') {
    if (size_t len = contraction_length(text, start)) return start + len;
  }
  // " ?X+" for X in {letters, numbers, others}: a single U+0020 may lead the run.
  if (text[start] == ' ' && start + 1 < n) {
    CharAt next = char_at(text, start + 1);
    if (next.cls != CharClass::Space) return run_end(text, start + 1, next.cls);
  }
  CharAt first = char_at(text, start);
  if (first.cls != CharClass::Space) return run_end(text, start, first.cls);
  // "\s+(?!\S)": a whitespace run that reaches the end, or one that gives its last
  // character back to the following word. A lone whitespace character before a
  // non-space fails that and is taken by the final "\s+".
  size_t end = run_end(text, start, CharClass::Space);
  if (end == n) return end;
  size_t last = previous_char_start(text, end);
  return last > start ? last : end;
}

std::vector<std::string_view> split_gpt2(std::string_view text) {
  std::vector<std::string_view> pieces;
  pieces.reserve(text.size() / 4 + 1);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = gpt2_piece_end(text, pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return pieces;
}

}  // namespace hark::tok
