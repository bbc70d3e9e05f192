// Gather-style indexing: aten::index_select, aten::gather and
// aten::index.Tensor (advanced indexing with integer index tensors).
//
// The bodies move elements as Bits<T> (the unsigned type of T's width), so
// dtypes of one width share one helper; contiguous blocks are copied whole.
// Every index is range-checked before any element moves.

#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {

namespace {

using indexing::Bits;

// y[o, j, :] = x[o, index[j], :] for x [outer, size, inner] and y
// [outer, n, inner], both contiguous.
template <typename U>
void select_blocks(const U* x, U* PARE_RESTRICT y, int64_t outer, int64_t size, int64_t inner, const int64_t* index,
                   int64_t n) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      const U* PARE_RESTRICT from = x + (o * size + index[j]) * inner;
      U* PARE_RESTRICT to = y + (o * n + j) * inner;
      for (int64_t i = 0; i < inner; ++i) to[i] = from[i];
    }
  }
}

// out = self gathered along `dim` by `index` (same rank; checked).
template <typename U>
Error gather_elements(KernelContext& ctx, const Tensor& self, const Tensor& index, int64_t dim, const Tensor& out) {
  const U* x = self.data_as<U>();
  const int64_t* idx = index.data_as<int64_t>();
  U* PARE_RESTRICT y = out.data_as<U>();
  const int64_t size_dim = self.dim == 0 ? 1 : self.sizes[dim];
  const int64_t stride_dim = self.dim == 0 ? 0 : self.strides[dim];
  if (index.dim == 0) {
    PARE_CHECK_OR_RETURN(ctx, idx[0] >= 0 && idx[0] < size_dim, Error::IndexOutOfRange,
                         "argument 'index': index %lld is out of bounds for dim %lld with size %lld",
                         static_cast<long long>(idx[0]), static_cast<long long>(dim), static_cast<long long>(size_dim));
    y[0] = x[idx[0] * stride_dim];
    return Error::Ok;
  }
  const size_t last = index.dim - 1u;
  const int64_t n = index.sizes[last];
  const int64_t idx_step = index.strides[last];
  const int64_t x_step = static_cast<int64_t>(last) == dim ? 0 : self.strides[last];
  int64_t counter[kMaxDim] = {};
  const int64_t outer = static_cast<int64_t>(out.numel()) / n;
  int64_t x_base = 0;
  int64_t idx_base = 0;
  for (int64_t it = 0; it < outer; ++it) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[idx_base + i * idx_step];
      PARE_CHECK_OR_RETURN(ctx, v >= 0 && v < size_dim, Error::IndexOutOfRange,
                           "argument 'index': index %lld is out of bounds for dim %lld with size %lld",
                           static_cast<long long>(v), static_cast<long long>(dim), static_cast<long long>(size_dim));
      y[it * n + i] = x[x_base + i * x_step + v * stride_dim];
    }
    // Odometer over the outer dims of the index.
    for (size_t d = last; d-- > 0;) {
      const int64_t xs = static_cast<int64_t>(d) == dim ? 0 : self.strides[d];
      x_base += xs;
      idx_base += index.strides[d];
      if (++counter[d] < index.sizes[d]) break;
      x_base -= xs * index.sizes[d];
      idx_base -= index.strides[d] * index.sizes[d];
      counter[d] = 0;
    }
  }
  return Error::Ok;
}

// y[b, :] = x[offsets[b] :+ block] for each b.
template <typename U>
void copy_blocks(const U* x, U* PARE_RESTRICT y, const int64_t* offsets, int64_t count, int64_t block) {
  for (int64_t b = 0; b < count; ++b) {
    const U* PARE_RESTRICT from = x + offsets[b];
    U* PARE_RESTRICT to = y + b * block;
    for (int64_t i = 0; i < block; ++i) to[i] = from[i];
  }
}

}  // namespace

