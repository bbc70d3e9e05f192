// The AVX-512 register tile for runtimes at --//runtime:x86_64_isa=auto,
// which run it on a CPU with AVX-512 F, BW, CD, DQ and VL (cpu::kernel_isa();
// gemm.cc's tile_kernel()). //runtime/kernels:kernels_v4 compiles this file
// with -march=x86-64-v4; elsewhere it is empty.
//
// The packed layouts are every ISA's (gemm.h): A in panels of kMR = 6 rows,
// B in panels of 8 columns, so 16 columns of a row are one 16-lane vector
// made of two panels' rows (a 256-bit load and a 256-bit insert). The tile
// is 6 x 32, two zmm vectors per row, 12 accumulators: as the AVX2 tile's
// 6 x 16, enough chains to keep two FMA pipes busy, and each broadcast of
// A (an FMA's memory operand) serves 32 columns. A tile of 17 to 31
// columns runs its first 16 as 6 x 16, whose 6 accumulators alone would
// wait on the FMA latency, so even and odd depths go to two sets added at
// the end (a different order of sums from the other copies', within the
// same dot-product bound: tests/runtime/test_isa.py). Fewer rows, and the
// remaining columns, are the v3 copy's, which this CPU runs too.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace gemm {
namespace x86_64_v4 {
namespace {

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef float v8 __attribute__((vector_size(8 * sizeof(float))));

// Depth p's 16 columns: row p of the first panel, then of the second.
PARE_ALWAYS_INLINE v16 b_row(const float* lo, const float* hi) {
  v8 l, h;
  __builtin_memcpy(&l, lo, sizeof(l));
  __builtin_memcpy(&h, hi, sizeof(h));
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

static_assert(kMR == 6 && kTileCols == 4 * kPanelCols, "the v4 tile is 6 rows x four B panels");

// C's 6 x 16V tile = out(alpha * A B), B's 2V panels from `b`; with V = 1
// the even and odd depths in two sets of accumulators.
template <int V>
PARE_ALWAYS_INLINE void rows(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c,
                             int64_t ldc, const Output& out) {
  constexpr int kSets = V == 1 ? 2 : 1;
  const int64_t panel = kc * kPanelCols;
  v16 acc[kSets][kMR][V] = {};
  int64_t p = 0;
  for (; p + kSets <= kc; p += kSets) {
#pragma clang loop unroll(full)
    for (int s = 0; s < kSets; ++s) {
      v16 bv[V];
#pragma clang loop unroll(full)
      for (int v = 0; v < V; ++v) {
        bv[v] = b_row(b + 2 * v * panel + (p + s) * kPanelCols, b + (2 * v + 1) * panel + (p + s) * kPanelCols);
      }
#pragma clang loop unroll(full)
      for (int64_t i = 0; i < kMR; ++i) {
#pragma clang loop unroll(full)
        for (int v = 0; v < V; ++v) acc[s][i][v] += a[(p + s) * kMR + i] * bv[v];
      }
    }
  }
  if constexpr (kSets == 2) {
    if (p < kc) {
      const v16 b0 = b_row(b + p * kPanelCols, b + panel + p * kPanelCols);
#pragma clang loop unroll(full)
      for (int64_t i = 0; i < kMR; ++i) acc[0][i][0] += a[p * kMR + i] * b0;
    }
  }
  // C's rows (gemm.h, store_vectors), from a copy of `out` that the stores
  // cannot alias.
  const Output o = out;
#pragma clang loop unroll(full)
  for (int64_t i = 0; i < kMR; ++i) {
    v16 r[V];
#pragma clang loop unroll(full)
    for (int v = 0; v < V; ++v) {
      r[v] = acc[0][i][v];
      if constexpr (kSets == 2) r[v] += acc[1][i][v];
      r[v] = o.alpha * r[v];
    }
    store_vectors(r, c + i * ldc, i, ldc, o);
  }
}

}  // namespace

void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr,
          const Output& out) {
  if (mr == kMR && nr == kTileCols) return rows<2>(kc, a, b, c, ldc, out);
  if (mr != kMR || nr < 16) return x86_64_v3::tile(kc, a, b, c, ldc, mr, nr, out);
  rows<1>(kc, a, b, c, ldc, out);
  if (nr == 16) return;
  Output right = out;  // columns 16 to nr: B's third and fourth panels
  if (right.col_bias != nullptr) right.col_bias += 16;
  if (right.residual != nullptr) right.residual += 16;
  x86_64_v3::tile(kc, a, b + 2 * kc * kPanelCols, c + 16, ldc, mr, nr - 16, right);
}

}  // namespace x86_64_v4
}  // namespace gemm
}  // namespace pare

#endif
