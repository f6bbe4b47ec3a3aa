// CudaBackend: device and page-locked host memory, copies, beam gathers, and replay() —
// a step measured once, recorded as a CUDA graph on its second call, replayed after.
// While a step is recorded its temporaries come from an arena of fixed addresses, which
// the graph keeps.
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {

using cuda::check;

namespace {

constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone;
}

}  // namespace

CudaBackend::~CudaBackend() {
  cuda::try_use_device(device_index_);  // a destructor does not throw
  if (stream_) cudaStreamSynchronize(stream_);
  for (auto& [key, r] : replays_) {
    if (r->exec) cudaGraphExecDestroy(r->exec);
    if (r->arena) cudaFree(r->arena);
  }
  replays_.clear();
  for (cudaEvent_t event : marks_)
    if (event) cudaEventDestroy(event);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    weights_.clear();
    packed_.clear();
    e4m3_weights_.clear();
    folded_norms_.clear();
  }
  // Every device buffer goes before the stream its frees are queued on.
  index_buffer_ = Tensor();
  index_staging_ = Tensor();
  cross_counters_ = Tensor();
  select_counter_ = Tensor();
  self_step_counters_ = Tensor();
  dft_basis_ = Tensor();
  mel_filters_.clear();
  mel_staging_ = Tensor();
  lt_.reset();
  if (stream_) cudaStreamSynchronize(stream_);
  if (blas_) cublasDestroy(blas_);
  if (workspace_) cudaFree(workspace_);
  if (stream_) cudaStreamDestroy(stream_);
}

size_t CudaBackend::Arena::take(size_t bytes) {
  for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t offset = it->first, rest = it->second - bytes;
    free_blocks.erase(it);
    if (rest > 0) free_blocks.emplace(offset + bytes, rest);
    return offset;
  }
  const size_t offset = end;
  end += bytes;
  peak = std::max(peak, end);
  return offset;
}

void CudaBackend::Arena::give_back(size_t offset, size_t bytes) {
  auto it = free_blocks.emplace(offset, bytes).first;
  if (auto next = std::next(it); next != free_blocks.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_blocks.erase(next);
  }
  if (it != free_blocks.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_blocks.erase(it);
      it = prev;
    }
  }
  if (it->first + it->second == end) {  // the top block: the arena shrinks
    end = it->first;
    free_blocks.erase(it);
  }
}

Tensor CudaBackend::alloc(const Shape& shape, DType dtype) {
  cuda::use_device(device_index_);
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  std::shared_ptr<Arena> arena = arena_;
  if (arena && !arena->measuring) {
    const size_t offset = arena->take(aligned(bytes));
    if (offset + aligned(bytes) > arena->size)
      throw Error(ErrorCode::Internal, "[cuda] the recorded step allocates more than when it was measured");
    std::shared_ptr<void> owner(arena->base + offset, [arena, offset, bytes](void*) {
      if (!arena->closed) arena->give_back(offset, aligned(bytes));
    });
    return Tensor::view(arena->base + offset, shape, dtype, std::move(owner), Device::Cuda);
  }
  // Measuring: served normally, and laid out in the arena as the recording will be.
  return pooled(shape, dtype, stream_, arena);
}

Tensor CudaBackend::pooled(const Shape& shape, DType dtype, cudaStream_t release, std::shared_ptr<Arena> arena) {
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  const size_t offset = arena ? arena->take(aligned(bytes)) : 0;
  void* ptr = nullptr;
  check(cudaMallocAsync(&ptr, bytes, stream_), "allocating device memory");
  const int device = device_index_;
  std::shared_ptr<void> owner(ptr, [release, device, arena, offset, bytes](void* p) {
    if (arena && !arena->closed) arena->give_back(offset, aligned(bytes));
    cuda::try_use_device(device);  // the last owner may be any thread
    // A free queued while a graph is recorded would become part of the graph (and run at
    // every replay): such a buffer is leaked instead. hark's steps drop none.
    if (capturing(release)) return;
    cudaFreeAsync(p, release);
  });
  return Tensor::view(ptr, shape, dtype, std::move(owner), Device::Cuda);
}

std::unique_ptr<Backend> CudaBackend::make_lane() {
  auto lane = std::make_unique<CudaBackend>(device_index_, act_, fp8_products_, /*lane=*/true);
  lane->consumer_stream_ = stream_;
  return lane;
}

// Freed on the consumer's stream, behind the reads it queued there: the lane's writes were
// finished before the buffer was handed over (Backend::alloc_handed), so no later lane
// work can touch it. Freeing it on the lane's stream instead would let the lane's next
// allocation reuse it while the consumer may still be reading.
Tensor CudaBackend::alloc_handed(const Shape& shape, DType dtype) {
  if (!consumer_stream_ || arena_) return alloc(shape, dtype);
  cuda::use_device(device_index_);
  return pooled(shape, dtype, consumer_stream_, nullptr);
}

