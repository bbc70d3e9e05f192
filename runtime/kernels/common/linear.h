#pragma once
// What the float and int8 linear layers (prepacked/packed_params.cc,
// quantized/qlinear.cc) share: their output's shape.

#include "runtime/core/format.h"
#include "runtime/registry/kernel.h"

namespace pare {
namespace linear {

// Allocates `out`, the output of a linear layer on `input` ([...,
// in_features] -> [..., out_features], dtype `dtype`), or fails with
// InvalidShape when input does not end in in_features. Inline: each layer
// keeps its own copy of the code.
PARE_ALWAYS_INLINE Result<Tensor*> allocate_output(KernelContext& ctx, const Tensor& input, int64_t in_features,
                                                   int64_t out_features, ScalarType dtype, Value& out) {
  PARE_CHECK_OR_RETURN(ctx, input.dim >= 1 && input.sizes[input.dim - 1] == in_features, Error::InvalidShape,
                       "argument 'input' with sizes %s does not end in in_features = %lld",
                       sizes_to_string(input.size_span()).text, static_cast<long long>(in_features));
  int64_t sizes[kMaxDim];
  for (size_t d = 0; d < input.dim; ++d) sizes[d] = input.sizes[d];
  sizes[input.dim - 1] = out_features;
  return ctx.allocate_output(out, dtype, IntArrayRef(sizes, input.dim));
}

}  // namespace linear
}  // namespace pare
