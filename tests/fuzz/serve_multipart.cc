// libFuzzer target: the server's multipart/form-data parser and the form-request parser
// behind it. Any input must either parse or throw ApiError 400; nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve/api_error.h"
#include "serve/multipart.h"
#include "serve/transcribe_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first line is the Content-Type header value, the rest the body.
  size_t eol = input.find('\n');
  std::string_view content_type = eol == std::string_view::npos ? input : input.substr(0, eol);
  std::string_view body = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  try {
    auto boundary = hark::serve::multipart_boundary(content_type);
    auto parts = hark::serve::parse_multipart(body, boundary);
    hark::serve::parse_form_request(parts, hark::Task::Transcribe);
  } catch (const hark::serve::ApiError& e) {
    if (e.status() != 400) __builtin_trap();
  }
  return 0;
}
