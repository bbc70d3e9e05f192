// Tensor metadata helpers (see tensor.h).

#include "runtime/core/tensor.h"

#include "runtime/core/format.h"

namespace pare {

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = dim; i-- > 0;) {
    // Size-1 dims may have any stride, as in PyTorch.
    if (sizes[i] == 1) continue;
    if (sizes[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

namespace {

// The channels-last strides of a 4-D [N, C, H, W] or 3-D [C, H, W] size list.
void channels_last_strides(const Tensor& t, int64_t* strides) {
  const size_t c = t.dim - 3;  // the channel dim
  strides[c] = 1;
  strides[c + 2] = t.sizes[c];
  strides[c + 1] = t.sizes[c + 2] * t.sizes[c];
  if (c == 1) strides[0] = t.sizes[2] * strides[2];  // H * W * C
}

}  // namespace

bool Tensor::is_channels_last() const {
  if (dim != 3 && dim != 4) return false;
  int64_t expected[4];
  channels_last_strides(*this, expected);
  for (size_t i = 0; i < dim; ++i) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected[i]) return false;
  }
  return true;
}

void set_channels_last_strides(Tensor& t) {
  if (t.dim == 3 || t.dim == 4) channels_last_strides(t, t.strides);
}

void copy_to_contiguous(const Tensor& src, void* dst) {
  const size_t n = src.numel();
  const size_t size = src.element_size();
  if (n == 0) return;
  if (src.is_contiguous()) {
    __builtin_memcpy(dst, src.data(), n * size);
    return;
  }
  int64_t index[kMaxDim] = {};
  const char* base = static_cast<const char*>(src.data());
  char* out = static_cast<char*>(dst);
  for (size_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < src.dim; ++d) offset += index[d] * src.strides[d];
    __builtin_memcpy(out + i * size, base + offset * static_cast<int64_t>(size), size);
    for (size_t d = src.dim; d-- > 0;) {
      if (++index[d] < src.sizes[d]) break;
      index[d] = 0;
    }
  }
}

void element_span(const Tensor& src, const char** begin, const char** end) {
  *begin = *end = static_cast<const char*>(src.data());
  if (src.numel() == 0) return;
  int64_t last = 0;
  for (size_t d = 0; d < src.dim; ++d) last += (src.sizes[d] - 1) * src.strides[d];
  *end += (last + 1) * static_cast<int64_t>(src.element_size());
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (is_contiguous()) return true;
  // Sort dims by stride (insertion sort: dim <= kMaxDim), then check that
  // they tile memory exactly.
  size_t order[kMaxDim];
  for (size_t i = 0; i < dim; ++i) order[i] = i;
  for (size_t i = 1; i < dim; ++i) {
    size_t j = i;
    while (j > 0 && strides[order[j - 1]] > strides[order[j]]) {
      const size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
      --j;
    }
  }
  int64_t expected = 1;
  for (size_t k = 0; k < dim; ++k) {
    const size_t d = order[k];
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool checked_numel(IntArrayRef sizes, size_t* numel) {
  // The product of max(size, 1) over the dims bounds numel and every
  // contiguous stride. Keeping it within int64 means element offsets and
  // stride arithmetic never overflow, even for a tensor with a zero dim
  // whose other dims are huge (fuzz/regressions/loader/empty_with_huge_dims.pare).
  size_t span = 1;
  bool overflow = false;
  bool has_zero_dim = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) return false;
    has_zero_dim |= sizes[i] == 0;
    overflow |= __builtin_mul_overflow(span, sizes[i] > 1 ? static_cast<size_t>(sizes[i]) : size_t{1}, &span);
  }
  if (overflow || span > static_cast<size_t>(INT64_MAX)) return false;
  *numel = has_zero_dim ? 0 : span;
  return true;
}

bool contiguous_strides(IntArrayRef sizes, int64_t* strides, size_t* numel) {
  if (!checked_numel(sizes, numel)) return false;
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    // Size 0/1 dims do not advance the stride (PyTorch uses max(size, 1)).
    stride *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return true;
}

Tensor make_tensor(void* data, ScalarType dtype, IntArrayRef sizes) {
  Tensor t{};
  t.storage = data;
  t.storage_offset = 0;
  t.dtype = dtype;
  t.dim = static_cast<uint8_t>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) t.sizes[i] = sizes[i];
  size_t numel = 0;
  (void)contiguous_strides(sizes, t.strides, &numel);
  return t;
}

SizesString sizes_to_string(IntArrayRef sizes) {
  SizesString s;
  FormatBuffer out(s.text, sizeof(s.text));
  out.append_char('[');
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append_int(sizes[i]);
  }
  out.append_char(']');
  return s;
}

}  // namespace pare
