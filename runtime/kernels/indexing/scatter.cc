// Scatter-style indexing: aten::scatter (.src and .value),
// aten::scatter_add and aten::scatter_reduce.two, the functional forms of
// x.scatter_(dim, index, src), x.scatter_add_(...) and x.scatter_reduce_(...).
//
// out = a copy of self; then for every position p of `index`, the element
// of out at p with p[dim] replaced by index[p] takes src[p] (scatter) or
// combines it (add, prod, amax, amin, mean). Positions are visited in
// row-major order, as PyTorch's CPU kernel visits them, so the reductions
// of duplicate indices round in the same order (Half and BFloat16
// accumulate in float and round once). Every index is range-checked before
// any element moves. (Which of several duplicates plain scatter keeps is
// unspecified in PyTorch; here the last one wins.)

#include "runtime/core/format.h"
#include "runtime/kernels/binary_math/binary_math.h"
#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {
namespace {

// The checked shapes of one scatter: index, the source (src, or nothing
// for a value) and the output, all viewed with the same rank (a 0-dim
// tensor as [1]).
struct ScatterShape {
  size_t rank;
  int64_t dim;
  int64_t index_sizes[kMaxDim];
  int64_t index_strides[kMaxDim];
  int64_t src_strides[kMaxDim];
  int64_t out_size_dim;  // out.sizes[dim]: the bound of every index
};

// PyTorch's checks (scatter_gather_dtype_check, scatter_shape_check).
Error check_scatter(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    ScatterShape* s) {
  PARE_CHECK_OR_RETURN(ctx, index.dtype == ScalarType::Long || index.dtype == ScalarType::Int, Error::UnsupportedDtype,
                       "argument 'index' must be a Long or Int tensor, got %s", to_string(index.dtype));
  const size_t rank = self.dim == 0 ? 1 : self.dim;
  const size_t index_rank = index.dim == 0 ? 1 : index.dim;
  const size_t src_rank = src == nullptr ? rank : (src->dim == 0 ? 1 : src->dim);
  PARE_CHECK_OR_RETURN(ctx, index_rank == rank && src_rank == rank, Error::InvalidShape,
                       "arguments 'self' (%u dims), 'index' (%u) and 'src' must have the same number of dims",
                       static_cast<unsigned>(self.dim), static_cast<unsigned>(index.dim));
  s->rank = rank;
  s->dim = dim;
  bool shapes_ok = true;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = index.dim == 0 ? 1 : index.sizes[d];
    s->index_sizes[d] = n;
    s->index_strides[d] = index.dim == 0 ? 0 : index.strides[d];
    s->src_strides[d] = src == nullptr || src->dim == 0 ? 0 : src->strides[d];
    const int64_t self_size = self.dim == 0 ? 1 : self.sizes[d];
    const int64_t src_size = src == nullptr ? n : (src->dim == 0 ? 1 : src->sizes[d]);
    shapes_ok = shapes_ok && n <= src_size && (static_cast<int64_t>(d) == dim || n <= self_size);
  }
  PARE_CHECK_OR_RETURN(ctx, shapes_ok, Error::InvalidShape,
                       "argument 'index' with sizes %s must be no larger than 'self' (sizes %s) apart from dim %lld, "
                       "and no larger than 'src'",
                       sizes_to_string(index.size_span()).text, sizes_to_string(self.size_span()).text,
                       static_cast<long long>(dim));
  s->out_size_dim = self.dim == 0 ? 1 : self.sizes[dim];
  return Error::Ok;
}

// Calls fn(index_position, src_offset, out_offset_without_dim) for every
// position of the index, in row-major order. `out_strides` is out's.
template <typename Fn>
PARE_ALWAYS_INLINE void for_each_position(const ScatterShape& s, const int64_t* out_strides, Fn fn) {
  int64_t out_without_dim[kMaxDim] = {};
  for (size_t d = 0; d < s.rank; ++d) out_without_dim[d] = static_cast<int64_t>(d) == s.dim ? 0 : out_strides[d];
  indexing::walk(s.rank, s.index_sizes, s.index_strides, s.src_strides, out_without_dim, fn);
}

