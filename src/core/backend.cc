// The Backend methods that have a default: compositions of the other ops.
#include "core/backend.h"

#include "core/token_select_rules.h"
#include "hark/error.h"

namespace hark {

void Backend::norm_linear(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& w,
                          const Tensor* bias, Tensor& y, Epilogue epilogue) {
  Tensor h = alloc(x.shape(), x.dtype());
  layer_norm(x, gamma, beta, eps, h);
  linear(h, w, bias, y, epilogue);
}

void Backend::norm_linear_packed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                 std::span<const Tensor* const> ws, std::span<const Tensor* const> biases, Tensor& y) {
  Tensor h = alloc(x.shape(), x.dtype());
  layer_norm(x, gamma, beta, eps, h);
  linear_packed(h, ws, biases, y);
}

void Backend::norm_cached_attention(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                    std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                                    Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths, int n_new,
                                    int n_heads, Tensor& out) {
  norm_linear_packed(x, gamma, beta, eps, ws, biases, qkv);
  cached_attention(qkv, cache_k, cache_v, lengths, n_new, n_heads, out);
}

// Where tensors live on the host (the CPU backend): the selection, then the feed-back.
void Backend::select_and_feed(const Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) {
  if (spec.device() != Device::Cpu || out.device() != Device::Cpu || inputs.device() != Device::Cpu)
    throw Error(ErrorCode::Internal, "[backend] select_and_feed has no device version on " + name());
  select_tokens(logits, spec, k, out);
  const int rows = static_cast<int>(logits.dim(0));
  int32_t* choices = out.data<int32_t>();
  for (int r = 0; r < rows; ++r)
    select_feed_back(spec.data<int32_t>(), r, choices[static_cast<int64_t>(r) * k * 2], inputs.data<int32_t>(), rows);
}

void Backend::logits_select_and_feed(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                     const Tensor& w, Tensor& logits, Tensor& spec, int k, Tensor& out, Tensor& inputs) {
  norm_linear(x, gamma, beta, eps, w, nullptr, logits, Epilogue::None);
  select_and_feed(logits, spec, k, out, inputs);
}

}  // namespace hark
