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

struct Floor {
  template <typename A>
  A operator()(A x) const {
    return math::floor(x);
  }
};
struct Ceil {
  template <typename A>
  A operator()(A x) const {
    return math::ceil(x);
  }
};
struct Trunc {
  template <typename A>
  A operator()(A x) const {
    return math::trunc(x);
  }
};
struct RoundHalfEven {
  template <typename A>
  A operator()(A x) const {
    return math::nearbyint(x);
  }
};

// floor/ceil/trunc/round: integral types unchanged, floating ones through `fn`
// in opmath_t<T>.
template <typename Tag, typename Fn>
Error rounding_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Fn fn) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  PARE_TRY(unary_math::prepare_same_dtype<Tag>(ctx, e, self, args.output(0)));
  return dispatch<Tag>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_floating_point_v<T>) {
      e.run<T, T>([fn](T x) { return T(fn(Acc(x))); });
    } else {
      e.run<T, T>([](T x) { return x; });
    }
    return Error::Ok;
  });
}

}  // namespace

// aten::floor(Tensor self) -> Tensor
Error aten_floor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::floor_kernel>(ctx, inputs, outputs, Floor{});
}

// aten::ceil(Tensor self) -> Tensor
Error aten_ceil(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::ceil_kernel>(ctx, inputs, outputs, Ceil{});
}

// aten::trunc(Tensor self) -> Tensor
Error aten_trunc(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::trunc_kernel>(ctx, inputs, outputs, Trunc{});
}

// aten::round(Tensor self) -> Tensor
Error aten_round(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return rounding_op<tags::round_kernel>(ctx, inputs, outputs, RoundHalfEven{});
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
