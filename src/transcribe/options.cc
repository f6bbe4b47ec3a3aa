// TranscribeOptions::validate(): the one place option values are checked, so the CLI and
// the server reject the same inputs with the same messages.
#include <cmath>
#include <string>

#include "hark/error.h"
#include "hark/options.h"

namespace hark {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "[options] " + field + ": " + why);
}

bool finite(float v) { return std::isfinite(v); }

}  // namespace

void TranscribeOptions::validate() const {
  if (temperatures.empty()) bad("temperature", "give at least one temperature (e.g. 0)");
  for (float t : temperatures)
    if (!finite(t) || t < 0) bad("temperature", "every temperature must be a finite value >= 0");
  if (beam_size < 0 || beam_size > 64) bad("beam_size", "must be between 0 (greedy) and 64");
  if (best_of < 0 || best_of > 64) bad("best_of", "must be between 0 and 64");
  if (!finite(patience) || patience <= 0) bad("patience", "must be > 0");
  if (beam_size > 0 && std::lround(beam_size * patience) < 1) bad("patience", "beam_size x patience keeps no candidates");
  if (length_penalty && !(*length_penalty >= 0 && *length_penalty <= 1)) bad("length_penalty", "must be within [0, 1]");
  if (compression_ratio_threshold && !finite(*compression_ratio_threshold)) bad("compression_ratio_threshold", "must be finite");
  if (logprob_threshold && !finite(*logprob_threshold)) bad("logprob_threshold", "must be finite");
  if (no_speech_threshold && !(*no_speech_threshold >= 0 && *no_speech_threshold <= 1))
    bad("no_speech_threshold", "must be a probability within [0, 1]");
  if (!finite(max_initial_timestamp) || max_initial_timestamp < 0) bad("max_initial_timestamp", "must be >= 0 seconds");
  for (int t : suppress_tokens)
    if (t < -1) bad("suppress_tokens", "token ids are >= 0 (-1 stands for the default non-speech set)");
  if (clip_timestamps.size() > 0) {
    for (size_t i = 0; i < clip_timestamps.size(); ++i) {
      if (!finite(clip_timestamps[i]) || clip_timestamps[i] < 0) bad("clip_timestamps", "times must be >= 0 seconds");
      if (i > 0 && clip_timestamps[i] < clip_timestamps[i - 1])
        bad("clip_timestamps", "times must be in increasing order (start,end,start,end,...)");
    }
  }
  if (hallucination_silence_threshold) {
    if (!finite(*hallucination_silence_threshold) || *hallucination_silence_threshold < 0)
      bad("hallucination_silence_threshold", "must be >= 0 seconds");
    if (!word_timestamps) bad("hallucination_silence_threshold", "needs word_timestamps");
  }
  if (sample_len < 0 || sample_len > 448) bad("sample_len", "must be between 0 (default) and 448");
  if (audio_ctx < 0 || audio_ctx > 1500) bad("audio_ctx", "must be between 0 (full) and 1500");
  if (!finite(vad_threshold) || vad_threshold <= 0 || vad_threshold >= 1) bad("vad_threshold", "must be within (0, 1)");
  if (vad_min_speech_ms < 0) bad("vad_min_speech_ms", "must be >= 0");
  if (vocabulary.size() > 1000) bad("vocabulary", "at most 1000 terms");
}

}  // namespace hark
