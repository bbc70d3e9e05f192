// Extremum reductions: aten::amax, aten::amin, aten::max, aten::min (values
// only) and aten::argmax, aten::argmin, aten::max.dim, aten::min.dim
// (indices). NaN is the greatest and the least value, as in PyTorch: it
// propagates to amax/amin, and argmax/argmin return the first NaN's index.
// Ties give the first index.

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {

namespace {

using reduction::DimMask;
using reduction::OutputShape;
using reduction::Plan;

template <bool kFirst, typename A, typename B>
struct Select {
  using type = A;
};
template <typename A, typename B>
struct Select<false, A, B> {
  using type = B;
};

// Rejects reductions over a dim of size 0 (max has no identity).
Error check_nonempty(KernelContext& ctx, const Tensor& self, const DimMask& mask) {
  const int64_t empty_dim = reduction::first_empty_reduced_dim(self, mask);
  PARE_CHECK_OR_RETURN(ctx, empty_dim < 0, Error::InvalidShape,
                       "argument 'self': expected reduction dim %lld to have non-zero size, got sizes %s",
                       static_cast<long long>(empty_dim), sizes_to_string(self.size_span()).text);
  return Error::Ok;
}

// kMax is a template argument so a build without amin (or amax) has no code for it.
template <bool kMax>
Error amax_amin(KernelArgs& args, const Tensor& self, const DimMask& mask, bool keepdim) {
  KernelContext& ctx = args.ctx();
  PARE_TRY(check_nonempty(ctx, self, mask));
  const OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, shape.span()));
  PARE_TRY_ASSIGN(const Plan p, reduction::plan(ctx, self, mask, self.dtype));
  return PARE_DISPATCH(minmax_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    auto finish = [](Acc a) { return convert<T>(a); };
    using Op = typename Select<kMax, reduction::MaxOp<Acc>, reduction::MinOp<Acc>>::type;
    return reduction::reduce_lines<T, Op>(ctx, p, out->data_as<T>(), finish);
  });
}

// Index (and value) of the extremum of each [o, :, i] line; length > 0.
template <typename T, bool kMax>
Error arg_lines(KernelContext& ctx, const Plan& p, T* values, int64_t* indices) {
  using Acc = opmath_t<T>;
  auto better = [](Acc v, Acc best) {
    const bool nan_wins = reduction::is_nan(v) && !reduction::is_nan(best);
    if constexpr (kMax) {
      return v > best || nan_wins;
    } else {
      return v < best || nan_wins;
    }
  };
  const T* x = p.input.data_as<T>();
  const int64_t length = p.length;
  const int64_t inner = p.inner;
  if (p.outer == 0 || inner == 0) return Error::Ok;
  if (inner == 1) {
    for (int64_t o = 0; o < p.outer; ++o) {
      const T* row = x + o * length;
      Acc best = convert<Acc>(row[0]);
      int64_t index = 0;
      for (int64_t k = 1; k < length; ++k) {
        const Acc v = convert<Acc>(row[k]);
        if (better(v, best)) {
          best = v;
          index = k;
        }
      }
      indices[o] = index;
      if (values != nullptr) values[o] = convert<T>(best);
    }
    return Error::Ok;
  }
  // Whole rows at a time: branch-free selects across the contiguous row.
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(inner) * sizeof(Acc)));
  Acc* PARE_RESTRICT best = static_cast<Acc*>(memory);
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* base = x + o * length * inner;
    int64_t* PARE_RESTRICT index = indices + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      best[i] = convert<Acc>(base[i]);
      index[i] = 0;
    }
    for (int64_t k = 1; k < length; ++k) {
      const T* PARE_RESTRICT row = base + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const Acc v = convert<Acc>(row[i]);
        const bool b = better(v, best[i]);
        best[i] = b ? v : best[i];
        index[i] = b ? k : index[i];
      }
    }
    if (values != nullptr) {
      for (int64_t i = 0; i < inner; ++i) values[o * inner + i] = convert<T>(best[i]);
    }
  }
  return Error::Ok;
}

