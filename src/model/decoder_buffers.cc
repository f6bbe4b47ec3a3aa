#include "model/decoder_buffers.h"

#include <atomic>

#include "core/token_select.h"

namespace hark {
namespace {

// Buffer set ids key the backend's recorded steps (id << 8 | what), and a backend may be
// shared by several models, each with a pool of its own (hark bench times steps on one
// model, then transcribes on an engine's model over the same backend; tests do the same).
// Ids from one counter for the whole process never meet another pool's recordings. Until 2026-12-02 each pool counted from 1: a second model on the backend
// replayed the first one's recordings, over the first one's buffers (wrong tokens).
std::atomic<uint64_t> next_buffer_id{1};

}  // namespace

DecoderBufferPool::~DecoderBufferPool() {
  for (auto& [key, sets] : free_)
    for (auto& set : sets) forget(*set);
}

std::shared_ptr<DecoderBuffers> DecoderBufferPool::acquire(const HParams& hp, const DecoderShape& shape,
                                                           bool alias_cross_kv, bool slots) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& sets = free_[{shape, alias_cross_kv, slots}];
    if (!sets.empty()) {
      auto set = std::move(sets.back());
      sets.pop_back();
      return set;
    }
  }
  Backend& be = *backend_;
  auto set = std::make_shared<DecoderBuffers>();
  set->shape = shape;
  set->id = next_buffer_id.fetch_add(1, std::memory_order_relaxed);
  set->alias_cross_kv = alias_cross_kv;
  set->slots = slots;
  const int64_t rows = static_cast<int64_t>(shape.batch) * hp.n_text_ctx, d = hp.n_text_state;
  for (int i = 0; i < hp.n_text_layer; ++i) {
    set->self_k.push_back(be.alloc({rows, d}, be.act_dtype()));
    set->self_v.push_back(be.alloc({rows, d}, be.act_dtype()));
  }
  if (!alias_cross_kv)
    set->cross_kv = be.alloc({shape.windows * shape.frames, 2LL * hp.n_text_layer * d}, be.cross_kv_dtype());
  const int64_t n_inputs = 2LL * shape.batch + static_cast<int64_t>(shape.batch) * hp.n_text_ctx;
  set->host_inputs = be.alloc_host({n_inputs}, DType::I32);
  set->inputs = be.alloc({n_inputs}, DType::I32);
  // Twice the rows for decode_two_positions (not in slot states, which never use it).
  set->host_logits = be.alloc_host({(slots ? 1 : 2) * shape.batch, hp.n_vocab}, DType::F32);
  const int64_t spec = select_spec_size(hp.n_vocab, shape.batch);
  set->host_spec = be.alloc_host({spec}, DType::I32);
  set->spec = be.alloc({spec}, DType::I32);
  set->host_choices = be.alloc_host({shape.batch, DecoderBuffers::kMaxChoices, 2}, DType::I32);
  set->choices = be.alloc({shape.batch, DecoderBuffers::kMaxChoices, 2}, DType::I32);
  if (slots) set->step_logits = be.alloc({shape.batch, hp.n_vocab}, DType::F32);
  return set;
}

void DecoderBufferPool::release(std::shared_ptr<DecoderBuffers> buffers) {
  if (buffers->alias_cross_kv) buffers->cross_kv = Tensor();  // do not keep the window alive
  std::lock_guard<std::mutex> lock(mutex_);
  auto& sets = free_[{buffers->shape, buffers->alias_cross_kv, buffers->slots}];
  // A slot state's set is large (a window per row) and there is one state per size in use.
  if (sets.size() < (buffers->slots ? 1 : kKeepPerShape)) {
    sets.push_back(std::move(buffers));
    return;
  }
  forget(*buffers);
}

void DecoderBufferPool::forget(const DecoderBuffers& buffers) {
  // The plain step's record and one per choice count (decode_select).
  for (uint64_t k = 0; k <= DecoderBuffers::kMaxChoices; ++k) backend_->forget_replay(buffers.id << 8 | k);
  if (buffers.slots) {
    backend_->forget_replay(buffers.id << 8 | DecoderBuffers::kSlotStepKey);
    for (uint64_t i = 1; i <= DecoderBuffers::kMaxSlotSpans; ++i)
      backend_->forget_replay(buffers.id << 8 | (DecoderBuffers::kSlotSpanKey + i));
  }
  for (uint64_t n = 2; n <= DecoderBuffers::kMaxRecordedPrefill; ++n) {
    backend_->forget_replay(buffers.id << 8 | DecoderBuffers::kPrefillKey | n);
    backend_->forget_replay(buffers.id << 8 | DecoderBuffers::kTwoPositionsKey | n);
  }
  for (uint64_t key : {DecoderBuffers::kGreedyFirstKey, DecoderBuffers::kGreedyNextKey, DecoderBuffers::kGreedyNextKey + 1})
    backend_->forget_replay(buffers.id << 8 | key);
  // decode_prompt_select's: per prompt length and choice count (k in bits 48-55).
  for (uint64_t n = 2; n <= DecoderBuffers::kMaxRecordedPrefill; ++n)
    for (uint64_t k = 1; k <= DecoderBuffers::kMaxChoices; ++k)
      backend_->forget_replay(buffers.id << 8 | DecoderBuffers::kPromptSelectKey | n | k << 48);
}

}  // namespace hark
