// The module's entry points (see plugin_api.h). Errors become a code and a message here so
// that no exception crosses the dlopen boundary.
#include <cuda_runtime.h>

#include <cstring>
#include <exception>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/plugin_api.h"

namespace {

void fill(int* code, char* message, size_t size, hark::ErrorCode c, const char* text) {
  if (code) *code = static_cast<int>(c);
  if (message && size > 0) {
    std::strncpy(message, text, size - 1);
    message[size - 1] = '\0';
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int hark_cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

extern "C" __attribute__((visibility("default"))) hark::Backend* hark_cuda_create_backend_v3(int index, int act_dtype,
                                                                                             unsigned options, int* code,
                                                                                             char* message, size_t size) {
  try {
    if (hark_cuda_device_count() == 0) {
      fill(code, message, size, hark::ErrorCode::Unavailable, "[cuda] no CUDA device or driver found; use --device cpu");
      return nullptr;
    }
    return new hark::CudaBackend(index, static_cast<hark::DType>(act_dtype), (options & kHarkCudaFp8Products) != 0);
  } catch (const hark::Error& e) {
    fill(code, message, size, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    fill(code, message, size, hark::ErrorCode::OutOfMemory, "[cuda] out of host memory creating the backend");
  } catch (const std::exception& e) {
    fill(code, message, size, hark::ErrorCode::Internal, e.what());
  }
  return nullptr;
}
