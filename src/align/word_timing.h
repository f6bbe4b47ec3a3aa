// Word-level timestamps as the reference's timing module: cross-attention of the
// alignment heads over a forced pass of the window's text → per-head normalisation →
// median filter → DTW → word boundaries; then punctuation merging and the duration
// heuristics that assign words to segments.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "align/dtw.h"
#include "hark/result.h"
#include "model/whisper_model.h"

namespace hark {

struct WordTiming {
  std::string word;
  std::vector<int> tokens;
  double start = 0, end = 0;
  double probability = 0;
};

// Splits text tokens (+ EOT last) into words and each word's tokens.
using WordSplitter =
    std::function<void(std::span<const int>, std::vector<std::string>&, std::vector<std::vector<int>>&)>;

struct AlignmentRequest {
  std::vector<int> sot_sequence;  // <|startoftranscript|> <|lang|> <|task|>
  int no_timestamps = 0;
  int eot = 0;
  std::vector<int> text_tokens;
  int num_frames = 3000;  // mel frames of real audio in the window
};

// The forced pass: returns the token × time matrix (rows: the <|notimestamps|> position
// to the last text token, i.e. text_tokens.size() + 1 rows; columns: num_frames / 2) and
// the probability of each text token among the text vocabulary.
Matrix alignment_matrix(WhisperModel& model, std::shared_ptr<const AudioContext> audio, const AlignmentHeads& heads,
                        const AlignmentRequest& request, std::vector<double>& text_token_probs,
                        int median_filter_width = 7);

// DTW over −matrix and the word boundaries; pure, so tests can feed any matrix.
std::vector<WordTiming> timings_from_matrix(const Matrix& matrix, std::span<const double> text_token_probs,
                                            const std::vector<std::string>& words,
                                            const std::vector<std::vector<int>>& word_tokens);

// Attaches leading punctuation to the following word and trailing punctuation to the
// previous one (the emptied entries stay, with no text and no tokens).
void merge_punctuations(std::vector<WordTiming>& alignment, const std::string& prepended, const std::string& appended);

struct WordOptions {
  std::string prepend_punctuations;
  std::string append_punctuations;
};

// Distributes `alignment` (window-relative seconds) over `segments` (absolute seconds)
// with the reference's duration heuristics, filling Segment::words and adjusting segment
// starts/ends. `time_offset` is the window start in seconds; tokens >= `eot` in the
// segments (timestamps) are not text.
void assign_words(std::vector<Segment>& segments, std::vector<WordTiming> alignment, double time_offset,
                  double last_speech_timestamp, const WordOptions& options, int eot);

}  // namespace hark
