#pragma once
// Tensor: dtype, sizes, strides and storage offset over memory the tensor
// does not own.
//
// Memory belongs to the method's arena, the program's constant segment, the
// caller (inputs) or another tensor (views); a Tensor is plain metadata, a
// trivially copyable aggregate that fits in a Value union. Strides and the
// storage offset are in elements, as in PyTorch. Rank is capped at kMaxDim so
// shapes live inline without allocation.

#include "runtime/core/program_format.h"  // kMaxDim: the format's rank limit is the tensor's
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace pare {

struct Tensor {
  void* storage;           // base of the underlying buffer (may be null when empty)
  int64_t storage_offset;  // elements from `storage` to element [0, ..., 0]
  ScalarType dtype;
  uint8_t dim;
  int64_t sizes[kMaxDim];
  int64_t strides[kMaxDim];

  size_t element_size() const { return pare::element_size(dtype); }
  IntArrayRef size_span() const { return IntArrayRef(sizes, dim); }
  IntArrayRef stride_span() const { return IntArrayRef(strides, dim); }

  // Product of sizes (1 for a 0-dim tensor). Allocation checked it fits.
  size_t numel() const {
    size_t n = 1;
    for (size_t i = 0; i < dim; ++i) n *= static_cast<size_t>(sizes[i]);
    return n;
  }
  size_t nbytes() const { return numel() * element_size(); }

  // Pointer to element [0, ..., 0].
  void* data() const { return static_cast<char*>(storage) + storage_offset * static_cast<int64_t>(element_size()); }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(storage) + storage_offset;
  }

  bool is_contiguous() const;
  // True for a 4-D [N, C, H, W] (or 3-D [C, H, W]) tensor in channels-last
  // memory order (NHWC: PyTorch's channels_last, strides [H*W*C, 1, W*C,
  // C]) on every dim of size > 1. A tensor can be both this and contiguous
  // (H = W = 1, or C = 1): then the two orders are the same memory.
  bool is_channels_last() const;
  // True when the elements occupy exactly numel() slots with no gaps or
  // overlap, in any dimension order (contiguous or a permutation of it).
  bool is_non_overlapping_and_dense() const;
};

// Gives a 4-D (or 3-D) tensor channels-last strides for its sizes (the
// same element count: memory allocated contiguous fits).
void set_channels_last_strides(Tensor& t);

// Row-major strides for `sizes`; returns the element count, or false on
// overflow of size_t.
bool contiguous_strides(IntArrayRef sizes, int64_t* strides, size_t* numel);

// Checked product of sizes (each must be >= 0). Also fails when the product
// of max(size, 1), which bounds the contiguous strides, exceeds int64.
bool checked_numel(IntArrayRef sizes, size_t* numel);

// Copies src's elements (any non-negative strides) to dst in row-major
// order: src.nbytes() bytes. dst must not overlap src's elements.
void copy_to_contiguous(const Tensor& src, void* dst);

// The bytes [begin, end) that src's elements span (begin == end when
// empty).
void element_span(const Tensor& src, const char** begin, const char** end);

// Builds a contiguous tensor header over `data`. Sizes must be valid.
Tensor make_tensor(void* data, ScalarType dtype, IntArrayRef sizes);

// "[2, 3, 4]" for messages.
struct SizesString {
  char text[8 * 22 + 8];
};
SizesString sizes_to_string(IntArrayRef sizes);

}  // namespace pare
