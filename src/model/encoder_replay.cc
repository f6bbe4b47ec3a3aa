// One audio window through the encoder and the cross-attention K/V products as a single
// replayable step. On CUDA the step is recorded once (per context length) as a graph and
// replayed: a window of large-v3-turbo is about 230 kernels, and on an H200 it took 7.04 ms
// launched one by one against 5.74 ms recorded (docs/gpu.md).
// Batches of windows take the direct path: their kernels are long enough.
#include <atomic>
#include <cstring>

#include "core/ops.h"
#include "model/whisper_model.h"

namespace hark {
namespace {

// Replay keys of encoder steps: kEncoderReplayKey | model << 16 | n_ctx. The decoder's
// keys (model/decoder_buffers.cc) stay below. Each model takes a number of its own from
// one counter for the process: two models on one backend (hark bench's and its engine's)
// must not replay each other's recordings, which write
// the other model's buffers (until 2026-12-02 the key was kEncoderReplayKey | n_ctx, and
// the second model's windows came out as whatever its own buffers held).
constexpr uint64_t kEncoderReplayKey = uint64_t{1} << 62;
std::atomic<uint64_t> next_model_number{1};

uint64_t encoder_replay_key(uint64_t model, int n_ctx) {
  return kEncoderReplayKey | (model & 0xFFFFFFFFFFULL) << 16 | static_cast<uint64_t>(n_ctx);
}

}  // namespace

uint64_t WhisperModel::take_replay_number() { return next_model_number.fetch_add(1, std::memory_order_relaxed); }

WhisperModel::~WhisperModel() {
  for (auto& [n_ctx, replay] : encoder_replays_) backend_->forget_replay(replay->key);
}

std::shared_ptr<const AudioContext> WhisperModel::prepare_audio_replayed(const Tensor& mel, int n_ctx) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const DType act = be.act_dtype();
  const int64_t n_frames = 2LL * n_ctx;
  std::lock_guard<std::mutex> lock(encoder_mutex_);
  auto& slot = encoder_replays_[n_ctx];
  if (!slot) {
    slot = std::make_unique<EncoderReplay>();
    slot->key = encoder_replay_key(replay_number_, n_ctx);
    slot->mel_host = be.alloc_host({hp.n_mels, n_frames}, DType::F32);
    slot->mel = be.alloc({hp.n_mels, n_frames}, DType::F32);
    slot->features = be.alloc({n_ctx, hp.n_audio_state}, act);
    slot->kv = be.alloc({n_ctx, 2LL * hp.n_text_layer * hp.n_text_state}, act);
  }
  EncoderReplay& r = *slot;
  be.synchronize();  // the previous window's upload has finished reading the staging buffer
  const int64_t stride = mel.dim(1);
  for (int m = 0; m < hp.n_mels; ++m)
    std::memcpy(r.mel_host.data<float>() + m * n_frames, mel.data<float>() + m * stride, n_frames * sizeof(float));
  be.copy_async(r.mel_host, r.mel);
  be.replay(r.key, [&] {
    // The mel arrives mel-major; the convolutions read it time-major, in the compute dtype.
    Tensor converted = be.alloc(r.mel.shape(), act);
    be.copy(r.mel, converted);
    Tensor frames = be.alloc({n_frames, hp.n_mels}, act);
    be.transpose(converted, frames);
    Tensor x = encoder_convolutions(frames, n_ctx);
    for (int i = 0; i < hp.n_audio_layer; ++i) encoder_block(x, 1, i);
    Tensor features = ops::layer_norm(be, x, *layers_.ln_post.weight, *layers_.ln_post.bias);
    Tensor kv = cross_kv(features, 1);
    be.copy_async(features, r.features);
    be.copy_async(kv, r.kv);
  });
  // Each window keeps its own copy: the recorded step writes the same buffers every time.
  auto ctx = std::make_shared<AudioContext>();
  ctx->features = be.alloc(r.features.shape(), act);
  be.copy(r.features, ctx->features);
  ctx->cross_kv = be.alloc(r.kv.shape(), act);
  be.copy(r.kv, ctx->cross_kv);
  return ctx;
}

}  // namespace hark
