#include "core/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/cpu/attention_rows.h"
#include "core/cpu/attention_q8.h"
#include "core/cpu/gemm.h"
#include "core/cpu/gemv_half.h"
#include "core/cpu/quant_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/quant_format.h"
#include "core/token_select.h"

namespace hark {

CpuBackend::CpuBackend(int threads, DType cross_kv)
    : pool_(threads > 0 ? threads : hardware_threads()), cross_kv_(cross_kv) {
  if (cross_kv != DType::F32 && cross_kv != DType::F16 && cross_kv != DType::Q8_0)
    throw Error(ErrorCode::InvalidArgument, std::string("[cpu] cross-attention K/V are kept in f32, f16 or q8_0, not ") +
                                                dtype_name(cross_kv));
}

const float* CpuBackend::f32_weights(const Tensor& w) {
  if (w.dtype() == DType::F32) return w.data<float>();
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const auto key = std::make_pair(w.raw(), w.nbytes());
  auto it = f32_cache_.find(key);
  if (it == f32_cache_.end()) it = f32_cache_.emplace(key, std::make_pair(w, w.to_f32(false))).first;
  return it->second.second.data<float>();
}

size_t CpuBackend::cached_weight_bytes() {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  size_t bytes = 0;
  for (const auto& [key, entry] : f32_cache_) bytes += entry.second.nbytes();
  return bytes;
}

void CpuBackend::product(const Tensor& x, const Tensor& w, const Tensor* bias, float* y, int64_t ldy) {
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  if (dtype_is_quantized(w.dtype())) {
    // Block-quantized weights stay packed: integer dot products or sgemm on widened panels.
    quant_linear(pool_, x.data<float>(), m, k, w, bias ? f32_weights(*bias) : nullptr, y, ldy);
    return;
  }
  const bool float_weights = w.dtype() == DType::F32 || w.dtype() == DType::F16 || w.dtype() == DType::BF16;
  if (float_weights && m <= kRowExactMaxRows) {
    // Decoder steps: half-precision weights are read directly (half the bytes), and every
    // row's result is independent of the other rows (gemv_rows), so a sequence decoded in
    // a batch of up to kRowExactMaxRows rows gets exactly the logits it gets alone.
    const float* b = bias ? f32_weights(*bias) : nullptr;
    if (ldy == n) {
      gemv_rows(pool_, x.data<float>(), m, k, w.raw(), w.dtype(), n, b, y);
      return;
    }
    std::vector<float> tmp(static_cast<size_t>(m * n));
    gemv_rows(pool_, x.data<float>(), m, k, w.raw(), w.dtype(), n, b, tmp.data());
    for (int64_t i = 0; i < m; ++i) std::memcpy(y + i * ldy, tmp.data() + i * n, n * sizeof(float));
    return;
  }
  const float* wf = f32_weights(w);
  float beta = 0.0f;
  if (bias) {
    const float* b = f32_weights(*bias);
    for (int64_t i = 0; i < m; ++i) std::memcpy(y + i * ldy, b, n * sizeof(float));
    beta = 1.0f;
  }
  sgemm(pool_, Trans::No, Trans::Yes, m, n, k, 1.0f, x.data<float>(), k, wf, k, beta, y, ldy);
}

void CpuBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, Epilogue epilogue) {
  if (y.dtype() != DType::F32) throw Error(ErrorCode::Internal, "[cpu] linear writes f32 only");
  const int64_t n = w.dim(0);
  switch (epilogue) {
    case Epilogue::None:
      product(x, w, bias, y.data<float>(), n);
      break;
    case Epilogue::Gelu:
      product(x, w, bias, y.data<float>(), n);
      gelu(y);
      break;
    case Epilogue::Residual: {
      // The product first, then the sum, as the reference adds the block's output to x.
      Tensor tmp = Tensor::empty(y.shape());
      product(x, w, bias, tmp.data<float>(), n);
      add(y, tmp);
      break;
    }
  }
}

void CpuBackend::linear_packed(const Tensor& x, std::span<const Tensor* const> ws,
                               std::span<const Tensor* const> biases, Tensor& y) {
  const int64_t ldy = y.dim(-1);
  int64_t col = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    product(x, *ws[i], biases[i], y.data<float>() + col, ldy);
    col += ws[i]->dim(0);
  }
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  const float* g = f32_weights(gamma);
  const float* b = f32_weights(beta);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) layer_norm_row(in + r * d, g, b, d, eps, out + r * d);
  }, 16);
}

void CpuBackend::gelu(Tensor& x) {
  float* p = x.data<float>();
  pool_.parallel_for(x.numel(), [&](int64_t begin, int64_t end) { gelu_inplace(p + begin, end - begin); }, 4096);
}

void CpuBackend::add(Tensor& x, const Tensor& y) {
  float* a = x.data<float>();
  const float* b = f32_weights(y);
  const int64_t n = x.numel(), m = y.numel();
  if (m == n) {
    pool_.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) a[i] += b[i];
    }, 16384);
    return;
  }
  const int64_t rows = n / m;
  pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = 0; i < m; ++i) a[r * m + i] += b[i];
  }, 16);
}

