#include "decode/decoding_task.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "core/text.h"
#include "decode/token_decoder.h"
#include "hark/error.h"

namespace hark {
namespace {

constexpr float kChunkSeconds = 30.0f;

// Python's sequence[-n:] for any integer n (n = 0 keeps everything, as in the reference).
std::vector<int> python_tail(const std::vector<int>& tokens, int n) {
  const int size = static_cast<int>(tokens.size());
  int start = n == 0 ? 0 : size - n;
  start = std::clamp(start, 0, size);
  return {tokens.begin() + start, tokens.end()};
}

// Adds the time until the end of its scope to `total` (milliseconds).
struct ScopeTimer {
  explicit ScopeTimer(double& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~ScopeTimer() { total_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count(); }
  double& total_;
  std::chrono::steady_clock::time_point t0_;
};

// Measurement switches of the fast path (docs/gpu.md): NAME=0 turns one off.
bool switch_on(const char* name) {
  const char* value = std::getenv(name);
  return !(value && std::string(value) == "0");
}

}  // namespace

std::vector<TokenChoice> Inference::step_select(std::span<const int32_t>, const SelectionRules&,
                                                std::span<const SampledSummary>, int) {
  throw Error(ErrorCode::Internal, "[decode] this inference cannot choose tokens itself");
}

Inference::PromptChoices Inference::step_two_positions_select(std::span<const int32_t> tokens, int n_new,
                                                              int position, const SelectionRules& rules,
                                                              std::span<const SampledSummary> rows, int k) {
  const std::vector<float> logits = step_two_positions(tokens, n_new, position);
  const int n = static_cast<int>(rows.size());
  if (n <= 0 || logits.size() % (2 * static_cast<size_t>(n)) != 0)
    throw Error(ErrorCode::Internal, "[decode] step_two_positions_select: logits do not match the rows");
  const int vocab = static_cast<int>(logits.size() / (2 * static_cast<size_t>(n)));
  const std::vector<int32_t> spec = make_select_spec(rules, vocab, rows);
  std::vector<int32_t> out(static_cast<size_t>(n) * k * 2);
  select_tokens_reference(logits.data() + static_cast<size_t>(n) * vocab, n, vocab, spec.data(), k, out.data());
  PromptChoices p;
  p.row0_at_position.assign(logits.begin(), logits.begin() + vocab);
  for (size_t i = 0; i < out.size(); i += 2) p.choices.push_back({out[i], std::bit_cast<float>(out[i + 1])});
  return p;
}

int Inference::greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                            const std::function<bool(const TokenChoice&)>& on_choice) {
  int handed = 0;
  while (handed < max_steps) {
    const TokenChoice choice = step_select(std::span<const int32_t>(&token, 1), rules,
                                           std::span<const SampledSummary>(&summary, 1), 1).at(0);
    ++handed;
    if (!on_choice(choice)) break;
    token = advance_summary(summary, choice.token, rules);
  }
  return handed;
}

std::vector<float> Inference::step_two_positions(std::span<const int32_t> tokens, int n_new, int position) {
  if (n_new < 2 || position < 0 || position >= n_new - 1 || tokens.size() % n_new != 0)
    throw Error(ErrorCode::Internal, "[decode] step_two_positions needs a position before the last");
  const size_t rows = tokens.size() / n_new;
  auto columns = [&](int from, int to) {
    std::vector<int32_t> out;
    for (size_t r = 0; r < rows; ++r)
      out.insert(out.end(), tokens.begin() + r * n_new + from, tokens.begin() + r * n_new + to);
    return out;
  };
  std::vector<float> both = step(columns(0, position + 1), position + 1);
  const std::vector<float> last = step(columns(position + 1, n_new), n_new - position - 1);
  both.insert(both.end(), last.begin(), last.end());
  return both;
}

double compression_ratio(const std::string& text) {
  if (text.empty()) return 0.0;
  uLongf bound = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> out(bound);
  // Python's zlib.compress() default is Z_DEFAULT_COMPRESSION (level 6).
  if (compress2(out.data(), &bound, reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK)
    throw Error(ErrorCode::Internal, "[decode] zlib failed to compress the window text");
  return static_cast<double>(text.size()) / static_cast<double>(bound);
}

std::vector<float> detect_language_probs(Inference& inference, const SpecialTokens& specials) {
  if (specials.language_tokens.empty())
    throw Error(ErrorCode::InvalidArgument, "[decode] this model has no language tokens; pass a language");
  inference.begin(1);
  const int32_t sot = specials.sot;
  std::vector<float> logits = inference.step(std::span<const int32_t>(&sot, 1), 1);
  // Softmax over the language tokens only (every other token is masked to -inf).
  std::vector<float> picked;
  for (int t : specials.language_tokens) picked.push_back(logits.at(t));
  std::vector<float> logprobs;
  log_softmax(picked, logprobs);
  for (float& v : logprobs) v = std::exp(v);
  return logprobs;
}

DecodingTask::DecodingTask(const DecodingVocabulary& vocab, DecodingOptions options)
    : vocab_(vocab), options_(std::move(options)) {
  verify_options();
  n_group_ = options_.beam_size > 0 ? options_.beam_size : options_.best_of > 0 ? options_.best_of : 1;
  sample_len_ = options_.sample_len > 0 ? options_.sample_len : vocab_.n_text_ctx / 2;
  build_initial_tokens();
  build_filters();
}

void DecodingTask::verify_options() const {
  auto fail = [](const std::string& what) { throw Error(ErrorCode::InvalidArgument, "[decode] " + what); };
  if (options_.beam_size > 0 && options_.best_of > 0) fail("beam_size and best_of can't be given together");
  if (options_.temperature == 0 && options_.best_of > 0) fail("best_of with greedy decoding (temperature 0) is not compatible");
  if (options_.patience && options_.beam_size <= 0) fail("patience requires beam_size");
  if (options_.length_penalty && !(*options_.length_penalty >= 0 && *options_.length_penalty <= 1))
    fail("length_penalty (alpha) should be a value between 0 and 1");
  if (options_.temperature < 0) fail("temperature must be >= 0");
}

void DecodingTask::build_initial_tokens() {
  const SpecialTokens& s = vocab_.specials;
  std::vector<int> sequence = {s.sot};
  if (vocab_.multilingual) {
    // The language slot holds "en" until detection overwrites it, as in the reference.
    int language = s.language_tokens.empty() ? s.sot + 1 : s.language_tokens.front();
    for (size_t i = 0; i < vocab_.language_codes.size(); ++i)
      if (vocab_.language_codes[i] == options_.language) language = s.language_tokens[i];
    sequence.push_back(language);
    sequence.push_back(options_.task == Task::Translate ? s.translate : s.transcribe);
  }
  if (options_.without_timestamps) sequence.push_back(s.no_timestamps);

  std::vector<int> tokens = sequence;
  if (!options_.prefix.empty()) {
    const int max_prefix_len = vocab_.n_text_ctx / 2 - sample_len_;
    std::vector<int> prefix = python_tail(options_.prefix, max_prefix_len);
    tokens.insert(tokens.end(), prefix.begin(), prefix.end());
  }
  if (!options_.prompt.empty()) {
    std::vector<int> prompt = python_tail(options_.prompt, vocab_.n_text_ctx / 2 - 1);
    prompt.insert(prompt.begin(), s.sot_prev);
    tokens.insert(tokens.begin(), prompt.begin(), prompt.end());
  }
  initial_tokens_ = std::move(tokens);
  sot_index_ = static_cast<int>(std::find(initial_tokens_.begin(), initial_tokens_.end(), s.sot) - initial_tokens_.begin());
}

void DecodingTask::build_filters() {
  const int begin = sample_begin();
  const SpecialTokens& s = vocab_.specials;
  selection_.eot = s.eot;
  if (options_.suppress_blank) {
    filters_.push_back(std::make_unique<SuppressBlank>(s, begin));
    selection_.suppress_blank = true;
    selection_.blank = s.space;
    selection_.blank.push_back(s.eot);
  }
  if (!options_.suppress_tokens.empty()) {
    selection_.suppress = resolve_suppress_tokens(options_.suppress_tokens, vocab_.non_speech, s);
    filters_.push_back(std::make_unique<SuppressTokens>(selection_.suppress));
  }
  if (!options_.without_timestamps) {
    const double precision = kChunkSeconds / vocab_.n_audio_ctx;  // 0.02 s per timestamp step
    std::optional<int> max_initial;
    if (options_.max_initial_timestamp && *options_.max_initial_timestamp != 0)
      max_initial = static_cast<int>(std::nearbyint(*options_.max_initial_timestamp / precision));
    filters_.push_back(std::make_unique<ApplyTimestampRules>(s, begin, max_initial));
    selection_.timestamps = true;
    selection_.timestamp_begin = s.timestamp_begin;
    selection_.no_timestamps = s.no_timestamps;
    selection_.max_initial_timestamp = max_initial.value_or(-1);
  }
}

std::string DecodingTask::language_code(int token) const {
  const auto& tokens = vocab_.specials.language_tokens;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == token) return i < vocab_.language_codes.size() ? vocab_.language_codes[i] : std::to_string(token);
  return "";
}

}  // namespace hark

