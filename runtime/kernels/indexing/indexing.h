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
#include "runtime/kernels/common/limits.h"

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

// Reads the (dim, index) arguments of select.int and select_scatter, at
// inputs `first` and `first + 1`, for selecting from `self`: a negative dim
// or index counts from the end; both are range-checked.
Error read_select(KernelArgs& args, const Tensor& self, size_t first, int64_t* dim, int64_t* index);

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

// Advanced indexing (x[i, j], x[:, i], x[mask]) laid out as PyTorch's
// AdvancedIndex (make_info in ATen/native/TensorAdvancedIndexing.cpp), for
// index.Tensor and index_put. A Bool or Byte mask stands for the positions
// of its nonzero elements, row-major: one Long vector per mask dim. The index
// tensors broadcast together to the index shape B. Self's dims in torch's
// order (`dims`): the non-indexed dims before the first indexed one, the
// indexed ones (indices[j] indexes dims[num_before + j]), the rest; when the
// indexed dims are not adjacent torch moves them to the front (num_before =
// 0). The indexed result has sizes self[dims before] + B + self[dims after].
struct AdvancedIndex {
  size_t num_indices;            // index tensors after mask expansion
  Tensor indices[kMaxDim];       // Long or Int, each broadcastable to B
  int64_t index_sizes[kMaxDim];  // B
  size_t index_dim;
  int64_t count;  // positions in B
  size_t num_before;
  size_t num_after;  // self.dim - num_before - num_indices
  uint8_t dims[kMaxDim];
  int64_t result_sizes[kMaxDim];
  size_t result_dim;
};

// Plans `self[indices]` for a Tensor?[] argument (None entries keep their
// dim). Masks are refused (NotImplemented) unless `allow_masks`; their
// positions go to scratch memory sized by the mask, not by its contents.
// Checks what torch checks: index dtypes, mask sizes, the broadcast, rank.
Error plan_advanced_index(KernelContext& ctx, const Tensor& self, TensorList indices, bool allow_masks,
                          AdvancedIndex* plan);

// offsets[b] = sum over j of indices[j][b] * strides[dims[num_before + j]]
// for every position b of B, row-major; each index is range-checked against
// its dim (negative ones count from the end). `offsets` holds plan.count.
Error advanced_index_offsets(KernelContext& ctx, const Tensor& self, const AdvancedIndex& plan, const int64_t* strides,
                             int64_t* offsets);

// PyTorch's checked conversion of a Scalar argument (fill values: full,
// fill.Scalar, scatter.value).
// Largest finite value of a floating type, as double.
template <typename T>
constexpr double max_finite() {
  if constexpr (is_same_v<T, Half>)
    return 65504.0;
  else if constexpr (is_same_v<T, BFloat16>)
    return 3.3895313892515355e38;
  else if constexpr (is_same_v<T, float>)
    return 3.4028234663852886e38;
  else
    return 1.7976931348623157e308;
}

// c10's overflows<T>(value): false when the Scalar converts to T without
// overflow. Unsigned targets accept negative ints down to -max (they wrap,
// as PyTorch allows); floating targets accept inf and NaN.
template <typename T>
inline bool fits(const Scalar& s) {
  if (s.is_bool() || is_same_v<T, bool> || is_same_v<T, double>) return true;
  if (s.is_integral(/*include_bool=*/false)) {
    const int64_t v = s.as_int();
    if constexpr (is_integral_v<T>) {
      constexpr int64_t lo = lowest_value<T>();
      constexpr int64_t hi = highest_value<T>();
      if constexpr (lo == 0) {
        return v <= hi && v >= -hi;
      } else {
        return v >= lo && v <= hi;
      }
    } else {
      const double d = static_cast<double>(v);
      return d <= max_finite<T>() && d >= -max_finite<T>();
    }
  }
  const double d = s.as_double();
  if constexpr (is_integral_v<T>) {
    // int64's max is not a double: 2^63 itself does not fit.
    const bool below_max =
        is_same_v<T, int64_t> ? d < 9223372036854775808.0 : d <= static_cast<double>(highest_value<T>());
    return d == d && d >= static_cast<double>(lowest_value<T>()) && below_max;
  } else {
    if (d != d || d == __builtin_inf() || d == -__builtin_inf()) return true;
    return d <= max_finite<T>() && d >= -max_finite<T>();
  }
}

// Calls fn(a, b, c) for every position of an n-dim walk, the last dim
// fastest, with offsets a, b, c advanced by three stride arrays.
template <typename Fn>
PARE_ALWAYS_INLINE void walk(size_t n, const int64_t* sizes, const int64_t* sa, const int64_t* sb, const int64_t* sc,
                             Fn fn) {
  int64_t total = 1;
  for (size_t d = 0; d < n; ++d) total *= sizes[d];
  int64_t counter[kMaxDim] = {};
  int64_t a = 0;
  int64_t b = 0;
  int64_t c = 0;
  for (int64_t it = 0; it < total; ++it) {
    fn(a, b, c);
    for (size_t d = n; d-- > 0;) {
      a += sa[d];
      b += sb[d];
      c += sc[d];
      if (++counter[d] < sizes[d]) break;
      a -= sa[d] * sizes[d];
      b -= sb[d] * sizes[d];
      c -= sc[d] * sizes[d];
      counter[d] = 0;
    }
  }
}

}  // namespace indexing
}  // namespace kernels
}  // namespace pare
