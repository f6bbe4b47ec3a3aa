#include "serve/render.h"

#include <cmath>
#include <cstdio>

#include "output/writers.h"

namespace hark::serve {
namespace {

using json = nlohmann::json;

double round_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

}  // namespace

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json segment_json(const Segment& s, bool with_words) {
  // The CLI's segment object; the API adds an empty "words" list when words were asked for
  // and leaves it out otherwise.
  json j = hark::segment_json(s);
  if (!with_words) {
    j.erase("words");
  } else if (!j.contains("words")) {
    j["words"] = json::array();
  }
  return j;
}

json hark_extension(const Transcript& t, const RunInfo& info) {
  json ext = {{"model", info.model},
              {"language", t.language},
              {"duration", t.duration},
              {"timings",
               {{"load_ms", round_ms(info.load_ms)}, {"queue_ms", round_ms(info.queue_ms)},
                {"transcribe_ms", round_ms(info.transcribe_ms)}, {"total_ms", round_ms(info.total_ms)}}}};
  if (info.vocabulary_requested)
    ext["vocabulary"] = {{"included", t.vocabulary.included}, {"omitted", t.vocabulary.omitted},
                         {"token_count", t.vocabulary.tokens}, {"token_budget", t.vocabulary.budget}};
  if (info.vad_requested) {
    json segs = json::array();
    for (const auto& [a, b] : t.vad.segments) segs.push_back({a, b});
    ext["vad"] = {{"speech", t.vad.speech}, {"segments", segs}};
  }
  return ext;
}

json response_object(const Transcript& t, const RunInfo& info, ResponseFormat format) {
  if (format != ResponseFormat::VerboseJson) return {{"text", t.text}, {"hark", hark_extension(t, info)}};
  bool with_words = info.words_requested;
  json words = json::array();
  for (const auto& s : t.segments) {
    if (!s.words.empty()) with_words = true;
    for (const auto& w : s.words)
      words.push_back({{"word", w.word}, {"start", w.start}, {"end", w.end}, {"probability", w.probability}});
  }
  json segments = json::array();
  for (const auto& s : t.segments) segments.push_back(segment_json(s, with_words));
  json out = {{"task", t.task}, {"language", t.language}, {"duration", t.duration},
              {"text", t.text}, {"segments", segments}};
  if (with_words) out["words"] = words;
  out["hark"] = hark_extension(t, info);
  return out;
}

RenderedBody render_response(const Transcript& t, const RunInfo& info, ResponseFormat format) {
  switch (format) {
    case ResponseFormat::Json:
    case ResponseFormat::VerboseJson: return {dump_json(response_object(t, info, format)), "application/json"};
    case ResponseFormat::Text: return {t.text + "\n", "text/plain; charset=utf-8"};
    // The CLI's writers, so a file and an API body of the same transcript agree.
    case ResponseFormat::Srt: return {format_transcript(t, OutputFormat::Srt), "application/x-subrip"};
    case ResponseFormat::Vtt:
      return {format_transcript(t, OutputFormat::Vtt, {.vtt_always_hours = true}), "text/vtt"};
  }
  return {};
}

std::string timings_header(const RunInfo& info) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "load_ms=%.1f;queue_ms=%.1f;transcribe_ms=%.1f;total_ms=%.1f", info.load_ms,
                info.queue_ms, info.transcribe_ms, info.total_ms);
  return buf;
}

}  // namespace hark::serve
