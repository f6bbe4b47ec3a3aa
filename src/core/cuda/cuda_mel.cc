// CudaBackend::log_mel: audio/mel.cc's front end on the GPU for the fast path (see mel.cu).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {

using cuda::check;

Tensor CudaBackend::log_mel(std::span<const float> samples, int64_t pad, const Tensor& filters) {
  cuda::use_device(device_index_);
  if (act_ == DType::F32) return {};  // the reference path keeps the double-precision STFT
  constexpr int kNFft = 400, kBins = 201, kHop = 160;
  const int n_mels = static_cast<int>(filters.dim(0));
  const int64_t n = static_cast<int64_t>(samples.size()), padded = n + pad, frames = padded / kHop;
  if (padded <= kNFft / 2 || frames <= 0 || filters.dim(1) != kBins) return {};
  const PauseArena pause(arena_);
  if (!dft_basis_.defined()) {
    Tensor basis = Tensor::empty({kNFft, 2 * kBins});
    for (int k = 0; k < kNFft; ++k)
      for (int j = 0; j < kBins; ++j) {
        const double angle = 2.0 * M_PI * static_cast<double>((static_cast<int64_t>(j) * k) % kNFft) / kNFft;
        basis.data<float>()[k * 2 * kBins + 2 * j] = static_cast<float>(std::cos(angle));
        basis.data<float>()[k * 2 * kBins + 2 * j + 1] = static_cast<float>(-std::sin(angle));
      }
    dft_basis_ = to_device(basis);
  }
  auto& bank = mel_filters_[filters.raw()];
  if (!bank.defined()) {
    Tensor t = Tensor::empty({kBins, n_mels});  // filtersᵀ, so the product is row-major
    const Tensor f = filters.to_f32();
    for (int m = 0; m < n_mels; ++m)
      for (int j = 0; j < kBins; ++j) t.data<float>()[j * n_mels + m] = f.data<float>()[m * kBins + j];
    bank = to_device(t);
  }
  // Samples in and log-mel out through one page-locked buffer kept between calls: copies
  // from pageable memory go through the driver's own staging. With this and the window
  // maximum vectorised on the host (window_mel.cc), the 11 s clip's front end went from
  // 1.5–2.1 to 0.85–1.08 ms on an H200 host (one call each, the two changes together).
  const int64_t staged = std::max<int64_t>({n, frames * n_mels, 1});
  if (!mel_staging_.defined() || mel_staging_.numel() < staged) mel_staging_ = alloc_host({staged}, DType::F32);
  float* staging = mel_staging_.data<float>();
  Tensor audio = alloc({std::max<int64_t>(n, 1)}, DType::F32);
  if (n > 0) {
    std::memcpy(staging, samples.data(), n * sizeof(float));
    check(cudaMemcpyAsync(audio.raw(), staging, n * sizeof(float), cudaMemcpyHostToDevice, stream_), "mel");
  }
  Tensor windowed = alloc({frames, kNFft}, DType::F32), spectrum = alloc({frames, 2 * kBins}, DType::F32);
  Tensor power = alloc({frames, kBins}, DType::F32), mel = alloc({frames, n_mels}, DType::F32);
  Tensor logs = alloc({n_mels, frames}, DType::F32);
  cuda::mel_frames(audio.data<float>(), n, padded, frames, windowed.data<float>(), stream_);
  cuda::check_launch("mel_frames");
  const float one = 1.0f, zero = 0.0f;
  // Row-major C[frames, N] = A[frames, K] · B[K, N] is column-major Cᵀ = Bᵀ·Aᵀ.
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, 2 * kBins, static_cast<int>(frames), kNFft, &one,
                    dft_basis_.data<float>(), 2 * kBins, windowed.data<float>(), kNFft, &zero, spectrum.data<float>(),
                    2 * kBins),
        "sgemm (DFT)");
  cuda::mel_power(spectrum.data<float>(), frames, power.data<float>(), stream_);
  cuda::check_launch("mel_power");
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n_mels, static_cast<int>(frames), kBins, &one, bank.data<float>(),
                    n_mels, power.data<float>(), kBins, &zero, mel.data<float>(), n_mels),
        "sgemm (mel filters)");
  cuda::mel_log_transpose(mel.data<float>(), frames, n_mels, logs.data<float>(), stream_);
  cuda::check_launch("mel_log_transpose");
  // Stream order: the upload from `staging` has finished before this copy overwrites it.
  check(cudaMemcpyAsync(staging, logs.raw(), logs.nbytes(), cudaMemcpyDeviceToHost, stream_), "mel");
  check(cudaStreamSynchronize(stream_), "mel");
  Tensor out = Tensor::empty(logs.shape(), DType::F32);
  std::memcpy(out.raw(), staging, logs.nbytes());
  return out;
}

}  // namespace hark
