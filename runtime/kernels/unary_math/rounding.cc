// Rounding: aten::floor, ceil, trunc, round (half to even) and round.decimals.
//
// Integral tensors are already whole numbers: floor, ceil, trunc and round copy
// them (PyTorch returns a clone), keeping the dtype. round.decimals takes
// floating tensors only and follows PyTorch's formula, including its
// results for huge `decimals` (10^decimals overflows to inf, giving NaN).

#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {
namespace {

// floor/ceil/trunc/round: integral types unchanged, floating ones through `fn`
// in opmath_t<T>.
template <typename Tag, typename Fn>
Error rounding_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Fn fn) {
  return unary_math::same_dtype_unary<Tag>(ctx, inputs, outputs, [fn](auto x) {
    if constexpr (is_floating_point_v<decltype(x)>) {
      return fn(x);
    } else {
      return x;
    }
  });
}

}  // namespace

// aten::floor(Tensor self) -> Tensor
Error aten_floor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::floor_kernel>(ctx, inputs, outputs, [](auto x) { return math::floor(x); });
}

// aten::ceil(Tensor self) -> Tensor
Error aten_ceil(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::ceil_kernel>(ctx, inputs, outputs, [](auto x) { return math::ceil(x); });
}

// aten::trunc(Tensor self) -> Tensor
Error aten_trunc(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::trunc_kernel>(ctx, inputs, outputs, [](auto x) { return math::trunc(x); });
}

// aten::round(Tensor self) -> Tensor
Error aten_round(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::round_kernel>(ctx, inputs, outputs, [](auto x) { return math::nearbyint(x); });
}

// aten::round.decimals(Tensor self, *, int decimals) -> Tensor
Error aten_round_decimals(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t decimals = args.int64(1, "decimals");
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  PARE_TRY(unary_math::prepare_same_dtype<tags::round_decimals_kernel>(ctx, e, self, args.output(0)));
  // |decimals| in double: negating INT64_MIN would overflow.
  const bool negative = decimals < 0;
  const double ten_pow = math::pow(10.0, math::abs(static_cast<double>(decimals)));
  return PARE_DISPATCH(round_decimals_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const Acc scale = Acc(ten_pow);
    if (decimals == 0) {
      e.run<T, T>([](T x) { return T(math::nearbyint(Acc(x))); });
    } else if (negative) {
      e.run<T, T>([scale](T x) { return T(math::nearbyint(Acc(x) / scale) * scale); });
    } else {
      e.run<T, T>([scale](T x) { return T(math::nearbyint(Acc(x) * scale) / scale); });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
