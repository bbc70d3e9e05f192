// aten::any, aten::any.dim, aten::any.dims: is any element non-zero (NaN
// counts as true). The result is Bool, except for Byte inputs, which give
// Byte 0/1 as in PyTorch.

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {

namespace {

using reduction::DimMask;

Error any_impl(KernelArgs& args, const Tensor& self, const DimMask& mask, bool keepdim) {
  KernelContext& ctx = args.ctx();
  const ScalarType out_dtype = self.dtype == ScalarType::Byte ? ScalarType::Byte : ScalarType::Bool;
  const reduction::OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, shape.span()));
  PARE_TRY_ASSIGN(const reduction::Plan p, reduction::plan(ctx, self, mask, self.dtype));
  return PARE_DISPATCH(any_kernel, ctx, self.dtype, T, {
    // Both output dtypes are one byte holding 0 or 1.
    static_assert(sizeof(bool) == sizeof(uint8_t), "bool is one byte");
    return reduction::reduce_lines<T, reduction::AnyOp>(ctx, p, out->data_as<uint8_t>(),
                                                        [](bool a) { return static_cast<uint8_t>(a); });
  });
}

}  // namespace

// aten::any(Tensor self) -> Tensor
Error aten_any(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  return any_impl(args, self, reduction::all_dims(self), /*keepdim=*/false);
}

// aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
Error aten_any_dim(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  PARE_TRY(args.status());
  return any_impl(args, self, reduction::single_dim(self, dim), keepdim);
}

// aten::any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
//
// None reduces every dim; an empty list reduces none (as in PyTorch).
Error aten_any_dims(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  PARE_TRY(args.status());
  DimMask mask{};
  PARE_TRY(reduction::read_dims(args, 1, "dim", self, /*empty_means_all=*/false, &mask));
  return any_impl(args, self, mask, keepdim);
}

}  // namespace kernels
}  // namespace pare
