// Operators that copy data into a new contiguous tensor: aten::clone,
// aten::copy, aten::slice_scatter, aten::select_scatter, aten::cat, aten::stack, aten::flip,
// aten::roll, aten::repeat.
//
// Each describes its result as strided views (a slice of the output, a
// flipped or broadcast view of the input, the blocks a roll swaps) and
// moves the data with convert_into, which memcpys when both sides are
// contiguous and otherwise walks the merged dims through copy_kernel,
// converting dtypes for cat and stack's type promotion on the way.

#include "runtime/kernels/common/transpose.h"
#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {

namespace {

// `base` restricted to `sizes` / `strides` at `offset` elements further.
Tensor sub_view(const Tensor& base, const int64_t* sizes, const int64_t* strides, size_t dim, int64_t offset) {
  Tensor t = base;
  t.dim = static_cast<uint8_t>(dim);
  for (size_t d = 0; d < dim; ++d) {
    t.sizes[d] = sizes[d];
    t.strides[d] = strides[d];
  }
  t.storage_offset = base.storage_offset + offset;
  return t;
}

// The promoted dtype of a non-empty tensor list.
ScalarType promoted_dtype(TensorList list) {
  ScalarType dtype = list.items[0]->tensor.dtype;
  for (size_t k = 1; k < list.size; ++k) dtype = promote_types(dtype, list.items[k]->tensor.dtype);
  return dtype;
}

// An `int[1]` argument: an int list, or a single int standing for a list of one.
IntArrayRef int_or_int_list(KernelArgs& args, size_t i, const char* name) {
  if (args.has(i) && args.value(i).kind == ValueKind::Int) return IntArrayRef(&args.value(i).int_value, 1);
  return args.int_list(i, name);
}

// shift modulo size (> 0), in [0, size) like Python's %.
int64_t wrap_shift(int64_t shift, int64_t size) {
  const int64_t r = shift % size;
  return r < 0 ? r + size : r;
}

// dst = src rolled by shift[d] (in [0, sizes[d])) along every dim d.
// Rolling one dim by s moves two blocks: src[:size - s] to dst[s:] and
// src[size - s:] to dst[:s]; k rolled dims make 2^k blocks, each a strided
// copy.
Error roll_blocks(KernelContext& ctx, const Tensor& src, const Tensor& dst, const int64_t* shift) {
  size_t rolled[kMaxDim];
  size_t k = 0;
  for (size_t d = 0; d < src.dim; ++d) {
    if (shift[d] != 0) rolled[k++] = d;
  }
  for (uint32_t block = 0; block < (1u << k); ++block) {
    Tensor from = src;
    Tensor to = dst;
    for (size_t j = 0; j < k; ++j) {
      const size_t d = rolled[j];
      const int64_t size = src.sizes[d];
      const int64_t s = shift[d];
      const bool wraps = ((block >> j) & 1u) != 0;  // the last s elements, which move to the front
      from.sizes[d] = to.sizes[d] = wraps ? s : size - s;
      if (wraps) {
        from.storage_offset += (size - s) * src.strides[d];
      } else {
        to.storage_offset += s * dst.strides[d];
      }
    }
    PARE_TRY(convert_into(ctx, from, to));
  }
  return Error::Ok;
}

// t's n elements (t contiguous) as a 1-d tensor.
Tensor flat_view(const Tensor& t, int64_t n) {
  Tensor v = t;
  v.dim = 1;
  v.sizes[0] = n;
  v.strides[0] = 1;
  return v;
}

// Whether out = self is one image-by-image transpose: both float and 4-D,
// one contiguous and the other channels-last (NCHW: [C][H * W] per image;
// NHWC: [H * W][C]), and not the same memory order (as with one channel
// or one pixel, where a tensor is both).
PARE_UNUSED bool transposes_layout(const Tensor& self, const Tensor& out) {
  if (self.dtype != ScalarType::Float || out.dtype != ScalarType::Float || self.dim != 4) return false;
  const bool self_nchw = self.is_contiguous() && !self.is_channels_last();
  const bool self_nhwc = self.is_channels_last() && !self.is_contiguous();
  const bool out_nchw = out.is_contiguous() && !out.is_channels_last();
  const bool out_nhwc = out.is_channels_last() && !out.is_contiguous();
  return (self_nchw && out_nhwc) || (self_nhwc && out_nchw);
}

}  // namespace

// aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
//
// Contiguous, or channels-last (NHWC) for memory_format=channels_last (the
// layout conversions the channels_last pass places: docs/tracer.md). Values
// equal PyTorch's; strides may differ for memory_format=preserve on a
// permuted input.
Error aten_clone(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Optional<int64_t> format = args.optional_int64(1, "memory_format");
  PARE_TRY(args.status());
  constexpr int64_t kChannelsLast = 2;  // c10::MemoryFormat::ChannelsLast
  const bool channels_last = format.has_value && format.value == kChannelsLast;
  PARE_CHECK_OR_RETURN(ctx, !channels_last || self.dim == 4, Error::InvalidArgument,
                       "memory_format=channels_last needs a 4-D tensor, got sizes %s",
                       sizes_to_string(self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (channels_last) set_channels_last_strides(*out);
  if constexpr (fast_path_compiled<tags::channels_last_transpose_kernel, float>()) {
    if (out->numel() > 0 && transposes_layout(self, *out) &&
        fast_path_selected<tags::channels_last_transpose_kernel, float>()) {
      return run_fast_path<tags::channels_last_transpose_kernel, float>(ctx, [&]() -> Error {
        const int64_t c = self.sizes[1];
        const int64_t hw = self.sizes[2] * self.sizes[3];
        const bool to_nhwc = out->is_channels_last();
        for (int64_t n = 0; n < self.sizes[0]; ++n) {
          const float* src = self.data_as<float>() + n * c * hw;
          float* dst = out->data_as<float>() + n * c * hw;
          if (to_nhwc) {
            transpose_matrix(src, c, hw, dst);
          } else {
            transpose_matrix(src, hw, c, dst);
          }
        }
        return Error::Ok;
      });
    }
  }
  return convert_into(ctx, self, *out);
}

// aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor
//
// The functional copy_: self's sizes and dtype, src's values broadcast.
Error aten_copy(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& src = args.tensor(1, "src");
  (void)args.boolean_or(2, "non_blocking", false);
  PARE_TRY(args.status());
  // src broadcast to self's sizes (stride 0 on broadcast dims).
  Tensor from = src;
  bool ok = src.dim <= self.dim;
  from.dim = self.dim;
  for (size_t i = self.dim; ok && i-- > 0;) {
    const int64_t d = static_cast<int64_t>(i) - static_cast<int64_t>(self.dim - src.dim);
    const int64_t s = d >= 0 ? src.sizes[d] : 1;
    ok = s == self.sizes[i] || s == 1;
    from.sizes[i] = self.sizes[i];
    from.strides[i] = d >= 0 && s != 1 ? src.strides[d] : 0;
  }
  PARE_CHECK_OR_RETURN(ctx, ok, Error::InvalidShape, "argument 'src' with sizes %s cannot be broadcast to %s",
                       sizes_to_string(src.size_span()).text, sizes_to_string(self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  return convert_into(ctx, from, *out);
}

// aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
//                     SymInt step=1) -> Tensor
//
// A copy of self with src written into self[dim][start:end:step], the
// functional form of `x[:, a:b] = y`.
Error aten_slice_scatter(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 6, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& src = args.tensor(1, "src");
  PARE_TRY(args.status());
  indexing::Slice slice{};
  PARE_TRY(indexing::read_slice(args, self, 2, &slice));
  PARE_CHECK_OR_RETURN(ctx, src.dtype == self.dtype, Error::InvalidArgument,
                       "argument 'src' has dtype %s but 'self' is %s; they must match", to_string(src.dtype),
                       to_string(self.dtype));
  const Tensor slot_of_self = indexing::slice_view(self, slice);
  bool same = src.dim == self.dim;
  for (size_t d = 0; same && d < src.dim; ++d) same = src.sizes[d] == slot_of_self.sizes[d];
  PARE_CHECK_OR_RETURN(ctx, same, Error::InvalidShape,
                       "argument 'src' of sizes %s must have the sizes of the slice of 'self', %s",
                       sizes_to_string(src.size_span()).text, sizes_to_string(slot_of_self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY(copy_self_into(ctx, self, *out));
  if (slice.length == 0) return Error::Ok;
  return convert_into(ctx, src, indexing::slice_view(*out, slice));
}

// aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
//
// A copy of self with src written into self.select(dim, index), the
// functional form of `x[:, i] = y`: slice_scatter's copy through a slice of
// length 1, src seen with that dim (size 1) put back.
Error aten_select_scatter(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& src = args.tensor(1, "src");
  PARE_TRY(args.status());
  int64_t dim = 0;
  int64_t index = 0;
  PARE_TRY(indexing::read_select(args, self, 2, &dim, &index));
  PARE_CHECK_OR_RETURN(ctx, src.dtype == self.dtype, Error::InvalidArgument,
                       "argument 'src' has dtype %s but 'self' is %s; they must match", to_string(src.dtype),
                       to_string(self.dtype));
  // src with dim `dim` (size 1) inserted: the shape of the slot it fills.
  Tensor src_slot = src;
  bool same = src.dim + 1 == self.dim;
  for (int64_t d = 0, s = 0; same && d < self.dim; ++d) {
    if (d == dim) {
      src_slot.sizes[d] = 1;
      src_slot.strides[d] = 0;
    } else {
      same = src.sizes[s] == self.sizes[d];
      src_slot.sizes[d] = src.sizes[s];
      src_slot.strides[d] = src.strides[s];
      ++s;
    }
  }
  src_slot.dim = self.dim;
  int64_t expected[kMaxDim];
  int64_t unused[kMaxDim];
  const size_t n = indexing::drop_dim(self, dim, expected, unused);
  PARE_CHECK_OR_RETURN(ctx, same, Error::InvalidShape,
                       "argument 'src' of sizes %s must have sizes %s, self's without dim %lld",
                       sizes_to_string(src.size_span()).text, sizes_to_string(IntArrayRef(expected, n)).text,
                       static_cast<long long>(dim));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY(copy_self_into(ctx, self, *out));
  return convert_into(ctx, src_slot, indexing::slice_view(*out, indexing::Slice{dim, index, 1, 1}));
}

// aten::cat(Tensor[] tensors, int dim=0) -> Tensor
Error aten_cat(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const TensorList tensors = args.tensor_list(0, "tensors");
  const int64_t raw_dim = args.int64_or(1, "dim", 0);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, tensors.size > 0, Error::InvalidArgument, "argument 'tensors' must not be empty");
  const ScalarType dtype = promoted_dtype(tensors);
  // PyTorch still skips 1-d empty tensors ([0]) whatever the other shapes.
  auto skipped = [](const Tensor& t) { return t.dim == 1 && t.sizes[0] == 0; };
  const Tensor* ref = nullptr;
  for (size_t k = 0; k < tensors.size && ref == nullptr; ++k) {
    if (!skipped(tensors.items[k]->tensor)) ref = &tensors.items[k]->tensor;
  }
  if (ref == nullptr) {
    const int64_t empty[] = {0};
    return ctx.allocate_output(args.output(0), dtype, IntArrayRef(empty, 1)).error();
  }
  int64_t dim = 0;
  PARE_TRY(wrap_dim(ctx, raw_dim, ref->dim, "dim", &dim));
  int64_t sizes[kMaxDim];
  for (size_t d = 0; d < ref->dim; ++d) sizes[d] = ref->sizes[d];
  sizes[dim] = 0;
  for (size_t k = 0; k < tensors.size; ++k) {
    const Tensor& t = tensors.items[k]->tensor;
    if (skipped(t)) continue;
    PARE_CHECK_OR_RETURN(ctx, t.dim > 0, Error::InvalidShape,
                         "argument 'tensors': tensor %zu is 0-dim and cannot be concatenated", k);
    PARE_CHECK_OR_RETURN(ctx, t.dim == ref->dim, Error::InvalidShape,
                         "argument 'tensors': tensors must have the same number of dims, got %u and %u (tensor %zu)",
                         static_cast<unsigned>(ref->dim), static_cast<unsigned>(t.dim), k);
    for (size_t d = 0; d < t.dim; ++d) {
      PARE_CHECK_OR_RETURN(ctx, static_cast<int64_t>(d) == dim || t.sizes[d] == ref->sizes[d], Error::InvalidShape,
                           "argument 'tensors': sizes must match except in dim %lld; tensor %zu has sizes %s, "
                           "expected %s",
                           static_cast<long long>(dim), k, sizes_to_string(t.size_span()).text,
                           sizes_to_string(ref->size_span()).text);
    }
    PARE_CHECK_OR_RETURN(ctx, !__builtin_add_overflow(sizes[dim], t.sizes[dim], &sizes[dim]), Error::InvalidShape,
                         "argument 'tensors': the concatenated size overflows");
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), dtype, IntArrayRef(sizes, ref->dim)));
  int64_t position = 0;
  for (size_t k = 0; k < tensors.size; ++k) {
    const Tensor& t = tensors.items[k]->tensor;
    if (skipped(t) || t.numel() == 0) {
      if (!skipped(t)) position += t.sizes[dim];
      continue;
    }
    const Tensor slot = sub_view(*out, t.sizes, out->strides, t.dim, position * out->strides[dim]);
    PARE_TRY(convert_into(ctx, t, slot));
    position += t.sizes[dim];
  }
  return Error::Ok;
}

// aten::stack(Tensor[] tensors, int dim=0) -> Tensor
Error aten_stack(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const TensorList tensors = args.tensor_list(0, "tensors");
  const int64_t raw_dim = args.int64_or(1, "dim", 0);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, tensors.size > 0, Error::InvalidArgument, "argument 'tensors' must not be empty");
  const Tensor& first = tensors.items[0]->tensor;
  PARE_CHECK_OR_RETURN(ctx, first.dim < kMaxDim, Error::LimitExceeded,
                       "the result would have %u dims; this runtime supports up to %zu",
                       static_cast<unsigned>(first.dim) + 1, kMaxDim);
  int64_t dim = 0;
  PARE_TRY(wrap_dim(ctx, raw_dim, first.dim + 1, "dim", &dim));
  for (size_t k = 1; k < tensors.size; ++k) {
    const Tensor& t = tensors.items[k]->tensor;
    bool same = t.dim == first.dim;
    for (size_t d = 0; same && d < t.dim; ++d) same = t.sizes[d] == first.sizes[d];
    PARE_CHECK_OR_RETURN(ctx, same, Error::InvalidShape,
                         "argument 'tensors': every tensor must have the same sizes, got %s (tensor 0) and %s "
                         "(tensor %zu)",
                         sizes_to_string(first.size_span()).text, sizes_to_string(t.size_span()).text, k);
  }
  int64_t sizes[kMaxDim];
  size_t n = 0;
  for (size_t d = 0; d <= first.dim; ++d) {
    if (static_cast<int64_t>(d) == dim) sizes[n++] = static_cast<int64_t>(tensors.size);
    if (d < first.dim) sizes[n++] = first.sizes[d];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), promoted_dtype(tensors), IntArrayRef(sizes, n)));
  if (out->numel() == 0) return Error::Ok;
  int64_t slot_sizes[kMaxDim];
  int64_t slot_strides[kMaxDim];
  const size_t slot_dim = indexing::drop_dim(*out, dim, slot_sizes, slot_strides);
  for (size_t k = 0; k < tensors.size; ++k) {
    const Tensor slot = sub_view(*out, slot_sizes, slot_strides, slot_dim, static_cast<int64_t>(k) * out->strides[dim]);
    PARE_TRY(convert_into(ctx, tensors.items[k]->tensor, slot));
  }
  return Error::Ok;
}

