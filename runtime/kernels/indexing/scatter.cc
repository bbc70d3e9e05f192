// Scatter-style indexing: aten::scatter (.src and .value) and
// aten::scatter_add, the functional forms of x.scatter_(dim, index, src)
// and x.scatter_add_(...).
//
// out = a copy of self; then for every position p of `index`, the element
// of out at p with p[dim] replaced by index[p] takes src[p] (scatter) or
// adds it (scatter_add). Positions are visited in row-major order, as
// PyTorch's CPU kernel visits them, so the additions of duplicate indices
// round in the same order (Half and BFloat16 accumulate in float). Every index is range-checked before any element
// moves. (Which of several duplicates plain scatter keeps is unspecified in
// PyTorch; here the last one wins.)

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
  int64_t count = 1;
  for (size_t d = 0; d < s.rank; ++d) count *= s.index_sizes[d];
  int64_t counter[kMaxDim] = {};
  int64_t index_offset = 0;
  int64_t src_offset = 0;
  int64_t out_offset = 0;
  for (int64_t it = 0; it < count; ++it) {
    fn(index_offset, src_offset, out_offset);
    for (size_t d = s.rank; d-- > 0;) {
      const int64_t os = static_cast<int64_t>(d) == s.dim ? 0 : out_strides[d];
      index_offset += s.index_strides[d];
      src_offset += s.src_strides[d];
      out_offset += os;
      if (++counter[d] < s.index_sizes[d]) break;
      index_offset -= s.index_strides[d] * s.index_sizes[d];
      src_offset -= s.src_strides[d] * s.index_sizes[d];
      out_offset -= os * s.index_sizes[d];
      counter[d] = 0;
    }
  }
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

// o[...] = src[...] (kAdd false) or o[...] += src[...] (kAdd true), or the
// value `fill` when src is null; o has strides out_strides (out's, 0 for a
// 0-dim out's one dim), its element type A is
// T, or opmath_t<T> for a scatter_add that accumulates wider (below).
template <bool kAdd, typename A, typename T, typename I>
void scatter_elements(const ScatterShape& s, const I* idx, const T* src, T fill, A* o, const int64_t* out_strides) {
  const int64_t step = out_strides[s.dim];
  for_each_position(s, out_strides, [&](int64_t i, int64_t j, int64_t k) {
    A* target = o + k + static_cast<int64_t>(idx[i]) * step;
    const T v = src != nullptr ? src[j] : fill;
    if constexpr (kAdd) {
      *target = A(arith::add<opmath_t<T>>(opmath_t<T>(*target), opmath_t<T>(v)));
    } else {
      *target = v;
    }
  });
}

// scatter of `index` (Long or Int) into out, which holds self already. A
// Half or BFloat16 scatter_add accumulates in float and rounds each element
// once at the end, as PyTorch's CPU kernel does (300 additions of 0.1 make
// 30, not the 29.28 of rounding after every addition).
template <bool kAdd, typename T, typename I>
Error scatter_into(KernelContext& ctx, const ScatterShape& s, const I* idx, const T* src, T fill, const Tensor& out,
                   const int64_t* out_strides) {
  if constexpr (kAdd && is_reduced_float_v<T>) {
    const size_t n = out.numel();  // out is the op's own contiguous result
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(n * sizeof(float)));
    float* wide = static_cast<float*>(memory);
    T* o = out.data_as<T>();
    for (size_t e = 0; e < n; ++e) wide[e] = float(o[e]);
    scatter_elements<kAdd, float, T>(s, idx, src, fill, wide, out_strides);
    for (size_t e = 0; e < n; ++e) o[e] = T(wide[e]);
  } else {
    scatter_elements<kAdd, T, T>(s, idx, src, fill, out.data_as<T>(), out_strides);
  }
  return Error::Ok;
}

// The shared body: out = self, then the scatter of src (or `value`).
template <typename Tag, bool kAdd>
Error scatter_op(KernelContext& ctx, KernelArgs& args, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor* src, const Scalar* value) {
  if (src != nullptr) {
    PARE_CHECK_OR_RETURN(ctx, src->dtype == self.dtype, Error::InvalidArgument,
                         "argument 'src' has dtype %s but 'self' is %s; they must match", to_string(src->dtype),
                         to_string(self.dtype));
  }
  if (index.numel() == 0) {  // PyTorch returns self then, whatever index's rank and dtype
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
    return out->numel() == 0 ? Error::Ok : convert_into(ctx, self, *out);
  }
  ScatterShape s{};
  PARE_TRY(check_scatter(ctx, self, dim, index, src, &s));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
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
    if (index.dtype == ScalarType::Long) {
      PARE_TRY(check_indices(ctx, s, index.data_as<int64_t>(), out_strides));
      return scatter_into<kAdd, T>(ctx, s, index.data_as<int64_t>(), src_data, fill, *out, out_strides);
    }
    PARE_TRY(check_indices(ctx, s, index.data_as<int32_t>(), out_strides));
    return scatter_into<kAdd, T>(ctx, s, index.data_as<int32_t>(), src_data, fill, *out, out_strides);
  });
}

// scatter.src and scatter_add: (self, dim, index, src).
template <typename Tag, bool kAdd>
Error scatter_src_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  const Tensor& src = args.tensor(3, "src");
  PARE_TRY(args.status());
  return scatter_op<Tag, kAdd>(ctx, args, self, dim, index, &src, nullptr);
}

}  // namespace

// aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
Error aten_scatter_src(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return scatter_src_op<tags::scatter_kernel, false>(ctx, inputs, outputs);
}

// aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
Error aten_scatter_value(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  const Scalar value = args.scalar(3, "value");
  PARE_TRY(args.status());
  return scatter_op<tags::scatter_kernel, false>(ctx, args, self, dim, index, nullptr, &value);
}

// aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
Error aten_scatter_add(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return scatter_src_op<tags::scatter_add_kernel, true>(ctx, inputs, outputs);
}

}  // namespace kernels
}  // namespace pare