void CpuBackend::conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding, Tensor& y) {
  // im2col then one GEMM: cols[Cin·K, Tout], y = W[Cout, Cin·K] · cols.
  const int64_t cin = x.dim(0), t_in = x.dim(1), cout = w.dim(0), kw = w.dim(2), t_out = y.dim(1);
  Tensor cols = Tensor::empty({cin * kw, t_out});
  const float* in = x.data<float>();
  float* c = cols.data<float>();
  pool_.parallel_for(cin, [&](int64_t begin, int64_t end) {
    for (int64_t ci = begin; ci < end; ++ci) {
      for (int64_t k = 0; k < kw; ++k) {
        float* row = c + (ci * kw + k) * t_out;
        for (int64_t t = 0; t < t_out; ++t) {
          int64_t src = t * stride + k - padding;
          row[t] = (src >= 0 && src < t_in) ? in[ci * t_in + src] : 0.0f;
        }
      }
    }
  });
  const float* bias = f32_weights(b);
  float* out = y.data<float>();
  for (int64_t co = 0; co < cout; ++co) std::fill(out + co * t_out, out + (co + 1) * t_out, bias[co]);
  // Widened per call, not cached: the two convolutions run once per window, and a kept
  // fp32 copy would be model memory beyond the file (5 % of a q8_0 tiny).
  const Tensor wf = w.to_f32();
  sgemm(pool_, Trans::No, Trans::No, cout, t_out, cin * kw, 1.0f, wf.data<float>(), cin * kw, c, t_out, 1.0f, out,
        t_out);
}

void CpuBackend::embedding(const Tensor& table, const Tensor& positions, const Tensor& ids, const Tensor& lengths,
                           int n_new, Tensor& out) {
  const int64_t d = table.dim(1), n = ids.numel();
  float* o = out.data<float>();
  std::vector<float> row(d);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids.data<int32_t>()[i], pos = lengths.data<int32_t>()[i / n_new] + i % n_new;
    if (id < 0 || id >= table.dim(0) || pos < 0 || pos >= positions.dim(0))
      throw Error(ErrorCode::InvalidArgument, "[embedding] token " + std::to_string(id) + " at position " +
                                                  std::to_string(pos) + " is outside the table");
    // Row `id` of the table (a quantized table's rows are whole blocks).
    convert_to_f32(static_cast<const char*>(table.raw()) + id * dtype_nbytes(table.dtype(), d), table.dtype(),
                   o + i * d, d);
    convert_to_f32(static_cast<const char*>(positions.raw()) + pos * dtype_nbytes(positions.dtype(), d),
                   positions.dtype(), row.data(), d);
    for (int64_t j = 0; j < d; ++j) o[i * d + j] += row[j];
  }
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() == dst.dtype()) {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
  } else if (dst.dtype() == DType::F32) {
    convert_to_f32(src.raw(), src.dtype(), dst.data<float>(), src.numel());
  } else if (src.dtype() == DType::F32 && dtype_is_quantized(dst.dtype())) {
    const int64_t row = src.dim(-1), rows = src.numel() / row;
    const size_t row_bytes = dtype_nbytes(dst.dtype(), row);
    pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        quant::quantize_row(dst.dtype(), src.data<float>() + r * row, static_cast<uint8_t*>(dst.raw()) + r * row_bytes,
                            row);
    }, 16);
  } else if (src.dtype() == DType::F32 && dst.dtype() == DType::F16) {
    const float* s = src.data<float>();
    uint16_t* d = dst.data<uint16_t>();
    pool_.parallel_for(src.numel(), [&](int64_t begin, int64_t end) { floats_to_half(s + begin, d + begin, end - begin); },
                       16384);
  } else {
    throw Error(ErrorCode::Internal, std::string("[cpu] copy to ") + dtype_name(dst.dtype()) + " is not supported");
  }
}

void CpuBackend::transpose(const Tensor& x, Tensor& y) {
  const int64_t r = x.dim(0), c = x.dim(1);
  const float* s = x.data<float>();
  float* d = y.data<float>();
  // Blocked so that both the reads and the writes stay within cache lines.
  constexpr int64_t kBlock = 32;
  pool_.parallel_for((c + kBlock - 1) / kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t cb = begin * kBlock; cb < std::min(c, end * kBlock); cb += kBlock)
      for (int64_t rb = 0; rb < r; rb += kBlock)
        for (int64_t j = cb; j < std::min(c, cb + kBlock); ++j)
          for (int64_t i = rb; i < std::min(r, rb + kBlock); ++i) d[j * r + i] = s[i * c + j];
  });
}