// aten::flip(Tensor self, int[] dims) -> Tensor
Error aten_flip(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef dims = args.int_list(1, "dims");
  PARE_TRY(args.status());
  // A view walking the flipped dims backwards (negative strides).
  Tensor flipped = self;
  bool seen[kMaxDim] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[i], self.dim, "dims", &d));
    PARE_CHECK_OR_RETURN(ctx, !seen[d], Error::InvalidArgument,
                         "argument 'dims': dim %lld appears multiple times in the list of dims",
                         static_cast<long long>(d));
    seen[d] = true;
    if (self.dim == 0 || self.sizes[d] <= 1) continue;
    flipped.storage_offset += (self.sizes[d] - 1) * self.strides[d];
    flipped.strides[d] = -self.strides[d];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  return convert_into(ctx, flipped, *out);
}

// aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor
//
// Like PyTorch: each (shift, dim) pair rolls one dim, in turn, so repeated
// dims add up; with no dims the flattened tensor rolls (one shift only);
// an empty tensor is copied without looking at dims.
Error aten_roll(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef shifts = int_or_int_list(args, 1, "shifts");
  const IntArrayRef dims = args.has(2) ? int_or_int_list(args, 2, "dims") : IntArrayRef();
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, shifts.size() > 0, Error::InvalidArgument, "argument 'shifts' must not be empty");
  const bool flatten = dims.empty() && shifts.size() == 1;
  PARE_CHECK_OR_RETURN(ctx, flatten || shifts.size() == dims.size(), Error::InvalidArgument,
                       "arguments 'shifts' and 'dims' must have the same length, got %zu shifts and %zu dims",
                       shifts.size(), dims.size());
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  const int64_t n = static_cast<int64_t>(out->numel());
  if (n == 0) return Error::Ok;
  if (flatten) {
    PARE_TRY_ASSIGN(const Tensor contiguous, as_contiguous(ctx, self, self.dtype));
    const int64_t shift = wrap_shift(shifts[0], n);
    return roll_blocks(ctx, flat_view(contiguous, n), flat_view(*out, n), &shift);
  }
  PARE_CHECK_OR_RETURN(ctx, self.dim > 0, Error::IndexOutOfRange,
                       "argument 'dims': a 0-dim tensor has no dim %lld to roll", static_cast<long long>(dims[0]));
  int64_t shift[kMaxDim] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[i], self.dim, "dims", &d));
    const int64_t size = self.sizes[d];
    const int64_t s = wrap_shift(shifts[i], size);
    // (shift[d] + s) % size without overflowing for sizes near 2^63.
    shift[d] = shift[d] >= size - s ? shift[d] - (size - s) : shift[d] + s;
  }
  return roll_blocks(ctx, self, *out, shift);
}

