#include "transcribe/seek_loop.h"

#include <chrono>
#include <cstring>
#include <utility>

#include <algorithm>
#include <cmath>

#include "audio/mel.h"
#include "core/text.h"
#include "decode/model_inference.h"
#include "hark/error.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/segmenter.h"

namespace hark {
namespace {

// A per-attempt sampling seed that depends only on the run seed and the window, so a
// streamed run samples exactly what the batch run samples.
uint64_t attempt_seed(uint64_t seed, int64_t seek, size_t attempt) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(seek) * 16 + attempt + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DecodingVocabulary make_decoding_vocabulary(const Tokenizer& tokenizer, const HParams& hp) {
  DecodingVocabulary v;
  v.specials = SpecialTokens::from_tokenizer(tokenizer);
  const auto& languages = whisper_languages();
  for (int i = 0; i < tokenizer.num_languages() && i < static_cast<int>(languages.size()); ++i)
    v.language_codes.push_back(languages[i].code);
  v.non_speech = tokenizer.non_speech_tokens();
  v.decode_text = [&tokenizer](std::span<const int> tokens) { return tokenizer.decode(tokens); };
  v.multilingual = tokenizer.multilingual();
  v.n_text_ctx = hp.n_text_ctx;
  v.n_audio_ctx = hp.n_audio_ctx;
  return v;
}

VocabularyReport fit_vocabulary(const std::vector<std::string>& terms, int budget,
                                const std::function<std::vector<int>(const std::string&)>& encode,
                                std::vector<int>& hint_tokens) {
  VocabularyReport report;
  report.budget = std::max(0, budget);
  hint_tokens.clear();
  for (const std::string& raw : terms) {
    const std::string term = strip_whitespace(raw);
    if (term.empty()) continue;
    // Terms are written " A, B, C": each piece is encoded on its own so the token count
    // of the whole is exactly the sum of the pieces.
    std::vector<int> piece = encode(hint_tokens.empty() ? " " + term : ", " + term);
    if (static_cast<int>(hint_tokens.size() + piece.size()) <= report.budget) {
      hint_tokens.insert(hint_tokens.end(), piece.begin(), piece.end());
      report.included.push_back(term);
    } else {
      report.omitted.push_back(term);
    }
  }
  report.tokens = static_cast<int>(hint_tokens.size());
  return report;
}

SeekLoop::SeekLoop(SeekLoopContext context, TranscribeOptions options)
    : ctx_(std::move(context)), options_(std::move(options)) {
  if (!ctx_.model) throw Error(ErrorCode::InvalidArgument, "[transcribe] no model");
  const Tokenizer* tok = ctx_.tokenizer.get();
  if (!ctx_.vocab.multilingual) {
    language_ = "en";
  } else if (!options_.language.empty()) {
    language_ = tok ? tok->language_code(tok->language_token(options_.language)) : options_.language;
  }
  std::vector<int64_t> points;
  for (float ts : options_.clip_timestamps) points.push_back(static_cast<int64_t>(std::nearbyint(ts * kFramesPerSecond)));
  if (points.empty()) points.push_back(0);
  if (points.size() % 2 == 1) points.push_back(kUnknownLength);
  for (size_t i = 0; i < points.size(); i += 2) clips_.emplace_back(points[i], points[i + 1]);
  seek_ = clips_[0].first;

  const int prompt_budget = ctx_.vocab.n_text_ctx / 2 - 1;  // 223 tokens
  if (tok && !strip_whitespace(options_.prompt).empty()) {
    all_tokens_ = tok->encode(" " + strip_whitespace(options_.prompt));
    initial_prompt_len_ = all_tokens_.size();
  }
  if (!options_.vocabulary.empty()) {
    if (!tok) throw Error(ErrorCode::InvalidArgument, "[transcribe] vocabulary hints need a tokenizer");
    vocabulary_ = fit_vocabulary(options_.vocabulary, prompt_budget - static_cast<int>(initial_prompt_len_),
                                 [tok](const std::string& s) { return tok->encode(s); }, hint_tokens_);
  }
}

std::optional<int64_t> SeekLoop::next_window(int64_t content_frames) {
  while (clip_index_ < clips_.size()) {
    const int64_t start = clips_[clip_index_].first;
    const int64_t end = std::min(clips_[clip_index_].second, content_frames);
    if (seek_ < start) seek_ = start;
    if (seek_ >= end) {
      if (++clip_index_ < clips_.size()) seek_ = clips_[clip_index_].first;
      continue;
    }
    return seek_;
  }
  return std::nullopt;
}

int SeekLoop::segment_size(int64_t content_frames) const { return segment_size_at(seek_, content_frames); }

int SeekLoop::segment_size_at(int64_t seek, int64_t content_frames) const {
  const int64_t end = clip_index_ < clips_.size() ? clips_[clip_index_].second : content_frames;
  return static_cast<int>(std::min<int64_t>({kWindowFrames, content_frames - seek, end - seek}));
}

std::optional<int64_t> SeekLoop::seek_after(int segment_size, int64_t content_frames) const {
  if (!ctx_.access.encode_ahead || !options_.without_timestamps || options_.word_timestamps ||
      options_.hallucination_silence_threshold || clip_index_ >= clips_.size())
    return std::nullopt;
  const int64_t next = seek_ + segment_size;
  const int64_t end = std::min(clips_[clip_index_].second, content_frames);
  if (next >= end) return std::nullopt;
  return next;
}

std::unique_ptr<PendingEncode> SeekLoop::queue_ahead(const Tensor& mel) const {
  return ctx_.access.encode_ahead(mel, options_.audio_ctx);
}

void SeekLoop::expect(WindowAhead ahead) { ahead_ = std::move(ahead); }

const Tensor* SeekLoop::ahead_mel(int64_t seek, int size) const {
  return ahead_.pending && ahead_.seek == seek && ahead_.size == size ? &ahead_.mel : nullptr;
}

std::shared_ptr<const AudioContext> SeekLoop::take_ahead(int segment_size) {
  WindowAhead ahead = std::exchange(ahead_, {});
  if (!ahead.pending || ahead.seek != seek_ || ahead.size != segment_size) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const AudioContext> audio = ahead.pending->collect();
  encode_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return audio;
}

std::shared_ptr<const AudioContext> SeekLoop::encode(const Tensor& mel) {
  if (encoded_ && encoded_mel_.shape() == mel.shape() &&
      std::memcmp(encoded_mel_.raw(), mel.raw(), mel.nbytes()) == 0)
    return std::exchange(encoded_, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const AudioContext> audio;
  if (ctx_.access.encode) {
    audio = ctx_.access.encode(mel, options_.audio_ctx);
  } else {
    audio = ctx_.model->prepare_audio(mel, options_.audio_ctx);
    ctx_.model->backend().synchronize();  // the time is the encoder's, not the first decoder step's
  }
  encode_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return audio;
}

void SeekLoop::detect_language(const Tensor& first_window_mel) {
  if (!language_.empty()) return;
  encoded_ = encode(first_window_mel);
  encoded_mel_ = first_window_mel.clone();
  std::vector<float> probs = detect_language_probs(*make_inference(encoded_), ctx_.vocab.specials);
  const size_t best = std::max_element(probs.begin(), probs.end()) - probs.begin();
  for (size_t i = 0; i < probs.size() && i < ctx_.vocab.language_codes.size(); ++i)
    language_probs_[ctx_.vocab.language_codes[i]] = probs[i];
  language_ = best < ctx_.vocab.language_codes.size() ? ctx_.vocab.language_codes[best] : "en";
}

std::vector<int> SeekLoop::window_prompt() const {
  std::vector<int> context(all_tokens_.begin() + std::min(prompt_reset_since_, all_tokens_.size()), all_tokens_.end());
  if (hint_tokens_.empty()) return context;
  // Hints sit last (nearest the transcript); the previous text fills what they leave.
  const size_t room = static_cast<size_t>(ctx_.vocab.n_text_ctx / 2 - 1) - hint_tokens_.size();
  if (context.size() > room) context.erase(context.begin(), context.end() - room);
  context.insert(context.end(), hint_tokens_.begin(), hint_tokens_.end());
  return context;
}

DecodingResult SeekLoop::decode_with_fallback(std::shared_ptr<const AudioContext> audio) {
  const auto t0 = std::chrono::steady_clock::now();
  struct AddTime {
    std::chrono::steady_clock::time_point t0;
    double& total;
    ~AddTime() { total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); }
  } add_time{t0, decode_ms_};
  const std::vector<float>& temperatures = options_.temperatures;
  DecodingResult result;
  for (size_t attempt = 0; attempt < temperatures.size(); ++attempt) {
    const float t = temperatures[attempt];
    DecodingOptions d;
    d.task = options_.task;
    d.language = language_;
    d.temperature = t;
    if (t > 0) {
      d.best_of = options_.best_of;  // beam search only at T = 0
    } else if (options_.beam_size > 0) {
      d.beam_size = options_.beam_size;
      d.patience = options_.patience;
    }
    d.length_penalty = options_.length_penalty;
    d.prompt = window_prompt();
    if (window_index_ == 0 && !options_.prefix.empty() && ctx_.tokenizer)
      d.prefix = ctx_.tokenizer->encode(" " + strip_whitespace(options_.prefix));
    d.suppress_blank = options_.suppress_blank;
    d.suppress_tokens = options_.suppress_tokens;
    d.without_timestamps = options_.without_timestamps;
    d.max_initial_timestamp = options_.max_initial_timestamp;
    d.seed = attempt_seed(options_.seed, seek_, attempt);
    d.sample_len = options_.sample_len;
    result = DecodingTask(ctx_.vocab, d).run(*make_inference(audio));
    decode_model_ms_ += result.model_ms;
    decode_reorder_ms_ += result.reorder_ms;
    decode_runs_ += 1;
    sampled_tokens_ += static_cast<int64_t>(result.tokens.size());

    bool needs_fallback = false;
    if (options_.compression_ratio_threshold && result.compression_ratio > *options_.compression_ratio_threshold)
      needs_fallback = true;  // too repetitive
    if (options_.logprob_threshold && result.avg_logprob < *options_.logprob_threshold)
      needs_fallback = true;  // average log-probability too low
    if (options_.no_speech_threshold && result.no_speech_prob > *options_.no_speech_threshold &&
        options_.logprob_threshold && result.avg_logprob < *options_.logprob_threshold)
      needs_fallback = false;  // silence: no point in sampling
    if (!needs_fallback) break;
  }
  return result;
}

std::unique_ptr<Inference> SeekLoop::make_inference(std::shared_ptr<const AudioContext> audio) {
  if (ctx_.access.inference) return ctx_.access.inference(std::move(audio));
  return std::make_unique<ModelInference>(*ctx_.model, std::move(audio));
}

std::string SeekLoop::text() const {
  if (!ctx_.tokenizer) return "";
  std::vector<int> tokens(all_tokens_.begin() + initial_prompt_len_, all_tokens_.end());
  return ctx_.tokenizer->decode(tokens);
}

}  // namespace hark
