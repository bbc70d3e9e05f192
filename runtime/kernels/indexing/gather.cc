// Gather-style indexing: aten::index_select, aten::gather and
// aten::index.Tensor (advanced indexing with integer index tensors; the
// layout is shared with index_put: indexing::AdvancedIndex).
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
// Integer index tensors, broadcast together to B, for some dims of self
// (None entries keep theirs): the result is laid out as torch lays it out
// (indexing::AdvancedIndex). Boolean masks (data-dependent shapes) are not
// supported.
Error aten_index_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const TensorList indices = args.optional_tensor_list(1, "indices");
  PARE_TRY(args.status());
  indexing::AdvancedIndex plan;
  PARE_TRY(indexing::plan_advanced_index(ctx, self, indices, /*allow_masks=*/false, &plan));
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(plan.result_sizes, plan.result_dim)));
  if (plan.count == 0) return Error::Ok;
  // Self in torch's dim order (before, indexed, after), made contiguous:
  // each (outer, position of B) pair then copies one contiguous block.
  Tensor ordered = self;
  for (size_t i = 0; i < self.dim; ++i) {
    ordered.sizes[i] = self.sizes[plan.dims[i]];
    ordered.strides[i] = self.strides[plan.dims[i]];
  }
  int64_t ordered_strides[kMaxDim];
  size_t unused = 0;
  contiguous_strides(ordered.size_span(), ordered_strides, &unused);
  int64_t self_strides[kMaxDim];  // element strides of that copy, by self's dim
  for (size_t i = 0; i < self.dim; ++i) self_strides[plan.dims[i]] = ordered_strides[i];
  int64_t outer = 1;
  int64_t indexed = 1;
  int64_t block = 1;
  for (size_t i = 0; i < self.dim; ++i) {
    const int64_t n = ordered.sizes[i];  // factors of self.numel(): no overflow
    if (i < plan.num_before) {
      outer *= n;
    } else if (i < plan.num_before + plan.num_indices) {
      indexed *= n;
    } else {
      block *= n;
    }
  }
  if (block == 0 || outer == 0) return Error::Ok;  // like torch, no index is checked when nothing is read
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(plan.count) * sizeof(int64_t)));
  int64_t* offsets = static_cast<int64_t*>(memory);
  PARE_TRY(indexing::advanced_index_offsets(ctx, self, plan, self_strides, offsets));
  PARE_TRY_ASSIGN(const Tensor src, as_contiguous(ctx, ordered, self.dtype));
  return PARE_DISPATCH(index_kernel, ctx, self.dtype, T, {
    for (int64_t o = 0; o < outer; ++o) {
      copy_blocks<Bits<T>>(src.data_as<Bits<T>>() + o * indexed * block,
                           out->data_as<Bits<T>>() + o * plan.count * block, offsets, plan.count, block);
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
