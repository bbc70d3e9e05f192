// Shared helpers of the indexing family (see indexing.h).

#include "runtime/kernels/indexing/indexing.h"

#include "runtime/core/format.h"
#include "runtime/kernels/common/elementwise.h"

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

namespace {

bool is_mask(const Tensor& t) { return t.dtype == ScalarType::Bool || t.dtype == ScalarType::Byte; }

// The positions of mask's nonzero elements, row-major, as `mask.dim` Long
// vectors (torch's nonzero().select(1, j): one [n, mask.dim] buffer).
Error expand_mask(KernelContext& ctx, const Tensor& mask, Tensor* vectors) {
  const size_t m = mask.dim;
  const size_t numel = mask.numel();
  // Sized by the mask, not by its contents, so the memory plan replays.
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(numel * m * sizeof(int64_t)));
  int64_t* positions = static_cast<int64_t*>(memory);
  const uint8_t* data = mask.data_as<uint8_t>();  // Bool and Byte: one byte, nonzero = true
  int64_t coords[kMaxDim] = {};
  int64_t offset = 0;
  int64_t n = 0;
  for (size_t e = 0; e < numel; ++e) {
    if (data[offset] != 0) {
      for (size_t d = 0; d < m; ++d) positions[n * static_cast<int64_t>(m) + static_cast<int64_t>(d)] = coords[d];
      ++n;
    }
    for (size_t d = m; d-- > 0;) {
      offset += mask.strides[d];
      if (++coords[d] < mask.sizes[d]) break;
      offset -= mask.strides[d] * mask.sizes[d];
      coords[d] = 0;
    }
  }
  for (size_t d = 0; d < m; ++d) {
    Tensor& v = vectors[d];
    v = Tensor{};
    v.storage = positions;
    v.storage_offset = static_cast<int64_t>(d);
    v.dtype = ScalarType::Long;
    v.dim = 1;
    v.sizes[0] = n;
    v.strides[0] = static_cast<int64_t>(m);
  }
  return Error::Ok;
}

}  // namespace

