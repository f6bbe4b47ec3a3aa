#include "core/cpu/quant_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/checked_span.h"
#include "core/cpu/gemm.h"
#include "core/cpu/quant_chunk.h"
#include "core/cpu/quant_dot.h"
#include "core/quant_format.h"

namespace hark {
namespace {

struct IsaChoice {
  const char* name;
  quant::DotRowsFn dot_rows;
  quant::WidenRowFn widen_row;
};

bool cpu_has(const char* isa) {
  const std::string name = isa;
  if (name == "scalar") return true;
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (name == "avx2") return avx2;
  if (name == "avx512-vnni")
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return false;
}

constexpr IsaChoice kIsas[] = {{"avx512-vnni", quant::dot_rows_avx512, quant::widen_row_avx512},
                               {"avx2", quant::dot_rows_avx2, quant::widen_row_avx2},
                               {"scalar", quant::dot_rows_scalar, quant::widen_row_scalar}};

const IsaChoice* best_isa() {
  for (const IsaChoice& isa : kIsas)
    if (cpu_has(isa.name)) return &isa;
  return &kIsas[2];
}

std::atomic<const IsaChoice*> g_isa{nullptr};

const IsaChoice& current_isa() {
  const IsaChoice* isa = g_isa.load(std::memory_order_acquire);
  if (!isa) {
    isa = best_isa();
    g_isa.store(isa, std::memory_order_release);
  }
  return *isa;
}

// The AVX2 and AVX-512 dot-product files are compiled without sanitizers in the sanitizer
// build (src/core/cpu/CMakeLists.txt); every call of a DotRowsFn or WidenRowFn goes through
// these, which check the spans it reads and writes first (core/checked_span.h).
void dot_rows_checked(const IsaChoice& isa, DType dtype, const quant::ActivationBlocks& x, const uint8_t* w,
                      size_t row_bytes, int64_t begin, int64_t end, const float* bias, float* y, int64_t ldy) {
  const int64_t blocks = x.m * x.k / quant::kBlock;
  check_span(x.q, x.m * x.k);
  check_span(x.d, blocks);
  check_span(x.half_sums, 2 * blocks);
  check_span(x.neg_half_lanes, 8 * blocks);
  // Rows `row_bytes` apart, each read for its first k values only (a head's slice of a
  // quantized cache row is k values of a longer row).
  check_strided(w + begin * static_cast<int64_t>(row_bytes), end - begin, static_cast<int64_t>(row_bytes),
                static_cast<int64_t>(dtype_nbytes(dtype, x.k)));
  if (bias) check_span(bias + begin, end - begin);
  check_strided(y + begin, x.m, ldy, end - begin);
  isa.dot_rows(dtype, x, w, row_bytes, begin, end, bias, y, ldy);
}

void widen_row_checked(const IsaChoice& isa, DType dtype, const uint8_t* row, int64_t k, float* out) {
  check_span(row, static_cast<int64_t>(dtype_nbytes(dtype, k)));
  check_span(out, k);
  isa.widen_row(dtype, row, k, out);
}

// Activation blocks for up to kQuantGemvMaxRows rows, reused between calls on this thread.
struct ActivationBuffers {
  std::vector<int8_t> q;
  std::vector<float> d, half_sums;
  std::vector<int32_t> lanes;

  quant::ActivationBlocks quantize(const float* x, int64_t m, int64_t k) {
    q.resize(m * k);
    d.resize(m * k / quant::kBlock);
    half_sums.resize(2 * m * k / quant::kBlock);
    lanes.resize(8 * m * k / quant::kBlock);
    quant::quantize_activations(x, m, k, q.data(), d.data(), half_sums.data(), lanes.data());
    return {m, k, q.data(), d.data(), half_sums.data(), lanes.data()};
  }
};

void integer_products(ThreadPool& pool, const float* x, int64_t m, int64_t k, const Tensor& w, const float* bias,
                      float* y, int64_t ldy) {
  thread_local ActivationBuffers buffers;
  const int64_t n = w.dim(0);
  const size_t row_bytes = dtype_nbytes(w.dtype(), k);
  const auto* weights = static_cast<const uint8_t*>(w.raw());
  const IsaChoice& isa = current_isa();
  for (int64_t first = 0; first < m; first += kQuantGemvMaxRows) {
    const int64_t rows = std::min(kQuantGemvMaxRows, m - first);
    const quant::ActivationBlocks xq = buffers.quantize(x + first * k, rows, k);
    float* ys = y + first * ldy;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      dot_rows_checked(isa, w.dtype(), xq, weights, row_bytes, begin, end, bias, ys, ldy);
    }, 64);
  }
}