Tensor CudaBackend::alloc_host(const Shape& shape, DType dtype) {
  cuda::use_device(device_index_);
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  void* ptr = nullptr;
  check(cudaMallocHost(&ptr, bytes), "allocating page-locked host memory");
  std::shared_ptr<void> owner(ptr, [](void* p) { cudaFreeHost(p); });
  return Tensor::view(ptr, shape, dtype, std::move(owner), Device::Cpu);
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  cuda::use_device(device_index_);
  if (src.numel() != dst.numel())
    throw Error(ErrorCode::Internal, "[cuda] copy needs equal sizes: " + src.describe() + " → " + dst.describe());
  if (src.dtype() == dst.dtype()) {
    check(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, stream_), "copy");
    if (src.device() != Device::Cuda || dst.device() != Device::Cuda) check(cudaStreamSynchronize(stream_), "copy");
    return;
  }
  // Converting: bring the source to the device, convert there, bring the result back.
  Tensor from = src;
  if (src.device() != Device::Cuda) {
    from = alloc(src.shape(), src.dtype());
    check(cudaMemcpyAsync(from.raw(), src.raw(), src.nbytes(), cudaMemcpyHostToDevice, stream_), "copy");
  }
  Tensor to = dst.device() == Device::Cuda ? dst : alloc(dst.shape(), dst.dtype());
  cuda::convert(src.dtype(), from.raw(), dst.dtype(), to.raw(), src.numel(), stream_);
  cuda::check_launch("convert");
  if (dst.device() != Device::Cuda)
    check(cudaMemcpyAsync(dst.raw(), to.raw(), dst.nbytes(), cudaMemcpyDeviceToHost, stream_), "copy");
  // Host memory on either side may be reused as soon as we return.
  if (src.device() != Device::Cuda || dst.device() != Device::Cuda) check(cudaStreamSynchronize(stream_), "copy");
}

void CudaBackend::copy_async(const Tensor& src, Tensor& dst) {
  cuda::use_device(device_index_);
  if (src.dtype() != dst.dtype() || src.nbytes() != dst.nbytes())
    throw Error(ErrorCode::Internal, "[cuda] copy_async needs equal dtypes and sizes: " + src.describe() + " → " +
                                         dst.describe());
  check(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, stream_), "copy_async");
}

Tensor CudaBackend::to_device(const Tensor& host) {
  cuda::use_device(device_index_);
  if (host.device() == Device::Cuda) return host;
  Tensor t = alloc(host.shape(), host.dtype());
  check(cudaMemcpyAsync(t.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, stream_), "upload");
  check(cudaStreamSynchronize(stream_), "upload");
  return t;
}

Tensor CudaBackend::to_host(const Tensor& t) {
  cuda::use_device(device_index_);
  if (t.device() == Device::Cpu) return t;
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  check(cudaMemcpyAsync(host.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, stream_), "download");
  check(cudaStreamSynchronize(stream_), "download");
  return host;
}

int32_t* CudaBackend::upload_ints(std::span<const int> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (!index_buffer_.defined() || index_buffer_.numel() < n) {
    synchronize();  // the old buffers may still be read by queued work
    index_buffer_ = alloc({std::max<int64_t>(n, 256)}, DType::I32);
    index_staging_ = alloc_host({std::max<int64_t>(n, 256)}, DType::I32);
  } else if (index_uploaded_) {
    wait_for(*index_uploaded_);  // the previous upload has left the staging buffer
  }
  std::memcpy(index_staging_.raw(), values.data(), n * sizeof(int32_t));
  check(cudaMemcpyAsync(index_buffer_.raw(), index_staging_.raw(), n * sizeof(int32_t), cudaMemcpyHostToDevice,
                        stream_),
        "uploading indices");
  index_uploaded_ = mark();
  return index_buffer_.data<int32_t>();
}

