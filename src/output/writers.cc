#include "output/writers.h"

#include <cmath>
#include <cstdio>

#include "core/text.h"
#include "hark/error.h"

namespace hark {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

// Cue text as the reference writes it: stripped, with "-->" defused.
std::string cue_text(const Segment& s) { return replace_all(strip_whitespace(s.text), "-->", "->"); }

// Python's round() for the millisecond counts (half to even).
long long round_ms(double seconds) { return static_cast<long long>(std::nearbyint(seconds * 1000.0)); }

std::string subtitles(const Transcript& t, bool srt, bool always_hours) {
  std::string out = srt ? "" : "WEBVTT\n\n";
  const bool hours = srt || always_hours;
  int index = 1;
  for (const Segment& s : t.segments) {
    if (srt) out += std::to_string(index++) + "\n";
    out += format_timestamp(s.start, hours, srt ? ',' : '.') + " --> " + format_timestamp(s.end, hours, srt ? ',' : '.');
    out += "\n" + cue_text(s) + "\n\n";
  }
  return out;
}

}  // namespace

OutputFormat parse_output_format(const std::string& name) {
  if (name == "txt" || name == "text") return OutputFormat::Txt;
  if (name == "json") return OutputFormat::Json;
  if (name == "verbose_json") return OutputFormat::VerboseJson;
  if (name == "srt") return OutputFormat::Srt;
  if (name == "vtt") return OutputFormat::Vtt;
  if (name == "tsv") return OutputFormat::Tsv;
  throw Error(ErrorCode::InvalidArgument,
              "[output] unknown format '" + name + "'; use txt, json, verbose_json, srt, vtt or tsv");
}

const char* format_name(OutputFormat format) {
  switch (format) {
    case OutputFormat::Txt: return "txt";
    case OutputFormat::Json: return "json";
    case OutputFormat::VerboseJson: return "verbose_json";
    case OutputFormat::Srt: return "srt";
    case OutputFormat::Vtt: return "vtt";
    case OutputFormat::Tsv: return "tsv";
  }
  return "txt";
}

const char* file_extension(OutputFormat format) {
  return format == OutputFormat::VerboseJson ? "json" : format_name(format);
}

std::string format_timestamp(double seconds, bool always_include_hours, char decimal_marker) {
  if (!(seconds >= 0)) throw Error(ErrorCode::InvalidArgument, "[output] negative timestamp");
  long long ms = round_ms(seconds);
  const long long hours = ms / 3600000;
  ms -= hours * 3600000;
  const long long minutes = ms / 60000;
  ms -= minutes * 60000;
  const long long secs = ms / 1000;
  ms -= secs * 1000;
  char buf[64];
  if (always_include_hours || hours > 0)
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", hours, minutes, secs, decimal_marker, ms);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld%c%03lld", minutes, secs, decimal_marker, ms);
  return buf;
}

nlohmann::json segment_json(const Segment& s) {
  nlohmann::json j = {{"id", s.id},
                      {"seek", s.seek},
                      {"start", s.start},
                      {"end", s.end},
                      {"text", s.text},
                      {"tokens", s.tokens},
                      {"temperature", s.temperature},
                      {"avg_logprob", s.avg_logprob},
                      {"compression_ratio", s.compression_ratio},
                      {"no_speech_prob", s.no_speech_prob}};
  if (!s.words.empty()) {
    nlohmann::json words = nlohmann::json::array();
    for (const Word& w : s.words)
      words.push_back({{"word", w.word}, {"start", w.start}, {"end", w.end}, {"probability", w.probability}});
    j["words"] = std::move(words);
  }
  return j;
}

nlohmann::json verbose_json(const Transcript& t) {
  nlohmann::json j = {{"task", t.task}, {"language", t.language}, {"duration", t.duration}, {"text", t.text}};
  nlohmann::json segments = nlohmann::json::array();
  nlohmann::json words = nlohmann::json::array();
  for (const Segment& s : t.segments) {
    segments.push_back(segment_json(s));
    for (const Word& w : s.words) words.push_back({{"word", w.word}, {"start", w.start}, {"end", w.end}});
  }
  j["segments"] = std::move(segments);
  if (!words.empty()) j["words"] = std::move(words);
  if (!t.language_probs.empty()) j["language_probs"] = t.language_probs;
  if (!t.vocabulary.included.empty() || !t.vocabulary.omitted.empty())
    j["vocabulary"] = {{"included", t.vocabulary.included},
                       {"omitted", t.vocabulary.omitted},
                       {"tokens", t.vocabulary.tokens},
                       {"budget", t.vocabulary.budget}};
  if (!t.vad.segments.empty() || !t.vad.speech) {
    nlohmann::json spans = nlohmann::json::array();
    for (auto [a, b] : t.vad.segments) spans.push_back({a, b});
    j["vad"] = {{"speech", t.vad.speech}, {"segments", spans}};
  }
  return j;
}

std::string format_transcript(const Transcript& t, OutputFormat format, const WriterOptions& options) {
  switch (format) {
    case OutputFormat::Txt: {
      std::string out;
      for (const Segment& s : t.segments) out += strip_whitespace(s.text) + "\n";
      return out;
    }
    case OutputFormat::Json:
      return nlohmann::json{{"text", t.text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    case OutputFormat::VerboseJson: return verbose_json(t).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    case OutputFormat::Srt: return subtitles(t, true, true);
    case OutputFormat::Vtt: return subtitles(t, false, options.vtt_always_hours);
    case OutputFormat::Tsv: {
      std::string out = "start\tend\ttext\n";
      for (const Segment& s : t.segments)
        out += std::to_string(round_ms(s.start)) + "\t" + std::to_string(round_ms(s.end)) + "\t" +
               replace_all(strip_whitespace(s.text), "\t", " ") + "\n";
      return out;
    }
  }
  return "";
}

}  // namespace hark
