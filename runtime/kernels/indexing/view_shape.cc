// Metadata-only ops: aten::view and aten::sym_size.int. No data moves and
// no dtype dispatch; outputs are views sharing their input's storage.

#include "runtime/registry/kernel.h"

namespace pare {
namespace kernels {
namespace {

// PyTorch's computeStride: strides for viewing a tensor of `old_sizes` /
// `old_strides` as `new_sizes`, or false when no such view exists (the
// tensor would need a copy; torch.export then emits aten::reshape/clone).
bool compute_view_strides(const Tensor& t, IntArrayRef new_sizes, int64_t* new_strides) {
  const size_t old_dim = t.dim;
  if (old_dim == 0) {
    // A 0-dim tensor has one element; every view of it is [1, 1, ...].
    for (size_t i = 0; i < new_sizes.size(); ++i) new_strides[i] = 1;
    return true;
  }
  if (t.numel() == 0) {
    // Any strides work for an empty view; use contiguous ones.
    size_t numel = 0;
    return contiguous_strides(new_sizes, new_strides, &numel);
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  // Stride of the last element of the current chunk of old dims.
  int64_t chunk_base_stride = old_dim > 0 ? t.strides[old_dim - 1] : 1;
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_dim) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= t.sizes[tensor_d];
    // A chunk ends where old dims stop being contiguous with each other.
    if (tensor_d == 0 || (t.sizes[tensor_d - 1] != 1 && t.strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = t.strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

// aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)
Error aten_view(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef size = args.int_list(1, "size");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, size.size() <= kMaxDim, Error::LimitExceeded,
                       "argument 'size' has %zu dims; this runtime supports up to %zu", size.size(), kMaxDim);

  // Infer a single -1 from the element count (PyTorch's infer_size).
  int64_t sizes[kMaxDim];
  int64_t known = 1;
  int64_t infer_at = -1;
  for (size_t i = 0; i < size.size(); ++i) {
    sizes[i] = size[i];
    if (size[i] == -1) {
      PARE_CHECK_OR_RETURN(ctx, infer_at < 0, Error::InvalidShape,
                           "argument 'size' %s: only one dimension can be inferred", sizes_to_string(size).text);
      infer_at = static_cast<int64_t>(i);
    } else {
      PARE_CHECK_OR_RETURN(ctx, size[i] >= 0, Error::InvalidShape, "argument 'size' %s: invalid size %lld",
                           sizes_to_string(size).text, static_cast<long long>(size[i]));
      PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(known, size[i], &known), Error::InvalidShape,
                           "argument 'size' %s overflows", sizes_to_string(size).text);
    }
  }
  const int64_t numel = static_cast<int64_t>(self.numel());
  if (infer_at >= 0) {
    PARE_CHECK_OR_RETURN(ctx, known != 0 && numel % known == 0, Error::InvalidShape,
                         "shape %s is invalid for input of size %lld", sizes_to_string(size).text,
                         static_cast<long long>(numel));
    sizes[infer_at] = numel / known;
  } else {
    PARE_CHECK_OR_RETURN(ctx, known == numel, Error::InvalidShape, "shape %s is invalid for input of size %lld",
                         sizes_to_string(size).text, static_cast<long long>(numel));
  }
  const IntArrayRef new_sizes(sizes, size.size());
  int64_t strides[kMaxDim];
  PARE_CHECK_OR_RETURN(ctx, compute_view_strides(self, new_sizes, strides), Error::InvalidShape,
                       "view size %s is not compatible with input sizes %s and strides %s (at least one "
                       "dimension spans across two contiguous subspaces); use reshape",
                       sizes_to_string(new_sizes).text, sizes_to_string(self.size_span()).text,
                       sizes_to_string(self.stride_span()).text);
  return ctx.set_output_view(args.output(0), args.value(0), new_sizes, IntArrayRef(strides, size.size()),
                             self.storage_offset);
}

// aten::sym_size.int(Tensor self, int dim) -> SymInt
//
// Produces the Int values that symbolic int lists refer to when a model is
// exported with dynamic shapes (docs/program_format.md).
Error aten_sym_size_int(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::IndexOutOfRange, "argument 'dim': a 0-dim tensor has no dimensions");
  const int64_t dim = args.dim(1, "dim", self.dim);
  PARE_TRY(args.status());
  args.set_output_int(0, self.sizes[dim]);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace pare
