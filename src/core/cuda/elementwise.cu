// Element-wise and layout kernels of the CUDA backend, for every activation dtype.
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;

template <class T>
__global__ void gelu_kernel(T* x, int64_t n) {
  pdl_enter();
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = from_float<T>(gelu_erf(to_float(x[i])));
}

template <class T>
__global__ void add_kernel(T* x, const T* y, int64_t n, int64_t y_n) {
  pdl_enter();
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = from_float<T>(to_float(x[i]) + to_float(y[y_n == n ? i : i % y_n]));
}

template <class S, class D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  pdl_enter();
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = from_float<D>(to_float(src[i]));
}

__global__ void fill_rows_kernel(float* y, const float* bias, int64_t n, int64_t cols) {
  pdl_enter();
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = bias[i % cols];
}

template <class T>
__global__ void transpose_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  pdl_enter();
  __shared__ T tile[32][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  for (int r_off = threadIdx.y; r_off < 32; r_off += blockDim.y) {
    const int64_t r = blockIdx.y * 32 + r_off;
    if (r < rows && c < cols) tile[r_off][threadIdx.x] = x[r * cols + c];
  }
  __syncthreads();
  const int64_t r2 = blockIdx.y * 32 + threadIdx.x;
  for (int c_off = threadIdx.y; c_off < 32; c_off += blockDim.y) {
    const int64_t c2 = blockIdx.x * 32 + c_off;
    if (r2 < rows && c2 < cols) y[c2 * rows + r2] = tile[threadIdx.x][c_off];
  }
}

__global__ void im2col_kernel(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out,
                              int stride, int padding) {
  pdl_enter();
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= cin * k * t_out) return;
  const int64_t t = idx % t_out, row = idx / t_out, kk = row % k, ci = row / k;
  const int64_t src = t * stride + kk - padding;
  cols[idx] = (src >= 0 && src < t_in) ? x[ci * t_in + src] : 0.0f;
}

template <class T>
__global__ void im2col_tm_kernel(const T* x, T* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out, int stride,
                                 int padding) {
  pdl_enter();
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t width = cin * k;
  if (idx >= width * t_out) return;
  const int64_t t = idx / width, col = idx % width, ci = col / k, j = col % k;
  const int64_t src = t * stride + j - padding;
  cols[idx] = (src >= 0 && src < t_in) ? x[src * cin + ci] : from_float<T>(0.0f);
}

template <class T>
__global__ void embedding_kernel(const T* table, const T* positions, const int32_t* ids, const int32_t* lengths,
                                 int64_t n, int n_new, int64_t d, T* out) {
  pdl_enter();
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n * d) return;
  const int64_t i = idx / d, j = idx % d;
  const int64_t pos = lengths[i / n_new] + i % n_new;
  out[idx] = from_float<T>(to_float(table[static_cast<int64_t>(ids[i]) * d + j]) + to_float(positions[pos * d + j]));
}

// One block per (sequence, row); 16-byte words where the row allows.
// Rows of whole sequences between buffers of one layout, for several buffers in one launch:
// block (row, entry, buffer) copies row `row` of sequence entries[3e + 1] of src[buffer] to
// sequence entries[3e] of dst[buffer] when the entry has more than `row` rows (entries[3e + 2]).
__global__ void copy_sequences_kernel(const uint64_t* src, const uint64_t* dst, const int32_t* entries,
                                      int64_t src_stride, int64_t dst_stride, int64_t row_bytes) {
  pdl_enter();
  const int e = blockIdx.y, buffer = blockIdx.z;
  const int64_t row = blockIdx.x;
  if (row >= entries[3 * e + 2]) return;
  const char* s = reinterpret_cast<const char*>(src[buffer]) + entries[3 * e + 1] * src_stride + row * row_bytes;
  char* d = reinterpret_cast<char*>(dst[buffer]) + entries[3 * e] * dst_stride + row * row_bytes;
  if (row_bytes % 16 == 0) {
    for (int64_t i = threadIdx.x; i < row_bytes / 16; i += blockDim.x)
      reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
  } else {
    for (int64_t i = threadIdx.x; i < row_bytes; i += blockDim.x) d[i] = s[i];
  }
}

}  // namespace

void gelu(DType dt, void* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(gelu_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream, static_cast<T*>(x), n);
  });
}

void add(DType dt, void* x, const void* y, int64_t n, int64_t y_n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(add_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream, static_cast<T*>(x), static_cast<const T*>(y), n, y_n);
  });
}

void convert(DType src_dt, const void* src, DType dst_dt, void* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_float(src_dt, [&](auto s) {
    dispatch_float(dst_dt, [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      launch_kernel(convert_kernel<S, D>, blocks_for(n, kThreads), kThreads, 0, stream, static_cast<const S*>(src), static_cast<D*>(dst),
                                                                       n);
    });
  });
}

void fill_rows(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols > 0) launch_kernel(fill_rows_kernel, blocks_for(rows * cols, kThreads), kThreads, 0, stream, y, bias, rows * cols, cols);
}

void transpose(DType dt, const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32));
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(transpose_kernel<T>, grid, dim3(32, 8), 0, stream, static_cast<const T*>(x), static_cast<T*>(y), rows, cols);
  });
}

void im2col(const float* x, float* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out, int stride, int padding,
            cudaStream_t stream) {
  const int64_t n = cin * k * t_out;
  if (n > 0) launch_kernel(im2col_kernel, blocks_for(n, kThreads), kThreads, 0, stream, x, cols, cin, t_in, k, t_out, stride, padding);
}

void im2col_time_major(DType dt, const void* x, void* cols, int64_t cin, int64_t t_in, int64_t k, int64_t t_out,
                       int stride, int padding, cudaStream_t stream) {
  const int64_t n = cin * k * t_out;
  if (n <= 0) return;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(im2col_tm_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream, static_cast<const T*>(x), static_cast<T*>(cols),
                                                                       cin, t_in, k, t_out, stride, padding);
  });
}

void embedding(DType dt, const void* table, const void* positions, const int32_t* ids, const int32_t* lengths,
               int64_t n, int n_new, int64_t d, void* out, cudaStream_t stream) {
  if (n * d <= 0) return;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(embedding_kernel<T>, blocks_for(n * d, kThreads), kThreads, 0, stream, 
        static_cast<const T*>(table), static_cast<const T*>(positions), ids, lengths, n, n_new, d, static_cast<T*>(out));
  });
}

void copy_sequences(const uint64_t* src, const uint64_t* dst, int buffers, const int32_t* entries, int n_entries,
                    int max_rows, int64_t src_stride, int64_t dst_stride, int64_t row_bytes, cudaStream_t stream) {
  if (buffers <= 0 || n_entries <= 0 || max_rows <= 0) return;
  dim3 grid(static_cast<unsigned>(max_rows), static_cast<unsigned>(n_entries), static_cast<unsigned>(buffers));
  launch_kernel(copy_sequences_kernel, grid, 128, 0, stream, src, dst, entries, src_stride, dst_stride, row_bytes);
}

}  // namespace hark::cuda
