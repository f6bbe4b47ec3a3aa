// What a transcription returns: OpenAI's verbose_json shape plus hark's reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hark {

struct Word {
  std::string word;
  double start = 0, end = 0;
  double probability = 0;
};

struct Segment {
  int id = 0;
  int seek = 0;  // in mel frames (10 ms), as in the reference
  double start = 0, end = 0;
  std::string text;
  std::vector<int> tokens;
  double temperature = 0;
  double avg_logprob = 0;
  double compression_ratio = 0;
  double no_speech_prob = 0;
  std::vector<Word> words;
};

struct VocabularyReport {
  std::vector<std::string> included, omitted;
  int tokens = 0;   // prompt tokens the included terms use
  int budget = 0;   // tokens that were available to them
};

struct VadReport {
  bool speech = true;
  std::vector<std::pair<double, double>> segments;  // seconds
  double trimmed_start = 0, trimmed_end = 0;        // the span Whisper saw (vad_trim)
};

struct Timings {
  double load_ms = 0, mel_ms = 0, encode_ms = 0, decode_ms = 0, transcribe_ms = 0, total_ms = 0;
  // Of decode_ms: inside the model's calls (steps, prompts, waits for the device), and beam
  // reordering; the rest is the decoding tasks' host bookkeeping.
  double decode_model_ms = 0, decode_reorder_ms = 0;
  // The decoding's work: runs of the decoding task (windows, and their temperature
  // fallbacks) and the tokens they sampled (each run's chosen candidate, end-of-text
  // excluded), kept in segments or not (a window's tail after its last timestamp pair is
  // decoded again by the next window).
  int decode_runs = 0;
  int64_t sampled_tokens = 0;
};

struct Transcript {
  std::string text;
  std::string language;
  std::map<std::string, float> language_probs;  // filled when the language was detected
  std::string task = "transcribe";
  double duration = 0;  // seconds of input audio
  std::vector<Segment> segments;
  VocabularyReport vocabulary;
  VadReport vad;
  Timings timings;
};

}  // namespace hark
