// Arithmetic reductions: aten::sum.dim_IntList, aten::mean.dim, aten::mean,
// aten::prod.dim_int, aten::prod.
//
// PyTorch's dtype rules: sum and prod of integral or bool tensors give Long
// (accumulated in int64, wrapping), of floating tensors the same dtype
// (accumulated in opmath_t: float for Half/BFloat16). mean needs a floating
// dtype. A `dtype=` argument converts the input to that dtype first and is
// the result's dtype.

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {

namespace {

using reduction::DimMask;
using reduction::OutputShape;
using reduction::Plan;

// sum and prod: same dtype rules, different operator.
template <typename Tag, template <typename> class OpT>
Error sum_like(KernelArgs& args, const Tensor& self, const DimMask& mask, bool keepdim, Optional<ScalarType> dtype) {
  KernelContext& ctx = args.ctx();
  const ScalarType compute = dtype.has_value ? dtype.value : self.dtype;
  const bool integral = is_integral_type(compute, /*include_bool=*/true);
  const ScalarType out_dtype = dtype.has_value ? dtype.value : (integral ? ScalarType::Long : compute);
  const OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, shape.span()));
  PARE_TRY_ASSIGN(const Plan p, reduction::plan(ctx, self, mask, compute));
  Tensor result = *out;
  PARE_TRY(reduction::accumulate_in_int64(ctx, *out, integral, out_dtype, shape.span(), &result));
  PARE_TRY(dispatch<Tag>(ctx, compute, [&](auto type_tag) -> Error {
    using T = typename decltype(type_tag)::type;
    if constexpr (is_integral_v<T> || is_same_v<T, bool>) {
      return reduction::reduce_lines<T, OpT<int64_t>>(ctx, p, result.data_as<int64_t>(), [](int64_t a) { return a; });
    } else {
      using Acc = opmath_t<T>;
      return reduction::reduce_lines<T, OpT<Acc>>(ctx, p, result.data_as<T>(), [](Acc a) { return convert<T>(a); });
    }
  }));
  if (result.storage != out->storage) PARE_TRY(convert_into(ctx, result, *out));
  return Error::Ok;
}

Error mean_impl(KernelArgs& args, const Tensor& self, const DimMask& mask, bool keepdim, Optional<ScalarType> dtype) {
  KernelContext& ctx = args.ctx();
  const ScalarType compute = dtype.has_value ? dtype.value : self.dtype;
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(compute), Error::UnsupportedDtype,
                       "could not infer output dtype: %s must be a floating point dtype, got %s "
                       "(pass dtype=torch.float32 to average integers)",
                       dtype.has_value ? "argument 'dtype'" : "argument 'self'", to_string(compute));
  const OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), compute, shape.span()));
  PARE_TRY_ASSIGN(const Plan p, reduction::plan(ctx, self, mask, compute));
  // Sum in opmath, divide, round once (PyTorch's CPU mean for every floating
  // dtype). An empty reduction gives 0 / 0 = NaN, as in torch.
  //
  // A mean over contiguous elements (global average pooling) has a dispatch
  // of its own ahead of the general one, as nn.MaxPool2d(2)'s loop does
  // (runtime/registry/dispatch.h): a model whose means all take it traces
  // mean_rows_kernel alone, and its runtime carries no column loop.
  if (p.inner == 1 && kernel_dtype_selected(tags::mean_rows_kernel::id, compute)) {
    return dispatch<tags::mean_rows_kernel>(ctx, compute, [&](auto type) -> Error {
      using T = typename decltype(type)::type;
      using Acc = opmath_t<T>;
      const Acc count = static_cast<Acc>(p.length);
      reduction::reduce_rows<T, reduction::SumOp<Acc>>(p, out->data_as<T>(),
                                                       [count](Acc a) { return convert<T>(a / count); });
      return Error::Ok;
    });
  }
  return PARE_DISPATCH(mean_kernel, ctx, compute, T, {
    using Acc = opmath_t<T>;
    const Acc count = static_cast<Acc>(p.length);
    return reduction::reduce_lines<T, reduction::SumOp<Acc>>(ctx, p, out->data_as<T>(),
                                                             [count](Acc a) { return convert<T>(a / count); });
  });
}

using Reduction = Error (*)(KernelArgs& args, const Tensor& self, const DimMask& mask, bool keepdim,
                            Optional<ScalarType> dtype);

// An op of (Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType?
// dtype=None), sum.dim_IntList's and mean.dim's schema: reads the arguments
// (an empty or absent dim list reduces every dim) and runs kReduce.
template <Reduction kReduce>
Error over_dim_list(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  const Optional<ScalarType> dtype = args.optional_dtype(3, "dtype");
  PARE_TRY(args.status());
  DimMask mask{};
  PARE_TRY(reduction::read_dims(args, 1, "dim", self, /*empty_means_all=*/true, &mask));
  return kReduce(args, self, mask, keepdim, dtype);
}

}  // namespace

// aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
Error aten_sum_dim_IntList(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return over_dim_list<sum_like<tags::sum_kernel, reduction::SumOp>>(ctx, inputs, outputs);
}

// aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
Error aten_prod_dim_int(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  const Optional<ScalarType> dtype = args.optional_dtype(3, "dtype");
  PARE_TRY(args.status());
  return sum_like<tags::prod_kernel, reduction::ProdOp>(args, self, reduction::single_dim(self, dim), keepdim, dtype);
}

// aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
//
// Over every element, into a 0-dim result; an empty input gives 1.
Error aten_prod(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Optional<ScalarType> dtype = args.optional_dtype(1, "dtype");
  PARE_TRY(args.status());
  return sum_like<tags::prod_kernel, reduction::ProdOp>(args, self, reduction::all_dims(self), /*keepdim=*/false,
                                                        dtype);
}

// aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
Error aten_mean_dim(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return over_dim_list<mean_impl>(ctx, inputs, outputs);
}

// aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
Error aten_mean(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Optional<ScalarType> dtype = args.optional_dtype(1, "dtype");
  PARE_TRY(args.status());
  return mean_impl(args, self, reduction::all_dims(self), /*keepdim=*/false, dtype);
}

}  // namespace kernels
}  // namespace pare
