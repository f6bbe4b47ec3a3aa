// Tiles of HD 16-bit columns in shared memory with their 16-byte chunks XOR-swizzled by
// the row (chunk c of row r stored at chunk c ^ (r % (HD / 8))), filled from global memory
// with cp.async. With HD = 64 a row is 128 bytes and this is the 128-byte swizzle that
// Hopper's wgmma descriptors name (device/wgmma.cuh): ldmatrix reads 8 rows of one column
// block without bank conflicts, and wgmma reads the same tile. Device helpers only.
#pragma once

#include <cstdint>

#include "core/cuda/device/mma.cuh"

namespace hark::cuda::device {

// Element offset of (row, col) in a [rows × HD] tile with swizzled 8-element chunks.
template <int HD>
__device__ __forceinline__ int swz(int row, int col) {
  return row * HD + ((((col >> 3) ^ (row & (HD / 8 - 1)))) << 3) + (col & 7);
}

// Loads rows [row0, row0 + ROWS) of an HD-column block (src points at its first column,
// rows `ld` apart) into a swizzled tile with THREADS threads; rows at or past `rows`
// become zeros.
template <int HD, int ROWS, int THREADS, class T>
__device__ __forceinline__ void load_tile(T* tile, const T* src, int64_t ld, int64_t row0, int64_t rows) {
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row
  static_assert(ROWS * kChunks % THREADS == 0, "every thread loads the same number of chunks");
#pragma unroll
  for (int i = 0; i < ROWS * kChunks / THREADS; ++i) {
    const int chunk = threadIdx.x + i * THREADS;
    const int r = chunk / kChunks, c = (chunk % kChunks) * 8;
    const bool valid = row0 + r < rows;
    const T* g = valid ? src + (row0 + r) * ld + c : src;
    cp_async16(tile + swz<HD>(r, c), g, valid);
  }
}

// One head's Q, K and V in a window of the packed qkv[batch·t, 3·d]: rows `ld` apart, each
// pointing at the head's first column (the encoder's attention kernels; blockIdx.z is the
// window, blockIdx.y the head).
template <class T>
struct QkvHead {
  const T* q;
  const T* k;
  const T* v;
  int64_t ld;
};
template <int HD, class T>
__device__ __forceinline__ QkvHead<T> block_qkv_head(const T* qkv, int64_t t, int64_t d) {
  const int64_t ld = 3 * d;
  const T* q = qkv + blockIdx.z * t * ld + blockIdx.y * HD;
  return {q, q + d, q + 2 * d, ld};
}

}  // namespace hark::cuda::device
