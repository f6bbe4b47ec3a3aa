// Error checks for CUDA runtime and cuBLAS calls: failures become hark::Error
// (OutOfMemory for allocation failures, Unavailable otherwise) so that a server turns
// them into a 503 and keeps running.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "hark/error.h"

namespace hark::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const ErrorCode code = status == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Unavailable;
  cudaGetLastError();  // clear the sticky-free error state so the next call can proceed
  throw Error(code, std::string("[cuda] ") + what + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Unavailable;
  throw Error(code, std::string("[cuda] ") + what + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

// After a kernel launch: reports bad launch configurations at once.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

// Makes `device` the calling thread's current GPU. The CUDA runtime keeps the current
// device per thread, and a backend is called from several (the server's job threads, a
// batching scheduler): with two GPUs in one process, a thread still on the default device
// would allocate there and hand the pointers to the other GPU's stream. Each backend entry
// point calls this; the thread's last choice is remembered, so the usual case costs a
// comparison.
inline bool try_use_device(int device) noexcept {  // for destructors and deleters
  thread_local int current = -1;
  if (current == device) return true;
  if (cudaSetDevice(device) != cudaSuccess) return false;
  current = device;
  return true;
}
inline void use_device(int device) {
  if (!try_use_device(device)) check(cudaSetDevice(device), "cudaSetDevice");
}

}  // namespace hark::cuda
