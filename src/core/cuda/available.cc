// Entry points of a CUDA build: device discovery and the backend factory.
#include <cuda_runtime.h>

#include "core/backend.h"
#include "core/cuda/cuda_backend.h"

namespace hark {

bool cuda_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  if (!cuda_available())
    throw Error(ErrorCode::Unavailable, "[cuda] no CUDA device or driver found; use --device cpu");
  return std::make_unique<CudaBackend>(device_index);
}

}  // namespace hark
