// aten::add.Tensor, aten::add.Scalar, aten::mul.Tensor.
//
// The pattern every binary elementwise op follows: read operands (a Tensor
// or a wrapped Scalar), take torch.result_type, check scalar arguments
// against it, let Elementwise<2> broadcast/convert/allocate, dispatch on
// the result dtype through the op's kernel tag, and run a lambda that
// computes in opmath_t<T> (float for Half/BFloat16) and wraps integers
// (common/arith.h).

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/common/scalar_overload.h"

namespace pare {
namespace kernels {
namespace {

Error add(KernelContext& ctx, const Operand& self, const Operand& other, const Scalar& alpha, Value& out) {
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, other);
  PARE_TRY(check_alpha(ctx, dtype, alpha));
  PARE_TRY(e.prepare(out, dtype, dtype));
  return dispatch<tags::add_kernel>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_same_v<T, bool>) {
      const bool a = alpha.as_bool();
      e.run<T, T>([a](bool x, bool y) { return x || (a && y); });
    } else if constexpr (is_integral_v<T>) {
      const T a = alpha.to<T>();
      e.run<T, T>([a](T x, T y) { return arith::mul_add<T>(x, a, y); });
    } else {
      const Acc a = alpha.to<Acc>();
      if (a == Acc(1)) {
        e.run<T, T>([](T x, T y) { return T(Acc(x) + Acc(y)); });
      } else {
        e.run<T, T>([a](T x, T y) { return T(Acc(x) + a * Acc(y)); });
      }
    }
    return Error::Ok;
  });
}

}  // namespace

// aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
Error aten_add_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  const Scalar alpha = args.scalar_or(2, "alpha", Scalar::from_int(1));
  PARE_TRY(args.status());
  return add(ctx, self, other, alpha, args.output(0));
}

// aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
//
// Forwards to aten::add.Tensor with `other` as a wrapped number, as PyTorch
// does; the call goes through the registry, so traces record add.Tensor as
// a non-root operator and a build without it fails cleanly here.
Error aten_add_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::add.Tensor", /*has_alpha=*/true);
}

// aten::mul.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_mul_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  Elementwise<2> e(ctx);
  e.read_inputs(args);
  PARE_TRY(args.status());
  const ScalarType dtype = e.result_type();
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return PARE_DISPATCH(mul_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if constexpr (is_same_v<T, bool>) {
      e.run<T, T>([](bool x, bool y) { return x && y; });
    } else if constexpr (is_integral_v<T>) {
      e.run<T, T>([](T x, T y) { return arith::mul<T>(x, y); });
    } else {
      e.run<T, T>([](T x, T y) { return T(Acc(x) * Acc(y)); });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
