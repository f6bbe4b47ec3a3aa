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
  if (it == f32_cache_.end()) it = f32_cache_.emplace(key, w.to_f32(false)).first;
  return it->second.data<float>();
}

size_t CpuBackend::cached_weight_bytes() {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  size_t bytes = 0;
  for (const auto& [key, t] : f32_cache_) bytes += t.nbytes();
  return bytes;
}

void CpuBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const int64_t k = x.dim(-1), m = x.numel() / k, n = w.dim(0);
  if (dtype_is_quantized(w.dtype())) {
    // Block-quantized weights stay packed: integer dot products or sgemm on widened panels.
    quant_linear(pool_, x.data<float>(), m, k, w, bias ? f32_weights(*bias) : nullptr, y.data<float>());
    return;
  }
  if (w.dtype() != DType::F32 && m <= kHalfGemvMaxRows) {
    // Decoder steps: read the half-precision weights directly (half the bytes).
    gemv_half(pool_, x.data<float>(), m, k, w.data<uint16_t>(), w.dtype(), n, bias ? f32_weights(*bias) : nullptr,
              y.data<float>());
    return;
  }
  const float* wf = f32_weights(w);
  float* out = y.data<float>();
  float beta = 0.0f;
  if (bias) {
    const float* b = f32_weights(*bias);
    for (int64_t i = 0; i < m; ++i) std::memcpy(out + i * n, b, n * sizeof(float));
    beta = 1.0f;
  }
  sgemm(pool_, Trans::No, Trans::Yes, m, n, k, 1.0f, x.data<float>(), k, wf, k, beta, out, n);
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

void CpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                           int64_t causal_offset, Tensor& out, Tensor* weights) {
  const bool f32_or_f16 = k.dtype() == v.dtype() && (k.dtype() == DType::F32 || k.dtype() == DType::F16);
  if (f32_or_f16 && q.dim(0) <= kAttentionRowsMax && attention_rows_supported(q.dim(1) / n_heads)) {
    attention_rows(pool_, q.data<float>(), q.dim(0), k.raw(), v.raw(), k.dtype(), k.dim(0), q.dim(1), n_heads, causal,
                   causal_offset, out.data<float>(), weights ? weights->data<float>() : nullptr);
    return;
  }
  if (k.dtype() == DType::Q8_0 && v.dtype() == DType::Q8_0 && q.dim(0) <= kQ8AttentionMaxRows &&
      attention_q8_supported(q.dim(1) / n_heads)) {
    attention_q8_kv(pool_, q.data<float>(), q.dim(0), static_cast<const uint8_t*>(k.raw()),
                    static_cast<const uint8_t*>(v.raw()), k.dim(0), q.dim(1), n_heads, causal, causal_offset,
                    out.data<float>(), weights ? weights->data<float>() : nullptr);
    return;
  }
  if (k.dtype() != DType::F32 || v.dtype() != DType::F32) {  // longer queries: widen once, then sgemm
    const Tensor kf = k.to_f32(), vf = v.to_f32();
    attention(q, kf, vf, n_heads, causal, causal_offset, out, weights);
    return;
  }
  const int64_t tq = q.dim(0), tk = k.dim(0), d = q.dim(1), hd = d / n_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  float* op = out.data<float>();
  float* wp = weights ? weights->data<float>() : nullptr;
  // Tasks are (head, block of query rows), each run start to finish on one thread with its
  // own score rows: heads alone already balance the pool for the usual 6-20 heads, and the
  // row blocks keep every thread busy when heads are fewer than threads or do not divide.
  const int64_t threads = pool_.size();
  const int64_t row_blocks =
      tq < 64 ? 1 : std::min<int64_t>((tq + 63) / 64, (2 * threads + n_heads - 1) / n_heads);
  const int64_t rows_per_block = (tq + row_blocks - 1) / row_blocks;
  pool_.parallel_for(n_heads * row_blocks, [&](int64_t begin, int64_t end) {
    // Per-thread scratch, kept between calls: a fresh 4 MB buffer per encoder layer would
    // cost page faults every time.
    thread_local std::vector<float> scores;
    if (scores.size() < static_cast<size_t>(rows_per_block * tk)) scores.resize(rows_per_block * tk);
    float* s = scores.data();
    for (int64_t task = begin; task < end; ++task) {
      const int64_t h = task / row_blocks;
      const int64_t r0 = (task % row_blocks) * rows_per_block, r1 = std::min(tq, r0 + rows_per_block);
      if (r0 >= r1) continue;
      const int64_t rows = r1 - r0;
      // scores = scale · Q_h K_hᵀ; the heads are column blocks, so the leading dimension is D.
      sgemm_serial(Trans::No, Trans::Yes, rows, tk, hd, scale, qp + r0 * d + h * hd, d, kp + h * hd, d, 0.0f, s, tk);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t visible = causal ? std::min<int64_t>(tk, r0 + i + causal_offset + 1) : tk;
        softmax_row(s + i * tk, visible, tk);
      }
      if (wp) std::memcpy(wp + (h * tq + r0) * tk, s, rows * tk * sizeof(float));
      sgemm_serial(Trans::No, Trans::No, rows, hd, tk, 1.0f, s, tk, vp + h * hd, d, 0.0f, op + r0 * d + h * hd, d);
    }
  });
}

void CpuBackend::embedding(const Tensor& table, std::span<const int32_t> ids, const Tensor* positions,
                           int64_t first_position, Tensor& out) {
  const int64_t d = table.dim(1);
  float* o = out.data<float>();
  std::vector<float> row(d);
  for (size_t i = 0; i < ids.size(); ++i) {
    const char* src = static_cast<const char*>(table.raw()) + ids[i] * dtype_nbytes(table.dtype(), d);
    convert_to_f32(src, table.dtype(), o + i * d, d);
    if (positions) {
      const char* pos =
          static_cast<const char*>(positions->raw()) + (first_position + i) * dtype_nbytes(positions->dtype(), d);
      convert_to_f32(pos, positions->dtype(), row.data(), d);
      for (int64_t j = 0; j < d; ++j) o[i * d + j] += row[j];
    }
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

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options.threads, options.cross_kv);
}

std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options) {
  if (device == "cpu") return make_cpu_backend(options);
  if (device == "auto") return cuda_available() ? make_cuda_backend(0) : make_cpu_backend(options);
  if (device == "cuda") return make_cuda_backend(0);
  if (device.rfind("cuda:", 0) == 0) {
    int index = 0;
    try {
      index = std::stoi(device.substr(5));
    } catch (...) {
      throw Error(ErrorCode::InvalidArgument, "[device] bad device '" + device + "': use cpu, cuda, cuda:N or auto");
    }
    return make_cuda_backend(index);
  }
  throw Error(ErrorCode::InvalidArgument, "[device] unknown device '" + device + "': use cpu, cuda, cuda:N or auto");
}

}  // namespace hark
