// The typed form of a transcription request. HTTP threads turn multipart or JSON bodies
// into a TranscribeRequest (and validate it) before anything reaches the engine worker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hark/options.h"
#include "serve/multipart.h"

namespace hark::serve {

enum class ResponseFormat { Json, VerboseJson, Text, Srt, Vtt };

const char* to_string(ResponseFormat format);

struct TranscribeRequest {
  std::string audio;              // container or raw bytes, as uploaded
  std::string audio_name;         // filename hint for the decoder ("" when unknown)
  std::string audio_content_type; // the upload's own content type, when given
  std::string model;              // accepted and ignored: the configured checkpoint is used
  ResponseFormat format = ResponseFormat::Json;
  bool stream = false;
  bool temperature_set = false;   // an explicit single temperature replaces the ladder
  TranscribeOptions options;

  // Field checks that need the whole request (beam_size vs temperature, ...).
  // Throws ApiError 400 naming the field.
  void validate() const;
};

struct ParseLimits {
  size_t max_json_depth = 32;
  size_t max_prompt_bytes = 16 * 1024;
  size_t max_vocabulary_terms = 256;
};

// `require_audio` is false for session parameters, which carry no audio.
TranscribeRequest parse_json_request(std::string_view body, Task task, bool require_audio = true,
                                     const ParseLimits& limits = {});
TranscribeRequest parse_form_request(const std::vector<FormPart>& parts, Task task,
                                     const ParseLimits& limits = {});

bool is_valid_utf8(std::string_view text);

}  // namespace hark::serve
