// multipart/form-data (RFC 7578) parsing for OpenAI-shaped uploads. hark parses the
// raw body itself rather than through cpp-httplib so malformed bodies get precise
// messages and the parser can be fuzzed on its own (tests/fuzz/serve_multipart.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hark::serve {

struct FormPart {
  std::string name;
  std::string filename;      // empty for plain fields
  std::string content_type;  // the part's own Content-Type, if any
  std::string data;
};

// The boundary parameter of a multipart/form-data Content-Type header.
// Throws ApiError 400 when the parameter is missing or malformed.
std::string multipart_boundary(std::string_view content_type);

// Splits a body into its parts. Throws ApiError 400 naming what is malformed.
std::vector<FormPart> parse_multipart(std::string_view body, std::string_view boundary);

// Lower-cased media type without parameters: "Multipart/Form-Data; b=x" → "multipart/form-data".
std::string media_type(std::string_view content_type);

}  // namespace hark::serve
