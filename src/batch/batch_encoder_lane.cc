// The encoder lane: on a GPU the scheduler's thread would otherwise stop stepping for every
// encoder call (a batch of 16 turbo windows is ~100 ms, 30-40 steps' worth). Here a second
// backend on its own stream (Backend::make_lane) and a second WhisperModel over the same
// checkpoint encode the queued windows on a thread of their own, so the compute-bound
// encoder runs while the memory-bound steps go on. The lane keeps its own copies of the
// encoder's weights (and of the cross-attention K/V products'); each window's result is
// copied into memory that the main backend releases (Backend::alloc_handed), and the
// lane's stream is finished before a result is handed over.
#include <cstdlib>
#include <cstring>

#include "batch/batch_internal.h"

namespace hark {
namespace {

constexpr auto kLanePoll = std::chrono::milliseconds(20);  // cancel flags are polled

EncoderLane lane_choice(EncoderLane option) {
  if (option != EncoderLane::Auto) return option;
  const char* env = std::getenv("HARK_ENCODER_LANE");
  if (env && std::strcmp(env, "off") == 0) return EncoderLane::Off;
  if (env && std::strcmp(env, "on") == 0) return EncoderLane::On;
  return EncoderLane::Auto;
}

}  // namespace

void BatchScheduler::Impl::start_lane() {
  const EncoderLane choice = lane_choice(options.encoder_lane);
  const bool gpu = model.backend().device() != Device::Cpu;
  if (choice == EncoderLane::Off || (choice == EncoderLane::Auto && !gpu)) return;
  std::unique_ptr<Backend> lane;
  try {
    lane = model.backend().make_lane();
  } catch (const Error&) {
    return;  // no second stream (device memory, driver): windows are encoded between steps
  }
  if (!lane) return;
  lane_model = std::make_unique<WhisperModel>(model.shared_checkpoint(), std::shared_ptr<Backend>(std::move(lane)));
  lane_thread = std::thread([this] { lane_loop(); });
}

void BatchScheduler::Impl::lane_loop() {
  std::unique_lock lock(mutex);
  while (!stopping) {
    lane_work.wait_for(lock, kLanePoll, [&] { return stopping || (!encodes.empty() && encode_room() > 0); });
    if (stopping) return;  // the scheduler's thread fails what is still queued
    drop_cancelled_requests();
    if (!encodes.empty() && encode_room() > 0) {
      run_encodes(lock, *lane_model);
      work.notify_one();  // its windows' runs will ask for rows
    }
  }
}

std::vector<std::shared_ptr<const AudioContext>> BatchScheduler::Impl::encode_on_lane(std::span<const Tensor> mels,
                                                                                     int audio_ctx) {
  Backend& lane = lane_model->backend();
  std::vector<std::shared_ptr<const AudioContext>> handed;
  try {
    for (const auto& own : lane_model->prepare_audio_batch(mels, audio_ctx)) {
      auto ctx = std::make_shared<AudioContext>();
      ctx->features = lane.alloc_handed(own->features.shape(), own->features.dtype());
      lane.copy_async(own->features, ctx->features);
      ctx->cross_kv = lane.alloc_handed(own->cross_kv.shape(), own->cross_kv.dtype());
      lane.copy_async(own->cross_kv, ctx->cross_kv);
      handed.push_back(std::move(ctx));
    }
    lane.synchronize();
  } catch (...) {
    // A handed buffer is released behind the main stream only: the lane must be done with
    // it first.
    try {
      lane.synchronize();
    } catch (...) {
    }
    throw;
  }
  return handed;
}

}  // namespace hark
