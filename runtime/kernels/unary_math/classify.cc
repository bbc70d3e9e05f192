// Floating-point classification: aten::isnan and aten::isinf.
//
// Every dtype in, Bool out, as in PyTorch: a floating element is tested in
// opmath_t (Half and BFloat16 widen exactly to float), and an integral or
// Bool tensor holds no NaN or infinity, so its result is all false.

#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {
namespace {

// out = pred(self) for floating elements, false for the others.
template <typename Tag, typename Pred>
Error classify(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Pred pred) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);  // the tags declare every dtype: no check before the dispatch
  e.add_input(Operand::of(self), "self");
  PARE_TRY(e.prepare(args.output(0), self.dtype, ScalarType::Bool));
  return dispatch<Tag>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    if constexpr (is_floating_point_v<T>) {
      using Acc = opmath_t<T>;
      e.run<bool, T>([pred](T x) { return pred(Acc(x)); });
    } else {
      e.run<bool, T>([](T) { return false; });
    }
    return Error::Ok;
  });
}

}  // namespace

// aten::isnan(Tensor self) -> Tensor
Error aten_isnan(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return classify<tags::isnan_kernel>(ctx, inputs, outputs, [](auto x) { return math::isnan(x); });
}

// aten::isinf(Tensor self) -> Tensor
Error aten_isinf(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return classify<tags::isinf_kernel>(ctx, inputs, outputs,
                                      [](auto x) { return math::abs(x) == static_cast<decltype(x)>(math::kInfinity); });
}

}  // namespace kernels
}  // namespace pare