template <typename I>
Error check_indices(KernelContext& ctx, const ScatterShape& s, const I* idx, const int64_t* out_strides) {
  Error status = Error::Ok;
  int64_t bad = 0;
  for_each_position(s, out_strides, [&](int64_t i, int64_t, int64_t) {
    const int64_t v = static_cast<int64_t>(idx[i]);
    if ((v < 0 || v >= s.out_size_dim) && status == Error::Ok) {
      status = Error::IndexOutOfRange;
      bad = v;
    }
  });
  PARE_CHECK_OR_RETURN(ctx, status == Error::Ok, Error::IndexOutOfRange,
                       "argument 'index': index %lld is out of bounds for dim %lld with size %lld",
                       static_cast<long long>(bad), static_cast<long long>(s.dim),
                       static_cast<long long>(s.out_size_dim));
  return Error::Ok;
}

// How a scattered element combines with its target, in A (T, or float for
// a Half or BFloat16 reduction: below). kWide: the op reduces, so Half and
// BFloat16 accumulate in float as PyTorch's CPU kernel does.
struct Assign {
  static constexpr bool kWide = false;
  template <typename A, typename T>
  static void apply(A* target, T v) {
    *target = A(v);
  }
};
struct Add {
  static constexpr bool kWide = true;
  template <typename A, typename T>
  static void apply(A* target, T v) {
    *target = A(arith::add<opmath_t<T>>(opmath_t<T>(*target), opmath_t<T>(v)));
  }
};
struct Multiply {
  static constexpr bool kWide = true;
  template <typename A, typename T>
  static void apply(A* target, T v) {
    if constexpr (is_same_v<T, bool>) {
      *target = *target && v;
    } else {
      *target = A(arith::mul<opmath_t<T>>(opmath_t<T>(*target), opmath_t<T>(v)));
    }
  }
};
// amax and amin: a NaN source wins; a NaN target stays (max(t, v) keeps
// t unless t < v), ties keep the target, as PyTorch's ReduceMaximum.
template <bool kMax>
struct Extreme {
  static constexpr bool kWide = true;
  template <typename A, typename T>
  static void apply(A* target, T v) {
    const A x = A(v);
    if constexpr (is_floating_point_v<T>) {
      if (x != x) {
        *target = x;
        return;
      }
    }
    if (kMax ? *target < x : x < *target) *target = x;
  }
};

// o[...] op= src[...], or the value `fill` when src is null; o has strides
// out_strides (out's, 0 for a 0-dim out's one dim), its element type A is
// T, or opmath_t<T> for a reduction that accumulates wider (below).
template <typename Op, typename A, typename T, typename I>
void scatter_elements(const ScatterShape& s, const I* idx, const T* src, T fill, A* o, const int64_t* out_strides) {
  const int64_t step = out_strides[s.dim];
  for_each_position(s, out_strides, [&](int64_t i, int64_t j, int64_t k) {
    Op::apply(o + k + static_cast<int64_t>(idx[i]) * step, src != nullptr ? src[j] : fill);
  });
}

// The scatter of `index` (Long or Int) into out, which holds self already.
// A Half or BFloat16 reduction accumulates in float and rounds each element
// once at the end, as PyTorch's CPU kernel does (300 additions of 0.1 make
// 30, not the 29.28 of rounding after every addition).
template <typename Op, typename T, typename I>
Error scatter_into(KernelContext& ctx, const ScatterShape& s, const I* idx, const T* src, T fill, const Tensor& out,
                   const int64_t* out_strides) {
  if constexpr (Op::kWide && is_reduced_float_v<T>) {
    const size_t n = out.numel();  // out is the op's own contiguous result
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(n * sizeof(float)));
    float* wide = static_cast<float*>(memory);
    T* o = out.data_as<T>();
    for (size_t e = 0; e < n; ++e) wide[e] = float(o[e]);
    scatter_elements<Op, float, T>(s, idx, src, fill, wide, out_strides);
    for (size_t e = 0; e < n; ++e) o[e] = T(wide[e]);
  } else {
    scatter_elements<Op, T, T>(s, idx, src, fill, out.data_as<T>(), out_strides);
  }
  return Error::Ok;
}

// Checks `index` (Long or Int) and scatters with Op: fn(idx) gets the
// typed index pointer once the indices are checked.
template <typename Fn>
Error with_checked_index(KernelContext& ctx, const ScatterShape& s, const Tensor& index, const int64_t* out_strides,
                         Fn fn) {
  if (index.dtype == ScalarType::Long) {
    PARE_TRY(check_indices(ctx, s, index.data_as<int64_t>(), out_strides));
    return fn(index.data_as<int64_t>());
  }
  PARE_TRY(check_indices(ctx, s, index.data_as<int32_t>(), out_strides));
  return fn(index.data_as<int32_t>());
}