// aten::index_select(Tensor self, int dim, Tensor index) -> Tensor
Error aten_index_select(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, index.dim <= 1, Error::InvalidShape,
                       "argument 'index' must be a vector (0-d or 1-d), got sizes %s",
                       sizes_to_string(index.size_span()).text);
  const int64_t n = static_cast<int64_t>(index.numel());
  PARE_TRY_ASSIGN(const int64_t* idx, indexing::index_values(ctx, index, "index"));
  const int64_t size = self.dim == 0 ? 1 : self.sizes[dim];
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0 || n == 1, Error::InvalidShape,
                       "argument 'index': indexing a 0-dim tensor takes exactly one index, got %lld",
                       static_cast<long long>(n));
  for (int64_t j = 0; j < n; ++j) {
    PARE_CHECK_OR_RETURN(ctx, idx[j] >= 0 && idx[j] < size, Error::IndexOutOfRange,
                         "argument 'index': index %lld is out of range for dim %lld of size %lld",
                         static_cast<long long>(idx[j]), static_cast<long long>(dim), static_cast<long long>(size));
  }
  int64_t sizes[kMaxDim];
  int64_t outer = 1;
  int64_t inner = 1;
  for (size_t d = 0; d < self.dim; ++d) {
    sizes[d] = static_cast<int64_t>(d) == dim ? n : self.sizes[d];
    if (static_cast<int64_t>(d) < dim) outer *= self.sizes[d];
    if (static_cast<int64_t>(d) > dim) inner *= self.sizes[d];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, self.dim)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor src, as_contiguous(ctx, self, self.dtype));
  return PARE_DISPATCH(index_select_kernel, ctx, self.dtype, T, {
    select_blocks<Bits<T>>(src.data_as<Bits<T>>(), out->data_as<Bits<T>>(), outer, size, inner, idx, n);
    return Error::Ok;
  });
}

// aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor
Error aten_gather(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const Tensor& index = args.tensor(2, "index");
  (void)args.boolean_or(3, "sparse_grad", false);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, index.dtype == ScalarType::Long, Error::UnsupportedDtype,
                       "argument 'index' must be a Long (int64) tensor, got %s", to_string(index.dtype));
  const size_t self_rank = self.dim == 0 ? 1 : self.dim;
  const size_t index_rank = index.dim == 0 ? 1 : index.dim;
  PARE_CHECK_OR_RETURN(ctx, self_rank == index_rank, Error::InvalidShape,
                       "argument 'index' must have as many dims as 'self' (%u), got %u",
                       static_cast<unsigned>(self.dim), static_cast<unsigned>(index.dim));
  for (size_t d = 0; d < index.dim && self.dim > 0; ++d) {
    PARE_CHECK_OR_RETURN(ctx, static_cast<int64_t>(d) == dim || index.sizes[d] <= self.sizes[d], Error::InvalidShape,
                         "argument 'index' with sizes %s must not be larger than 'self' (sizes %s) outside dim %lld",
                         sizes_to_string(index.size_span()).text, sizes_to_string(self.size_span()).text,
                         static_cast<long long>(dim));
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, index.size_span()));
  if (out->numel() == 0) return Error::Ok;
  // A 0-dim self with a 1-d index: view self as [1].
  Tensor src = self;
  if (self.dim == 0 && index.dim == 1) {
    src.dim = 1;
    src.sizes[0] = 1;
    src.strides[0] = 1;
  }
  return PARE_DISPATCH(gather_kernel, ctx, self.dtype, T,
                       { return gather_elements<Bits<T>>(ctx, src, index, dim, *out); });
}

// aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
//
// Integer index tensors for the leading dims (x[idx], x[i, j]); they
// broadcast together to B, and the result is B + self.sizes[k:]. The
// program format has no None list entries, so x[:, idx] cannot reach this
// kernel; boolean masks (data-dependent shapes) are not supported.
Error aten_index_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const TensorList indices = args.tensor_list(1, "indices");
  PARE_TRY(args.status());
  const size_t k = indices.size;
  PARE_CHECK_OR_RETURN(ctx, k >= 1 && k <= self.dim, Error::IndexOutOfRange,
                       "argument 'indices': %zu index tensors for a tensor of %u dims", k,
                       static_cast<unsigned>(self.dim));
  int64_t shape[kMaxDim];
  size_t shape_dim = 0;
  for (size_t j = 0; j < k; ++j) {
    const Tensor& t = indices.items[j]->tensor;
    PARE_CHECK_OR_RETURN(ctx, t.dtype != ScalarType::Bool && t.dtype != ScalarType::Byte, Error::NotImplemented,
                         "argument 'indices': boolean mask indices (tensor %zu) are not supported", j);
    int64_t merged[kMaxDim];
    size_t merged_dim = 0;
    PARE_CHECK_OR_RETURN(ctx, broadcast_shapes(IntArrayRef(shape, shape_dim), t.size_span(), merged, &merged_dim),
                         Error::InvalidShape,
                         "argument 'indices': index tensor %zu with sizes %s cannot be broadcast with %s", j,
                         sizes_to_string(t.size_span()).text, sizes_to_string(IntArrayRef(shape, shape_dim)).text);
    for (size_t d = 0; d < merged_dim; ++d) shape[d] = merged[d];
    shape_dim = merged_dim;
  }
  const size_t rest_dim = self.dim - k;
  PARE_CHECK_OR_RETURN(ctx, shape_dim + rest_dim <= kMaxDim, Error::LimitExceeded,
                       "the result would have %zu dims; this runtime supports up to %zu", shape_dim + rest_dim,
                       kMaxDim);
  int64_t sizes[kMaxDim];
  int64_t count = 1;
  int64_t block = 1;
  bool overflow = false;
  for (size_t d = 0; d < shape_dim; ++d) {
    sizes[d] = shape[d];
    overflow = overflow || __builtin_mul_overflow(count, shape[d], &count);
  }
  for (size_t d = 0; d < rest_dim; ++d) {
    sizes[shape_dim + d] = self.sizes[k + d];
    block *= self.sizes[k + d];  // a factor of self.numel(): no overflow
  }
  PARE_CHECK_OR_RETURN(ctx, !overflow && count <= (int64_t{1} << 48), Error::InvalidShape,
                       "argument 'indices': the broadcast index shape %s is too large",
                       sizes_to_string(IntArrayRef(shape, shape_dim)).text);
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, shape_dim + rest_dim)));
  if (count == 0) return Error::Ok;
  // Element offsets into contiguous self, one per broadcast position.
  int64_t self_strides[kMaxDim];
  size_t unused = 0;
  contiguous_strides(self.size_span(), self_strides, &unused);
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(count) * sizeof(int64_t)));
  int64_t* offsets = static_cast<int64_t*>(memory);
  for (int64_t b = 0; b < count; ++b) offsets[b] = 0;
  for (size_t j = 0; j < k; ++j) {
    // Index tensor j broadcast to `shape` (stride 0 where it repeats).
    const Tensor& t = indices.items[j]->tensor;
    Tensor view = t;
    view.dim = static_cast<uint8_t>(shape_dim);
    for (size_t d = 0; d < shape_dim; ++d) {
      const int64_t td = static_cast<int64_t>(d) - static_cast<int64_t>(shape_dim - t.dim);
      view.sizes[d] = shape[d];
      view.strides[d] = td >= 0 && t.sizes[td] != 1 ? t.strides[td] : 0;
    }
    PARE_TRY_ASSIGN(const int64_t* idx, indexing::index_values(ctx, view, "indices"));
    const int64_t size = self.sizes[j];
    for (int64_t b = 0; b < count; ++b) {
      int64_t v = idx[b];
      PARE_CHECK_OR_RETURN(ctx, v >= -size && v < size, Error::IndexOutOfRange,
                           "argument 'indices': index %lld is out of bounds for dim %zu with size %lld",
                           static_cast<long long>(v), j, static_cast<long long>(size));
      if (v < 0) v += size;
      offsets[b] += v * self_strides[j];
    }
  }
  if (block == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor src, as_contiguous(ctx, self, self.dtype));
  return PARE_DISPATCH(index_kernel, ctx, self.dtype, T, {
    copy_blocks<Bits<T>>(src.data_as<Bits<T>>(), out->data_as<Bits<T>>(), offsets, count, block);
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
