// Small string helpers shared by the decoding, alignment and output stages.
#pragma once

#include <string>
#include <string_view>

namespace hark {

// Python's str.strip(): without the ASCII white space (" \t\n\r\f\v") at both ends, which
// is what the reference applies to segment and word text.
inline std::string strip_whitespace(std::string_view text) {
  constexpr std::string_view ws = " \t\n\r\f\v";
  const size_t begin = text.find_first_not_of(ws);
  if (begin == std::string_view::npos) return {};
  return std::string(text.substr(begin, text.find_last_not_of(ws) - begin + 1));
}

}  // namespace hark
