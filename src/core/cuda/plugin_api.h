// The C entry points of the CUDA backend module (libhark_cuda.so). hark loads the module
// with dlopen() on the first request for a GPU, so the CUDA runtime and cuBLAS (about
// 0.4 s to load, and absent on most CPU machines) are never loaded by a run that does not
// use them, and a CUDA build still starts where no CUDA library is installed.
#pragma once

#include <cstddef>

namespace hark {
class Backend;
}

extern "C" {

// Number of CUDA devices the driver reports (0 when there is no driver or no GPU).
using HarkCudaDeviceCount = int (*)();
// A new backend on device `index` keeping activations in `act_dtype` (a hark DType as
// int: F32, F16 or BF16), with the options below OR-ed together, or null with `error` (a
// hark ErrorCode as int, and a message) filled in. The caller owns the backend.
using HarkCudaCreateBackend = hark::Backend* (*)(int index, int act_dtype, unsigned options, int* error_code,
                                                 char* message, size_t message_size);
// Encoder products in e4m3 (--compute-type fp8; act_dtype F16 or BF16).
inline constexpr unsigned kHarkCudaFp8Products = 1u;

inline constexpr const char* kHarkCudaDeviceCountSymbol = "hark_cuda_device_count";
// Versioned: a module built before these options existed is refused, not misused.
inline constexpr const char* kHarkCudaCreateBackendSymbol = "hark_cuda_create_backend_v3";
}
