// The Backend methods that have a default: compositions of the other ops.
#include "core/backend.h"

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

}  // namespace hark
