// The memory behind a DecoderState, and the model's pool of it. States of one shape
// (rows, windows, frames) reuse the same buffers, so what a backend records on them — a
// CUDA graph of the decoder step — stays valid from one window to the next.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/backend.h"
#include "model/hparams.h"

namespace hark {

struct DecoderShape {
  int batch = 1;         // rows
  int windows = 1;       // distinct audio windows
  int64_t frames = 0;    // encoder frames per window
  auto operator<=>(const DecoderShape&) const = default;
};

struct DecoderBuffers {
  DecoderShape shape;
  uint64_t id = 0;                     // the backend's replay key for this set
  bool alias_cross_kv = false;
  bool slots = false;  // a slot state's set (has step_logits)
  std::vector<Tensor> self_k, self_v;  // per layer [batch·n_text_ctx, d]
  // [windows·frames, n_text_layer·2·d]; for one window on a backend that records no
  // replays, an alias of that window's own K/V instead of a copy.
  Tensor cross_kv;
  // Step inputs, i32: lengths[batch] | row_window[batch] | tokens[batch·n_new]; the host
  // side is written before each step and copied to the device inside it.
  Tensor host_inputs, inputs;
  Tensor host_logits;  // f32 [2·batch, n_vocab]: the last position of each row (and another)
  // Token selection next to the logits (decode_select): the filters' spec and the choices.
  Tensor host_spec, spec;        // i32 select_spec_size(n_vocab, batch)
  Tensor host_choices, choices;  // i32 [batch, kMaxChoices, 2]
  Tensor step_logits;            // slot states: f32 [batch, n_vocab] of the last step, on the device
  static constexpr int kMaxChoices = 16;
  static constexpr uint64_t kSlotStepKey = 0xFF;  // replay key (low 8 bits) of a slot state's step
  // A slot state's step over its first rows only (the rows up to the last active one,
  // rounded up to kSlotSpanStep): kSlotSpanKey + rows / kSlotSpanStep.
  static constexpr int kSlotSpanStep = 16;
  static constexpr uint64_t kSlotSpanKey = 0xC0;
  static constexpr int kMaxSlotSpans = 31;  // spans below 512 rows
  // Prompts up to this long are recorded like steps (key kPrefillKey | n_new): the
  // start-of-transcript tokens of every window (1 to 4, more with a language and task).
  // Longer ones — the previous window's text as a prompt, up to 224 tokens — would each
  // need a recording and an arena of their own.
  static constexpr int kMaxRecordedPrefill = 8;
  static constexpr uint64_t kPrefillKey = 0x80;
  // decode_two_positions' prompt (position 0 and the last), kTwoPositionsKey | n_new.
  static constexpr uint64_t kTwoPositionsKey = 0x90;
  // decode_prompt_select's prompt: kPromptSelectKey | n_new, with k in bits 48-55 of the
  // whole key (buffer ids stay far below 2^40).
  static constexpr uint64_t kPromptSelectKey = 0xA0;
  // decode_greedy: its first step (inputs from the host), then the fed-back steps, one
  // record per host buffer of the choices (two, used in turn).
  static constexpr uint64_t kGreedyFirstKey = 0x40, kGreedyNextKey = 0x41;
};

class DecoderBufferPool {
 public:
  explicit DecoderBufferPool(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {}
  ~DecoderBufferPool();

  // A free set of this shape, or a new one.
  std::shared_ptr<DecoderBuffers> acquire(const HParams& hp, const DecoderShape& shape, bool alias_cross_kv,
                                          bool slots = false);
  // Takes a set back; keeps a few per shape and lets the backend forget the rest.
  void release(std::shared_ptr<DecoderBuffers> buffers);

 private:
  static constexpr size_t kKeepPerShape = 2;
  void forget(const DecoderBuffers& buffers);
  std::shared_ptr<Backend> backend_;
  std::mutex mutex_;
  // (shape, aliased cross K/V, slot state) → free sets
  std::map<std::tuple<DecoderShape, bool, bool>, std::vector<std::shared_ptr<DecoderBuffers>>> free_;
};

}  // namespace hark
