// aten::cumsum and aten::cumprod along one dim.
//
// PyTorch's rules: integral and bool inputs give Long, floating inputs
// their own dtype; `dtype=` converts the input first (and Bool is not a
// valid dtype= there). The running value is kept in PyTorch's CPU
// accumulation type (int64 for integers, double for float and double,
// float for Half/BFloat16) and rounded at every output.

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {

namespace {

// What the scan writes: T for floating T, int64 otherwise.
template <bool kFloating, typename T>
struct ScanOutOf {
  using type = T;
};
template <typename T>
struct ScanOutOf<false, T> {
  using type = int64_t;
};
template <typename T>
using ScanOut = typename ScanOutOf<is_floating_point_v<T>, T>::type;

template <bool kProd, typename A, typename B>
struct TagFor {
  using type = A;
};
template <typename A, typename B>
struct TagFor<false, A, B> {
  using type = B;
};

template <typename T, bool kProd>
Error scan_lines(KernelContext& ctx, const reduction::Plan& p, ScanOut<T>* PARE_RESTRICT y) {
  using Acc = acc_type_t<T>;
  using Out = ScanOut<T>;
  auto step = [](Acc a, Acc v) {
    if constexpr (kProd) {
      return arith::mul<Acc>(a, v);
    } else {
      return arith::add<Acc>(a, v);
    }
  };
  const Acc identity = kProd ? Acc(1) : Acc(0);
  const T* x = p.input.data_as<T>();
  const int64_t length = p.length;
  const int64_t inner = p.inner;
  if (p.outer == 0 || inner == 0 || length == 0) return Error::Ok;
  if (inner == 1) {
    for (int64_t o = 0; o < p.outer; ++o) {
      const T* PARE_RESTRICT row = x + o * length;
      Out* PARE_RESTRICT yrow = y + o * length;
      Acc acc = identity;
      for (int64_t k = 0; k < length; ++k) {
        acc = step(acc, convert<Acc>(row[k]));
        yrow[k] = convert<Out>(acc);
      }
    }
    return Error::Ok;
  }
  // Independent running values across each contiguous row: vectorises.
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(inner) * sizeof(Acc)));
  Acc* PARE_RESTRICT acc = static_cast<Acc*>(memory);
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) acc[i] = identity;
    for (int64_t k = 0; k < length; ++k) {
      const int64_t offset = (o * length + k) * inner;
      const T* PARE_RESTRICT row = x + offset;
      Out* PARE_RESTRICT yrow = y + offset;
      for (int64_t i = 0; i < inner; ++i) {
        acc[i] = step(acc[i], convert<Acc>(row[i]));
        yrow[i] = convert<Out>(acc[i]);
      }
    }
  }
  return Error::Ok;
}

// aten::cumsum / aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
template <bool kProd>
Error cumulative(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  using Tag = typename TagFor<kProd, tags::cumprod_kernel, tags::cumsum_kernel>::type;
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Optional<ScalarType> dtype = args.optional_dtype(2, "dtype");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, !dtype.has_value || dtype.value != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'dtype': Bool is not supported (as in PyTorch)");
  const ScalarType compute = dtype.has_value ? dtype.value : self.dtype;
  const bool integral = is_integral_type(compute, /*include_bool=*/true);
  const ScalarType out_dtype = dtype.has_value ? dtype.value : (integral ? ScalarType::Long : compute);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, self.size_span()));
  PARE_TRY_ASSIGN(const reduction::Plan p, reduction::plan(ctx, self, reduction::single_dim(self, dim), compute));
  Tensor result = *out;
  PARE_TRY(reduction::accumulate_in_int64(ctx, *out, integral, out_dtype, self.size_span(), &result));
  PARE_TRY(dispatch<Tag>(ctx, compute, [&](auto type_tag) -> Error {
    using T = typename decltype(type_tag)::type;
    return scan_lines<T, kProd>(ctx, p, result.data_as<ScanOut<T>>());
  }));
  if (result.storage != out->storage) PARE_TRY(convert_into(ctx, result, *out));
  return Error::Ok;
}

}  // namespace

// aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
Error aten_cumsum(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return cumulative<false>(ctx, inputs, outputs);
}

// aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
Error aten_cumprod(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return cumulative<true>(ctx, inputs, outputs);
}

}  // namespace kernels
}  // namespace pare
