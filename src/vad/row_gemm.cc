#include "vad/row_gemm.h"

#include <algorithm>
#include <cstring>

namespace hark::vad {
namespace {

// 16 floats: one AVX-512 register, two AVX2 registers elsewhere (GCC vector extension, so
// the same source builds for any x86-64 or ARM target).
typedef float Vec16 __attribute__((vector_size(64), aligned(4)));

inline Vec16 load16(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store16(float* p, Vec16 v) { std::memcpy(p, &v, sizeof(v)); }

// R rows × T tiles of 16 columns, accumulators in registers. Each element is
// bias + a₀w₀ + a₁w₁ + … in that order (separate multiply and add: no contraction), so R
// and T never change a result.
template <int R, int T>
void micro_kernel(const float* a, int64_t lda, const PackedWeights& w, int col, float* c, int64_t ldc, int n_cols) {
  Vec16 acc[R][T];
  for (int t = 0; t < T; ++t) {
    const Vec16 b = load16(w.bias.data() + col + 16 * t);
    for (int r = 0; r < R; ++r) acc[r][t] = b;
  }
  const float* wt = w.wt.data() + col;
  for (int kk = 0; kk < w.k; ++kk) {
    Vec16 b[T];
    for (int t = 0; t < T; ++t) b[t] = load16(wt + static_cast<int64_t>(kk) * w.n_padded + 16 * t);
    for (int r = 0; r < R; ++r) {
      const float x = a[r * lda + kk];
      for (int t = 0; t < T; ++t) acc[r][t] = acc[r][t] + x * b[t];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      const int start = 16 * t;
      if (start + 16 <= n_cols) {
        store16(c + r * ldc + col + start, acc[r][t]);
      } else {
        float tmp[16];
        store16(tmp, acc[r][t]);
        for (int i = start; i < n_cols; ++i) c[r * ldc + col + i] = tmp[i - start];
      }
    }
  }
}

template <int R>
void row_block(const float* a, int64_t lda, const PackedWeights& w, float* c, int64_t ldc) {
  constexpr int kTiles = 4;  // 64 columns per pass: R·4 accumulators + 4 weight registers
  int col = 0;
  for (; col + 16 * kTiles <= w.n_padded; col += 16 * kTiles)
    micro_kernel<R, kTiles>(a, lda, w, col, c, ldc, std::min(w.n - col, 16 * kTiles));
  for (; col < w.n_padded; col += 16) micro_kernel<R, 1>(a, lda, w, col, c, ldc, std::min(w.n - col, 16));
}

}  // namespace

PackedWeights pack_weights(const float* w, int n, int k, const float* bias) {
  PackedWeights p;
  p.k = k;
  p.n = n;
  p.n_padded = (n + kRowGemmTile - 1) / kRowGemmTile * kRowGemmTile;
  p.wt.assign(static_cast<size_t>(k) * p.n_padded, 0.0f);
  p.bias.assign(p.n_padded, 0.0f);
  for (int j = 0; j < n; ++j)
    for (int kk = 0; kk < k; ++kk) p.wt[static_cast<size_t>(kk) * p.n_padded + j] = w[static_cast<size_t>(j) * k + kk];
  if (bias) std::copy(bias, bias + n, p.bias.begin());
  return p;
}

void row_gemm(const float* a, int64_t m, int64_t lda, const PackedWeights& w, float* c, int64_t ldc) {
  constexpr int kRows = 6;  // 6 × 4 accumulators + 4 weights + 1 broadcast fit 32 registers
  int64_t r = 0;
  for (; r + kRows <= m; r += kRows) row_block<kRows>(a + r * lda, lda, w, c + r * ldc, ldc);
  for (; r < m; ++r) row_block<1>(a + r * lda, lda, w, c + r * ldc, ldc);
}

}  // namespace hark::vad
