#include "serve/render.h"

#include <cmath>
#include <cstdio>

namespace hark::serve {
namespace {

using json = nlohmann::json;

double round_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

json words_json(const std::vector<Word>& words) {
  json out = json::array();
  for (const auto& w : words)
    out.push_back({{"word", w.word}, {"start", w.start}, {"end", w.end}, {"probability", w.probability}});
  return out;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b);
}

std::string render_subtitles(const Transcript& t, bool vtt) {
  std::string out = vtt ? "WEBVTT\n\n" : "";
  int index = 1;
  for (const auto& s : t.segments) {
    if (!vtt) out += std::to_string(index++) + "\n";
    out += format_timestamp(s.start, vtt ? '.' : ',') + " --> " + format_timestamp(s.end, vtt ? '.' : ',') + "\n";
    out += trimmed(s.text) + "\n\n";
  }
  return out;
}

}  // namespace

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string format_timestamp(double seconds, char decimal_marker) {
  long long ms = std::llround(std::max(0.0, seconds) * 1000.0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60,
                decimal_marker, ms % 1000);
  return buf;
}

json segment_json(const Segment& s, bool with_words) {
  json j = {{"id", s.id}, {"seek", s.seek}, {"start", s.start}, {"end", s.end}, {"text", s.text},
            {"tokens", s.tokens}, {"temperature", s.temperature}, {"avg_logprob", s.avg_logprob},
            {"compression_ratio", s.compression_ratio}, {"no_speech_prob", s.no_speech_prob}};
  if (with_words) j["words"] = words_json(s.words);
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
    case ResponseFormat::Srt: return {render_subtitles(t, false), "application/x-subrip"};
    case ResponseFormat::Vtt: return {render_subtitles(t, true), "text/vtt"};
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