Error plan_advanced_index(KernelContext& ctx, const Tensor& self, TensorList indices, bool allow_masks,
                          AdvancedIndex* plan) {
  PARE_CHECK_OR_RETURN(ctx, indices.size >= 1 && indices.size <= self.dim, Error::IndexOutOfRange,
                       "argument 'indices': %zu index tensors for a tensor of %u dims", indices.size,
                       static_cast<unsigned>(self.dim));
  // Self's dims as the expanded list covers them: -1 where None.
  int64_t entry_of_dim[kMaxDim];
  size_t k = 0;
  size_t covered = 0;
  for (size_t j = 0; j < indices.size; ++j) {
    const Value& item = *indices.items[j];
    if (item.kind != ValueKind::Tensor) {
      PARE_CHECK_OR_RETURN(ctx, covered < self.dim, Error::IndexOutOfRange,
                           "argument 'indices': too many indices for a tensor of %u dims",
                           static_cast<unsigned>(self.dim));
      entry_of_dim[covered++] = -1;
      continue;
    }
    const Tensor& t = item.tensor;
    if (!is_mask(t)) {
      PARE_CHECK_OR_RETURN(ctx, t.dtype == ScalarType::Long || t.dtype == ScalarType::Int, Error::UnsupportedDtype,
                           "argument 'indices': tensor %zu is %s; indices must be Long, Int, Bool or Byte tensors", j,
                           to_string(t.dtype));
      PARE_CHECK_OR_RETURN(ctx, covered < self.dim, Error::IndexOutOfRange,
                           "argument 'indices': too many indices for a tensor of %u dims",
                           static_cast<unsigned>(self.dim));
      plan->indices[k] = t;
      entry_of_dim[covered++] = static_cast<int64_t>(k++);
      continue;
    }
    PARE_CHECK_OR_RETURN(ctx, allow_masks, Error::NotImplemented,
                         "argument 'indices': boolean mask indices (tensor %zu) are not supported", j);
    PARE_CHECK_OR_RETURN(ctx, t.dim > 0, Error::NotImplemented,
                         "argument 'indices': a 0-dim mask (tensor %zu) is not supported; index with a mask of "
                         "self's sizes",
                         j);
    PARE_CHECK_OR_RETURN(ctx, covered + t.dim <= self.dim, Error::IndexOutOfRange,
                         "argument 'indices': too many indices for a tensor of %u dims (mask %zu has %u dims)",
                         static_cast<unsigned>(self.dim), j, static_cast<unsigned>(t.dim));
    for (size_t d = 0; d < t.dim; ++d) {
      PARE_CHECK_OR_RETURN(ctx, t.sizes[d] == self.sizes[covered + d], Error::InvalidShape,
                           "argument 'indices': mask %zu with sizes %s does not match 'self' (sizes %s) from dim %zu",
                           j, sizes_to_string(t.size_span()).text, sizes_to_string(self.size_span()).text, covered);
    }
    PARE_TRY(expand_mask(ctx, t, &plan->indices[k]));
    for (size_t d = 0; d < t.dim; ++d) entry_of_dim[covered++] = static_cast<int64_t>(k++);
  }
  for (; covered < self.dim; ++covered) entry_of_dim[covered] = -1;
  PARE_CHECK_OR_RETURN(ctx, k > 0, Error::InvalidArgument,
                       "argument 'indices' holds no index tensor (only None); index at least one dim");
  plan->num_indices = k;
  // Broadcast B.
  size_t shape_dim = 0;
  for (size_t j = 0; j < k; ++j) {
    const Tensor& t = plan->indices[j];
    int64_t merged[kMaxDim];
    size_t merged_dim = 0;
    PARE_CHECK_OR_RETURN(
        ctx, broadcast_shapes(IntArrayRef(plan->index_sizes, shape_dim), t.size_span(), merged, &merged_dim),
        Error::InvalidShape, "argument 'indices': index tensor %zu with sizes %s cannot be broadcast with %s", j,
        sizes_to_string(t.size_span()).text, sizes_to_string(IntArrayRef(plan->index_sizes, shape_dim)).text);
    for (size_t d = 0; d < merged_dim; ++d) plan->index_sizes[d] = merged[d];
    shape_dim = merged_dim;
  }
  plan->index_dim = shape_dim;
  int64_t count = 1;
  bool overflow = false;
  for (size_t d = 0; d < shape_dim; ++d)
    overflow = overflow || __builtin_mul_overflow(count, plan->index_sizes[d], &count);
  PARE_CHECK_OR_RETURN(ctx, !overflow && count <= (int64_t{1} << 48), Error::InvalidShape,
                       "argument 'indices': the broadcast index shape %s is too large",
                       sizes_to_string(IntArrayRef(plan->index_sizes, shape_dim)).text);
  plan->count = count;
  for (size_t d = 0; d < self.dim; ++d) {
    // No index is valid for an empty dim (torch checks this even when
    // nothing is read or written, unlike the indices themselves).
    PARE_CHECK_OR_RETURN(ctx, entry_of_dim[d] < 0 || self.sizes[d] > 0 || count == 0, Error::IndexOutOfRange,
                         "argument 'indices': dim %zu has size 0, so no index is in bounds", d);
  }
  // Torch's layout: indexed dims where they are when adjacent, else first.
  size_t first = self.dim;
  size_t last = 0;
  for (size_t d = 0; d < self.dim; ++d) {
    if (entry_of_dim[d] < 0) continue;
    if (first == self.dim) first = d;
    last = d;
  }
  const bool adjacent = last + 1 - first == k;
  size_t n = 0;
  plan->num_before = adjacent ? first : 0;
  for (size_t d = 0; d < plan->num_before; ++d) plan->dims[n++] = static_cast<uint8_t>(d);
  for (size_t d = 0; d < self.dim; ++d) {
    if (entry_of_dim[d] >= 0) plan->dims[n++] = static_cast<uint8_t>(d);
  }
  for (size_t d = plan->num_before; d < self.dim; ++d) {
    if (entry_of_dim[d] < 0) plan->dims[n++] = static_cast<uint8_t>(d);
  }
  plan->num_after = self.dim - plan->num_before - k;
  plan->result_dim = plan->num_before + shape_dim + plan->num_after;
  PARE_CHECK_OR_RETURN(ctx, plan->result_dim <= kMaxDim, Error::LimitExceeded,
                       "the result would have %zu dims; this runtime supports up to %zu", plan->result_dim, kMaxDim);
  size_t r = 0;
  for (size_t d = 0; d < plan->num_before; ++d) plan->result_sizes[r++] = self.sizes[plan->dims[d]];
  for (size_t d = 0; d < shape_dim; ++d) plan->result_sizes[r++] = plan->index_sizes[d];
  for (size_t d = plan->num_before + k; d < self.dim; ++d) plan->result_sizes[r++] = self.sizes[plan->dims[d]];
  return Error::Ok;
}

Error advanced_index_offsets(KernelContext& ctx, const Tensor& self, const AdvancedIndex& plan, const int64_t* strides,
                             int64_t* offsets) {
  const size_t shape_dim = plan.index_dim;
  for (int64_t b = 0; b < plan.count; ++b) offsets[b] = 0;
  for (size_t j = 0; j < plan.num_indices; ++j) {
    // Index tensor j broadcast to B (stride 0 where it repeats).
    const Tensor& t = plan.indices[j];
    Tensor view = t;
    view.dim = static_cast<uint8_t>(shape_dim);
    for (size_t d = 0; d < shape_dim; ++d) {
      const int64_t td = static_cast<int64_t>(d) - static_cast<int64_t>(shape_dim - t.dim);
      view.sizes[d] = plan.index_sizes[d];
      view.strides[d] = td >= 0 && t.sizes[td] != 1 ? t.strides[td] : 0;
    }
    PARE_TRY_ASSIGN(const int64_t* idx, index_values(ctx, view, "indices"));
    const size_t dim = plan.dims[plan.num_before + j];
    const int64_t size = self.sizes[dim];
    for (int64_t b = 0; b < plan.count; ++b) {
      int64_t v = idx[b];
      PARE_CHECK_OR_RETURN(ctx, v >= -size && v < size, Error::IndexOutOfRange,
                           "argument 'indices': index %lld is out of bounds for dim %zu with size %lld",
                           static_cast<long long>(v), dim, static_cast<long long>(size));
      if (v < 0) v += size;
      offsets[b] += v * strides[dim];
    }
  }
  return Error::Ok;
}

}  // namespace indexing
}  // namespace kernels
}  // namespace pare
