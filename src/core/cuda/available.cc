// CUDA backend entry points. The kernels themselves arrive with the CUDA backend issue;
// until then a CUDA build reports the GPU as present but the backend as not yet usable.
#include <cuda_runtime.h>

#include "core/backend.h"

namespace hark {

bool cuda_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  if (!cuda_available()) {
    throw Error(ErrorCode::Unavailable, "[cuda] no CUDA device or driver found; use --device cpu");
  }
  throw Error(ErrorCode::Unavailable,
              "[cuda] the CUDA backend is not implemented yet in this build; use --device cpu");
}

}  // namespace hark
