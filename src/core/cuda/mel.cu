// The log-mel front end on the GPU (Backend::log_mel): frames with the reference's
// reflect padding and periodic Hann window, then the 400-point DFT as one fp32 product
// with a cosine/sine basis (cuBLAS, no cuFFT needed), |X|², the Slaney filter product and
// log10(max(·, 1e-10)). fp32 where audio/mel.cc uses double: the fast path's front end.
#include <cmath>

#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"

namespace hark::cuda {
namespace {

constexpr int kNFft = 400, kHop = 160, kBins = 201;
constexpr int kThreads = 256;

// frames[t, k] = hann[k] · sample(t·160 − 200 + k), reflected at both ends of the padded
// signal (samples then zeros), as torch.stft(center=True, pad_mode="reflect") does.
__global__ void frames_kernel(const float* samples, int64_t n, int64_t padded, int64_t frames, float* out) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= frames * kNFft) return;
  const int64_t t = idx / kNFft, k = idx % kNFft;
  int64_t i = t * kHop - kNFft / 2 + k;
  if (i < 0) i = -i;
  if (i >= padded) i = 2 * (padded - 1) - i;
  const float window = 0.5f - 0.5f * cospif(2.0f * static_cast<float>(k) / kNFft);
  out[idx] = i < n ? samples[i] * window : 0.0f;
}

__global__ void power_kernel(const float* spectrum, int64_t frames, float* power) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= frames * kBins) return;
  const float re = spectrum[2 * idx], im = spectrum[2 * idx + 1];
  power[idx] = re * re + im * im;
}

// mel[t, m] → out[m, t] = log10(max(mel, 1e-10)).
__global__ void log_transpose_kernel(const float* mel, int64_t frames, int n_mels, float* out) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= frames * n_mels) return;
  const int64_t m = idx / frames, t = idx % frames;
  out[idx] = log10f(fmaxf(mel[t * n_mels + m], 1e-10f));
}

}  // namespace

void mel_frames(const float* samples, int64_t n, int64_t padded, int64_t frames, float* out, cudaStream_t stream) {
  if (frames > 0) frames_kernel<<<blocks_for(frames * kNFft, kThreads), kThreads, 0, stream>>>(samples, n, padded, frames, out);
}

void mel_power(const float* spectrum, int64_t frames, float* power, cudaStream_t stream) {
  if (frames > 0) power_kernel<<<blocks_for(frames * kBins, kThreads), kThreads, 0, stream>>>(spectrum, frames, power);
}

void mel_log_transpose(const float* mel, int64_t frames, int n_mels, float* out, cudaStream_t stream) {
  if (frames > 0)
    log_transpose_kernel<<<blocks_for(frames * n_mels, kThreads), kThreads, 0, stream>>>(mel, frames, n_mels, out);
}

}  // namespace hark::cuda
