// Run-time DType → kernel element type, for the host entry points of the .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <type_traits>

#include "core/tensor.h"
#include "hark/error.h"

namespace hark::cuda {

// Calls fn(T{}) with T = float, __half or __nv_bfloat16 for dt.
template <class Fn>
void dispatch_float(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::F32: fn(float{}); return;
    case DType::F16: fn(__half{}); return;
    case DType::BF16: fn(__nv_bfloat16{}); return;
    default: break;
  }
  throw Error(ErrorCode::Internal, std::string("[cuda] no kernel for dtype ") + dtype_name(dt));
}

// The same for the 16-bit types only (tensor-core and packed-load kernels).
template <class Fn>
void dispatch_half(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::F16: fn(__half{}); return;
    case DType::BF16: fn(__nv_bfloat16{}); return;
    default: break;
  }
  throw Error(ErrorCode::Internal, std::string("[cuda] kernel needs f16 or bf16, got ") + dtype_name(dt));
}

// Calls fn(std::integral_constant<int, HD>{}) for the decoder attention's head dims.
template <class Fn>
void dispatch_head_dim(int head_dim, Fn&& fn) {
  if (head_dim == 64) return fn(std::integral_constant<int, 64>{});
  if (head_dim == 32) return fn(std::integral_constant<int, 32>{});
  throw Error(ErrorCode::Unavailable, "[cuda] decoder attention supports head dims 32 and 64, not " +
                                          std::to_string(head_dim));
}

inline unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace hark::cuda
