// A small fp32 matrix product whose every output element is summed in one fixed order
// (k = 0, 1, …, K−1, starting from the bias), whatever the number of rows and however they
// are grouped. A chunk therefore gets bit-identical front-end values whether it is run
// alone (streaming) or inside a batch, which BLAS GEMMs do not promise.
#pragma once

#include <cstdint>
#include <vector>

namespace hark::vad {

// A weight matrix W[N][K] stored transposed and zero-padded: Wᵀ[K][n_padded], n_padded a
// multiple of kRowGemmTile, plus an optional bias[N].
inline constexpr int kRowGemmTile = 16;

struct PackedWeights {
  int k = 0;
  int n = 0;
  int n_padded = 0;
  std::vector<float> wt;    // [k][n_padded]
  std::vector<float> bias;  // [n_padded], zeros when the layer has none
};

// Packs PyTorch-layout W[n][k] (row-major) and bias (nullptr: none).
PackedWeights pack_weights(const float* w, int n, int k, const float* bias);

// C[m][0..n) = bias + A[m][0..k) · W ᵀ, A rows `lda` apart, C rows `ldc` apart (ldc ≥ n).
void row_gemm(const float* a, int64_t m, int64_t lda, const PackedWeights& w, float* c, int64_t ldc);

}  // namespace hark::vad
