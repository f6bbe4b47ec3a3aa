// Engine::open and the engine that backs the CLI and the server: one checkpoint on one
// device, the tokenizer for its vocabulary, and a SeekStreamingRun per transcription. With
// max_batch > 1 it also owns a BatchScheduler, and runs on many threads share the model.
#include "hark/engine.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <mutex>

#include "align/alignment_heads.h"
#include "batch/batch_scheduler.h"
#include "core/backend.h"
#include "model/checkpoint.h"
#include "model/compute_type.h"
#include "model/whisper_model.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/engine_factory.h"
#include "transcribe/streaming_run.h"
#include "vad/gate.h"
#include "vad/speech_timestamps.h"

namespace hark {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class WhisperEngine : public Engine {
 public:
  WhisperEngine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend, double load_ms,
                std::string device = "", BatchOptions batch = {1})
      : checkpoint_(checkpoint), model_(checkpoint, std::move(backend)), load_ms_(load_ms), device_(std::move(device)) {
    tokenizer_ = Tokenizer::for_vocab_size(checkpoint->hparams.n_vocab);
    vocab_ = make_decoding_vocabulary(*tokenizer_, checkpoint->hparams);
    // Converted official weights (MLX, ggml) lose their heads; trust the table for them.
    const bool official_shape = checkpoint->format != CheckpointFormat::HuggingFace;
    heads_ = resolve_alignment_heads(*checkpoint, official_shape);
    if (batch.max_rows > 1) scheduler_ = std::make_unique<BatchScheduler>(model_, batch);
  }

  ~WhisperEngine() override { scheduler_.reset(); }  // its thread uses the model: stop it first

  // Runs wait for rows inside the scheduler, so any number may proceed; the server bounds
  // them (--max-queue).
  int max_concurrent_runs() const override { return scheduler_ ? 4096 : 1; }
  BatchStats batch_stats() const override { return scheduler_ ? scheduler_->stats() : BatchStats{}; }

  Transcript transcribe(std::span<const float> samples, const TranscribeOptions& options,
                        const RunHooks& hooks) override {
    const auto t0 = std::chrono::steady_clock::now();
    options.validate();
    if (samples.size() < 1600)
      throw Error(ErrorCode::AudioTooShort, "[transcribe] audio is shorter than 0.1 s; send more audio");
    VadReport vad;
    std::span<const float> audio = samples;
    double offset = 0;
    if (options.vad != VadMode::Off) {
      vad::SpeechTimestampOptions vo;
      vo.threshold = options.vad_threshold;
      vo.min_speech_duration_ms = options.vad_min_speech_ms;
      auto segments = vad::get_speech_timestamps(silero(), samples, vo);  // const model: any thread
      for (const auto& s : segments) vad.segments.emplace_back(s.start / 16000.0, s.end / 16000.0);
      vad.speech = vad::vad_gate(segments);
      vad.trimmed_end = samples.size() / 16000.0;
      if (!vad.speech) {
        Transcript empty;
        empty.language = options.language;
        empty.duration = samples.size() / 16000.0;
        empty.vad = vad;
        empty.timings.total_ms = ms_since(t0);
        return empty;
      }
      if (options.vad == VadMode::Trim) {
        vad::TrimWindow w = vad::vad_trim(segments, static_cast<int64_t>(samples.size()));
        audio = samples.subspan(w.begin, w.samples());
        offset = w.offset_seconds();
        vad.trimmed_start = offset;
        vad.trimmed_end = w.end / 16000.0;
      }
    }
    SeekStreamingRun run(context(options, hooks.cancel), options, hooks);
    run.set_expected_seconds(audio.size() / 16000.0);
    if (!audio.empty()) run.use_clip_maximum(audio);
    run.feed(audio);
    Transcript t = run.finish();
    if (offset != 0) shift(t, offset);
    t.duration = samples.size() / 16000.0;
    t.vad = vad;
    t.timings.load_ms = load_ms_;
    t.timings.transcribe_ms = t.timings.total_ms = ms_since(t0);
    return t;
  }

  std::unique_ptr<StreamingRun> stream(const TranscribeOptions& options, const RunHooks& hooks) override {
    options.validate();
    return std::make_unique<SeekStreamingRun>(context(options, hooks.cancel), options, hooks);
  }

  std::string model_name() const override {
    return std::filesystem::path(checkpoint_->path).filename().string();
  }

 private:
  // The model a request runs on: the engine's own, or for `faithful` requests on a fast
  // (16-bit or quantized) engine, a second copy on the same device in fp32 — the reference
  // path (quantized weights widened to the values they hold).
  WhisperModel& model_for(const TranscribeOptions& options) {
    const bool fast = model_.backend().act_dtype() != DType::F32 || model_.backend().cross_kv_dtype() != DType::F32 ||
                      dtype_is_quantized(checkpoint_->dtype);
    if (!options.faithful || !fast) return model_;
    std::lock_guard lock(lazy_mutex_);
    if (!faithful_) {
      BackendOptions bo;
      bo.compute_type = "f32";
      bo.threads = model_.backend().threads();
      std::shared_ptr<Backend> backend = make_backend(device_.empty() ? "cpu" : device_, bo);
      auto widened = apply_compute_type(checkpoint_, compute_type_named("f32"), backend->device());
      faithful_ = std::make_unique<WhisperModel>(std::move(widened), std::move(backend));
    }
    return *faithful_;
  }