// aten::repeat(Tensor self, SymInt[] repeats) -> Tensor
Error aten_repeat(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef repeats = args.int_list(1, "repeats");
  PARE_TRY(args.status());
  const size_t n = repeats.size();
  PARE_CHECK_OR_RETURN(ctx, n >= self.dim, Error::InvalidShape,
                       "argument 'repeats' %s has fewer entries than the input has dims (%u)",
                       sizes_to_string(repeats).text, static_cast<unsigned>(self.dim));
  PARE_CHECK_OR_RETURN(ctx, n <= kMaxDim, Error::LimitExceeded,
                       "argument 'repeats' has %zu entries; this runtime supports up to %zu dims", n, kMaxDim);
  // The input right-aligned against the repeats, leading dims of size 1.
  const size_t lead = n - self.dim;
  int64_t in_sizes[kMaxDim];
  int64_t in_strides[kMaxDim];
  int64_t sizes[kMaxDim];
  for (size_t i = 0; i < n; ++i) {
    in_sizes[i] = i < lead ? 1 : self.sizes[i - lead];
    in_strides[i] = i < lead ? 0 : self.strides[i - lead];
    PARE_CHECK_OR_RETURN(ctx, repeats[i] >= 0 && !__builtin_mul_overflow(in_sizes[i], repeats[i], &sizes[i]),
                         Error::InvalidShape, "argument 'repeats' %s: invalid repeat count %lld",
                         sizes_to_string(repeats).text, static_cast<long long>(repeats[i]));
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, n)));
  if (out->numel() == 0) return Error::Ok;
  // Output dim i is [repeats[i], in_sizes[i]]: the input broadcast (stride
  // 0) over the repeat index. Size-1 parts are left out.
  int64_t walk_sizes[2 * kMaxDim];
  int64_t src_strides[2 * kMaxDim];
  int64_t dst_strides[2 * kMaxDim];
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (repeats[i] != 1) {
      walk_sizes[k] = repeats[i];
      src_strides[k] = 0;
      dst_strides[k] = in_sizes[i] * out->strides[i];
      ++k;
    }
    if (in_sizes[i] != 1) {
      walk_sizes[k] = in_sizes[i];
      src_strides[k] = in_strides[i];
      dst_strides[k] = out->strides[i];
      ++k;
    }
  }
  return indexing::copy_strided(ctx, self, *out, k, walk_sizes, src_strides, dst_strides);
}

}  // namespace kernels
}  // namespace pare
