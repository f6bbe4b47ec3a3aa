// Linked when hark is built without CUDA: every request for a GPU backend fails clearly.
#include "core/backend.h"

namespace hark {

bool cuda_available() { return false; }
int cuda_device_count() { return 0; }

std::unique_ptr<Backend> make_cuda_backend(int /*device_index*/, const BackendOptions& /*options*/) {
  throw Error(ErrorCode::Unavailable, "[cuda] hark was built without CUDA; rebuild with -DHARK_CUDA=ON on a machine with nvcc, or use --device cpu");
}

}  // namespace hark
