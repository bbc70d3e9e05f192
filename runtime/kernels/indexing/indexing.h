#pragma once
// Helpers shared by the indexing family (views, copies, creation and
// gather-style ops): slice bounds, dim removal, tensor-option checks,
// element-width types and strided copies.
//
// Data-movement kernels dispatch on dtype (so selection and tracing see
// every dtype) but their bodies only move bytes: they are written over
// Bits<T>, the unsigned integer of T's width, so Int and Float share one
// specialisation of the helper.

#include "runtime/kernels/common/convert.h"

namespace pare {
namespace kernels {
namespace indexing {

template <size_t kWidth>
struct BitsOfWidth;
template <>
struct BitsOfWidth<1> {
  using type = uint8_t;
};
template <>
struct BitsOfWidth<2> {
  using type = uint16_t;
};
template <>
struct BitsOfWidth<4> {
  using type = uint32_t;
};
template <>
struct BitsOfWidth<8> {
  using type = uint64_t;
};
template <typename T>
using Bits = typename BitsOfWidth<sizeof(T)>::type;

// PyTorch's slice bound: negative counts from the end, then clamp to [0, size].
inline int64_t clamp_slice_bound(int64_t v, int64_t size) {
  if (v < 0) v += size;  // no overflow: size >= 0
  if (v < 0) return 0;
  return v > size ? size : v;
}

// A slice of one dim: elements start, start + step, ... (`length` of them).
struct Slice {
  int64_t dim;
  int64_t start;
  int64_t length;
  int64_t step;
};

// Reads the (dim=0, start=None, end=None, step=1) arguments of slice.Tensor
// and slice_scatter, which start at input `first`, for slicing `self`:
// negative dims and bounds count from the end, bounds are clamped to the
// dim like PyTorch's, step must be positive.
Error read_slice(KernelArgs& args, const Tensor& self, size_t first, Slice* slice);

// The view of `t` (sizes, strides and offset only) that `slice` selects.
inline Tensor slice_view(const Tensor& t, const Slice& slice) {
  Tensor v = t;
  const int64_t stride = t.strides[slice.dim];
  v.sizes[slice.dim] = slice.length;
  // With at most one element the stride does not matter: keep the input's
  // rather than stride * step, which may be huge.
  if (slice.length <= 1 || __builtin_mul_overflow(stride, slice.step, &v.strides[slice.dim])) {
    v.strides[slice.dim] = stride;
  }
  if (slice.length > 0) v.storage_offset = t.storage_offset + slice.start * stride;
  return v;
}

// Copies t's sizes and strides without dim `dim`; returns the new rank.
inline size_t drop_dim(const Tensor& t, int64_t dim, int64_t* sizes, int64_t* strides) {
  size_t n = 0;
  for (size_t d = 0; d < t.dim; ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    sizes[n] = t.sizes[d];
    strides[n] = t.strides[d];
    ++n;
  }
  return n;
}

// Checks the layout / device / pin_memory arguments of factory ops: Pare
// makes strided CPU tensors only (the tracer passes None for them).
Error check_tensor_options(KernelArgs& args, size_t layout, size_t device, size_t pin_memory);

// Checks that every size is >= 0 and the element count fits.
Error check_sizes(KernelContext& ctx, IntArrayRef sizes, const char* name);

// Writes dst[...] = src[...] over an n-dim walk (n may exceed kMaxDim: up
// to 2 * kMaxDim, e.g. for repeat), with per-operand element strides and
// base tensors giving storage, offset and dtype. Converts dtype like
// convert_into (dispatching copy_kernel when it cannot memcpy).
Error copy_strided(KernelContext& ctx, const Tensor& src, const Tensor& dst, size_t n, const int64_t* sizes,
                   const int64_t* src_strides, const int64_t* dst_strides);

// The index tensor `index` as contiguous int64 values (a scratch copy
// unless it already is one). Accepts Long and Int indices.
Result<const int64_t*> index_values(KernelContext& ctx, const Tensor& index, const char* name);

}  // namespace indexing
}  // namespace kernels
}  // namespace pare
