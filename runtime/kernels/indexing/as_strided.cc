// aten::as_strided as a copy: the strided window a program asks for,
// materialised as a new contiguous tensor.
//
// Pare's values are logical tensors with no storage shared between them,
// so the "storage" as_strided indexes is defined as the input's own
// elements in row-major order (what self.contiguous() holds), and the
// storage offset counts from its first element. For an input that is
// contiguous with storage offset 0 in torch (the only case the tracer
// emits this op for: tools/tracer/lowering.py) that is exactly torch's
// storage, so the values equal torch's. The window may overlap itself
// (sliding windows, as unfold makes) or repeat elements (stride 0); it may
// not read past the input's elements: that is an error, never a read out
// of bounds.

#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {

// aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
//
// Returns a copy, not a view: writes through the result do not reach
// self (programs are functional: none are made).
Error aten_as_strided(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef size = args.int_list(1, "size");
  const IntArrayRef stride = args.int_list(2, "stride");
  const Optional<int64_t> storage_offset = args.optional_int64(3, "storage_offset");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, size.size() == stride.size(), Error::InvalidArgument,
                       "arguments 'size' %s and 'stride' %s must have the same length", sizes_to_string(size).text,
                       sizes_to_string(stride).text);
  PARE_CHECK_OR_RETURN(ctx, size.size() <= kMaxDim, Error::LimitExceeded,
                       "argument 'size' has %zu dims; this runtime supports up to %zu", size.size(), kMaxDim);
  PARE_TRY(indexing::check_sizes(ctx, size, "size"));
  const int64_t offset = storage_offset.has_value ? storage_offset.value : 0;
  PARE_CHECK_OR_RETURN(ctx, offset >= 0, Error::InvalidArgument,
                       "argument 'storage_offset' must be non-negative, got %lld", static_cast<long long>(offset));
  // The last element read: offset + sum((size - 1) * stride).
  int64_t last = offset;
  bool empty = false;
  bool fits = true;
  for (size_t d = 0; d < size.size(); ++d) {
    PARE_CHECK_OR_RETURN(ctx, stride[d] >= 0, Error::InvalidArgument,
                         "argument 'stride' %s has a negative stride; as_strided supports non-negative strides only",
                         sizes_to_string(stride).text);
    if (size[d] == 0) empty = true;
    int64_t span = 0;
    if (size[d] > 0) fits = fits && !__builtin_mul_overflow(size[d] - 1, stride[d], &span);
    fits = fits && !__builtin_add_overflow(last, span, &last);
  }
  const int64_t available = static_cast<int64_t>(self.numel());
  PARE_CHECK_OR_RETURN(ctx, empty || (fits && last < available), Error::IndexOutOfRange,
                       "size %s, stride %s and storage_offset %lld read past the end of 'self' (%lld elements, sizes "
                       "%s); make the window fit the input",
                       sizes_to_string(size).text, sizes_to_string(stride).text, static_cast<long long>(offset),
                       static_cast<long long>(available), sizes_to_string(self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, size));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor storage, as_contiguous(ctx, self, self.dtype));
  Tensor window = storage;
  window.dim = static_cast<uint8_t>(size.size());
  for (size_t d = 0; d < size.size(); ++d) {
    window.sizes[d] = size[d];
    window.strides[d] = stride[d];
  }
  window.storage_offset = storage.storage_offset + offset;
  return convert_into(ctx, window, *out);
}

}  // namespace kernels
}  // namespace pare