// The shared beginning: src's dtype, an empty index (out = self, as
// PyTorch returns then whatever index's rank and dtype), the shapes, out
// allocated. Sets *done when nothing is left to do.
Error prepare_scatter(KernelContext& ctx, KernelArgs& args, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor* src, ScatterShape* s, Tensor** out, bool* done) {
  if (src != nullptr) {
    PARE_CHECK_OR_RETURN(ctx, src->dtype == self.dtype, Error::InvalidArgument,
                         "argument 'src' has dtype %s but 'self' is %s; they must match", to_string(src->dtype),
                         to_string(self.dtype));
  }
  *done = true;
  if (index.numel() == 0) {
    PARE_TRY_ASSIGN(*out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
    return (*out)->numel() == 0 ? Error::Ok : convert_into(ctx, self, **out);
  }
  PARE_TRY(check_scatter(ctx, self, dim, index, src, s));
  PARE_TRY_ASSIGN(*out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  *done = (*out)->numel() == 0;
  return Error::Ok;
}

// The shared body of scatter and scatter_add: out = self, then the scatter
// of src (or `value`).
template <typename Tag, typename Op>
Error scatter_op(KernelContext& ctx, KernelArgs& args, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor* src, const Scalar* value) {
  ScatterShape s{};
  Tensor* out = nullptr;
  bool done = false;
  PARE_TRY(prepare_scatter(ctx, args, self, dim, index, src, &s, &out, &done));
  if (done) return Error::Ok;
  int64_t out_strides[kMaxDim] = {};
  for (size_t d = 0; d < out->dim; ++d) out_strides[d] = out->strides[d];
  return dispatch<Tag>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    T fill{};
    if (value != nullptr) {
      PARE_CHECK_OR_RETURN(ctx, indexing::fits<T>(*value), Error::InvalidArgument,
                           "argument 'value': the value cannot be converted to %s without overflow",
                           to_string(self.dtype));
      fill = value->to<T>();
    }
    PARE_TRY(convert_into(ctx, self, *out));
    const T* src_data = src != nullptr ? src->data_as<T>() : nullptr;
    return with_checked_index(ctx, s, index, out_strides, [&](const auto* idx) {
      return scatter_into<Op, T>(ctx, s, idx, src_data, fill, *out, out_strides);
    });
  });
}

// scatter.src and scatter_add: (self, dim, index, src).
template <typename Tag, typename Op>
Error scatter_src_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  const Tensor& src = args.tensor(3, "src");
  PARE_TRY(args.status());
  return scatter_op<Tag, Op>(ctx, args, self, dim, index, &src, nullptr);
}

// scatter_reduce's `reduce`.
enum class Reduction { kSum, kProd, kMean, kAmax, kAmin };

// PyTorch's get_reduction_enum: "max" and "min" are accepted for amax and amin.
bool parse_reduction(const char* name, Reduction* r) {
  if (string_equal(name, "sum")) {
    *r = Reduction::kSum;
  } else if (string_equal(name, "prod")) {
    *r = Reduction::kProd;
  } else if (string_equal(name, "mean")) {
    *r = Reduction::kMean;
  } else if (string_equal(name, "amax") || string_equal(name, "max")) {
    *r = Reduction::kAmax;
  } else if (string_equal(name, "amin") || string_equal(name, "min")) {
    *r = Reduction::kAmin;
  } else {
    return false;
  }
  return true;
}

// What include_self=False puts first at every scattered position (PyTorch
// scatters it there before reducing): the reduction's identity, -inf/+inf
// for floating amax/amin, the type's limits for integers.
template <typename T>
T reduction_identity(Reduction r) {
  switch (r) {
    case Reduction::kProd: return T(1);
    case Reduction::kAmax:
    case Reduction::kAmin: {
      const bool max = r == Reduction::kAmax;
      if constexpr (is_same_v<T, bool>) {
        return !max;
      } else if constexpr (is_floating_point_v<T>) {
        return T(max ? -__builtin_inff() : __builtin_inff());
      } else {
        return max ? lowest_value<T>() : highest_value<T>();
      }
    }
    case Reduction::kSum:
    case Reduction::kMean: break;
  }
  return T(0);
}

