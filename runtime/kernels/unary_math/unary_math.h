#pragma once
// Shared pieces of the unary_math family (runtime/kernels/unary_math/):
// dtype checks that run before any allocation, PyTorch's checked
// conversion of Scalar arguments (clamp bounds), and the driver behind
// every "floating" unary op (sqrt, exp, sigmoid, ...), which promotes
// integral and Bool inputs to the default float dtype as torch does.
//
// Everything dtype-specific here is a template, so selective builds that
// drop a dispatch case leave nothing unused behind (-Werror).

#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/common/math.h"

namespace pare {
namespace kernels {
namespace unary_math {

// "<what> has dtype Long, which is not supported (kernel tag gelu_kernel
// handles Half, BFloat16, Float, Double)". `what` names the argument
// ("argument 'self'") or the promoted result ("the result dtype").
PARE_COLD Error unsupported_dtype(KernelContext& ctx, const TagInfo& tag, ScalarType dtype, const char* what);

// Fails before any work when `Tag` does not declare `dtype`, with a
// message naming the argument (the dispatch would only name the tag).
template <typename Tag>
Error check_dtype(KernelContext& ctx, ScalarType dtype, const char* what) {
  return tag_declares<Tag>(dtype) ? Error::Ok : unsupported_dtype(ctx, kTagInfo<Tag>, dtype, what);
}

// PyTorch's Scalar::to<T>() is checked (c10::checked_convert): a value
// outside the dtype's range is an error, except infinities for floating
// types and negative integers that wrap into Byte (-255..-1), which torch
// allows. Fails naming argument `name`.
Error check_scalar_fits(KernelContext& ctx, const Scalar& value, ScalarType dtype, const char* name);

// Checks that `Tag` handles self's dtype and prepares `e` for an op whose
// result keeps that dtype (activations, abs, neg, ...).
template <typename Tag>
Error prepare_same_dtype(KernelContext& ctx, Elementwise<1>& e, const Tensor& self, Value& out) {
  PARE_TRY(check_dtype<Tag>(ctx, self.dtype, "argument 'self'"));
  e.add_input(Operand::of(self), "self");
  return e.prepare(out, self.dtype, self.dtype);
}

// A unary op `out = fn(self)` that keeps self's dtype and takes only the
// dtypes `Tag` lists: `fn` runs in opmath_t<T> and the result is rounded
// once. `Fn` is a functor with a template call operator, as in float_unary.
template <typename Tag, typename Fn>
Error same_dtype_unary(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Fn fn) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  PARE_TRY(prepare_same_dtype<Tag>(ctx, e, self, args.output(0)));
  // `fn` by value (it is empty): a reference would cost every op a pointer.
  return dispatch<Tag>(ctx, self.dtype, [&e, fn](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    e.run<T, T>([fn](T x) { return T(fn(Acc(x))); });
    return Error::Ok;
  });
}

// The dtype PyTorch converts Scalar parameters to for a kernel on `dtype`
// (opmath_t: Float for Half and BFloat16).
constexpr ScalarType opmath_dtype(ScalarType dtype) {
  return dtype == ScalarType::Half || dtype == ScalarType::BFloat16 ? ScalarType::Float : dtype;
}

// The default float dtype integral and Bool inputs of floating ops
// (sqrt, exp, ...) promote to; torch's default dtype is float32.
constexpr ScalarType kDefaultFloat = ScalarType::Float;

constexpr ScalarType float_result_type(ScalarType input) { return is_floating_type(input) ? input : kDefaultFloat; }

// A floating unary op `out = fn(self)`: integral and Bool inputs are
// converted to Float first (through copy_kernel, like TensorIterator's
// promote_integer_inputs_to_float), then `fn` runs in opmath_t<T> on Half,
// BFloat16, Float or Double and the result is rounded once. `Fn` is a
// functor with a template call operator over float and double.
template <typename Tag, typename Fn>
Error float_unary(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Fn fn) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  const ScalarType dtype = float_result_type(self.dtype);
  Elementwise<1> e(ctx);
  e.add_input(Operand::of(self), "self");
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    e.run<T, T>([fn](T x) { return T(fn(Acc(x))); });
    return Error::Ok;
  });
}

}  // namespace unary_math
}  // namespace kernels
}  // namespace pare
