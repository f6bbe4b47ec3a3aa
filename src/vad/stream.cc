#include "vad/stream.h"

#include <algorithm>

#include "hark/error.h"

namespace hark::vad {

VadStream::VadStream(SileroModel model, const SpeechTimestampOptions& options)
    : model_(std::move(model)), segmenter_(options) {
  pending_.reserve(kChunkSamples);
}

void VadStream::run(const float* samples, int64_t n_chunks) {
  const size_t first = probabilities_.size();
  probabilities_.resize(first + n_chunks);
  model_.run_chunks(samples, n_chunks, state_, probabilities_.data() + first);
  for (int64_t i = 0; i < n_chunks; ++i) segmenter_.push(probabilities_[first + i]);
}

int64_t VadStream::feed(std::span<const float> samples) {
  if (finished_) throw Error(ErrorCode::Conflict, "[vad] stream already finished; start a new VadStream");
  const size_t before = probabilities_.size();
  samples_seen_ += static_cast<int64_t>(samples.size());
  // Top up the partial chunk first, then run whole chunks straight from the caller's buffer.
  if (!pending_.empty()) {
    const size_t take = std::min(samples.size(), kChunkSamples - pending_.size());
    pending_.insert(pending_.end(), samples.begin(), samples.begin() + take);
    samples = samples.subspan(take);
    if (pending_.size() < static_cast<size_t>(kChunkSamples)) return 0;
    run(pending_.data(), 1);
    pending_.clear();
  }
  const int64_t whole = static_cast<int64_t>(samples.size()) / kChunkSamples;
  if (whole > 0) run(samples.data(), whole);
  pending_.assign(samples.begin() + whole * kChunkSamples, samples.end());
  return static_cast<int64_t>(probabilities_.size() - before);
}

void VadStream::finish() {
  if (finished_) return;
  finished_ = true;
  if (pending_.empty()) return;
  pending_.resize(kChunkSamples, 0.0f);
  run(pending_.data(), 1);
  pending_.clear();
}

}  // namespace hark::vad