void CpuBackend::conv1d_gelu_time_major(const Tensor& x, const Tensor& w, const Tensor& b, int stride, int padding,
                                        Tensor& y) {
  // Channel-major convolution between two transposes: the same arithmetic as conv1d.
  Tensor xc = Tensor::empty({x.dim(1), x.dim(0)});
  transpose(x, xc);
  Tensor yc = Tensor::empty({y.dim(1), y.dim(0)});
  conv1d(xc, w, b, stride, padding, yc);
  gelu(yc);
  transpose(yc, y);
}

void CpuBackend::gather_sequences(std::span<Tensor* const> caches, int64_t rows_per_seq, std::span<const int> source,
                                  std::span<const int> lengths) {
  // In place, as on CUDA: the cache may be a view of a larger state (one group's rows in a
  // continuous batch). The sequences that are read are copied out first, then gathered back.
  for (Tensor* cache : caches) {
    const int64_t row_bytes = cache->nbytes() / cache->dim(0), seq_bytes = rows_per_seq * row_bytes;
    std::vector<int64_t> needed(source.size(), 0);  // rows of each source sequence that are read
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] != static_cast<int>(i)) needed[source[i]] = std::max<int64_t>(needed[source[i]], lengths[i]);
    Tensor scratch = Tensor::empty(cache->shape(), cache->dtype());
    auto* data = static_cast<char*>(cache->raw());
    auto* saved = static_cast<char*>(scratch.raw());
    for (size_t s = 0; s < needed.size(); ++s)
      if (needed[s] > 0) std::memcpy(saved + s * seq_bytes, data + s * seq_bytes, needed[s] * row_bytes);
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] != static_cast<int>(i))
        std::memcpy(data + i * seq_bytes, saved + source[i] * seq_bytes, lengths[i] * row_bytes);
  }
}

void CpuBackend::select_tokens(const Tensor& logits, const Tensor& spec, int k, Tensor& out) {
  select_tokens_reference(logits.data<float>(), static_cast<int>(logits.dim(0)), static_cast<int>(logits.dim(1)),
                          spec.data<int32_t>(), k, out.data<int32_t>());
}

std::unique_ptr<Backend> CpuBackend::make_lane() {
  auto lane = std::make_unique<CpuBackend>(threads(), cross_kv_);
  lane->set_select_next_to_logits(select_next_to_logits_);
  return lane;
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  if (parse_compute_type(options.compute_type, Device::Cpu) != DType::F32)
    throw Error(ErrorCode::InvalidArgument, "[cpu] compute type " + options.compute_type +
                                                " runs on a GPU only; use --compute-type f32 (or auto) on the CPU");
  auto backend = std::make_unique<CpuBackend>(options.threads, options.cross_kv);
  backend->set_select_next_to_logits(options.select_next_to_logits);
  return backend;
}

std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options) {
  if (device == "cpu") return make_cpu_backend(options);
  if (device == "auto") return cuda_available() ? make_cuda_backend(0, options) : make_cpu_backend(options);
  if (device == "cuda") return make_cuda_backend(0, options);
  if (device.rfind("cuda:", 0) == 0) {
    int index = 0;
    try {
      index = std::stoi(device.substr(5));
    } catch (...) {
      throw Error(ErrorCode::InvalidArgument, "[device] bad device '" + device + "': use cpu, cuda, cuda:N or auto");
    }
    return make_cuda_backend(index, options);
  }
  throw Error(ErrorCode::InvalidArgument, "[device] unknown device '" + device + "': use cpu, cuda, cuda:N or auto");
}

bool compute_type_fp8(const std::string& name) { return name == "fp8" || name == "float8"; }

DType parse_compute_type(const std::string& name, Device device) {
  if (name == "auto") return device == Device::Cuda ? DType::F16 : DType::F32;
  if (name == "f32" || name == "float32") return DType::F32;
  if (name == "f16" || name == "float16") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (compute_type_fp8(name)) {
    if (device == Device::Cpu)
      throw Error(ErrorCode::InvalidArgument, "[device] compute type " + name +
                                                  " is the GPU's (e4m3 tensor-core products); on the CPU use auto, "
                                                  "f32, int8 or a ggml type such as q8_0");
    return DType::F16;
  }
  // 8-bit and ggml-quantized weights: the CPU's quantized kernels, fp32 activations.
  if (name == "int8" || name == "int8_float16" || name == "int8_float32" || quant::parse_name(name)) {
    if (device == Device::Cuda)
      throw Error(ErrorCode::InvalidArgument, "[device] compute type " + name +
                                                  " runs on the CPU only (quantized kernels); on a GPU use auto, f32, "
                                                  "f16, bf16 or fp8");
    return DType::F32;
  }
  throw Error(ErrorCode::InvalidArgument, "[device] unknown compute type '" + name +
                                              "': use auto, f32, f16, bf16, on a GPU fp8, or on the CPU int8, int8_float16, "
                                              "int8_float32, q8_0, q5_0, q5_1, q4_0, q4_1, q2_k ... q6_k");
}

}  // namespace hark
