#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace hark::tok {
namespace {

struct ClassRange {
  char32_t first, last;
  CharClass cls;
};

constexpr CharClass kLetter = CharClass::Letter;
constexpr CharClass kNumber = CharClass::Number;
constexpr CharClass kSpace = CharClass::Space;

// Sorted, non-overlapping; code points in no range are CharClass::Other.
constexpr ClassRange kRanges[] = {
#include "tokenizer/unicode_tables.inc"
};

// Most text the tokenizer sees is in the first 0x800 code points (Latin, Greek, Cyrillic,
// Hebrew, Arabic): answer those from a flat table instead of a binary search.
constexpr char32_t kFlatLimit = 0x800;

std::array<CharClass, kFlatLimit> make_flat_table() {
  std::array<CharClass, kFlatLimit> table{};
  for (const ClassRange& r : kRanges) {
    for (char32_t cp = r.first; cp <= r.last && cp < kFlatLimit; ++cp) table[cp] = r.cls;
  }
  return table;
}

const std::array<CharClass, kFlatLimit> kFlat = make_flat_table();

bool in_range(unsigned char b, unsigned char lo, unsigned char hi) { return b >= lo && b <= hi; }

}  // namespace

CharClass char_class(char32_t cp) {
  if (cp < kFlatLimit) return kFlat[cp];
  const ClassRange* end = std::end(kRanges);
  const ClassRange* it =
      std::upper_bound(std::begin(kRanges), end, cp, [](char32_t c, const ClassRange& r) { return c < r.first; });
  if (it == std::begin(kRanges)) return CharClass::Other;
  --it;
  return cp <= it->last ? it->cls : CharClass::Other;
}

bool python_isspace(char32_t cp) {
  return (cp >= 0x1C && cp <= 0x1F) || char_class(cp) == CharClass::Space;
}

size_t decode_utf8_char(const unsigned char* p, size_t n, char32_t& cp) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  cp = kReplacementChar;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode table 3-7)
  if (in_range(b0, 0xC2, 0xDF)) {
    len = 2;
  } else if (in_range(b0, 0xE0, 0xEF)) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (in_range(b0, 0xF0, 0xF4)) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;
  }
  // A bad second byte makes the lead byte alone the ill-formed part; a later bad byte
  // makes everything before it one part (one U+FFFD either way).
  if (n < 2 || !in_range(p[1], lo, hi)) return 1;
  char32_t value = b0 & (0xFF >> (len + 1));
  value = (value << 6) | (p[1] & 0x3F);
  for (size_t k = 2; k < len; ++k) {
    if (k >= n || !in_range(p[k], 0x80, 0xBF)) return k;  // the maximal subpart is p[0..k)
    value = (value << 6) | (p[k] & 0x3F);
  }
  cp = value;
  return len;
}

bool is_valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    size_t len = decode_utf8_char(p + i, n - i, cp);
    // U+FFFD comes back for errors; a literal U+FFFD in the input is fine.
    if (cp == kReplacementChar && !(len == 3 && p[i] == 0xEF && p[i + 1] == 0xBF && p[i + 2] == 0xBD)) return false;
    i += len;
  }
  return true;
}

// Copies the well-formed characters unchanged so that a U+FFFD appears only for errors.
std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    char32_t cp;
    size_t len = decode_utf8_char(p + i, n - i, cp);
    if (cp == kReplacementChar)
      append_utf8(out, cp);
    else
      out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::u32string utf8_to_u32(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    char32_t cp;
    i += decode_utf8_char(p + i, n - i, cp);
    out.push_back(cp);
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string u32_to_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(out, cp);
  return out;
}

}  // namespace hark::tok
