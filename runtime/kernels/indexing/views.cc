// View operators: outputs share their input's storage (as in PyTorch) and
// only sizes, strides and the storage offset change. No data moves and no
// dtype dispatch. aten::view and aten::sym_size.int live in view_shape.cc.

#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {

namespace {

using indexing::drop_dim;

// A view of input 0 as output `out`.
Error view_of(KernelArgs& args, Value& out, const int64_t* sizes, const int64_t* strides, size_t dim, int64_t offset) {
  return args.ctx().set_output_view(out, args.value(0), IntArrayRef(sizes, dim), IntArrayRef(strides, dim), offset);
}

// The Tensor[] output of split/unbind, checked against the count the op produces.
Error output_list_of(KernelArgs& args, int64_t expected, TensorList* list) {
  *list = args.output_list(0);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(args.ctx(), static_cast<int64_t>(list->size) == expected, Error::InvalidArgument,
                       "the program expects %zu outputs, but the op produces %lld for these inputs", list->size,
                       static_cast<long long>(expected));
  return Error::Ok;
}

}  // namespace

// aten::alias(Tensor(a) self) -> Tensor(a)
Error aten_alias(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  return view_of(args, args.output(0), self.sizes, self.strides, self.dim, self.storage_offset);
}

// aten::_unsafe_view(Tensor self, SymInt[] size) -> Tensor
//
// aten::view without autograd's view tracking: the same result here.
Error aten__unsafe_view(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_CALL_OP(ctx, "aten::view", inputs, outputs);
}

// aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)
Error aten_permute(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef dims = args.int_list(1, "dims");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, dims.size() == self.dim, Error::InvalidArgument,
                       "argument 'dims' has %zu entries but the input has %u dims", dims.size(),
                       static_cast<unsigned>(self.dim));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  bool seen[kMaxDim] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[i], self.dim, "dims", &d));
    PARE_CHECK_OR_RETURN(ctx, !seen[d], Error::InvalidArgument, "argument 'dims': dim %lld is repeated",
                         static_cast<long long>(d));
    seen[d] = true;
    sizes[i] = self.sizes[d];
    strides[i] = self.strides[d];
  }
  return view_of(args, args.output(0), sizes, strides, self.dim, self.storage_offset);
}

// aten::view_as_real(Tensor(a) self) -> Tensor(a)
//
// complex64 [..., n] as Float [..., n, 2] over the same storage: every
// stride and the offset double, and the pair is the new last dim.
Error aten_view_as_real(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dtype == ScalarType::ComplexFloat, Error::UnsupportedDtype,
                       "argument 'self' must be ComplexFloat (complex64), got %s", to_string(self.dtype));
  PARE_CHECK_OR_RETURN(ctx, self.dim < kMaxDim, Error::LimitExceeded,
                       "the result would have %u dims, more than the runtime's %u", self.dim + 1u,
                       static_cast<unsigned>(kMaxDim));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  for (size_t d = 0; d < self.dim; ++d) {
    sizes[d] = self.sizes[d];
    strides[d] = 2 * self.strides[d];
  }
  sizes[self.dim] = 2;
  strides[self.dim] = 1;
  Value& out = args.output(0);
  PARE_TRY(view_of(args, out, sizes, strides, self.dim + 1u, 2 * self.storage_offset));
  out.tensor.dtype = ScalarType::Float;
  return Error::Ok;
}

// aten::view_as_complex(Tensor(a) self) -> Tensor(a)
//
// Float [..., n, 2] with a unit last stride and even other strides and
// offset as complex64 [..., n], as torch requires.
Error aten_view_as_complex(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dtype == ScalarType::Float, Error::UnsupportedDtype,
                       "argument 'self' must be Float for a complex64 view, got %s; Pare has no complex128 or "
                       "complex32",
                       to_string(self.dtype));
  PARE_CHECK_OR_RETURN(ctx, self.dim >= 1 && self.sizes[self.dim - 1] == 2 && self.strides[self.dim - 1] == 1,
                       Error::InvalidShape,
                       "argument 'self' (sizes %s) must have a last dim of size 2 and stride 1 (real, imaginary)",
                       sizes_to_string(self.size_span()).text);
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  bool even = self.storage_offset % 2 == 0;
  for (size_t d = 0; d + 1 < self.dim; ++d) {
    sizes[d] = self.sizes[d];
    strides[d] = self.strides[d] / 2;
    even = even && self.strides[d] % 2 == 0;
  }
  PARE_CHECK_OR_RETURN(ctx, even, Error::InvalidShape,
                       "argument 'self' (sizes %s) has an odd stride or storage offset, so its pairs are not "
                       "complex64 elements; make it contiguous first",
                       sizes_to_string(self.size_span()).text);
  Value& out = args.output(0);
  PARE_TRY(view_of(args, out, sizes, strides, self.dim - 1u, self.storage_offset / 2));
  out.tensor.dtype = ScalarType::ComplexFloat;
  return Error::Ok;
}

// aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
Error aten_transpose_int(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim0 = args.dim(1, "dim0", self.dim);
  const int64_t dim1 = args.dim(2, "dim1", self.dim);
  PARE_TRY(args.status());
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  for (size_t d = 0; d < self.dim; ++d) {
    sizes[d] = self.sizes[d];
    strides[d] = self.strides[d];
  }
  if (self.dim > 0) {
    sizes[dim0] = self.sizes[dim1];
    strides[dim0] = self.strides[dim1];
    sizes[dim1] = self.sizes[dim0];
    strides[dim1] = self.strides[dim0];
  }
  return view_of(args, args.output(0), sizes, strides, self.dim, self.storage_offset);
}

// aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
Error aten_expand(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef size = args.int_list(1, "size");
  (void)args.boolean_or(2, "implicit", false);
  PARE_TRY(args.status());
  const size_t n = size.size();
  PARE_CHECK_OR_RETURN(ctx, n >= self.dim, Error::InvalidShape,
                       "argument 'size' %s has fewer entries than the input has dims (%u)", sizes_to_string(size).text,
                       static_cast<unsigned>(self.dim));
  PARE_CHECK_OR_RETURN(ctx, n <= kMaxDim, Error::LimitExceeded,
                       "argument 'size' has %zu dims; this runtime supports up to %zu", n, kMaxDim);
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  // PyTorch's inferExpandGeometry, right-aligned.
  for (size_t i = n; i-- > 0;) {
    const int64_t d = static_cast<int64_t>(i) - static_cast<int64_t>(n - self.dim);
    int64_t s = d >= 0 ? self.sizes[d] : 1;
    int64_t stride = 1;
    if (d >= 0) {
      stride = self.strides[d];
    } else if (i + 1 < n && __builtin_mul_overflow(sizes[i + 1], strides[i + 1], &stride)) {
      stride = 1;  // only the stride of a size-1 dim, which never moves
    }
    int64_t target = size[i];
    if (target == -1) {
      PARE_CHECK_OR_RETURN(ctx, d >= 0, Error::InvalidShape,
                           "argument 'size' %s: -1 is not allowed in a new leading dim (%zu)",
                           sizes_to_string(size).text, i);
      target = s;
    }
    PARE_CHECK_OR_RETURN(ctx, target >= 0, Error::InvalidShape, "argument 'size' %s: invalid size %lld",
                         sizes_to_string(size).text, static_cast<long long>(target));
    if (s != target) {
      PARE_CHECK_OR_RETURN(ctx, s == 1, Error::InvalidShape,
                           "argument 'size' %s: the expanded size %lld must match the existing size %lld at "
                           "non-singleton dim %zu (input sizes %s)",
                           sizes_to_string(size).text, static_cast<long long>(target), static_cast<long long>(s), i,
                           sizes_to_string(self.size_span()).text);
      s = target;
      stride = 0;
    }
    sizes[i] = s;
    strides[i] = stride;
  }
  size_t numel = 0;
  PARE_CHECK_OR_RETURN(ctx, checked_numel(IntArrayRef(sizes, n), &numel), Error::InvalidShape,
                       "argument 'size' %s overflows", sizes_to_string(size).text);
  return view_of(args, args.output(0), sizes, strides, n, self.storage_offset);
}

// aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
Error aten_slice_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 5, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  indexing::Slice slice{};
  PARE_TRY(indexing::read_slice(args, self, 1, &slice));
  const Tensor view = indexing::slice_view(self, slice);
  return view_of(args, args.output(0), view.sizes, view.strides, view.dim, view.storage_offset);
}

// aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
Error aten_select_int(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  int64_t dim = 0;
  int64_t index = 0;
  PARE_TRY(indexing::read_select(args, self, 1, &dim, &index));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  const size_t n = drop_dim(self, dim, sizes, strides);
  return view_of(args, args.output(0), sizes, strides, n, self.storage_offset + index * self.strides[dim]);
}

// aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
//
// The view of the diagonal of dims dim1 and dim2 (above it for offset > 0,
// below for offset < 0): both dims removed, the diagonal appended as the
// last dim with stride stride1 + stride2. An offset past the matrix gives
// an empty diagonal, as in PyTorch.
Error aten_diagonal(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t offset = args.int64_or(1, "offset", 0);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim >= 2, Error::InvalidShape,
                       "argument 'self' must have at least 2 dims for a diagonal, got sizes %s",
                       sizes_to_string(self.size_span()).text);
  const int64_t dim1 = args.has(2) ? args.dim(2, "dim1", self.dim) : 0;
  const int64_t dim2 = args.has(3) ? args.dim(3, "dim2", self.dim) : 1;
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, dim1 != dim2, Error::InvalidArgument,
                       "arguments 'dim1' and 'dim2' are both dim %lld; a diagonal needs two different dims",
                       static_cast<long long>(dim1));
  const int64_t size1 = self.sizes[dim1];
  const int64_t size2 = self.sizes[dim2];
  // Rows dim1 from `row`, columns dim2 from `col`, each as long as both allow
  // (offsets beyond a dim's size are clamped before the subtraction).
  const int64_t row = offset < 0 ? (-offset < size1 ? -offset : size1) : 0;
  const int64_t col = offset > 0 ? (offset < size2 ? offset : size2) : 0;
  const int64_t length = size1 - row < size2 - col ? size1 - row : size2 - col;
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  size_t n = 0;
  for (size_t d = 0; d < self.dim; ++d) {
    if (static_cast<int64_t>(d) == dim1 || static_cast<int64_t>(d) == dim2) continue;
    sizes[n] = self.sizes[d];
    strides[n++] = self.strides[d];
  }
  sizes[n] = length;
  strides[n++] = self.strides[dim1] + self.strides[dim2];
  const int64_t start = length > 0 ? row * self.strides[dim1] + col * self.strides[dim2] : 0;
  return view_of(args, args.output(0), sizes, strides, n, self.storage_offset + start);
}

// aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)
//
// Drops the listed dims that have size 1; others stay.
Error aten_squeeze_dims(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef dims = args.int_list(1, "dim");
  PARE_TRY(args.status());
  bool listed[kMaxDim] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[i], self.dim, "dim", &d));
    PARE_CHECK_OR_RETURN(ctx, !listed[d], Error::InvalidArgument,
                         "argument 'dim': dim %lld appears multiple times in the list of dims",
                         static_cast<long long>(d));
    listed[d] = true;
  }
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  size_t n = 0;
  for (size_t d = 0; d < self.dim; ++d) {
    if (listed[d] && self.sizes[d] == 1) continue;
    sizes[n] = self.sizes[d];
    strides[n] = self.strides[d];
    ++n;
  }
  return view_of(args, args.output(0), sizes, strides, n, self.storage_offset);
}

// aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)
Error aten_unsqueeze(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t raw_dim = args.int64(1, "dim");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim < kMaxDim, Error::LimitExceeded,
                       "the result would have %u dims; this runtime supports up to %zu",
                       static_cast<unsigned>(self.dim) + 1, kMaxDim);
  int64_t dim = 0;
  PARE_TRY(wrap_dim(ctx, raw_dim, self.dim + 1, "dim", &dim));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  size_t n = 0;
  for (size_t d = 0; d <= self.dim; ++d) {
    if (static_cast<int64_t>(d) == dim) {
      sizes[n] = 1;
      strides[n] = d < self.dim ? self.sizes[d] * self.strides[d] : 1;
      ++n;
    }
    if (d < self.dim) {
      sizes[n] = self.sizes[d];
      strides[n] = self.strides[d];
      ++n;
    }
  }
  return view_of(args, args.output(0), sizes, strides, n, self.storage_offset);
}

// aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
Error aten_unbind_int(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::InvalidShape, "argument 'self': cannot unbind a 0-dim tensor");
  const int64_t dim = args.has(1) ? args.dim(1, "dim", self.dim) : 0;
  PARE_TRY(args.status());
  TensorList parts{};
  PARE_TRY(output_list_of(args, self.sizes[dim], &parts));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  const size_t n = drop_dim(self, dim, sizes, strides);
  for (size_t k = 0; k < parts.size; ++k) {
    const int64_t offset = self.storage_offset + static_cast<int64_t>(k) * self.strides[dim];
    PARE_TRY(view_of(args, *parts.items[k], sizes, strides, n, offset));
  }
  return Error::Ok;
}

// aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
Error aten_split_with_sizes(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef split_sizes = args.int_list(1, "split_sizes");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::InvalidShape, "argument 'self': cannot split a 0-dim tensor");
  const int64_t dim = args.has(2) ? args.dim(2, "dim", self.dim) : 0;
  PARE_TRY(args.status());
  int64_t total = 0;
  for (size_t k = 0; k < split_sizes.size(); ++k) {
    PARE_CHECK_OR_RETURN(ctx, split_sizes[k] >= 0 && !__builtin_add_overflow(total, split_sizes[k], &total),
                         Error::InvalidArgument, "argument 'split_sizes' %s must be non-negative sizes",
                         sizes_to_string(split_sizes).text);
  }
  PARE_CHECK_OR_RETURN(ctx, total == self.sizes[dim], Error::InvalidArgument,
                       "argument 'split_sizes' %s must sum to %lld (the size of dim %lld)",
                       sizes_to_string(split_sizes).text, static_cast<long long>(self.sizes[dim]),
                       static_cast<long long>(dim));
  TensorList parts{};
  PARE_TRY(output_list_of(args, static_cast<int64_t>(split_sizes.size()), &parts));
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];
  for (size_t d = 0; d < self.dim; ++d) {
    sizes[d] = self.sizes[d];
    strides[d] = self.strides[d];
  }
  int64_t start = 0;
  for (size_t k = 0; k < parts.size; ++k) {
    sizes[dim] = split_sizes[k];
    const int64_t offset = self.storage_offset + (split_sizes[k] > 0 ? start * self.strides[dim] : 0);
    PARE_TRY(view_of(args, *parts.items[k], sizes, strides, self.dim, offset));
    start += split_sizes[k];
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace pare
