// Dtype-preserving unary ops on every dtype: aten::abs, neg, sign,
// bitwise_not, and aten::logical_not (any dtype to Bool).
//
// Integers wrap as in PyTorch (abs and neg of the minimum value give the
// minimum value back; neg of a Byte is 256 - x). Half and BFloat16 abs and
// neg only touch the sign bit, exactly like PyTorch's vectorised kernels.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {

using unary_math::check_dtype;
using unary_math::prepare_same_dtype;
using unary_math::same_dtype_unary;

// aten::abs(Tensor self) -> Tensor
Error aten_abs(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  if (self.dtype == ScalarType::ComplexFloat) {
    // The magnitude, a Float tensor: hypot in double, rounded once (torch's
    // abs of a complex64, a float hypot, is within an ulp of it). All of it
    // inside the dispatch, so a runtime without abs_complex_kernel keeps
    // none of it.
    return PARE_DISPATCH(abs_complex_kernel, ctx, self.dtype, T, {
      e.add_input(Operand::of(self), "self");
      PARE_TRY(e.prepare(args.output(0), ScalarType::ComplexFloat, ScalarType::Float));
      e.run<float, T>([](T z) {
        return static_cast<float>(math::sqrt(static_cast<double>(z.re) * z.re + static_cast<double>(z.im) * z.im));
      });
      return Error::Ok;
    });
  }
  PARE_TRY(prepare_same_dtype<tags::abs_kernel>(ctx, e, self, args.output(0)));
  return PARE_DISPATCH(abs_kernel, ctx, self.dtype, T, {
    if constexpr (is_reduced_float_v<T>) {
      e.run<T, T>([](T x) { return T::from_bits(static_cast<uint16_t>(x.bits & 0x7FFFu)); });
    } else if constexpr (is_floating_point_v<T>) {
      e.run<T, T>([](T x) { return math::abs(x); });
    } else if constexpr (is_same_v<T, uint8_t>) {
      e.run<T, T>([](T x) { return x; });
    } else {
      e.run<T, T>([](T x) { return x < T(0) ? arith::sub<T>(T(0), x) : x; });
    }
    return Error::Ok;
  });
}

// aten::neg(Tensor self) -> Tensor
Error aten_neg(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  // PyTorch's own wording: this is a common mistake with masks.
  PARE_CHECK_OR_RETURN(ctx, self.dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'self': negation of a Bool tensor is not supported; to invert a mask use "
                       "aten::bitwise_not or aten::logical_not");
  Elementwise<1> e(ctx);
  PARE_TRY(prepare_same_dtype<tags::neg_kernel>(ctx, e, self, args.output(0)));
  return PARE_DISPATCH(neg_kernel, ctx, self.dtype, T, {
    if constexpr (is_reduced_float_v<T>) {
      e.run<T, T>([](T x) { return T::from_bits(static_cast<uint16_t>(x.bits ^ 0x8000u)); });
    } else if constexpr (is_floating_point_v<T>) {
      e.run<T, T>([](T x) { return -x; });
    } else {
      e.run<T, T>([](T x) { return arith::sub<T>(T(0), x); });
    }
    return Error::Ok;
  });
}

// aten::sign(Tensor self) -> Tensor
//
// (0 < x) - (x < 0): sign(NaN) and sign(-0.0) are 0, as in PyTorch; Bool
// is returned unchanged.
Error aten_sign(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return same_dtype_unary<tags::sign_kernel>(ctx, inputs, outputs, [](auto x) {
    using A = decltype(x);
    if constexpr (is_same_v<A, bool>) {
      return x;
    } else {
      return A(int(A(0) < x) - int(x < A(0)));
    }
  });
}

// aten::bitwise_not(Tensor self) -> Tensor
Error aten_bitwise_not(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return same_dtype_unary<tags::bitwise_not_kernel>(ctx, inputs, outputs, [](auto x) {
    using A = decltype(x);
    if constexpr (is_same_v<A, bool>) {
      return !x;
    } else {
      static_assert(is_integral_v<A>, "bitwise_not_kernel declares integral types and Bool only");
      return static_cast<A>(~x);
    }
  });
}

// aten::logical_not(Tensor self) -> Tensor
//
// Every dtype in, Bool out: x == 0 (NaN is "true", so its negation is false).
Error aten_logical_not(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_TRY(check_dtype<tags::logical_not_kernel>(ctx, self.dtype, "argument 'self'"));
  Elementwise<1> e(ctx);
  e.add_input(Operand::of(self), "self");
  PARE_TRY(e.prepare(args.output(0), self.dtype, ScalarType::Bool));
  return PARE_DISPATCH(logical_not_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    if constexpr (is_same_v<T, bool>) {
      e.run<bool, T>([](bool x) { return !x; });
    } else {
      e.run<bool, T>([](T x) { return Acc(x) == Acc(0); });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
