// Silero VAD throughput on one core. BM_VadHour is the number recorded in
// docs/benchmarks.md: one hour of audio (jfk.wav looped) through the whole network,
// reported as seconds per hour of audio; the other cases isolate the chunk-by-chunk
// streaming path and the segment logic.
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "vad/speech_timestamps.h"
#include "vad/stream.h"

namespace {

using hark::vad::SileroModel;

// 16-bit PCM samples of a WAV file's data chunk (the bench needs speech-like input, not an
// exact parser), or seeded noise when the file is missing.
std::vector<float> speech_like_audio(size_t samples) {
  std::ifstream f(std::string(HARK_TEST_DATA) + "/audio/jfk.wav", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> clip;
  for (size_t i = 44; i + 1 < bytes.size(); i += 2) {
    int16_t v;
    std::memcpy(&v, bytes.data() + i, 2);
    clip.push_back(v / 32768.0f);
  }
  if (clip.empty()) {
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 0.1f);
    for (int i = 0; i < 16000; ++i) clip.push_back(n(rng));
  }
  std::vector<float> out(samples);
  for (size_t i = 0; i < samples; ++i) out[i] = clip[i % clip.size()];
  return out;
}

const SileroModel& model() {
  static const SileroModel m = SileroModel::load(std::string(HARK_TEST_DATA) + "/vad/silero_vad_16k_jit.safetensors");
  return m;
}

void BM_VadHour(benchmark::State& state) {
  const auto audio = speech_like_audio(size_t{3600} * 16000);
  for (auto _ : state) {
    auto probs = model().speech_probabilities(audio);
    benchmark::DoNotOptimize(probs.data());
  }
  state.counters["audio_s"] = 3600;
}
BENCHMARK(BM_VadHour)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(false);

void BM_VadMinuteBatch(benchmark::State& state) {
  const auto audio = speech_like_audio(size_t{60} * 16000);
  for (auto _ : state) benchmark::DoNotOptimize(model().speech_probabilities(audio).data());
  state.SetItemsProcessed(state.iterations() * (audio.size() / 512));
}
BENCHMARK(BM_VadMinuteBatch)->Unit(benchmark::kMillisecond);

// The live-stream case: one 512-sample chunk per call, as a microphone would deliver.
void BM_VadMinuteChunkByChunk(benchmark::State& state) {
  const auto audio = speech_like_audio(size_t{60} * 16000);
  for (auto _ : state) {
    hark::vad::VadStream stream(model());
    for (size_t i = 0; i + 512 <= audio.size(); i += 512) stream.feed({audio.data() + i, 512});
    stream.finish();
    benchmark::DoNotOptimize(stream.probabilities().data());
  }
  state.SetItemsProcessed(state.iterations() * (audio.size() / 512));
}
BENCHMARK(BM_VadMinuteChunkByChunk)->Unit(benchmark::kMillisecond);

void BM_SegmentsHour(benchmark::State& state) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> probs(112500);
  float p = 0;
  for (auto& v : probs) v = p = 0.9f * p + 0.1f * u(rng) * 2.0f;
  for (auto _ : state)
    benchmark::DoNotOptimize(hark::vad::speech_segments_from_probabilities(probs, 3600LL * 16000).data());
}
BENCHMARK(BM_SegmentsHour)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
