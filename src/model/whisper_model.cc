// WhisperModel: construction and the encoder (one window or a batch of windows).
#include "model/whisper_model.h"

#include <cstring>

#include "core/ops.h"
#include "model/decoder_buffers.h"

namespace hark {
namespace {

Tensor norm(Backend& be, const Tensor& x, const Norm& n) { return ops::layer_norm(be, x, *n.weight, *n.bias); }

}  // namespace

// x += mlp(layer_norm(x)); the norm and GELU fused into the first product where the
// backend can.
void mlp_residual(Backend& be, Tensor& x, const Norm& ln, const MlpLayer& mlp) {
  Tensor up = ops::norm_linear(be, x, *ln.weight, *ln.bias, *mlp.up.weight, mlp.up.bias, Epilogue::Gelu);
  ops::linear_residual(be, up, *mlp.down.weight, mlp.down.bias, x);
}

WhisperModel::WhisperModel(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend)
    : checkpoint_(std::move(checkpoint)), backend_(std::move(backend)) {
  check_weights(checkpoint_->weights, checkpoint_->hparams);
  layers_ = lookup_layers(checkpoint_->weights, checkpoint_->hparams);
  pool_ = std::make_shared<DecoderBufferPool>(backend_);
}

// ~WhisperModel is in encoder_replay.cc (it forgets the recorded encoder steps).

// One window as the convolutions read it: [2·n_ctx, n_mels], time-major, in the compute
// dtype, on the device (the convolutions run time-major so that each is one product whose
// output is already the encoder's [T, d] layout). `staging` is page-locked host memory
// for the window's [n_mels, 2·n_ctx] f32 values: their upload is asynchronous, so the host
// copies the next window in while this one is converted, transposed and convolved. Until
// 2026-12-01 a batch's windows were copied into one pageable host tensor and uploaded with
// a synchronisation (the GPU idle for both: ~49 MB for 32 windows), and before that each
// window was transposed on the host.
Tensor WhisperModel::window_frames(const Tensor& mel, int n_ctx, Tensor& staging) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const int64_t n_frames = 2LL * n_ctx;
  for (int m = 0; m < hp.n_mels; ++m)
    std::memcpy(staging.data<float>() + m * n_frames, mel.data<float>() + m * mel.dim(1), n_frames * sizeof(float));
  Tensor uploaded = be.alloc(staging.shape(), DType::F32);
  be.copy_async(staging, uploaded);
  Tensor mel_major = uploaded;
  if (be.act_dtype() != DType::F32) {
    mel_major = be.alloc(staging.shape(), be.act_dtype());
    be.copy(uploaded, mel_major);  // converts on the device
  }
  Tensor frames = be.alloc({n_frames, hp.n_mels}, be.act_dtype());
  be.transpose(mel_major, frames);
  return frames;
}

// frames [2·n_ctx, n_mels] (time-major, on the device) → [n_ctx, d].
Tensor WhisperModel::encoder_convolutions(const Tensor& input, int n_ctx) {
  Backend& be = *backend_;
  const Fp8Region fp8(be, Backend::Fp8Part::Convolutions);  // --compute-type fp8: these products may run in e4m3
  Tensor c1 = ops::conv1d_gelu_time_major(be, input, *layers_.conv1.weight, *layers_.conv1.bias, 1, 1);
  Tensor x = ops::conv1d_gelu_time_major(be, c1, *layers_.conv2.weight, *layers_.conv2.bias, 2, 1);
  ops::add(be, x, layers_.encoder_positions->rows(0, n_ctx));
  return x;
}

void WhisperModel::encoder_block(Tensor& x, int batch, int layer) {
  Backend& be = *backend_;
  const EncoderLayer& l = layers_.encoder[layer];
  const Tensor* ws[] = {l.attn.query.weight, l.attn.key.weight, l.attn.value.weight};
  const Tensor* bs[] = {l.attn.query.bias, nullptr, l.attn.value.bias};
  {
    const Fp8Region fp8(be, Backend::Fp8Part::Attention);  // --compute-type fp8 (Backend::set_fp8_region)
    Tensor qkv = ops::norm_linear_packed(be, x, *l.attn_ln.weight, *l.attn_ln.bias, ws, bs);
    Tensor att = ops::self_attention(be, qkv, batch, hparams().n_audio_head);
    ops::linear_residual(be, att, *l.attn.out.weight, l.attn.out.bias, x);
  }
  const Fp8Region fp8(be, Backend::Fp8Part::Mlp);
  mlp_residual(be, x, l.mlp_ln, l.mlp);
}

Tensor WhisperModel::encode(const Tensor& mel, int audio_ctx) { return encode_batch(std::span(&mel, 1), audio_ctx); }

