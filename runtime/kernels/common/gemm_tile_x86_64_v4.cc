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
// A (an FMA's memory operand) serves 32 columns. A tile of 1 to 16
// columns runs as 6 x 16, whose 6 accumulators alone would wait on the FMA
// latency, so even and odd depths go to two sets added at the end (a
// different order of sums from the other copies', within the same
// dot-product bound: tests/runtime/test_isa.py); one of 17 to 31 as 6 x 32,
// the columns past nr computed and not stored. On cores whose blocking asks
// for it (gemm::Blocking::pairs) the driver hands full 32-column tiles two
// A panels at once (tile_pair: 12 x 32, 24 accumulators). One to four rows of 17 to
// 32 columns run few_rows; five rows, and fewer rows of at most 16
// columns, are the v3 copy's, which this CPU runs too.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/common/gemm.h"
#include "runtime/registry/selection.h"

namespace pare {
namespace gemm {
namespace x86_64_v4 {
namespace {

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef float v8 __attribute__((vector_size(8 * sizeof(float))));
typedef unsigned short mask16;  // an AVX-512 opmask of 16 lanes (immintrin.h's mask16)

// Depth p's 16 columns: row p of the first panel, then of the second.
PARE_ALWAYS_INLINE v16 b_row(const float* lo, const float* hi) {
  v8 l, h;
  __builtin_memcpy(&l, lo, sizeof(l));
  __builtin_memcpy(&h, hi, sizeof(h));
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

static_assert(kMR == 6 && kTileCols == 4 * kPanelCols, "the v4 tile is 6 rows x four B panels");

// Rows r[0, rows) of a partial tile (nr < 16 V columns; alpha * A B) into
// C, as store_vectors says, loading and storing under AVX-512 masks
// (through a buffer, MobileNetV2's 7x7 and 14x14 maps spent 3% of its time
// in the scalar stores). Out of line: one copy for every kernel's edges.
template <int V>
PARE_NOINLINE void store_partial(v16 (*r)[V], int rows, float* c, int64_t ldc, int64_t nr, const Output& out) {
  mask16 mask[V];
  for (int v = 0; v < V; ++v) {
    const int64_t left = nr - 16 * v;
    mask[v] = left >= 16 ? 0xffff : left <= 0 ? 0 : static_cast<mask16>((1u << left) - 1);
  }
  const auto load = [&](const float* p, int v) { return __builtin_ia32_loadups512_mask(p + 16 * v, v16{}, mask[v]); };
  const auto store = [&](float* p, int v, v16 x) { __builtin_ia32_storeups512_mask(p + 16 * v, x, mask[v]); };
  for (int i = 0; i < rows; ++i) finish_row(r[i], c + i * ldc, i, ldc, out, load, store);
}

// Rows r[0, R) of a finished tile (alpha * A B, V vectors each) into C's
// rows [0, R) x columns [0, nr): a whole tile from its registers, as
// store_vectors says, with a copy of `out` the stores cannot alias; a
// partial one by store_partial.
template <int R, int V>
PARE_ALWAYS_INLINE void finish(v16 (&r)[R][V], float* c, int64_t ldc, int64_t nr, const Output& out) {
  if (nr != 16 * V) return store_partial<V>(r, R, c, ldc, nr, out);
  const Output o = out;
#pragma clang loop unroll(full)
  for (int i = 0; i < R; ++i) store_vectors(r[i], c + i * ldc, i, ldc, o);
}

// C's 6P x 16V tile = out(alpha * A B), A's P panels from `a`, B's 2V
// panels from `b` (columns beyond nr computed, not stored); with V = 1 the
// even and odd depths in two sets of accumulators. P = 2 (tile_pair, 24
// accumulators) uses each B vector, and the insert that builds it, for 12
// rows: the inserts run on port 5, an Ice Lake's second 512-bit FMA port.
template <int P, int V>
PARE_ALWAYS_INLINE void rows(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c,
                             int64_t ldc, int64_t nr, const Output& out) {
  constexpr int kSets = V == 1 ? 2 : 1;
  constexpr int kRows = P * kMR;
  const int64_t panel = kc * kPanelCols;
  v16 acc[kSets][kRows][V] = {};
  int64_t p = 0;
  for (; p + kSets <= kc; p += kSets) {
    if ((p & 1) == 0) {  // gemm.h; the next call's panels
#pragma clang loop unroll(full)
      for (int q = 0; q < P; ++q) __builtin_prefetch(a + (p + (P + q) * kPrefetchADepths) * kMR);
    }
#pragma clang loop unroll(full)
    for (int s = 0; s < kSets; ++s) {
      v16 bv[V];
#pragma clang loop unroll(full)
      for (int v = 0; v < V; ++v) {
        bv[v] = b_row(b + 2 * v * panel + (p + s) * kPanelCols, b + (2 * v + 1) * panel + (p + s) * kPanelCols);
      }
#pragma clang loop unroll(full)
      for (int64_t i = 0; i < kRows; ++i) {
        const float ai = a[(i / kMR) * kc * kMR + (p + s) * kMR + i % kMR];
#pragma clang loop unroll(full)
        for (int v = 0; v < V; ++v) acc[s][i][v] += ai * bv[v];
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
  v16 r[kRows][V];
#pragma clang loop unroll(full)
  for (int64_t i = 0; i < kRows; ++i) {
#pragma clang loop unroll(full)
    for (int v = 0; v < V; ++v) {
      r[i][v] = acc[0][i][v];
      if constexpr (kSets == 2) r[i][v] += acc[1][i][v];
      r[i][v] = out.alpha * r[i][v];
    }
  }
  // Twelve rows stored from registers cost the demo's runtime 3,120 B
  // (every Output case unrolled 12 times); through store_partial's masks
  // (all lanes on a whole tile) once per depth block, they cost nothing
  // measurable at depths of kPairMinDepth or more.
  if constexpr (P == 2) return store_partial<V>(r, kRows, c, ldc, nr, out);
  finish(r, c, ldc, nr, out);
}

// One to four rows of A times B's four panels (32 columns, two zmm per
// row): batch-1 and batch-2 linear layers and pixel rows (gemm.h), which
// stream B once and would otherwise run the v3 copy's 16 columns at a time.
// kSteps depths in flight, each into its own accumulators, as the v3
// copy's few_rows_kernel: the same sums in the same order, so the same
// bits as that copy.
//
// B is streamed once per product here, and a large model's weights (46 MB
// for ResNet-18) come from DRAM on every run: each of the four panels is
// prefetched kPrefetchDepths depths (4 KB) ahead. ResNet-18 at 64x64,
// whose last stage is 33 MB of 3x3 weights run as pixel rows, ran 7%
// faster (Zen 5, one core; 1 KB ahead also 7%, 8 KB none, 16 KB 4%;
// prefetching into L2 only, 1%).
constexpr int64_t kPrefetchDepths = 128;

template <int R>
PARE_ALWAYS_INLINE void few_rows(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c,
                                 int64_t ldc, int64_t nr, const Output& out) {
  constexpr int kSteps = 4 / R;
  const int64_t panel = kc * kPanelCols;
  v16 acc[kSteps][R][2] = {};
  const auto step = [&](int s, int64_t q) __attribute__((always_inline)) {
    if ((q & 1) == 0) {  // a cache line of each panel per two depths
#pragma clang loop unroll(full)
      for (int t = 0; t < 4; ++t) __builtin_prefetch(b + t * panel + (q + kPrefetchDepths) * kPanelCols);
    }
    const v16 b0 = b_row(b + q * kPanelCols, b + panel + q * kPanelCols);
    const v16 b1 = b_row(b + 2 * panel + q * kPanelCols, b + 3 * panel + q * kPanelCols);
#pragma clang loop unroll(full)
    for (int i = 0; i < R; ++i) {
      acc[s][i][0] += a[q * kMR + i] * b0;
      acc[s][i][1] += a[q * kMR + i] * b1;
    }
  };
  int64_t p = 0;
  for (; p + kSteps <= kc; p += kSteps) {
#pragma clang loop unroll(full)
    for (int s = 0; s < kSteps; ++s) step(s, p + s);
  }
  for (; p < kc; ++p) step(0, p);
  v16 r[R][2];
#pragma clang loop unroll(full)
  for (int i = 0; i < R; ++i) {
    r[i][0] = acc[0][i][0];
    r[i][1] = acc[0][i][1];
#pragma clang loop unroll(full)
    for (int s = 1; s < kSteps; ++s) {
      r[i][0] += acc[s][i][0];
      r[i][1] += acc[s][i][1];
    }
    r[i][0] = out.alpha * r[i][0];
    r[i][1] = out.alpha * r[i][1];
  }
  finish(r, c, ldc, nr, out);
}

}  // namespace

void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr,
          const Output& out) {
  // Over 16 columns the tile reads all four panels (B's columns are padded
  // to 16, so a tile of up to 16 has only two).
  if (nr > 16) {
    if (mr == kMR) return rows<1, 2>(kc, a, b, c, ldc, nr, out);
    if (mr == 1) return few_rows<1>(kc, a, b, c, ldc, nr, out);
    if (mr == 2) return few_rows<2>(kc, a, b, c, ldc, nr, out);
    // Three and four rows as the v3 copy has them: only with pixel rows (a
    // link-time constant).
    if (kernel_dtype_selected(TagId::pixel_rows_kernel, ScalarType::Float)) {
      if (mr == 3) return few_rows<3>(kc, a, b, c, ldc, nr, out);
      if (mr == 4) return few_rows<4>(kc, a, b, c, ldc, nr, out);
    }
  } else if (mr == kMR) {
    return rows<1, 1>(kc, a, b, c, ldc, nr, out);
  }
  x86_64_v3::tile(kc, a, b, c, ldc, mr, nr, out);
}

void tile_pair(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t, int64_t nr,
               const Output& out) {
  rows<2, 2>(kc, a, b, c, ldc, nr, out);
}

}  // namespace x86_64_v4
}  // namespace gemm
}  // namespace pare

#endif
