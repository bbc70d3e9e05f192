// aten::relu: the pattern for unary elementwise ops (Elementwise<1>).

#include "runtime/kernels/common/elementwise.h"

namespace pare {
namespace kernels {

// aten::relu(Tensor self) -> Tensor
Error aten_relu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  const ScalarType dtype = self.dtype;
  // Check before allocating so an unsupported dtype fails with the tag's
  // message rather than after work was done.
  PARE_CHECK_OR_RETURN(ctx, dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'self': relu is not defined for Bool tensors");
  Elementwise<1> e(ctx);
  e.add_input(Operand::of(self), "self");
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return PARE_DISPATCH(relu_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if constexpr (is_floating_point_v<T>) {
      // NaN propagates, as torch.relu (clamp_min) does.
      e.run<T, T>([](T x) { return Acc(x) != Acc(x) || Acc(x) > Acc(0) ? x : T(Acc(0)); });
    } else {
      e.run<T, T>([](T x) { return x > T(0) ? x : T(0); });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
