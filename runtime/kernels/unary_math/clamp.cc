// aten::clamp (Scalar bounds) and aten::clamp.Tensor (Tensor bounds).
//
// Type promotion follows PyTorch: a floating self keeps its dtype; other
// dtypes take torch.result_type over self and the bounds (Scalars as
// wrapped numbers), so clamp(int_tensor, 0.5) is Float. Scalar bounds are
// converted to the result dtype with PyTorch's overflow check.
//
// NaN: a NaN element stays NaN and a NaN bound makes the result NaN, as
// PyTorch's vectorised kernels do. min > max gives max everywhere. Both
// follow from one select per bound, which vectorises:
//   v = (x < lo || lo != lo) ? lo : x;   v = (v > hi || hi != hi) ? hi : v;

#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {
namespace {

// max(x, lo) and min(x, hi) propagating NaN from either side. A is
// opmath_t<T> (exact for every T, so the result converts back exactly).
template <typename A>
PARE_ALWAYS_INLINE A clamp_below(A x, A lo) {
  return (x < lo || lo != lo) ? lo : x;
}
template <typename A>
PARE_ALWAYS_INLINE A clamp_above(A x, A hi) {
  return (hi < x || hi != hi) ? hi : x;
}

}  // namespace

using unary_math::check_dtype;
using unary_math::check_scalar_fits;

// aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
Error aten_clamp(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool has_min = args.has(1);
  const bool has_max = args.has(2);
  const Scalar min = has_min ? args.scalar(1, "min") : Scalar();
  const Scalar max = has_max ? args.scalar(2, "max") : Scalar();
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, has_min || has_max, Error::InvalidArgument,
                       "at least one of arguments 'min' and 'max' must not be None");

  ScalarType dtype = self.dtype;
  if (!is_floating_type(dtype)) {
    Operand operands[3] = {Operand::of(self)};
    size_t n = 1;
    if (has_min) operands[n++] = Operand::of(min);
    if (has_max) operands[n++] = Operand::of(max);
    dtype = result_type(operands, n);
  }
  PARE_TRY(check_dtype<tags::clamp_kernel>(ctx, dtype, "the result (promoted from 'self', 'min' and 'max')"));
  if (has_min) PARE_TRY(check_scalar_fits(ctx, min, dtype, "min"));
  if (has_max) PARE_TRY(check_scalar_fits(ctx, max, dtype, "max"));

  Elementwise<1> e(ctx);
  e.add_input(Operand::of(self), "self");
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return PARE_DISPATCH(clamp_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    // Bounds are rounded to T first, as Scalar::to<T>() does in PyTorch.
    const Acc lo = Acc(min.to<T>());
    const Acc hi = Acc(max.to<T>());
    if (has_min && has_max) {
      e.run<T, T>([lo, hi](T x) { return T(clamp_above(clamp_below(Acc(x), lo), hi)); });
    } else if (has_min) {
      e.run<T, T>([lo](T x) { return T(clamp_below(Acc(x), lo)); });
    } else {
      e.run<T, T>([hi](T x) { return T(clamp_above(Acc(x), hi)); });
    }
    return Error::Ok;
  });
}

// aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
//
// Broadcasts self with the bounds and promotes all three. With one bound
// this is PyTorch's maximum/minimum, which also accept Bool; clamping a
// Bool tensor between two bounds is not supported (as in PyTorch).
Error aten_clamp_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool has_min = args.has(1);
  const bool has_max = args.has(2);
  // Exported graphs may pass a Python number for a bound.
  const Operand min = has_min ? tensor_or_scalar(args, 1, "min") : Operand::of(Scalar());
  const Operand max = has_max ? tensor_or_scalar(args, 2, "max") : Operand::of(Scalar());
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, has_min || has_max, Error::InvalidArgument,
                       "at least one of arguments 'min' and 'max' must not be None");

  // Both bounds: three inputs; one bound: two.
  Elementwise<3> both(ctx);
  Elementwise<2> one(ctx);
  ScalarType dtype;
  if (has_min && has_max) {
    both.add_input(Operand::of(self), "self");
    both.add_input(min, "min");
    both.add_input(max, "max");
    dtype = both.result_type();
    PARE_CHECK_OR_RETURN(ctx, dtype != ScalarType::Bool, Error::UnsupportedDtype,
                         "clamping Bool tensors between 'min' and 'max' is not supported; give one bound "
                         "(maximum/minimum) or use logical ops");
    PARE_TRY(both.prepare(args.output(0), dtype, dtype));
  } else {
    one.add_input(Operand::of(self), "self");
    one.add_input(has_min ? min : max, has_min ? "min" : "max");
    dtype = one.result_type();
    PARE_TRY(one.prepare(args.output(0), dtype, dtype));
  }
  return PARE_DISPATCH(clamp_tensor_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if (has_min && has_max) {
      both.run<T, T>([](T x, T lo, T hi) { return T(clamp_above(clamp_below(Acc(x), Acc(lo)), Acc(hi))); });
    } else if (has_min) {
      one.run<T, T>([](T x, T lo) { return T(clamp_below(Acc(x), Acc(lo))); });
    } else {
      one.run<T, T>([](T x, T hi) { return T(clamp_above(Acc(x), Acc(hi))); });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
