// Options for one transcription. One struct feeds `hark transcribe` flags, the server's
// request fields and --help; validate() is the single place where values are checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hark {

enum class Task { Transcribe, Translate };
enum class VadMode { Off, Gate, Trim };  // gate: skip Whisper when no speech; trim: crop to speech ± 0.5 s

struct TranscribeOptions {
  std::string language;                   // "" = detect from the first 30 s
  Task task = Task::Transcribe;
  std::vector<float> temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};  // fallback ladder
  int beam_size = 0;                      // 0 = greedy / sampling; > 1 = beam search at T = 0
  int best_of = 5;                        // candidates when sampling at T > 0
  float patience = 1.0f;                  // beam search: finished sequences = beam_size · patience
  std::optional<float> length_penalty;    // unset: rank by length-normalised log-prob
  std::string prompt;                     // initial prompt text (previous-context)
  std::string prefix;                     // forced start of the first window's text
  std::vector<std::string> vocabulary;    // hint terms fitted whole into the prompt budget
  bool condition_on_previous_text = true;
  std::optional<float> compression_ratio_threshold = 2.4f;
  std::optional<float> logprob_threshold = -1.0f;
  std::optional<float> no_speech_threshold = 0.6f;
  bool without_timestamps = false;
  float max_initial_timestamp = 1.0f;     // seconds
  bool suppress_blank = true;
  std::vector<int> suppress_tokens = {-1};  // -1 = the default non-speech set
  bool word_timestamps = false;
  std::string prepend_punctuations = "\"'\u201c\u00bf([{-";
  std::string append_punctuations = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001";
  std::vector<float> clip_timestamps;     // start,end,start,end... seconds; empty = whole clip
  std::optional<float> hallucination_silence_threshold;  // seconds; needs word_timestamps
  uint64_t seed = 0;                      // sampling seed (deterministic runs)
  int audio_ctx = 0;                      // lab option: encode only the first n positions (0 = 1500)
  int sample_len = 0;                     // lab option: most tokens sampled per window (0 = n_text_ctx / 2)
  bool faithful = false;                  // use the fp32 reference path even on a fast backend

  VadMode vad = VadMode::Off;
  float vad_threshold = 0.5f;
  int vad_min_speech_ms = 250;

  void validate() const;  // throws hark::Error(InvalidArgument) naming the field
};

struct EngineOptions {
  std::string model;         // checkpoint path (directory or ggml file)
  std::string device = "cpu";  // cpu | cuda | cuda:N | auto
  int threads = 0;           // 0 = all hardware threads
  // auto | f32 | f16 | bf16 | int8 | int8_float16 | int8_float32 | q8_0 | q5_0 | q5_1 | q4_0 | q4_1 |
  // q2_k … q6_k: the activations (auto: f16 on a GPU, f32 on the CPU) and, on the CPU, the
  // weights and caches (int8 and the ggml types: quantized; docs/models-formats.md)
  std::string compute_type = "auto";
  // > 1: runs proceed at once from many threads, their windows encoded together and their
  // decoder steps batched, up to this many sequences per step (src/batch/); 1: one run at
  // a time; 0: batching with the device's default (16 on the CPU, 64 on a GPU).
  int max_batch = 1;
  int encode_batch = 0;  // windows per encoder call when batching; 0: 1 on the CPU, 16 on a GPU
};

}  // namespace hark
