// libFuzzer target: the server's JSON request parser (transcriptions and session
// parameters). Any input must either parse or throw ApiError 400; nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve/api_error.h"
#include "serve/transcribe_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (bool require_audio : {true, false}) {
    try {
      hark::serve::parse_json_request(body, hark::Task::Transcribe, require_audio);
    } catch (const hark::serve::ApiError& e) {
      if (e.status() != 400) __builtin_trap();
    }
  }
  return 0;
}
