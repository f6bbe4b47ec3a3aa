#include "serve/multipart.h"

#include <algorithm>
#include <cctype>

#include "serve/api_error.h"

namespace hark::serve {
namespace {

constexpr size_t kMaxParts = 256;
constexpr size_t kMaxPartHeaderBytes = 16 * 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Value of `key` in a header parameter list such as `form-data; name="a"; filename=b`.
// Quoted values may contain ';' and backslash escapes.
bool header_param(std::string_view params, std::string_view key, std::string& value) {
  size_t i = 0;
  while (i < params.size()) {
    size_t semi = params.find(';', i);
    if (semi == std::string_view::npos) return false;
    i = semi + 1;
    while (i < params.size() && (params[i] == ' ' || params[i] == '\t')) ++i;
    size_t eq = params.find('=', i);
    if (eq == std::string_view::npos) return false;
    std::string name = lower(trim(params.substr(i, eq - i)));
    i = eq + 1;
    std::string v;
    if (i < params.size() && params[i] == '"') {
      ++i;
      while (i < params.size() && params[i] != '"') {
        if (params[i] == '\\' && i + 1 < params.size()) ++i;
        v += params[i++];
      }
      if (i >= params.size()) return false;  // unterminated quote
      ++i;
    } else {
      size_t end = params.find(';', i);
      if (end == std::string_view::npos) end = params.size();
      v = std::string(trim(params.substr(i, end - i)));
      i = end;
    }
    if (name == key) {
      value = std::move(v);
      return true;
    }
  }
  return false;
}

void parse_part_headers(std::string_view headers, FormPart& part) {
  bool saw_disposition = false;
  size_t pos = 0;
  while (pos < headers.size()) {
    size_t eol = headers.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = headers.size();
    std::string_view line = headers.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      throw bad_request("[serve] malformed multipart body: a part header has no ':'", "invalid_multipart");
    std::string key = lower(trim(line.substr(0, colon)));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "content-disposition") {
      saw_disposition = true;
      // Parameters start at the first ';' ("form-data; name=...; filename=...").
      std::string params(value.substr(std::min(value.find(';'), value.size())));
      if (!header_param(params, "name", part.name))
        throw bad_request("[serve] malformed multipart body: a part has no name in Content-Disposition",
                          "invalid_multipart");
      header_param(params, "filename", part.filename);
    } else if (key == "content-type") {
      part.content_type = std::string(value);
    }
  }
  if (!saw_disposition)
    throw bad_request("[serve] malformed multipart body: a part has no Content-Disposition header",
                      "invalid_multipart");
}

}  // namespace

std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, std::min(content_type.find(';'), content_type.size()))));
}

std::string multipart_boundary(std::string_view content_type) {
  std::string boundary;
  size_t semi = content_type.find(';');
  if (semi == std::string_view::npos || !header_param(content_type.substr(semi), "boundary", boundary))
    throw bad_request("[serve] multipart/form-data content type has no boundary parameter", "invalid_multipart");
  // RFC 2046: 1 to 70 characters.
  if (boundary.empty() || boundary.size() > 70)
    throw bad_request("[serve] multipart boundary must be 1 to 70 characters", "invalid_multipart");
  return boundary;
}

std::vector<FormPart> parse_multipart(std::string_view body, std::string_view boundary) {
  const std::string delimiter = "--" + std::string(boundary);
  const std::string inner = "\r\n" + delimiter;
  std::vector<FormPart> parts;
  // The first delimiter may be preceded by a preamble, which is ignored.
  size_t pos;
  if (body.substr(0, delimiter.size()) == delimiter) {
    pos = delimiter.size();
  } else {
    size_t first = body.find(inner);
    if (first == std::string_view::npos)
      throw bad_request("[serve] malformed multipart body: boundary '" + std::string(boundary) +
                            "' from the Content-Type header never occurs in the body",
                        "invalid_multipart");
    pos = first + inner.size();
  }
  while (true) {
    if (body.substr(pos, 2) == "--") return parts;  // closing delimiter
    // Transport padding after the delimiter, then CRLF.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n")
      throw bad_request("[serve] malformed multipart body: a boundary line is not followed by CRLF",
                        "invalid_multipart");
    pos += 2;
    size_t header_end = body.find("\r\n\r\n", pos);
    // A part with no headers starts directly with the blank line.
    bool no_headers = body.substr(pos, 2) == "\r\n";
    if (no_headers) header_end = pos - 2;
    if (header_end == std::string_view::npos || header_end - pos > kMaxPartHeaderBytes)
      throw bad_request("[serve] malformed multipart body: a part's headers never end", "invalid_multipart");
    FormPart part;
    parse_part_headers(no_headers ? std::string_view() : body.substr(pos, header_end - pos), part);
    size_t data_begin = header_end + 4;
    size_t data_end = body.find(inner, data_begin);
    if (data_end == std::string_view::npos)
      throw bad_request("[serve] malformed multipart body: no closing boundary '" + delimiter + "--'",
                        "invalid_multipart");
    part.data = std::string(body.substr(data_begin, data_end - data_begin));
    parts.push_back(std::move(part));
    if (parts.size() > kMaxParts)
      throw bad_request("[serve] multipart body has more than 256 parts", "invalid_multipart");
    pos = data_end + inner.size();
  }
}

}  // namespace hark::serve