// mean's division, as PyTorch does it after the sum: count = 1 (with self)
// or 0, plus one per scattered element, in T (float for Half and BFloat16,
// rounded once to T; integers wrap); 0 counts become 1; out / count, floor
// division for integers.
template <typename T, typename I>
Error divide_by_counts(KernelContext& ctx, const ScatterShape& s, const I* idx, bool include_self, const Tensor& out,
                       const int64_t* out_strides) {
  using C = opmath_t<T>;  // T itself for integers
  const size_t n = out.numel();
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(n * sizeof(C)));
  C* counts = static_cast<C*>(memory);
  for (size_t e = 0; e < n; ++e) counts[e] = C(include_self ? 1 : 0);
  scatter_elements<Add, C, T>(s, idx, static_cast<const T*>(nullptr), T(1), counts, out_strides);
  T* o = out.data_as<T>();
  for (size_t e = 0; e < n; ++e) {
    T c = T(counts[e]);
    if (c == T(0)) c = T(1);
    if constexpr (is_integral_v<T>) {
      o[e] = binary_math::div_floor_int<T>(o[e], c);
    } else {
      o[e] = T(opmath_t<T>(o[e]) / opmath_t<T>(c));
    }
  }
  return Error::Ok;
}

}  // namespace

// aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
Error aten_scatter_src(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return scatter_src_op<tags::scatter_kernel, Assign>(ctx, inputs, outputs);
}

// aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
Error aten_scatter_value(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  const Scalar value = args.scalar(3, "value");
  PARE_TRY(args.status());
  return scatter_op<tags::scatter_kernel, Assign>(ctx, args, self, dim, index, nullptr, &value);
}

// aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
Error aten_scatter_add(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return scatter_src_op<tags::scatter_add_kernel, Add>(ctx, inputs, outputs);
}

// aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *,
//   bool include_self=True) -> Tensor
Error aten_scatter_reduce_two(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 5, 6, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  const Tensor& src = args.tensor(3, "src");
  const char* reduce = args.optional_string(4, "reduce");
  const bool include_self = args.boolean_or(5, "include_self", true);
  PARE_TRY(args.status());
  Reduction r = Reduction::kSum;
  PARE_CHECK_OR_RETURN(ctx, reduce != nullptr && parse_reduction(reduce, &r), Error::InvalidArgument,
                       "argument 'reduce' must be one of sum, prod, mean, amax or amin, got '%s'",
                       reduce != nullptr ? reduce : "None");
  PARE_CHECK_OR_RETURN(ctx, !(r == Reduction::kMean && self.dtype == ScalarType::Bool), Error::UnsupportedDtype,
                       "argument 'reduce': mean of Bool tensors is not supported (as in torch); convert self and src "
                       "to an integer or floating dtype first");
  ScatterShape s{};
  Tensor* out = nullptr;
  bool done = false;
  PARE_TRY(prepare_scatter(ctx, args, self, dim, index, &src, &s, &out, &done));
  if (done) return Error::Ok;
  int64_t out_strides[kMaxDim] = {};
  for (size_t d = 0; d < out->dim; ++d) out_strides[d] = out->strides[d];
  return dispatch<tags::scatter_reduce_kernel>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    PARE_TRY(convert_into(ctx, self, *out));
    const T* from = src.data_as<T>();
    return with_checked_index(ctx, s, index, out_strides, [&](const auto* idx) -> Error {
      if (!include_self) {
        const Error e = scatter_into<Assign, T>(ctx, s, idx, static_cast<const T*>(nullptr), reduction_identity<T>(r),
                                                *out, out_strides);
        if (e != Error::Ok) return e;
      }
      switch (r) {
        case Reduction::kSum: return scatter_into<Add, T>(ctx, s, idx, from, T(0), *out, out_strides);
        case Reduction::kProd: return scatter_into<Multiply, T>(ctx, s, idx, from, T(0), *out, out_strides);
        case Reduction::kAmax: return scatter_into<Extreme<true>, T>(ctx, s, idx, from, T(0), *out, out_strides);
        case Reduction::kAmin: return scatter_into<Extreme<false>, T>(ctx, s, idx, from, T(0), *out, out_strides);
        case Reduction::kMean: break;
      }
      if constexpr (is_same_v<T, bool>) {
        return Error::Ok;  // refused above
      } else {
        const Error e = scatter_into<Add, T>(ctx, s, idx, from, T(0), *out, out_strides);
        if (e != Error::Ok) return e;
        return divide_by_counts<T>(ctx, s, idx, include_self, *out, out_strides);
      }
    });
  });
}

}  // namespace kernels
}  // namespace pare
