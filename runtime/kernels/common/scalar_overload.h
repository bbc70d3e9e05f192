#pragma once
// The ".Scalar" overloads PyTorch defines as their ".Tensor" sibling with the
// number wrapped (add.Scalar -> add.Tensor, mul.Scalar -> mul.Tensor, ...),
// in one place. The call goes through the registry, so traces record the
// Tensor overload as a non-root operator and a build without it fails with
// an error naming it.

#include "runtime/registry/kernel.h"

namespace pare {
namespace detail {

// Checks `self` is a tensor and `other` (and, with has_alpha, `alpha`,
// default 1) are numbers, then calls `tensor_overload` on them.
template <int kId>
Error forward_scalar_overload(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, const char* tensor_overload,
                              bool has_alpha) {
  KernelArgs args(ctx, inputs, outputs, 2, has_alpha ? 3 : 2, 1);
  (void)args.tensor(0, "self");
  Value other = Value::make_scalar(args.scalar(1, "other"));
  Value alpha = Value::make_scalar(args.scalar_or(2, "alpha", Scalar::from_int(1)));
  PARE_TRY(args.status());
  Value* forwarded[] = {inputs[0], &other, &alpha};
  return call_op<kId>(ctx, tensor_overload, ValueSpan(forwarded, has_alpha ? 3 : 2), outputs);
}

}  // namespace detail
}  // namespace pare

#define PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, tensor_overload, has_alpha)                \
  ::pare::detail::forward_scalar_overload<::pare::op_id(tensor_overload)>((ctx), (inputs), (outputs), \
                                                                          (tensor_overload), (has_alpha))
