#pragma once
// A float matrix transposed, shared by the layout conversions
// (aten::clone to and from channels-last: indexing/copies.cc) and the
// pixel-rows GEMM's product (gemm.h, transpose_product).

#include "runtime/core/compiler.h"

namespace pare {

// dst [cols x rows] = src [rows x cols] transposed (row-major both), in
// 8 x 8 blocks so that both sides stream whole cache lines.
inline void transpose_matrix(const float* PARE_RESTRICT src, int64_t rows, int64_t cols, float* PARE_RESTRICT dst) {
  constexpr int64_t kBlock = 8;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t r1 = r0 + kBlock < rows ? r0 + kBlock : rows;
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t c1 = c0 + kBlock < cols ? c0 + kBlock : cols;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
      }
    }
  }
}

}  // namespace pare
