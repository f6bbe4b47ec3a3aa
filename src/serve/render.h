// Response bodies for a finished transcription: OpenAI's json / verbose_json / text /
// srt / vtt plus the `hark` extension object and the x-hark-* headers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hark/result.h"
#include "serve/transcribe_request.h"

namespace hark::serve {

// What the server adds to the engine's Transcript.
struct RunInfo {
  std::string model;
  double load_ms = 0;        // non-zero exactly when this request paged the weights in
  double queue_ms = 0;       // time spent waiting behind other jobs
  double transcribe_ms = 0;
  double total_ms = 0;
  bool vocabulary_requested = false;
  bool vad_requested = false;
  bool words_requested = false;   // timestamp_granularities included 'word'
};

struct RenderedBody {
  std::string body;
  std::string content_type;
};

nlohmann::json hark_extension(const Transcript& t, const RunInfo& info);
// The json / verbose_json object (also the payload of transcript.text.done).
nlohmann::json response_object(const Transcript& t, const RunInfo& info, ResponseFormat format);
RenderedBody render_response(const Transcript& t, const RunInfo& info, ResponseFormat format);
// x-hark-timings: "load_ms=…;transcribe_ms=…;total_ms=…"
std::string timings_header(const RunInfo& info);

nlohmann::json segment_json(const Segment& s, bool with_words);
std::string dump_json(const nlohmann::json& j);

}  // namespace hark::serve
