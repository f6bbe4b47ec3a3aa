// Base64 (RFC 4648, standard and URL-safe alphabets) for JSON audio uploads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hark::serve {

// Decoded bytes, or nullopt when the text is not valid base64. Whitespace is ignored,
// padding is optional.
std::optional<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

}  // namespace hark::serve