namespace hark {
namespace {

// Runs the filters on every row and asks the decoder for the next tokens.
StepResult filtered_step(const std::vector<std::unique_ptr<LogitFilter>>& filters, TokenDecoder& decoder,
                         TokenRows& tokens, std::vector<float>& logits, std::vector<double>& sum_logprobs) {
  const size_t vocab = logits.size() / tokens.size();
  // Each row's log-sum-exp where the last filter computed it (the timestamp rule does).
  std::vector<double> row_lse(tokens.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t r = 0; r < tokens.size(); ++r) {
    std::span<float> row(logits.data() + r * vocab, vocab);
    std::optional<double> lse;
    for (const auto& filter : filters) lse = filter->apply_normalized(row, tokens[r]);
    if (lse) row_lse[r] = *lse;
  }
  return decoder.update(tokens, logits, sum_logprobs, row_lse);
}

std::vector<int32_t> flatten_columns(const TokenRows& rows, size_t begin, size_t end) {
  std::vector<int32_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin() + begin, row.begin() + end);
  return flat;
}

}  // namespace

DecodingResult DecodingTask::run(Inference& inference) {
  const SpecialTokens& s = vocab_.specials;
  DecodingResult result;
  result.temperature = options_.temperature;
  result.language = options_.language;
  if (options_.language.empty() && vocab_.multilingual) {
    std::vector<float> probs = detect_language_probs(inference, s);
    const size_t best = std::max_element(probs.begin(), probs.end()) - probs.begin();
    for (size_t i = 0; i < probs.size(); ++i) result.language_probs[language_code(s.language_tokens[i])] = probs[i];
    result.language = language_code(s.language_tokens[best]);
    initial_tokens_[sot_index_ + 1] = s.language_tokens[best];
  }

  std::unique_ptr<TokenDecoder> decoder;
  if (options_.beam_size > 0)
    decoder = std::make_unique<BeamSearchDecoder>(options_.beam_size, s.eot, options_.patience);
  else
    decoder = std::make_unique<GreedyDecoder>(options_.temperature, s.eot, options_.seed);

  TokenRows tokens(n_group_, initial_tokens_);
  std::vector<double> sum_logprobs(n_group_, 0.0);
  {
    ScopeTimer timer(result.model_ms);
    inference.begin(n_group_);
  }
  // Greedy and beam search at T = 0 may choose next to the logits (the GPU fast path):
  // then only k tokens per row come back instead of the vocabulary.
  const bool select = options_.temperature == 0 && inference.can_select();
  const size_t head = sot_index_ + 1;
  // The no-speech probability is read at <|startoftranscript|>, on the first row.
  // From the first row of `rows` rows of logits at <|startoftranscript|>.
  auto read_no_speech = [&](std::span<const float> at_sot, int rows) {
    if (s.no_speech < 0) return;
    std::vector<float> logprobs;
    log_softmax(at_sot.first(at_sot.size() / rows), logprobs);
    result.no_speech_prob = std::exp(logprobs.at(s.no_speech));
  };
  const int k = options_.beam_size > 0 ? options_.beam_size + 1 : 1;
  std::vector<float> logits;
  // The first step's choices when the prompt pass made them next to the logits.
  std::optional<std::vector<TokenChoice>> first_choices;
  auto summaries = [&] {
    std::vector<SampledSummary> rows;
    for (const auto& row : tokens)
      rows.push_back(SampledSummary::of(std::span<const int>(row).subspan(sample_begin()), s.timestamp_begin));
    return rows;
  };
  if (select && initial_tokens_.size() > head && inference.can_select_prompt() && switch_on("HARK_PROMPT_ONE_PASS") &&
      switch_on("HARK_PROMPT_SELECT")) {
    // The prompt in one pass with the first step chosen on the device: only row 0's
    // logits at <|startoftranscript|> come back, not both positions of every row (for
    // beam 5, 2 MB and the host's filters over five rows of the vocabulary).
    ScopeTimer timer(result.model_ms);
    Inference::PromptChoices p =
        inference.step_two_positions_select(flatten_columns(tokens, 0, initial_tokens_.size()),
                                            static_cast<int>(initial_tokens_.size()), sot_index_, selection_,
                                            summaries(), k);
    read_no_speech(std::span<const float>(p.row0_at_position), 1);
    first_choices = std::move(p.choices);
  } else if (select && initial_tokens_.size() > head && switch_on("HARK_PROMPT_ONE_PASS")) {
    // The fast path takes the prompt in one pass with both positions' logits.
    ScopeTimer timer(result.model_ms);
    logits = inference.step_two_positions(flatten_columns(tokens, 0, initial_tokens_.size()),
                                          static_cast<int>(initial_tokens_.size()), sot_index_);
    const size_t half = logits.size() / 2;
    read_no_speech(std::span<const float>(logits).first(half), n_group_);
    logits.erase(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(half));
  } else {
    // Up to <|startoftranscript|>, then the rest of the initial tokens: with the cache
    // this equals one pass, as the reference runs it.
    ScopeTimer timer(result.model_ms);
    logits = inference.step(flatten_columns(tokens, 0, head), static_cast<int>(head));
    read_no_speech(logits, n_group_);
    if (initial_tokens_.size() > head)
      logits = inference.step(flatten_columns(tokens, head, initial_tokens_.size()),
                              static_cast<int>(initial_tokens_.size() - head));
  }

  // Greedy on the fast path: the device one step ahead of this loop (greedy_steps).
  const bool ahead = select && options_.beam_size <= 0 && n_group_ == 1 && switch_on("HARK_GREEDY_LAG");
  for (int i = 0; i < sample_len_; ++i) {
    if (i > 0 && ahead) {
      const std::span<const int> sampled = std::span<const int>(tokens[0]).subspan(sample_begin());
      double steps_ms = 0, own_ms = 0;  // the whole call, and the choices' bookkeeping within it
      {
        ScopeTimer timer(steps_ms);
        inference.greedy_steps(tokens[0].back(), selection_, SampledSummary::of(sampled, s.timestamp_begin),
                               sample_len_ - i, [&](const TokenChoice& choice) {
                                 ScopeTimer own(own_ms);
                                 const StepResult step = decoder->update_choices(tokens, {&choice, 1}, 1, sum_logprobs);
                                 return !step.completed && static_cast<int>(tokens[0].size()) <= vocab_.n_text_ctx;
                               });
      }
      result.model_ms += steps_ms - own_ms;
      break;
    }
    const std::vector<int32_t> last = flatten_columns(tokens, tokens[0].size() - 1, tokens[0].size());
    StepResult step;
    if (i == 0 && first_choices) {
      step = decoder->update_choices(tokens, *first_choices, k, sum_logprobs);
    } else if (i > 0 && select) {
      const std::vector<SampledSummary> rows = summaries();
      std::vector<TokenChoice> choices;
      {
        ScopeTimer timer(result.model_ms);
        choices = inference.step_select(last, selection_, rows, k);
      }
      step = decoder->update_choices(tokens, choices, k, sum_logprobs);
    } else {
      if (i > 0) {
        ScopeTimer timer(result.model_ms);
        logits = inference.step(last, 1);
      }
      step = filtered_step(filters_, *decoder, tokens, logits, sum_logprobs);
    }
    if (!step.source.empty()) {
      ScopeTimer timer(result.reorder_ms);
      inference.reorder(step.source);
    }
    if (step.completed || static_cast<int>(tokens[0].size()) > vocab_.n_text_ctx) break;
  }

  std::vector<Candidate> candidates = decoder->finalize(tokens, sum_logprobs);
  std::vector<int> lengths;
  std::vector<double> sums;
  for (Candidate& c : candidates) {
    auto first = c.tokens.begin() + sample_begin();
    c.tokens = std::vector<int>(first, std::find(first, c.tokens.end(), s.eot));
    lengths.push_back(static_cast<int>(c.tokens.size()));
    sums.push_back(c.sum_logprob);
  }
  const int best = MaximumLikelihoodRanker(options_.length_penalty).rank(lengths, sums);
  result.tokens = candidates[best].tokens;
  result.sum_logprob = candidates[best].sum_logprob;
  result.avg_logprob = result.sum_logprob / (result.tokens.size() + 1);
  if (vocab_.decode_text) result.text = strip_whitespace(vocab_.decode_text(result.tokens));
  result.compression_ratio = compression_ratio(result.text);
  return result;
}

}  // namespace hark
