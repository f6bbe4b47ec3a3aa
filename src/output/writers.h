// Transcript writers in the reference's formats (txt, vtt, srt, tsv, as OpenAI whisper's
// utils.py writes them) and the OpenAI API's json / verbose_json bodies.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hark/result.h"

namespace hark {

enum class OutputFormat { Txt, Json, VerboseJson, Srt, Vtt, Tsv };

// "txt", "json", "verbose_json", "srt", "vtt" or "tsv"; throws InvalidArgument otherwise.
OutputFormat parse_output_format(const std::string& name);
const char* format_name(OutputFormat format);
const char* file_extension(OutputFormat format);  // "txt", "json", "srt", ...; verbose_json → "json"

// "01:02.345" / "00:01:02,345": milliseconds rounded, hours shown when asked or non-zero.
std::string format_timestamp(double seconds, bool always_include_hours, char decimal_marker);

// {"task", "language", "duration", "text", "segments": [...], "words"?: [...]} plus
// hark's reports ("language_probs", "vocabulary", "vad") when they carry information.
nlohmann::json verbose_json(const Transcript& transcript);
nlohmann::json segment_json(const Segment& segment);

struct WriterOptions {
  // The reference's VTT omits the hours field below one hour; the OpenAI API's VTT bodies
  // always print it (the server sets this).
  bool vtt_always_hours = false;
};

// The whole file body in `format`.
std::string format_transcript(const Transcript& transcript, OutputFormat format, const WriterOptions& options = {});

}  // namespace hark
