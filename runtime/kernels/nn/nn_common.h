#pragma once
// Helpers shared by the nn kernels (convolution, normalisation, pooling,
// upsampling): reading PyTorch's "int[2]"-style spatial parameters, the
// checked output-size arithmetic of pooling and col2im, and the
// multi-accumulator row sums the normalisation kernels use.
//
// Spatial parameters come from a program, so every value is checked and the
// output-size arithmetic is done with overflow checks: a hostile program gets
// an error naming the argument, never a wrapped size.

#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {
namespace nn {

// Largest stride, padding or dilation accepted. Far above any real model,
// and small enough that products with a tensor size stay inside int64.
constexpr int64_t kMaxSpatialParam = int64_t{1} << 30;

// Reads an int list argument holding one value per spatial dim of an op with
// `n` spatial dims: a single element is repeated (PyTorch's
// expand_param_if_needed), `n` elements are taken as they are. When
// `empty_default` is non-null an empty list takes those values (pooling's
// `stride=[]`). Values must lie in [min_value, kMaxSpatialParam].
Error read_spatial(KernelContext& ctx, IntArrayRef list, size_t n, const char* name, int64_t min_value,
                   const int64_t* empty_default, int64_t* out);

// Output length of a sliding window (pooling, col2im; conv_plan.h's output_extent for convolutions):
// (in + 2 pad - dilation (kernel - 1) - 1) / stride + 1, with PyTorch's
// ceil_mode rule for pooling (the last window must start inside the input
// or the left padding). Fails when the dilated kernel is larger than the
// padded input, or on overflow.
bool window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                        int64_t* out);

// Element i of a 1-d parameter tensor (weight, bias, running stats) whose
// dtype is either T or, for Half/BFloat16 inputs, Float (PyTorch's
// mixed-precision normalisation), converted to Acc.
template <typename Acc, typename T>
PARE_ALWAYS_INLINE Acc param_at(const Tensor& p, int64_t i) {
  if constexpr (!is_same_v<T, float>) {
    if (p.dtype == ScalarType::Float) return Acc(p.data_as<float>()[i * p.strides[0]]);
  }
  return Acc(p.data_as<T>()[i * p.strides[0]]);
}

// Checks the dtypes of a normalisation op's input and parameter tensors
// (null entries are absent optional ones): the input must be floating, and
// the parameters must all have its dtype, or all be Float for a
// Half/BFloat16 input (PyTorch's mixed-precision rule). Sets *stats_dtype
// to the dtype of the op's mean/rstd outputs.
Error check_norm_dtypes(KernelContext& ctx, const Tensor& input, const Tensor* const* params, const char* const* names,
                        size_t n, ScalarType* stats_dtype);

// check_norm_dtypes, then that each present parameter is 1-d with
// `channels` elements (one per channel of the input).
Error check_channel_params(KernelContext& ctx, const Tensor& input, const Tensor* const* params,
                           const char* const* names, size_t n, int64_t channels, ScalarType* stats_dtype);

}  // namespace nn
}  // namespace kernels
}  // namespace pare