void CudaBackend::gather_sequences(std::span<Tensor* const> caches, int64_t rows_per_seq, std::span<const int> source,
                                   std::span<const int> lengths) {
  cuda::use_device(device_index_);
  // In place (a recorded step holds the caches' addresses), and only what moves: the rows of
  // each sequence that another one takes are saved to a scratch buffer (one launch for every
  // cache), then copied to their new sequences (a second launch). A beam that keeps its own
  // sequence costs nothing. (Before: per cache a copy of the whole cache, 448 rows a sequence,
  // a gather over all of it and a host synchronisation.)
  const int count = static_cast<int>(source.size()), buffers = static_cast<int>(caches.size());
  if (count == 0 || buffers == 0) return;
  std::vector<int> slot(count, -1), needed(count, 0);
  int moved_rows = 0;
  for (int i = 0; i < count; ++i)
    if (source[i] != i && lengths[i] > 0) {
      needed[source[i]] = std::max(needed[source[i]], lengths[i]);
      moved_rows = std::max(moved_rows, lengths[i]);
    }
  if (moved_rows == 0) return;
  const int64_t row_bytes = caches[0]->nbytes() / caches[0]->dim(0);
  for (Tensor* cache : caches)
    if (cache->nbytes() / cache->dim(0) != row_bytes || cache->dim(0) != caches[0]->dim(0))
      throw Error(ErrorCode::Internal, "[cuda] gather_sequences needs caches of one layout");
  int saved = 0, save_rows = 0;
  for (int s = 0; s < count; ++s)
    if (needed[s] > 0) {
      slot[s] = saved++;
      save_rows = std::max(save_rows, needed[s]);
    }
  const int64_t seq_bytes = rows_per_seq * row_bytes, slot_bytes = save_rows * row_bytes;
  const int64_t buffer_bytes = saved * slot_bytes;
  Tensor scratch = alloc({(buffers * buffer_bytes + 3) / 4}, DType::I32);
  // One upload: the caches' and the scratch buffers' addresses (8-byte words first, so they
  // stay aligned), then the save entries and the move entries (to, from, rows).
  std::vector<int> packed(4 * static_cast<size_t>(buffers));
  for (int b = 0; b < buffers; ++b) {
    const uint64_t cache = reinterpret_cast<uint64_t>(caches[b]->raw());
    const uint64_t save = reinterpret_cast<uint64_t>(static_cast<char*>(scratch.raw()) + b * buffer_bytes);
    std::memcpy(&packed[2 * b], &cache, 8);
    std::memcpy(&packed[2 * (buffers + b)], &save, 8);
  }
  for (int s = 0; s < count; ++s)
    if (slot[s] >= 0) packed.insert(packed.end(), {slot[s], s, needed[s]});
  int moves = 0;
  for (int i = 0; i < count; ++i)
    if (source[i] != i && lengths[i] > 0) {
      packed.insert(packed.end(), {i, slot[source[i]], lengths[i]});
      ++moves;
    }
  const int32_t* dev = upload_ints(packed);
  const auto* cache_addresses = reinterpret_cast<const uint64_t*>(dev);
  const auto* save_addresses = cache_addresses + buffers;
  const int32_t* save_entries = dev + 4 * buffers;
  cuda::copy_sequences(cache_addresses, save_addresses, buffers, save_entries, saved, save_rows, seq_bytes, slot_bytes,
                       row_bytes, stream_);
  cuda::check_launch("gather_sequences (save)");
  cuda::copy_sequences(save_addresses, cache_addresses, buffers, save_entries + 3 * saved, moves, moved_rows, slot_bytes,
                       seq_bytes, row_bytes, stream_);
  cuda::check_launch("gather_sequences (move)");
}

void CudaBackend::synchronize() {
  cuda::use_device(device_index_);
  check(cudaStreamSynchronize(stream_), "synchronize");
}

void CudaBackend::replay(uint64_t key, const std::function<void()>& step) {
  cuda::use_device(device_index_);
  if (!graphs_enabled_) return step();
  auto& slot = replays_[key];
  if (!slot) slot = std::make_unique<Replay>();
  Replay& r = *slot;
  if (r.exec) {
    check(cudaGraphLaunch(r.exec, stream_), "replaying a recorded step");
    return;
  }
  if (r.failed) return step();
  if (r.calls++ == 0) {  // first call: run it directly, measuring its temporaries
    auto measure = std::make_shared<Arena>();
    measure->measuring = true;
    arena_ = measure;
    try {
      step();
    } catch (...) {
      measure->closed = true;
      arena_.reset();
      throw;
    }
    measure->closed = true;
    arena_.reset();
    r.arena_bytes = measure->peak + kAlign;
    return;
  }
  check(cudaMalloc(&r.arena, r.arena_bytes), "allocating a replay arena");
  auto arena = std::make_shared<Arena>();
  arena->base = static_cast<char*>(r.arena);
  arena->size = r.arena_bytes;
  arena_ = arena;
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  std::string failure;
  try {
    step();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  arena->closed = true;
  arena_.reset();
  cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  if (failure.empty() && status != cudaSuccess) failure = cudaGetErrorString(status);
  if (failure.empty()) {
    status = cudaGraphInstantiate(&r.exec, graph, 0);
    if (status != cudaSuccess) failure = cudaGetErrorString(status);
  }
  if (graph) cudaGraphDestroy(graph);
  if (!failure.empty()) {
    cudaGetLastError();
    r.exec = nullptr;
    cudaFree(r.arena);
    r.arena = nullptr;
    r.failed = true;
    std::fprintf(stderr, "hark: [cuda] could not record a step as a CUDA graph (%s); running it directly\n",
                 failure.c_str());
    return step();
  }
  check(cudaGraphLaunch(r.exec, stream_), "replaying a recorded step");
}

void CudaBackend::forget_replay(uint64_t key) {
  cuda::use_device(device_index_);
  auto it = replays_.find(key);
  if (it == replays_.end()) return;
  synchronize();
  if (it->second->exec) cudaGraphExecDestroy(it->second->exec);
  if (it->second->arena) cudaFree(it->second->arena);
  replays_.erase(it);
}

}  // namespace hark