int WhisperModel::checked_audio_ctx(std::span<const Tensor> mels, int audio_ctx) const {
  const HParams& hp = hparams();
  if (mels.empty()) throw Error(ErrorCode::InvalidArgument, "[encoder] no windows to encode");
  for (const Tensor& mel : mels)
    if (mel.rank() != 2 || mel.dim(0) != hp.n_mels || mel.dim(1) != 2 * hp.n_audio_ctx || mel.dtype() != DType::F32)
      throw Error(ErrorCode::InvalidArgument, "[encoder] expected an f32 mel of shape [" + std::to_string(hp.n_mels) +
                                                  ", " + std::to_string(2 * hp.n_audio_ctx) + "], got " + mel.describe());
  return audio_ctx > 0 && audio_ctx < hp.n_audio_ctx ? audio_ctx : hp.n_audio_ctx;
}

Tensor WhisperModel::encode_batch(std::span<const Tensor> mels, int audio_ctx) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const int n_ctx = checked_audio_ctx(mels, audio_ctx);
  const int batch = static_cast<int>(mels.size());
  const int64_t n_frames = 2LL * n_ctx;
  Tensor x;
  {
    // The staging buffer is the model's, reused by every batch: wait until the last batch's
    // uploads have left it (only the uploads: its kernels may still be running).
    std::lock_guard<std::mutex> lock(staging_mutex_);
    if (staging_uploaded_) be.wait_for(*staging_uploaded_);
    const int64_t rows = static_cast<int64_t>(batch) * hp.n_mels;
    if (!staging_.defined() || staging_.dim(0) < rows || staging_.dim(1) != n_frames)
      staging_ = be.alloc_host({rows, n_frames}, DType::F32);
    for (int b = 0; b < batch; ++b) {
      Tensor slot = staging_.rows(static_cast<int64_t>(b) * hp.n_mels, static_cast<int64_t>(b + 1) * hp.n_mels);
      Tensor conv = encoder_convolutions(window_frames(mels[b], n_ctx, slot), n_ctx);
      if (batch == 1) {
        x = conv;
        break;
      }
      if (!x.defined()) x = be.alloc({static_cast<int64_t>(batch) * n_ctx, hp.n_audio_state}, be.act_dtype());
      Tensor dst = x.rows(static_cast<int64_t>(b) * n_ctx, static_cast<int64_t>(b + 1) * n_ctx);
      be.copy(conv, dst);
    }
    staging_uploaded_ = be.mark();
  }
  for (int i = 0; i < hp.n_audio_layer; ++i) encoder_block(x, batch, i);
  return norm(be, x, layers_.ln_post);
}

// The cross-attention K/V of every decoder layer in one product per batch.
Tensor WhisperModel::cross_kv(const Tensor& features, int64_t windows) {
  const Fp8Region fp8(*backend_, Backend::Fp8Part::CrossKv);
  std::vector<const Tensor*> ws, bs;
  for (const DecoderLayer& l : layers_.decoder) {
    ws.push_back(l.cross_attn.key.weight);
    bs.push_back(nullptr);
    ws.push_back(l.cross_attn.value.weight);
    bs.push_back(l.cross_attn.value.bias);
  }
  // Kept in the backend's cross K/V dtype (f16 or q8_0 for the CPU's quantized modes) and
  // layout (the CPU's fp32 K/V in head panels).
  return backend_->arrange_cross_kv(
      ops::cast(*backend_, ops::linear_packed(*backend_, features, ws, bs), backend_->cross_kv_dtype()),
      features.dim(0) / windows, hparams().n_text_state / hparams().n_text_head);
}

std::shared_ptr<const AudioContext> WhisperModel::prepare_audio(const Tensor& mel, int audio_ctx) {
  return prepare_audio_batch(std::span(&mel, 1), audio_ctx).front();
}

std::vector<std::shared_ptr<const AudioContext>> WhisperModel::prepare_audio_batch(std::span<const Tensor> mels,
                                                                                   int audio_ctx) {
  if (mels.size() == 1 && backend_->records_replays())
    return {prepare_audio_replayed(mels[0], checked_audio_ctx(mels, audio_ctx))};
  Tensor features = encode_batch(mels, audio_ctx);
  Tensor kv = cross_kv(features, static_cast<int64_t>(mels.size()));
  const int64_t n = features.dim(0) / static_cast<int64_t>(mels.size());
  std::vector<std::shared_ptr<const AudioContext>> out;
  for (int64_t b = 0; b < static_cast<int64_t>(mels.size()); ++b) {
    auto ctx = std::make_shared<AudioContext>();
    ctx->features = features.rows(b * n, (b + 1) * n);
    ctx->cross_kv = kv.rows(b * n, (b + 1) * n);
    out.push_back(std::move(ctx));
  }
  return out;
}

}  // namespace hark
