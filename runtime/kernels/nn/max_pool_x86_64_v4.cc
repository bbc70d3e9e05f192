// The x86-64-v4 copy of the int8 max pool's row loop (max_pool_int8.h): 32
// outputs per AVX2-wide register (byte max), with AVX-512 BW's masked byte
// loads and word-to-byte narrowing, where the baseline copy (SSE2: no signed
// byte max, no byte shuffle) ran 16 outputs in about twice the
// instructions per tap and every output whose window reaches past the row
// (ResNet's stem pool: the first of each row) in a scalar loop. A maximum
// of int8 values is the same in any order: the same bits.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/nn/max_pool_int8.h"

#include <immintrin.h>

namespace pare {
namespace kernels {
namespace max_pool_int8 {
namespace x86_64_v4 {
namespace {

constexpr int64_t kOutputs = 32;

// The bytes of a row at [x, x + kBytes) that lie inside its `width`
// columns (x may lie before the row), as a load mask; all ones where every
// byte does.
template <int64_t kBytes>
inline __mmask64 inside(int64_t x, int64_t width) {
  const int64_t lo = x < 0 ? -x : 0;
  const int64_t hi = width - x < kBytes ? width - x : kBytes;
  if (hi <= lo) return 0;
  const __mmask64 below_hi = hi >= 64 ? ~__mmask64{0} : (__mmask64{1} << hi) - 1u;
  return below_hi & ~((__mmask64{1} << lo) - 1u);
}

template <int64_t kStride>
void row_stride(const int8_t* first_row, int64_t row_step, int64_t rows, int64_t width, int64_t kernel,
                int64_t dilation, int64_t padding, int64_t n, int8_t* out) {
  constexpr int64_t kBytes = 32 * kStride;  // the bytes a tap of 32 outputs spans
  const __m512i lowest = _mm512_set1_epi8(-128);
  for (int64_t j = 0; j < n; j += kOutputs) {
    __m256i max = _mm256_set1_epi8(-128);
    for (int64_t t = 0; t < kernel; ++t) {
      // Outputs j .. j + 31's tap t: columns x, x + stride, .. of each row,
      // -128 outside the row (masked loads never touch the bytes they
      // leave out), the mask the same for every row.
      const int64_t x = j * kStride - padding + t * dilation;
      const __mmask64 mask = inside<kBytes>(x, width);
      const uintptr_t at = reinterpret_cast<uintptr_t>(first_row) + x;
      for (int64_t r = 0; r < rows; ++r) {
        const __m512i bytes = _mm512_mask_loadu_epi8(lowest, mask, reinterpret_cast<const void*>(at + r * row_step));
        max = _mm256_max_epi8(
            max, kStride == 1 ? _mm512_castsi512_si256(bytes) : _mm512_cvtepi16_epi8(bytes));  // the even bytes
      }
    }
    const int64_t left = n - j;
    _mm256_mask_storeu_epi8(out + j, left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1u, max);
  }
}

}  // namespace

void row(const int8_t* first_row, int64_t row_step, int64_t rows, int64_t width, int64_t kernel, int64_t dilation,
         int64_t stride, int64_t padding, int64_t n, int8_t* out) {
  if (stride == 1) {
    row_stride<1>(first_row, row_step, rows, width, kernel, dilation, padding, n, out);
  } else {
    row_stride<2>(first_row, row_step, rows, width, kernel, dilation, padding, n, out);
  }
}

}  // namespace x86_64_v4
}  // namespace max_pool_int8
}  // namespace kernels
}  // namespace pare

#endif
