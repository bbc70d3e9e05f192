#pragma once
// Dtype conversion of whole tensors, shared by aten::_to_copy and by type
// promotion in every elementwise kernel.
//
// Conversions dispatch twice on kernel tag copy_kernel (source dtype, then
// destination dtype), like PyTorch's copy_, so a manifest records exactly
// the conversions a model performs and a selective build keeps only those.

#include "runtime/registry/dispatch.h"

namespace pare {

// Writes every element of `src` (any strides) into `dst` (same sizes, any
// strides), converting to dst's dtype with PyTorch's cast semantics.
Error convert_into(KernelContext& ctx, const Tensor& src, const Tensor& dst);

// convert_into for a scatter's copy of `self` into its output, which is
// nothing to do when the output is self's own memory: a state updated in
// place (docs/program_format.md, "State"). Inline, in the scatters only.
inline Error copy_self_into(KernelContext& ctx, const Tensor& self, const Tensor& out) {
  if (self.data() == out.data() && self.is_contiguous() && out.is_contiguous()) return Error::Ok;
  return convert_into(ctx, self, out);
}

// A contiguous tensor of `dtype` with src's values: `src` itself when it
// already is one, else a converted copy in scratch memory (valid until the
// current root op returns).
Result<Tensor> as_contiguous(KernelContext& ctx, const Tensor& src, ScalarType dtype);

// The same in channels-last order (a 4-D or 3-D `src`: NHWC strides, as
// set_channels_last_strides gives): `src` itself when it already is one.
Result<Tensor> as_channels_last(KernelContext& ctx, const Tensor& src, ScalarType dtype);

}  // namespace pare
