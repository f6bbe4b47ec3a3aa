#include "serve/transcribe_request.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/base64.h"

namespace hark::serve {
namespace {

using json = nlohmann::json;

[[noreturn]] void field_error(std::string_view field, const std::string& what) {
  throw bad_request("[serve] field '" + std::string(field) + "' " + what);
}

// Form fields arrive as strings; JSON fields as typed values. The accessors accept both
// so one field table serves multipart and JSON bodies alike.
std::string as_string(const json& v, std::string_view field) {
  if (!v.is_string()) field_error(field, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  if (!is_valid_utf8(s)) field_error(field, "is not valid UTF-8");
  return s;
}

bool as_bool(const json& v, std::string_view field) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
  }
  field_error(field, "must be true or false");
}

double as_number(const json& v, std::string_view field) {
  double x = 0;
  if (v.is_number()) {
    x = v.get<double>();
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) field_error(field, "must be a number");
  } else {
    field_error(field, "must be a number");
  }
  if (!std::isfinite(x)) field_error(field, "must be a finite number");
  return x;
}

int as_int(const json& v, std::string_view field, int lo, int hi) {
  double x = as_number(v, field);
  if (x != std::floor(x)) field_error(field, "must be an integer");
  if (x < lo || x > hi)
    field_error(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return static_cast<int>(x);
}

double as_unit_interval(const json& v, std::string_view field) {
  double x = as_number(v, field);
  if (x < 0 || x > 1) field_error(field, "must be between 0 and 1");
  return x;
}

// Arrays (JSON) or comma-separated strings (multipart) of non-empty terms.
std::vector<std::string> as_list(const json& v, std::string_view field) {
  std::vector<std::string> out;
  auto add = [&](std::string_view term) {
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
    if (!term.empty()) out.emplace_back(term);
  };
  if (v.is_array()) {
    for (const auto& item : v) add(as_string(item, field));
  } else {
    std::string s = as_string(v, field);
    for (size_t pos = 0; pos <= s.size();) {
      size_t comma = std::min(s.find(',', pos), s.size());
      add(std::string_view(s).substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return out;
}

ResponseFormat parse_format(const std::string& s) {
  static const std::map<std::string, ResponseFormat> formats = {
      {"json", ResponseFormat::Json}, {"verbose_json", ResponseFormat::VerboseJson},
      {"text", ResponseFormat::Text}, {"srt", ResponseFormat::Srt}, {"vtt", ResponseFormat::Vtt}};
  auto it = formats.find(s);
  if (it == formats.end())
    field_error("response_format", "must be one of json, verbose_json, text, srt, vtt (got '" + s + "')");
  return it->second;
}

// Audio given as a JSON string: plain base64 or a data: URL.
void set_audio_from_text(TranscribeRequest& req, const std::string& text, std::string_view field) {
  std::string_view payload = text;
  if (payload.substr(0, 5) == "data:") {
    size_t comma = payload.find(',');
    if (comma == std::string_view::npos) field_error(field, "is a data: URL without a ',' before its payload");
    std::string_view meta = payload.substr(5, comma - 5);
    if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64")
      field_error(field, "must be a base64 data: URL (data:<type>;base64,...)");
    req.audio_content_type = std::string(meta.substr(0, meta.size() - 7));
    payload = payload.substr(comma + 1);
  }
  auto bytes = base64_decode(payload);
  if (!bytes) field_error(field, "is not valid base64 audio");
  if (bytes->empty()) field_error(field, "is empty: send the audio bytes base64-encoded");
  req.audio = std::move(*bytes);
}

using Applier = std::function<void(TranscribeRequest&, const json&, const ParseLimits&)>;

const std::map<std::string, Applier, std::less<>>& field_table() {
  static const std::map<std::string, Applier, std::less<>> table = {
      {"model", [](auto& r, const json& v, auto&) { r.model = as_string(v, "model"); }},
      {"language",
       [](auto& r, const json& v, auto&) {
         std::string lang = as_string(v, "language");
         if (lang.size() > 32) field_error("language", "is too long (an ISO code or a language name)");
         r.options.language = lang == "auto" ? "" : lang;
       }},
      {"prompt",
       [](auto& r, const json& v, const ParseLimits& lim) {
         r.options.prompt = as_string(v, "prompt");
         if (r.options.prompt.size() > lim.max_prompt_bytes)
           field_error("prompt", "is longer than " + std::to_string(lim.max_prompt_bytes) + " bytes");
       }},
      {"response_format", [](auto& r, const json& v, auto&) { r.format = parse_format(as_string(v, "response_format")); }},
      {"temperature",
       [](auto& r, const json& v, auto&) {
         r.options.temperatures = {static_cast<float>(as_unit_interval(v, "temperature"))};
         r.temperature_set = true;
       }},
      {"stream", [](auto& r, const json& v, auto&) { r.stream = as_bool(v, "stream"); }},
      {"timestamp_granularities",
       [](auto& r, const json& v, auto&) {
         for (const auto& g : as_list(v, "timestamp_granularities")) {
           if (g == "word") r.options.word_timestamps = true;
           else if (g != "segment") field_error("timestamp_granularities", "accepts 'segment' and 'word' (got '" + g + "')");
         }
       }},
      {"beam_size", [](auto& r, const json& v, auto&) { r.options.beam_size = as_int(v, "beam_size", 1, 16); }},
      {"best_of", [](auto& r, const json& v, auto&) { r.options.best_of = as_int(v, "best_of", 1, 16); }},
      {"vocabulary",
       [](auto& r, const json& v, const ParseLimits& lim) {
         r.options.vocabulary = as_list(v, "vocabulary");
         if (r.options.vocabulary.size() > lim.max_vocabulary_terms)
           field_error("vocabulary", "has more than " + std::to_string(lim.max_vocabulary_terms) + " terms");
       }},
      {"condition_on_previous_text",
       [](auto& r, const json& v, auto&) { r.options.condition_on_previous_text = as_bool(v, "condition_on_previous_text"); }},
      {"no_speech_threshold",
       [](auto& r, const json& v, auto&) {
         r.options.no_speech_threshold = static_cast<float>(as_unit_interval(v, "no_speech_threshold"));
       }},
      {"without_timestamps", [](auto& r, const json& v, auto&) { r.options.without_timestamps = as_bool(v, "without_timestamps"); }},
      {"vad",
       [](auto& r, const json& v, auto&) {
         bool on = as_bool(v, "vad");
         if (!on) r.options.vad = VadMode::Off;
         else if (r.options.vad == VadMode::Off) r.options.vad = VadMode::Gate;
       }},
      {"vad_trim", [](auto& r, const json& v, auto&) { if (as_bool(v, "vad_trim")) r.options.vad = VadMode::Trim; }},
      {"vad_threshold",
       [](auto& r, const json& v, auto&) {
         double t = as_number(v, "vad_threshold");
         if (t <= 0 || t >= 1) field_error("vad_threshold", "must be between 0 and 1 (exclusive)");
         r.options.vad_threshold = static_cast<float>(t);
       }},
      {"vad_min_speech_ms",
       [](auto& r, const json& v, auto&) { r.options.vad_min_speech_ms = as_int(v, "vad_min_speech_ms", 0, 60000); }},
      {"faithful", [](auto& r, const json& v, auto&) { r.options.faithful = as_bool(v, "faithful"); }},
      {"audio_ctx", [](auto& r, const json& v, auto&) { r.options.audio_ctx = as_int(v, "audio_ctx", 1, 1500); }},
      // Tokens decoded per window at most (Whisper's sample_len; 224 = n_text_ctx / 2, the
      // default, leaves the other half of the context to the prompt).
      {"sample_len", [](auto& r, const json& v, auto&) { r.options.sample_len = as_int(v, "sample_len", 1, 224); }},
      {"seed", [](auto& r, const json& v, auto&) { r.options.seed = static_cast<uint64_t>(as_int(v, "seed", 0, 2147483647)); }},
  };
  return table;
}

// "timestamp_granularities[]" (OpenAI's multipart spelling) → "timestamp_granularities".
std::string_view canonical_name(std::string_view name) {
  if (name.size() > 2 && name.substr(name.size() - 2) == "[]") name.remove_suffix(2);
  return name;
}

// Nesting depth of a JSON text, counted before parsing so that absurd nesting is
// rejected without recursion anywhere.
size_t json_depth(std::string_view body) {
  size_t depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace

const char* to_string(ResponseFormat format) {
  switch (format) {
    case ResponseFormat::Json: return "json";
    case ResponseFormat::VerboseJson: return "verbose_json";
    case ResponseFormat::Text: return "text";
    case ResponseFormat::Srt: return "srt";
    case ResponseFormat::Vtt: return "vtt";
  }
  return "json";
}

bool is_valid_utf8(std::string_view s) {
  static const uint32_t min_for_len[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 4;
    if (n == 4 || i + n >= s.size() + (n == 0)) return false;  // bad lead byte or truncated
    uint32_t cp = n == 0 ? c : c & (0x3F >> n);
    for (size_t k = 1; k <= n; ++k) {
      unsigned char cc = s[i + k];
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    if (cp < min_for_len[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += n + 1;
  }
  return true;
}

void TranscribeRequest::validate() const {
  // The engine's own checks first, so HTTP and the CLI reject the same values alike.
  try {
    options.validate();
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
  if (options.beam_size > 1 && temperature_set && !options.temperatures.empty() && options.temperatures[0] > 0)
    throw bad_request("[serve] field 'beam_size' requires temperature 0 (beam search is deterministic); "
                      "drop 'temperature' or set it to 0");
  if (stream && format != ResponseFormat::Json && format != ResponseFormat::VerboseJson &&
      format != ResponseFormat::Text)
    throw bad_request("[serve] field 'stream' works with response_format json, verbose_json or text");
}

TranscribeRequest parse_json_request(std::string_view body, Task task, bool require_audio,
                                     const ParseLimits& limits) {
  if (json_depth(body) > limits.max_json_depth)
    throw bad_request("[serve] JSON body is nested deeper than " + std::to_string(limits.max_json_depth) + " levels",
                      "invalid_json");
  json doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded()) throw bad_request("[serve] request body is not valid JSON", "invalid_json");
  if (!doc.is_object()) throw bad_request("[serve] request body must be a JSON object", "invalid_json");
  TranscribeRequest req;
  req.options.task = task;
  const auto& table = field_table();
  for (const auto& [key, value] : doc.items()) {
    std::string_view name = canonical_name(key);
    if (value.is_null()) continue;  // SDKs send explicit nulls for unset optionals
    if (name == "file" || name == "audio") {
      set_audio_from_text(req, as_string(value, name), name);
    } else if (name == "input_audio") {
      if (!value.is_object() || !value.contains("data"))
        field_error("input_audio", "must be an object with a base64 'data' field");
      set_audio_from_text(req, as_string(value["data"], "input_audio.data"), "input_audio.data");
    } else if (auto it = table.find(name); it != table.end()) {
      it->second(req, value, limits);
    }
    // Unknown fields are ignored, as OpenAI's newer SDK fields (chunking_strategy,
    // include, ...) must not break older servers.
  }
  if (require_audio && req.audio.empty())
    throw bad_request("[serve] missing audio: send 'file' (base64 or a data: URL), 'audio' or 'input_audio.data'",
                      "missing_file");
  req.validate();
  return req;
}

TranscribeRequest parse_form_request(const std::vector<FormPart>& parts, Task task, const ParseLimits& limits) {
  TranscribeRequest req;
  req.options.task = task;
  const auto& table = field_table();
  // Array fields arrive as repeated "name[]" parts (OpenAI's SDKs) and are applied once.
  std::map<std::string, json, std::less<>> arrays;
  bool saw_file = false;
  for (const auto& part : parts) {
    std::string_view name = canonical_name(part.name);
    if (name == "file" || name == "audio") {
      if (saw_file) field_error(name, "appears twice: send one audio file per request");
      saw_file = true;
      req.audio = part.data;
      req.audio_name = part.filename;
      req.audio_content_type = part.content_type;
    } else if (name != part.name || name == "timestamp_granularities") {
      arrays[std::string(name)].push_back(part.data);
    } else if (auto it = table.find(name); it != table.end()) {
      it->second(req, json(part.data), limits);
    }
  }
  for (const auto& [name, values] : arrays)
    if (auto it = table.find(name); it != table.end()) it->second(req, values, limits);
  if (!saw_file) throw bad_request("[serve] missing 'file': attach the audio as a multipart file field", "missing_file");
  if (req.audio.empty()) throw bad_request("[serve] the uploaded 'file' is empty", "invalid_audio");
  req.validate();
  return req;
}

}  // namespace hark::serve
