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

}  // namespace hark::cuda
