// CudaBackend's fp8 products (--compute-type fp8). Inside an fp8 region of a chosen part
// (the encoder's convolutions and MLP by default; the model marks the parts,
// model/whisper_model.cc), a product of at least kE4m3MinRows rows runs on e4m3 operands
// through cuBLASLt (gemm_lt.cc, run_e4m3): the activation is scaled per row and the weight per output channel (device/e4m3.cuh), and
// the product multiplies both scales back in before the bias, GELU or residual epilogue,
// which stay in the 16-bit activation dtype. A layer norm in front of a product writes its
// output in e4m3 directly (layer_norm_e4m3); other inputs take one quantizing pass
// (quantize_rows_e4m3). Each weight is quantized once, from its resident 16-bit copy, when
// first used. Why: Hopper's fp8 tensor cores run twice as many operations per cycle as its
// f16 ones, and an encoder window is bound by its products (docs/gpu.md).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {
namespace {

// The calling thread's fp8 region (Backend::set_fp8_region). Per thread, not per backend:
// the server's encoder lane and its decoder steps run on two threads at once.
thread_local Backend::Fp8Part fp8_region = Backend::Fp8Part::None;

unsigned part_bit(Backend::Fp8Part part) { return 1u << static_cast<unsigned>(part); }

cuda::LtEpilogue lt_epilogue(Epilogue epilogue) {
  return epilogue == Epilogue::Gelu       ? cuda::LtEpilogue::Gelu
         : epilogue == Epilogue::Residual ? cuda::LtEpilogue::Residual
                                          : cuda::LtEpilogue::None;
}

}  // namespace

Backend::Fp8Part CudaBackend::set_fp8_region(Fp8Part part) {
  const Fp8Part before = fp8_region;
  fp8_region = part;
  return before;
}

unsigned CudaBackend::fp8_parts_setting() {
  const unsigned all = part_bit(Fp8Part::Convolutions) | part_bit(Fp8Part::Attention) | part_bit(Fp8Part::Mlp) |
                       part_bit(Fp8Part::CrossKv);
  // The default: the convolutions and the MLP. Measured on an H200 (large-v3-turbo shape,
  // 2026-12-02): every part in fp8 takes a batch-32 window from 4.69 to 3.43 ms but moves the
  // encoder output 0.086 (relative L2) from fp32, and the bundled model's tokens by up to 7
  // on a clip; the convolutions and the MLP alone: 3.90 ms, 0.053, every clip's text and
  // tokens those of fp32 (docs/benchmarks.md). The attention's products and the cross K/V,
  // which the decoder reads directly, stay in f16.
  const unsigned default_parts = part_bit(Fp8Part::Convolutions) | part_bit(Fp8Part::Mlp);
  const char* env = std::getenv("HARK_CUDA_FP8_PARTS");
  if (!env) return default_parts;
  if (std::string(env) == "all") return all;
  unsigned parts = 0;
  std::string list = env;
  for (size_t start = 0; start <= list.size();) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    if (name == "conv") parts |= part_bit(Fp8Part::Convolutions);
    else if (name == "attention") parts |= part_bit(Fp8Part::Attention);
    else if (name == "mlp") parts |= part_bit(Fp8Part::Mlp);
    else if (name == "kv") parts |= part_bit(Fp8Part::CrossKv);
    else if (name != "none" && !name.empty())
      throw Error(ErrorCode::InvalidArgument, "[cuda] HARK_CUDA_FP8_PARTS: unknown part '" + name +
                                                  "' (use conv, attention, mlp, kv, all or none, comma-separated)");
    start = end + 1;
  }
  return parts;
}

bool CudaBackend::e4m3_applies(int64_t m, int64_t n, int64_t k, bool bias, DType y_dt, Epilogue epilogue) {
  if (!fp8_products_ || !(fp8_parts_ & part_bit(fp8_region)) || m < kE4m3MinRows || y_dt != act_ ||
      k > cuda::kE4m3MaxWidth)
    return false;
  return lt_->has_e4m3(m, k, n, bias, y_dt, lt_epilogue(epilogue));
}

const CudaBackend::E4m3Weight& CudaBackend::e4m3_weight(const Tensor& w, const void* w16) {
  const int64_t n = w.dim(0), k = w.dim(1);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = e4m3_weights_.find(w16);
  if (it != e4m3_weights_.end()) {
    if (it->second.values.dim(0) != n || it->second.values.dim(1) != k)
      throw Error(ErrorCode::Internal, "[cuda] an e4m3 weight was cached with another shape");
    return it->second;
  }
  const PauseArena pause(arena_);  // kept for the backend's lifetime, like the 16-bit copy
  E4m3Weight q{alloc({n, k}, DType::F8_E4M3), alloc({n}, DType::F32), w.device() == Device::Cuda ? w : Tensor()};
  cuda::quantize_rows_e4m3(act_, w16, n, k, q.values.raw(), q.scales.data<float>(), stream_);
  cuda::check_launch("quantize_rows_e4m3 (weights)");
  return e4m3_weights_.emplace(w16, std::move(q)).first->second;
}

void CudaBackend::product_e4m3(const Tensor& x_values, const Tensor& x_scales, const Tensor& w, const void* w16,
                               const void* b16, Tensor& y, Epilogue epilogue) {
  const E4m3Weight& qw = e4m3_weight(w, w16);
  lt_->run_e4m3(x_values.raw(), x_scales.data<float>(), x_scales.numel(), x_values.dim(-1), qw.values.raw(),
                qw.scales.data<float>(), w.dim(0), b16, y.dtype(), y.raw(), lt_epilogue(epilogue));
}

bool CudaBackend::linear_e4m3(const Tensor& x, const Tensor& w, const void* w16, const void* b16, Tensor& y,
                              Epilogue epilogue) {
  const int64_t k = x.dim(-1), m = x.numel() / k;
  if (!e4m3_applies(m, w.dim(0), k, b16 != nullptr, y.dtype(), epilogue)) return false;
  Tensor values = alloc({m, k}, DType::F8_E4M3), scales = alloc({m}, DType::F32);
  cuda::quantize_rows_e4m3(act_, x.raw(), m, k, values.raw(), scales.data<float>(), stream_);
  cuda::check_launch("quantize_rows_e4m3");
  product_e4m3(values, scales, w, w16, b16, y, epilogue);
  return true;
}

bool CudaBackend::norm_linear_e4m3(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                                   const Tensor* bias, Tensor& y, Epilogue epilogue) {
  const int64_t k = x.dim(-1), m = x.numel() / k;
  if (k > cuda::kLayerNormMaxRegisterWidth || !e4m3_applies(m, w.dim(0), k, bias != nullptr, y.dtype(), epilogue))
    return false;
  Tensor values = alloc({m, k}, DType::F8_E4M3), scales = alloc({m}, DType::F32);
  cuda::layer_norm_e4m3(act_, x.raw(), static_cast<const float*>(resident(gamma, DType::F32)),
                        static_cast<const float*>(resident(beta, DType::F32)), values.raw(), scales.data<float>(), m, k,
                        eps, stream_);
  cuda::check_launch("layer_norm_e4m3");
  product_e4m3(values, scales, w, resident(w, act_), bias ? resident(*bias, act_) : nullptr, y, epilogue);
  return true;
}

}  // namespace hark