// argmax/argmin (values == nullptr) and max.dim/min.dim.
template <bool kMax>
Error arg_reduce(KernelContext& ctx, const Tensor& self, const DimMask& mask, Tensor* values, Tensor* indices) {
  PARE_TRY_ASSIGN(const Plan p, reduction::plan(ctx, self, mask, self.dtype));
  return PARE_DISPATCH(arg_reduce_kernel, ctx, self.dtype, T, {
    T* v = values != nullptr ? values->data_as<T>() : nullptr;
    return arg_lines<T, kMax>(ctx, p, v, indices->data_as<int64_t>());
  });
}

// aten::argmax / aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
template <bool kMax>
Error argmax_argmin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool has_dim = args.has(1);
  const int64_t dim = has_dim ? args.dim(1, "dim", self.dim) : 0;
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'self': %s is not supported for Bool tensors (as in PyTorch)",
                       kMax ? "argmax" : "argmin");
  DimMask mask{};
  OutputShape shape{};
  if (has_dim) {
    mask = reduction::single_dim(self, dim);
    PARE_TRY(check_nonempty(ctx, self, mask));
    shape = reduction::reduced_shape(self, mask, keepdim);
  } else {
    // The index into the flattened tensor; keepdim keeps every dim as 1.
    PARE_CHECK_OR_RETURN(ctx, self.numel() > 0, Error::InvalidShape,
                         "argument 'dim': a reduction dim must be given for an empty input (sizes %s)",
                         sizes_to_string(self.size_span()).text);
    mask = reduction::all_dims(self);
    shape.dim = keepdim ? self.dim : 0;
    for (size_t d = 0; d < shape.dim; ++d) shape.sizes[d] = 1;
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Long, shape.span()));
  return arg_reduce<kMax>(ctx, self, mask, nullptr, out);
}

// aten::max.dim / aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
template <bool kMax>
Error max_min_dim(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 2);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  PARE_TRY(args.status());
  const DimMask mask = reduction::single_dim(self, dim);
  PARE_TRY(check_nonempty(ctx, self, mask));
  const OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * values, ctx.allocate_output(args.output(0), self.dtype, shape.span()));
  PARE_TRY_ASSIGN(Tensor * indices, ctx.allocate_output(args.output(1), ScalarType::Long, shape.span()));
  return arg_reduce<kMax>(ctx, self, mask, values, indices);
}

// aten::max / aten::min(Tensor self) -> Tensor
template <bool kMax>
Error max_min_all(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.numel() > 0, Error::InvalidShape,
                       "argument 'self': the input is empty (sizes %s); specify the reduction dim with "
                       "aten::%s.dim",
                       sizes_to_string(self.size_span()).text, kMax ? "max" : "min");
  return amax_amin<kMax>(args, self, reduction::all_dims(self), /*keepdim=*/false);
}

// aten::amax / aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
template <bool kMax>
Error amax_amin_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool keepdim = args.boolean_or(2, "keepdim", false);
  PARE_TRY(args.status());
  DimMask mask{};
  PARE_TRY(reduction::read_dims(args, 1, "dim", self, /*empty_means_all=*/true, &mask));
  return amax_amin<kMax>(args, self, mask, keepdim);
}

}  // namespace

// aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
Error aten_amax(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return amax_amin_op<true>(ctx, inputs, outputs);
}

// aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
Error aten_amin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return amax_amin_op<false>(ctx, inputs, outputs);
}

// aten::max(Tensor self) -> Tensor
Error aten_max(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_min_all<true>(ctx, inputs, outputs);
}

// aten::min(Tensor self) -> Tensor
Error aten_min(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_min_all<false>(ctx, inputs, outputs);
}

// aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
Error aten_max_dim(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_min_dim<true>(ctx, inputs, outputs);
}

// aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
Error aten_min_dim(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_min_dim<false>(ctx, inputs, outputs);
}

// aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
Error aten_argmax(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return argmax_argmin<true>(ctx, inputs, outputs);
}

// aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
Error aten_argmin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return argmax_argmin<false>(ctx, inputs, outputs);
}

}  // namespace kernels
}  // namespace pare
