// The Unicode pieces the tokenizer needs: the character classes of GPT-2's split
// pattern, Python's str.isspace(), and UTF-8 decoding with Python's errors="replace".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hark::tok {

// \p{L}, \p{N}, \s (White_Space, as Rust's regex crate used by tiktoken defines it), or
// anything else. No code point is in two classes.
enum class CharClass : uint8_t { Other, Letter, Number, Space };

CharClass char_class(char32_t cp);

// Python's str.isspace(): White_Space plus U+001C..U+001F (used by str.strip()).
bool python_isspace(char32_t cp);

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes one UTF-8 character at p[0..n), n >= 1. Returns the bytes consumed; an
// ill-formed sequence yields U+FFFD and consumes its maximal subpart (at least one byte),
// which is exactly how Python's bytes.decode("utf-8", errors="replace") proceeds.
size_t decode_utf8_char(const unsigned char* p, size_t n, char32_t& cp);

bool is_valid_utf8(std::string_view text);
// A copy of text where every ill-formed subsequence is replaced by U+FFFD.
std::string sanitize_utf8(std::string_view text);
std::u32string utf8_to_u32(std::string_view text);
void append_utf8(std::string& out, char32_t cp);
std::string u32_to_utf8(std::u32string_view text);

}  // namespace hark::tok