  SeekLoopContext context(const TranscribeOptions& options, const std::atomic<bool>* cancel) {
    SeekLoopContext ctx;
    ctx.model = &model_for(options);
    if (scheduler_) ctx.access = scheduled_access(*ctx.model, options, cancel);
    ctx.tokenizer = tokenizer_;
    ctx.vocab = vocab_;
    ctx.vocab.decode_text = [tok = tokenizer_](std::span<const int> t) { return tok->decode(t); };
    ctx.alignment_heads = heads_;
    ctx.split_words = [tok = tokenizer_](std::span<const int> tokens, const std::string& language,
                                         std::vector<std::string>& words, std::vector<std::vector<int>>& word_tokens) {
      tok->split_to_word_tokens(tokens, language, words, word_tokens);
    };
    return ctx;
  }

  // With a scheduler every model call of a run goes through its thread. Runs on the
  // engine's model with whole windows share the batch; the others (the fp32 copy of a
  // `faithful` run on a fast backend, audio_ctx) run each call alone between two steps.
  ModelAccess scheduled_access(WhisperModel& model, const TranscribeOptions& options, const std::atomic<bool>* cancel) {
    BatchScheduler* s = scheduler_.get();
    ModelAccess access;
    access.exclusive = [s, cancel](const std::function<void()>& fn) { s->run_exclusive(fn, cancel); };
    const bool whole_windows = options.audio_ctx <= 0 || options.audio_ctx >= model.hparams().n_audio_ctx;
    if (&model == &model_ && whole_windows) {
      access.encode = [s, cancel](const Tensor& mel, int audio_ctx) { return s->encode(mel, audio_ctx, cancel); };
      access.inference = [s, cancel](std::shared_ptr<const AudioContext> audio) {
        return s->inference(std::move(audio), cancel);
      };
      // HARK_ENCODE_AHEAD=1: a run's next window, where its start is known, goes to the
      // encoder while the current one decodes; only where the encoder has a lane of its own
      // (a GPU), since on the CPU it would take the cores the steps need. Opt-in until it
      // has been measured on a GPU (docs/batching.md, "The next window, encoded ahead").
      const char* ahead = std::getenv("HARK_ENCODE_AHEAD");
      if (s->has_encoder_lane() && ahead && std::string(ahead) == "1")
        access.encode_ahead = [s, cancel](const Tensor& mel, int audio_ctx) {
          return s->encode_ahead(mel, audio_ctx, cancel);
        };
      return access;
    }
    WhisperModel* m = &model;
    access.encode = [s, m, cancel](const Tensor& mel, int audio_ctx) {
      std::shared_ptr<const AudioContext> audio;
      s->run_exclusive([&] {
        audio = m->prepare_audio(mel, audio_ctx);
        m->backend().synchronize();
      }, cancel);
      return audio;
    };
    access.inference = [s, m, cancel](std::shared_ptr<const AudioContext> audio) {
      return exclusive_inference(*s, *m, std::move(audio), cancel);
    };
    return access;
  }

  static void shift(Transcript& t, double offset) {
    for (Segment& s : t.segments) {
      s.start += offset;
      s.end += offset;
      for (Word& w : s.words) {
        w.start += offset;
        w.end += offset;
      }
    }
  }
  const vad::SileroModel& silero() {
    std::lock_guard lock(lazy_mutex_);
    if (!silero_) silero_ = std::make_unique<vad::SileroModel>(vad::SileroModel::load_default());
    return *silero_;
  }

  std::shared_ptr<const Checkpoint> checkpoint_;
  WhisperModel model_;
  double load_ms_ = 0;
  std::string device_;  // what the fp32 reference copy is made on (empty: the CPU)
  std::unique_ptr<WhisperModel> faithful_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  DecodingVocabulary vocab_;
  AlignmentHeads heads_;
  std::unique_ptr<vad::SileroModel> silero_;
  std::mutex lazy_mutex_;  // the lazily made members above (runs arrive on many threads)
  std::unique_ptr<BatchScheduler> scheduler_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend,
                                    int max_batch, int encode_batch) {
  BatchOptions batch;
  batch.max_rows = max_batch;
  batch.max_encode_windows = encode_batch;
  return make_engine(std::move(checkpoint), std::move(backend), batch);
}

std::unique_ptr<Engine> make_engine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend,
                                    const BatchOptions& batch) {
  // "cuda:0 (f16)" → "cuda:0": where a faithful (fp32) copy would be made.
  const std::string name = backend->name();
  const std::string device = backend->device() == Device::Cuda ? name.substr(0, name.find(' ')) : "cpu";
  return std::make_unique<WhisperEngine>(std::move(checkpoint), std::move(backend), 0.0, device, batch);
}

std::unique_ptr<Engine> Engine::open(const EngineOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.model.empty()) throw Error(ErrorCode::InvalidArgument, "[engine] no model given; pass a checkpoint path");
  ComputeType compute = compute_type_named(options.compute_type);  // a bad name fails before the load
  const Device target = device_of(options.device);
  check_compute_type(compute, target);
  auto checkpoint = load_checkpoint(options.model);
  compute = resolve_compute_type(compute, *checkpoint, target);
  checkpoint = apply_compute_type(checkpoint, compute, target);
  BackendOptions bo;
  bo.threads = options.threads;
  bo.compute_type = options.compute_type;
  bo.cross_kv = compute.cross_kv;
  std::shared_ptr<Backend> backend = make_backend(options.device, bo);
  const std::string device = backend->device() == Device::Cuda ? options.device == "auto" ? "cuda" : options.device
                                                                : "cpu";
  BatchOptions batch;
  batch.max_rows = options.max_batch > 0 ? options.max_batch : backend->device() == Device::Cpu ? 16 : 64;
  batch.max_encode_windows = options.encode_batch;
  return std::make_unique<WhisperEngine>(std::move(checkpoint), std::move(backend), ms_since(t0), device, batch);
}

}  // namespace hark