// Larger products on AVX-512 VNNI (quant_gemm_avx512.cc) for the formats it takes: x
// quantized per block of 32 as for the integer kernels above, the weights packed in panels
// of 32 columns, then tasks of 64 rows × one panel. The weights are packed at every call
// rather than kept packed: a packed copy is ~1.4 bytes a weight, 2.5× a q4_0 file, and the
// packing was 4.7 % of the samples of a tiny q5_0 bench under perf (the tiles 20 %).
void vnni_products(ThreadPool& pool, const float* x, int64_t m, int64_t k, const Tensor& w, const float* bias,
                   float* y, int64_t ldy) {
  thread_local std::vector<uint8_t> u, packed;
  thread_local std::vector<float> du, sums;
  const DType dtype = w.dtype();
  const bool offsets = quant::format_has_offsets(dtype);
  const int64_t n = w.dim(0), blocks = k / quant::kBlock, cols = quant::panel_columns();
  const int64_t padded = (m + quant::tile_rows() - 1) / quant::tile_rows() * quant::tile_rows();
  const size_t row_bytes = dtype_nbytes(dtype, k);
  const auto* weights = static_cast<const uint8_t*>(w.raw());
  u.resize(padded * k);
  du.resize(padded * blocks);
  sums.resize(offsets ? padded * blocks : 0);
  std::fill(u.begin() + m * k, u.end(), uint8_t{128});  // code 0, scale 0: the padded rows add nothing
  std::fill(du.begin() + m * blocks, du.end(), 0.0f);
  if (offsets) std::fill(sums.begin() + m * blocks, sums.end(), 0.0f);
  // Pointers, not the thread-local vectors: the pool's threads would name their own.
  uint8_t* const codes = u.data();
  float* const scales = du.data();
  float* const block_sums = offsets ? sums.data() : nullptr;
  pool.parallel_for(m, [&](int64_t begin, int64_t end) {
    quant::quantize_rows_unsigned(x + begin * k, end - begin, k, codes + begin * k, scales + begin * blocks,
                                  block_sums ? block_sums + begin * blocks : nullptr);
  }, 16);
  const int64_t panels = (n + cols - 1) / cols, panel_bytes = quant::packed_panel_bytes(k);
  packed.resize(panels * panel_bytes);
  uint8_t* const panel_data = packed.data();
  pool.parallel_for(panels, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      quant::pack_panel_vnni(dtype, weights, row_bytes, n, k, p * cols, panel_data + p * panel_bytes);
  });
  constexpr int64_t kRowBlock = 64;  // a multiple of the tile's rows
  const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  pool.parallel_for(row_blocks * panels, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r0 = t / panels * kRowBlock, p = t % panels;
      quant::tiles_vnni(dtype, codes + r0 * k, scales + r0 * blocks, block_sums ? block_sums + r0 * blocks : nullptr,
                        std::min(kRowBlock, m - r0), k, panel_data + p * panel_bytes, p * cols, n, bias, y + r0 * ldy,
                        ldy);
    }
  });
}

// Whether vnni_products takes a product (HARK_CPU_Q8_GEMM=panel: the panel path below).
bool vnni_applies(const Tensor& w) {
  static const bool enabled = [] {
    const char* env = std::getenv("HARK_CPU_Q8_GEMM");
    return !(env && std::string(env) == "panel");
  }();
  return enabled && quant::vnni_tiles_take(w.dtype()) && &current_isa() == &kIsas[0];  // kIsas[0]: avx512-vnni
}

// Larger products: each task widens a panel of weight rows to fp32 in its own buffer and
// multiplies all rows of x with it, writing a column block of y.
void panel_products(ThreadPool& pool, const float* x, int64_t m, int64_t k, const Tensor& w, const float* bias,
                    float* y, int64_t ldy) {
  const int64_t n = w.dim(0), threads = pool.size();
  const size_t row_bytes = dtype_nbytes(w.dtype(), k);
  const auto* weights = static_cast<const uint8_t*>(w.raw());
  const IsaChoice& isa = current_isa();
  int64_t panels = threads;
  while ((n + panels - 1) / panels > 256) panels += threads;
  const int64_t panel_rows = ((n + panels - 1) / panels + 15) / 16 * 16;
  panels = (n + panel_rows - 1) / panel_rows;
  if (bias)
    for (int64_t i = 0; i < m; ++i) std::memcpy(y + i * ldy, bias, n * sizeof(float));
  pool.parallel_for(panels, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> panel;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t r0 = p * panel_rows, r1 = std::min(n, r0 + panel_rows);
      panel.resize((r1 - r0) * k);
      for (int64_t r = r0; r < r1; ++r)
        widen_row_checked(isa, w.dtype(), weights + r * row_bytes, k, panel.data() + (r - r0) * k);
      sgemm_serial(Trans::No, Trans::Yes, m, r1 - r0, k, 1.0f, x, k, panel.data(), k, bias ? 1.0f : 0.0f, y + r0,
                   ldy);
    }
  });
}

}  // namespace

void quant_linear(ThreadPool& pool, const float* x, int64_t m, int64_t k, const Tensor& w, const float* bias, float* y,
                  int64_t ldy) {
  if (w.rank() != 2 || w.dim(1) != k || k % dtype_block_elems(w.dtype()) != 0)
    throw Error(ErrorCode::Internal, "[cpu] quantized product of " + std::to_string(k) + " values with " + w.describe());
  if (m <= 2 * kQuantGemvMaxRows)
    integer_products(pool, x, m, k, w, bias, y, ldy);
  else if (vnni_applies(w))
    vnni_products(pool, x, m, k, w, bias, y, ldy);
  else
    panel_products(pool, x, m, k, w, bias, y, ldy);
}

void quant_dot_serial(const float* x, int64_t k, DType dtype, const uint8_t* w, size_t row_bytes, int64_t n, float* y) {
  thread_local ActivationBuffers buffers;
  const quant::ActivationBlocks xq = buffers.quantize(x, 1, k);
  dot_rows_checked(current_isa(), dtype, xq, w, row_bytes, 0, n, nullptr, y, n);
}

const char* quant_isa() { return current_isa().name; }

bool set_quant_isa(const std::string& name) {
  for (const IsaChoice& isa : kIsas) {
    if (name == isa.name && cpu_has(isa.name)) {
      g_isa.store(&isa, std::memory_order_release);
      return true;
    }
  }
  return false;
}

}  // namespace hark
