// Shared helpers of the indexing family (see indexing.h).

#include "runtime/kernels/indexing/indexing.h"

#include "runtime/core/format.h"

namespace pare {
namespace kernels {
namespace indexing {

Error check_tensor_options(KernelArgs& args, size_t layout_index, size_t device_index, size_t pin_memory_index) {
  KernelContext& ctx = args.ctx();
  const Optional<int64_t> layout = args.optional_int64(layout_index, "layout");
  const char* device = args.optional_string(device_index, "device");
  const bool pin_memory = args.has(pin_memory_index) && args.boolean(pin_memory_index, "pin_memory");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, !layout.has_value || layout.value == 0, Error::NotImplemented,
                       "argument 'layout': only torch.strided (0) is supported, got %lld",
                       static_cast<long long>(layout.value));
  PARE_CHECK_OR_RETURN(ctx, device == nullptr || string_equal(device, "cpu"), Error::NotImplemented,
                       "argument 'device': only 'cpu' is supported, got '%s'", device);
  PARE_CHECK_OR_RETURN(ctx, !pin_memory, Error::NotImplemented, "argument 'pin_memory' must be false");
  return Error::Ok;
}

Error read_select(KernelArgs& args, const Tensor& self, size_t first, int64_t* dim, int64_t* index) {
  KernelContext& ctx = args.ctx();
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::InvalidShape, "argument 'self': cannot select from a 0-dim tensor");
  const int64_t d = args.dim(first, "dim", self.dim);
  const int64_t i = args.int64(first + 1, "index");
  PARE_TRY(args.status());
  const int64_t size = self.sizes[d];
  PARE_CHECK_OR_RETURN(ctx, i >= -size && i < size, Error::IndexOutOfRange,
                       "argument 'index': %lld is out of range for dim %lld of size %lld", static_cast<long long>(i),
                       static_cast<long long>(d), static_cast<long long>(size));
  *dim = d;
  *index = i < 0 ? i + size : i;
  return Error::Ok;
}

Error read_slice(KernelArgs& args, const Tensor& self, size_t first, Slice* slice) {
  KernelContext& ctx = args.ctx();
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::InvalidShape, "argument 'self': cannot slice a 0-dim tensor");
  const int64_t dim = args.has(first) ? args.dim(first, "dim", self.dim) : 0;
  const Optional<int64_t> start_arg = args.optional_int64(first + 1, "start");
  const Optional<int64_t> end_arg = args.optional_int64(first + 2, "end");
  const int64_t step = args.int64_or(first + 3, "step", 1);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, step > 0, Error::InvalidArgument, "argument 'step' must be positive, got %lld",
                       static_cast<long long>(step));
  const int64_t size = self.sizes[dim];
  const int64_t start = clamp_slice_bound(start_arg.has_value ? start_arg.value : 0, size);
  int64_t end = clamp_slice_bound(end_arg.has_value ? end_arg.value : size, size);
  if (end < start) end = start;
  slice->dim = dim;
  slice->start = start;
  slice->length = end == start ? 0 : 1 + (end - start - 1) / step;
  slice->step = step;
  return Error::Ok;
}

Error check_sizes(KernelContext& ctx, IntArrayRef sizes, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, sizes.size() <= kMaxDim, Error::LimitExceeded,
                       "argument '%s' has %zu dims; this runtime supports up to %zu", name, sizes.size(), kMaxDim);
  size_t numel = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    PARE_CHECK_OR_RETURN(ctx, sizes[i] >= 0, Error::InvalidShape, "argument '%s' %s: invalid size %lld", name,
                         sizes_to_string(sizes).text, static_cast<long long>(sizes[i]));
  }
  PARE_CHECK_OR_RETURN(ctx, checked_numel(sizes, &numel), Error::InvalidShape, "argument '%s' %s overflows", name,
                       sizes_to_string(sizes).text);
  return Error::Ok;
}

Error copy_strided(KernelContext& ctx, const Tensor& src, const Tensor& dst, size_t n, const int64_t* sizes,
                   const int64_t* src_strides, const int64_t* dst_strides) {
  if (n <= kMaxDim) {
    Tensor s = src;
    Tensor d = dst;
    s.dim = d.dim = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) {
      s.sizes[i] = d.sizes[i] = sizes[i];
      s.strides[i] = src_strides[i];
      d.strides[i] = dst_strides[i];
    }
    return convert_into(ctx, s, d);
  }
  // Peel the outermost dim (rank is at most 2 * kMaxDim, so this recursion
  // is at most kMaxDim deep).
  Tensor s = src;
  Tensor d = dst;
  for (int64_t k = 0; k < sizes[0]; ++k) {
    PARE_TRY(copy_strided(ctx, s, d, n - 1, sizes + 1, src_strides + 1, dst_strides + 1));
    s.storage_offset += src_strides[0];
    d.storage_offset += dst_strides[0];
  }
  return Error::Ok;
}

Result<const int64_t*> index_values(KernelContext& ctx, const Tensor& index, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, index.dtype == ScalarType::Long || index.dtype == ScalarType::Int, Error::UnsupportedDtype,
                       "argument '%s': indices must be Long or Int, got %s", name, to_string(index.dtype));
  PARE_TRY_ASSIGN(const Tensor values, as_contiguous(ctx, index, ScalarType::Long));
  return static_cast<const int64_t*>(values.data());
}

}  // namespace indexing
}  // namespace kernels
}  // namespace pare
