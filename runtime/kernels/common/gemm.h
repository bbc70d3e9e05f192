#pragma once
// Blocked GEMM: C = alpha * A B (+ C) (+ bias, clamped), for mm, addmm, linear and conv.
//
// float uses a packed, cache-blocked algorithm in the style of BLIS/GotoBLAS:
// A is packed into row panels of kMR rows and B into column panels of
// kPanelCols columns, per (kKC depth x kMC rows / kNC columns) block, and a kMR x (two vectors)
// register-tile micro-kernel written with portable clang vector types
// (SSE2 or AVX2+FMA on x86_64, NEON on arm64) does the arithmetic. The driver takes the
// A and B packers as functors, so an operand can be packed on the fly from
// any strided matrix, read from a prepacked buffer (prepacked weights: no
// packing at run time), or packed straight from an image (conv's im2col
// fused into packing).
//
// Other dtypes use gemm_reference(): a row-oriented loop with a contiguous,
// vectorisable inner loop, accumulating in opmath_t<T> (float for
// Half/BFloat16) with wrapping integer arithmetic (common/arith.h), as
// PyTorch's CPU fallback does.

#include "runtime/registry/kernel.h"
#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/simd.h"

namespace pare {
namespace gemm {

// The register tile is kMR rows x two vectors of simd::kLanes floats: 6x8
// on arm64 (NEON) and baseline x86_64 (SSE2); 6x16 with AVX2+FMA
// (--//runtime:x86_64_isa=v3, or auto on a CPU that has them), whose 12 ymm
// accumulators, 2 B vectors and the A broadcast take 15 of the 16
// registers, as BLIS's Haswell/Zen kernels do. The driver below hands the
// tile kernel kTileCols columns: one register tile, except at
// --//runtime:x86_64_isa=auto, which chooses its kernels at run time
// (tile_kernel()) with one driver, one scratch layout and one split over
// threads for every copy: 32 columns, one 6x32 AVX-512 tile (two zmm per
// row), two 6x16 or four 6x8 ones.
//
// The packed layouts are the same on every ISA, because weights are packed
// ahead of time into program files (tools/tracer, pare/packing.py;
// docs/program_format.md, "Prepacked weights") and used in place: A in
// panels of kMR rows, B in panels of kPanelCols columns, a packed B's
// columns padded to kPadCols (one AVX2 tile). A tile reads up to kTileCols /
// kPanelCols adjacent B panels, and at most kPadCols columns beyond its
// last column: only panels that exist. The layout's constants (kKC, kMR,
// kPanelCols, kPadCols) and the thresholds the exporter's choice of layout
// shares with the runtime's (kNarrowN, kPixelRowsMax) are written once, in
// the format's table, which pare/packing.py reads too.
#define PARE_PACKING_CONSTANT(cpp_name, python_name, value) constexpr int64_t cpp_name = value;
#include "runtime/core/program_format.def"
constexpr int64_t kTileCols =
#if defined(PARE_X86_64_DISPATCH)
    2 * kPadCols;  // one driver for every copy: one 6x32 AVX-512 tile, two 6x16 or four 6x8 ones
#else
    2 * simd::kLanes;  // one register tile
#endif
static_assert(kTileCols % kPanelCols == 0 && kTileCols % (2 * simd::kLanes) == 0, "tiles must cover whole panels");
// The register tiles read A's panel kPrefetchADepths depths ahead (a cache
// line per two depths): at a full depth block, the same depth of the next
// row panel, which the next tile reads. Weights that do not fit in L2 (a
// 1x1 layer of 960 x 320 is 1.2 MB) otherwise come from L3 as each tile
// asks. Zen 5, one core, interleaved runs: on the AVX-512 tile ResNet-18
// at 224x224 ran 0.89-0.91x and at 64x64 0.91-0.94x, MobileNetV2 at
// 224x224 0.90-0.99x (128 depths ahead was no better, 512 worse); on the
// AVX2 copy 0.94-0.96x, on SSE2 0.95-0.97x. (Not timed on arm64: qemu
// times nothing.)
constexpr int64_t kPrefetchADepths = kKC;
constexpr int64_t kMC = 72;   // multiple of kMR; 72 x 256 floats = 72 KB of packed A
constexpr int64_t kNC = 256;  // multiple of kTileCols; 256 x 256 floats = 256 KB of packed B

// The loop blocking of one product: rows of A per packed block (mc, a
// multiple of kMR) and columns of B (nc, a multiple of kTileCols). Unlike
// kKC, kMR and the panel widths they are not part of any packed layout (a
// prepacked operand is addressed per block by PrepackedA / PrepackedB), so
// they follow the CPU: the level-2 cache holds a kKC x nc block of B and
// a kMC x kKC block of A while the tiles sweep them. kMC and kNC were
// chosen on a Zen 5 (1 MB L2); an L2 of 1.25 MB or more takes B blocks of
// 512 columns (512 KB), half as many passes over A, which a per-call
// packer packs again for every block of columns: on an Ice Lake Xeon, mm
// at n = 1,024 ran 1.12-1.20x faster (docs/performance.md, "SGEMM against
// the core's peak"). Unknown caches (0) and other architectures take the
// Zen's.
//
// pairs: whether the AVX-512 tile takes two A panels per call (12 x 32,
// pair_tile_kernel() below) on the same cores. On an Ice Lake Xeon the 6 x
// 32 tile spends a port-5 uop per B vector (the insert that joins two
// 8-column panels), the port of the second 512-bit FMA unit; 12 rows use
// each B vector twice as often: a copy of the tile's loop on packed
// panels went from 69-73% to 83-86% of the measured FMA peak. On a Zen 5
// (1 MB) it lost at n = 768 and 1,024 and on MobileNetV2
// (docs/performance.md, "On this machine"), so smaller L2s keep the
// one-panel tile.
struct Blocking {
  int64_t mc;
  int64_t nc;
  bool pairs;
};
constexpr Blocking blocking_for(int64_t l2_bytes) {
  const bool large = l2_bytes >= (int64_t{1280} << 10);  // 1.25 MB: Ice Lake SP, Sapphire Rapids
  return {kMC, large ? 2 * kNC : kNC, large};
}
// This CPU's (cpu::l2_cache_bytes(), probed once).
#if defined(__x86_64__)
Blocking blocking();
#else
constexpr Blocking blocking() { return blocking_for(0); }
#endif

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Element (i, j) at data[i * row_stride + j * col_stride].
template <typename T>
struct MatrixView {
  const T* data;
  int64_t rows;
  int64_t cols;
  int64_t row_stride;
  int64_t col_stride;
  T at(int64_t i, int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

// Packs rows [i0, i0+mc) x depth [p0, p0+kc) of `a` into kMR-row panels
// (zero-padded): panel r at dst + r * kc * kMR.
void pack_a(const MatrixView<float>& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst);
// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of `b` into kPanelCols-column
// panels (zero-padded to a whole tile): panel c at dst + c * kc * kPanelCols.
void pack_b(const MatrixView<float>& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst);

// Whole-matrix packed layouts of prepacked weights (packed ahead of time by
// pare/packing.py): for each depth block p0 (step kKC), all panels of that
// block, so block (p0, i0) of A starts at base + p0 * round_up(m, kMR) +
// (i0 / kMR) * kc * kMR, and block (p0, j0) of B at base + p0 *
// round_up(n, kPadCols) + (j0 / kPanelCols) * kc * kPanelCols. Sizes in
// floats.
inline size_t packed_a_size(int64_t m, int64_t k) { return static_cast<size_t>(round_up(m, kMR) * k); }
inline size_t packed_b_size(int64_t k, int64_t n) { return static_cast<size_t>(round_up(n, kPadCols) * k); }
// Packs all of `a` so (aten::convolution packs its weights once per call).
void prepack_a(const MatrixView<float>& a, float* dst);

// Packers over prepacked buffers (no copy: they return pointers).
struct PrepackedA {
  const float* data;
  int64_t m;
  const float* operator()(int64_t i0, int64_t, int64_t p0, int64_t kc, float*) const {
    return data + p0 * round_up(m, kMR) + (i0 / kMR) * kc * kMR;
  }
};
struct PrepackedB {
  const float* data;
  int64_t n;
  const float* operator()(int64_t p0, int64_t kc, int64_t j0, int64_t, float*) const {
    return data + p0 * round_up(n, kPadCols) + (j0 / kPanelCols) * kc * kPanelCols;
  }
};
// Packers over strided matrices.
struct StridedA {
  MatrixView<float> view;
  const float* operator()(int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* scratch) const {
    pack_a(view, i0, mc, p0, kc, scratch);
    return scratch;
  }
};
struct StridedB {
  MatrixView<float> view;
  const float* operator()(int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* scratch) const {
    pack_b(view, p0, kc, j0, nc, scratch);
    return scratch;
  }
};

// What a product does to C as the micro-kernel stores it:
//   C = clamp(alpha * A B (+ C when accumulate) + bias + residual, lo, hi)
// with the bias per row (a convolution's output channels are C's rows) or
// per column (a linear layer's output features are its columns), the
// residual a matrix laid out as C (row stride ldc: a fused shortcut add),
// and the clamp keeping NaN (a fused relu, relu6, hardtanh or clamp: the
// prepacked ops' Epilogue). Applied in registers, a layer's bias and clamp
// cost no pass over its output: a 1x1 convolution 64 -> 256 over 56x56
// with bias and relu ran 11% slower than without them when the bias was
// written into C first and the clamp was a pass of its own (v3).
// Bias pointers address C's first row or column, the residual C's first
// element. The residual code is compiled only into runtimes that select
// prepacked_residual_kernel.
struct Output {
  float alpha = 1.0f;
  bool accumulate = false;
  const float* row_bias = nullptr;
  const float* col_bias = nullptr;
  float lo = -__builtin_inff();
  float hi = __builtin_inff();
  const float* residual = nullptr;
  bool clamps() const { return simd::bounded(lo, hi); }
};

// Whether the build has a residual for the GEMM to add (a link-time
// constant: without prepacked_residual_kernel, no residual code).
PARE_ALWAYS_INLINE bool adds_residual(const Output& out) {
  return kernel_dtype_selected(TagId::prepacked_residual_kernel, ScalarType::Float) && out.residual != nullptr;
}

// Stores row i of a finished tile, its N vectors `r` of alpha * A B, at
// `row`: r (+ C) + bias + residual, clamped, as Output says (the residual's
// rows ldc apart). Every copy of the register tiles finishes its rows with
// it, each for its own vector type V (gemm_kernels.inc,
// gemm_tile_x86_64_v4.cc).
//
// finish_row is the same with the vector accesses given: load(p, v) and
// store(p, v, value) for vector v of the row at p (the AVX-512 tile's
// partial rows load and store under a mask).
template <typename V, int N, typename Load, typename Store>
PARE_ALWAYS_INLINE void finish_row(V (&r)[N], float* row, int64_t i, int64_t ldc, const Output& out, const Load& load,
                                   const Store& store) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  if (out.accumulate) {
    for (int v = 0; v < N; ++v) r[v] += load(row, v);
  }
  if (out.row_bias != nullptr) {
    for (int v = 0; v < N; ++v) r[v] += out.row_bias[i];
  }
  if (out.col_bias != nullptr) {
    for (int v = 0; v < N; ++v) r[v] += load(out.col_bias, v);
  }
  if (adds_residual(out)) {
    for (int v = 0; v < N; ++v) r[v] += load(out.residual + i * ldc, v);
  }
  if (out.clamps()) {  // on SSE2 the clamp competes with the multiplies and adds for ports
    V lo, hi;
    for (int64_t l = 0; l < kWidth; ++l) {
      lo[l] = out.lo;
      hi[l] = out.hi;
    }
    for (int v = 0; v < N; ++v) r[v] = simd::clamp(r[v], lo, hi);
  }
  for (int v = 0; v < N; ++v) store(row, v, r[v]);
}

template <typename V, int N>
PARE_ALWAYS_INLINE void store_vectors(V (&r)[N], float* row, int64_t i, int64_t ldc, const Output& out) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  finish_row(
      r, row, i, ldc, out,
      [](const float* p, int v) {
        V x;
        __builtin_memcpy(&x, p + v * kWidth, sizeof(x));
        return x;
      },
      [](float* p, int v, V x) { __builtin_memcpy(p + v * kWidth, &x, sizeof(x)); });
}

namespace PARE_SIMD_ISA {
// Rows [0, mr) x columns [0, nr) of a finished tile (alpha * A B in
// `tile`, rows of N vectors V) into C, as store_vectors says. Out of line,
// for the edge tiles and the few-rows kernels of each copy: one copy of the
// finishing code rather than one per kernel (full tiles store from their
// registers). In the copy's ISA namespace, as its kernels.
template <typename V, int N>
PARE_NOINLINE void store_tile(const float (*tile)[N * sizeof(V) / sizeof(float)], float* c, int64_t ldc, int64_t mr,
                              int64_t nr, const Output& out) {
  constexpr int64_t kWidth = N * sizeof(V) / sizeof(float);
  for (int64_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    if (nr == kWidth) {
      V r[N];
      __builtin_memcpy(r, tile[i], sizeof(r));
      store_vectors(r, row, i, ldc, out);
      continue;
    }
    for (int64_t j = 0; j < nr; ++j) {
      float v = tile[i][j];
      if (out.accumulate) v += row[j];
      if (out.row_bias != nullptr) v += out.row_bias[i];
      if (out.col_bias != nullptr) v += out.col_bias[j];
      if (adds_residual(out)) v += out.residual[i * ldc + j];
      row[j] = simd::clamp(v, out.lo, out.hi);
    }
  }
}
}  // namespace PARE_SIMD_ISA

// C tile update: C[mr x nr] (row stride ldc; mr <= kMR, nr <= kTileCols) =
// alpha * (A panel . B panels) (+ C when out.accumulate) + out's bias,
// clamped to [out.lo, out.hi]; `b` is the first of the tile's kTileCols /
// kPanelCols B panels, each kc * kPanelCols floats. The bias pointers
// address the tile's first row and column, the residual its first
// element; sgemm passes the bias with the first depth block only, the
// residual and the clamp with the last only.
using TileKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr,
                            const Output& out);

// Narrow products: C[m x n] = A B, finished as `out` says (alpha 1), for n <=
// kNarrowN columns, A prepacked (prepack_a layout): a 1x1 convolution over
// a 1x1 or 2x2 image (squeeze-and-excitation, a network's last stages). The
// register tile's kTileCols columns would be mostly padding there, so the vectors
// run along A's packed panels instead: each column of B is expanded once
// (every element repeated kMR times, in `scratch`), after which a panel
// (kc depths x kMR rows, interleaved) times an expanded column is an
// elementwise product whose lanes sum by row. Every lane does useful work.
inline size_t narrow_scratch_floats(int64_t n, int64_t k) { return static_cast<size_t>(n * kMR * k); }
void sgemm_narrow(int64_t m, int64_t n, int64_t k, const float* packed_a, const MatrixView<float>& b, float* c,
                  int64_t ldc, const Output& out, float* scratch);

// The kernels each ISA's copy of gemm_kernels.cc defines: this build's
// (PARE_SIMD_ISA, simd.h) and, at --//runtime:x86_64_isa=auto
// (PARE_X86_64_DISPATCH), the x86-64-v3 copy (kernels_x86_64_v3.cc).
// tile_kernel() and sgemm_narrow() choose between them.
namespace PARE_SIMD_ISA {
void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr, const Output& out);
void sgemm_narrow(int64_t m, int64_t n, int64_t k, const float* packed_a, const MatrixView<float>& b, float* c,
                  int64_t ldc, const Output& out, float* scratch);
}  // namespace PARE_SIMD_ISA
#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v3 {
void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr, const Output& out);
void sgemm_narrow(int64_t m, int64_t n, int64_t k, const float* packed_a, const MatrixView<float>& b, float* c,
                  int64_t ldc, const Output& out, float* scratch);
}  // namespace x86_64_v3
// The AVX-512 register tiles (gemm_tile_x86_64_v4.cc): six rows of 32 or
// of 16 columns in zmm registers; it hands other tiles to x86_64_v3::tile.
namespace x86_64_v4 {
void tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr, const Output& out);
// Two A panels (mr = 2 kMR rows, a's second panel kc * kMR floats after its
// first) times four B panels (nr over kPadCols): the same sums in the same
// order as two calls of tile(), so the same bits.
void tile_pair(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr,
               const Output& out);
}  // namespace x86_64_v4
#endif

// The tile kernel of the ISA the kernels run, taken once per product: at
// --//runtime:x86_64_isa=auto the best copy this CPU runs (cpu::kernel_isa()),
// elsewhere the build's own (a constant: a direct call).
#if defined(PARE_X86_64_DISPATCH)
TileKernel tile_kernel();
#else
constexpr TileKernel tile_kernel() { return PARE_SIMD_ISA::tile; }
#endif
// The kernel for two A panels at once (x86_64_v4::tile_pair) where the
// blocking asks for pairs and the AVX-512 copy runs, else null (a constant
// outside auto builds). The driver gives it depth blocks of kPairMinDepth
// or more: shallower products (MobileNetV2's expand layers, depth 16 to
// 96) are mostly stores of C, and 12 rows of C are 12 store streams.
constexpr int64_t kPairMinDepth = 128;
#if defined(PARE_X86_64_DISPATCH)
TileKernel pair_tile_kernel(const Blocking& blocks);
#else
constexpr TileKernel pair_tile_kernel(const Blocking&) { return nullptr; }
#endif

// Scratch floats an on-the-fly A or B packer needs (prepacked operands need
// none and may be given null).
inline size_t a_scratch_floats(int64_t m, int64_t k) {
  const int64_t mc = blocking().mc;
  return static_cast<size_t>((k < kKC ? k : kKC) * round_up(m < mc ? m : mc, kMR));
}
inline size_t b_scratch_floats(int64_t n, int64_t k) {
  const int64_t nc = blocking().nc;
  return static_cast<size_t>((k < kKC ? k : kKC) * round_up(n < nc ? n : nc, kTileCols));
}

// A block packer (PrepackedA, StridedB, Im2ColPanels, ...) behind a
// function pointer. The product's driver below is one function whatever its
// operands: the packers run once per block (kMC x kKC of A, kKC x kNC of B),
// not per tile, so inlining them gains nothing, while a driver per pairing
// of operand kinds cost every runtime about 900 B each (docs/size.md).
struct BlockPacker {
  const float* (*pack)(const void* packer, int64_t, int64_t, int64_t, int64_t, float* scratch);
  const void* packer;
  const float* operator()(int64_t a, int64_t b, int64_t c, int64_t d, float* scratch) const {
    return pack(packer, a, b, c, d, scratch);
  }
};
template <typename Packer>
PARE_ALWAYS_INLINE BlockPacker block_packer(const Packer& packer) {
  return {[](const void* self, int64_t a, int64_t b, int64_t c, int64_t d, float* scratch) {
            return (*static_cast<const Packer*>(self))(a, b, c, d, scratch);
          },
          &packer};
}
PARE_ALWAYS_INLINE const BlockPacker& block_packer(const BlockPacker& packer) { return packer; }

// C[m x n] (row stride ldc, unit column stride) = alpha * A B, plus the
// previous C when out.accumulate, plus out's bias, clamped (Output). With row0 / col0, rows [row0, row0 + m) of
// A and columns [col0, col0 + n) of B (the packers are addressed from
// there; c points at the first of those elements): one part of a split
// product (row0 a multiple of kMR, col0 of kTileCols).
void sgemm_blocks(int64_t m, int64_t n, int64_t k, const BlockPacker& pack_a_block, const BlockPacker& pack_b_block,
                  float* c, int64_t ldc, const Output& out, float* a_scratch, float* b_scratch, int64_t row0,
                  int64_t col0);
template <typename PackA, typename PackB>
PARE_ALWAYS_INLINE void sgemm(int64_t m, int64_t n, int64_t k, const PackA& pack_a_block, const PackB& pack_b_block,
                              float* c, int64_t ldc, const Output& out, float* a_scratch, float* b_scratch,
                              int64_t row0 = 0, int64_t col0 = 0) {
  sgemm_blocks(m, n, k, block_packer(pack_a_block), block_packer(pack_b_block), c, ldc, out, a_scratch, b_scratch, row0,
               col0);
}

// sgemm over the method's threads (build feature threads). C is split into
// chunks of whole tiles: its columns in multiples of kTileCols or, when
// it has too few columns to give each thread work, its rows in multiples
// of kMR. Every element is then computed by a tile of the same shape, over
// the same depth blocks in the same order, as in one sgemm call: results
// are bitwise identical for every thread count. Operands packed at run
// time (pack_a / pack_b) get scratch per chunk.
struct Split {
  uint32_t chunks = 1;
  bool rows = false;
  float* a_scratch = nullptr;  // chunks x a_floats
  float* b_scratch = nullptr;  // chunks x b_floats
  size_t a_floats = 0;
  size_t b_floats = 0;
};
// The split for products of this shape (any number of them, e.g. one per
// group of a convolution, share it) with their scratch allocated.
Result<Split> split_for(KernelContext& ctx, int64_t m, int64_t n, int64_t k, bool pack_a, bool pack_b);

// The split product over the method's threads; call sgemm below.
PARE_NOINLINE void sgemm_parallel(KernelContext& ctx, const Split& split, int64_t m, int64_t n, int64_t k,
                                  const BlockPacker& pack_a_block, const BlockPacker& pack_b_block, float* c,
                                  int64_t ldc, const Output& out);
// Inlined into its caller, so that a runtime without threads calls the
// one-thread sgemm directly: no wrapper and no split code survive the
// selection step's folding of feature_selected.
template <typename PackA, typename PackB>
PARE_ALWAYS_INLINE void sgemm(KernelContext& ctx, const Split& split, int64_t m, int64_t n, int64_t k,
                              const PackA& pack_a_block, const PackB& pack_b_block, float* c, int64_t ldc,
                              const Output& out) {
  if (!feature_selected(FeatureId::threads)) {
    sgemm(m, n, k, pack_a_block, pack_b_block, c, ldc, out, split.a_scratch, split.b_scratch);
  } else {
    sgemm_parallel(ctx, split, m, n, k, block_packer(pack_a_block), block_packer(pack_b_block), c, ldc, out);
  }
}

// Pixels as rows: a 1x1 convolution (stride 1, no padding) over a few
// more pixels than the narrow GEMM takes. With the image as B [cg, p] the
// register tile's columns are pixels, and 5 to 12 of them leave much of
// one or two tiles empty (6 of 8 columns, 9 of 16), so the product runs
// transposed, C^T [p, og] = X^T [p, cg] W^T [cg, og]: the pixels are the
// rows (kMR per tile; three or four, the tail of 9 or 10, by the few-rows
// kernels when the build selects pixel_rows_kernel) and the output
// channels the columns, with the weights W^T as B (packed ahead of time by
// the exporter: pare/packing.py, or by the B packer from the weights as
// they are). The product goes to scratch and is transposed into C [og, p].
// Measured against the other paths on every x86_64 ISA (docs/performance.md,
// "Pixel rows"): 1 to 4 pixels run faster on the narrow GEMM (kNarrowN),
// and 8 fill the 8-column tile of SSE2 and NEON. The exporter's choice
// (pare.packing.pixel_rows_pays) reads the same constants.
constexpr bool pixel_rows_pay(int64_t p) { return p > kNarrowN && p <= kPixelRowsMax && p % kPanelCols != 0; }

struct PixelRows {
  Split split;
  float* product = nullptr;  // C^T, p x og
};
// Scratch for pixel_rows() on products of this shape; pack_b when the
// weights are packed per call (StridedB).
Result<PixelRows> pixel_rows_scratch(KernelContext& ctx, int64_t p, int64_t og, int64_t cg, bool pack_b);
// c[o * p + j] = product[j * og + o].
void transpose_product(const float* product, int64_t p, int64_t og, float* c);

// C [og, p] (rows of p floats at c) = clamp(W X + bias), X the image
// [cg, p], W^T [cg, og] given by its B packer, bias (og floats) or null
// and the clamp as in Output.
template <typename PackB>
void pixel_rows(KernelContext& ctx, const PixelRows& s, int64_t p, int64_t og, int64_t cg, const float* image,
                const PackB& w_t, float* c, const float* bias, float lo, float hi) {
  const Output out{1.0f, /*accumulate=*/false, /*row_bias=*/nullptr, /*col_bias=*/bias, lo, hi};
  sgemm(ctx, s.split, p, og, cg, StridedA{{image, p, cg, 1, p}}, w_t, s.product, og, out);
  transpose_product(s.product, p, og, c);
}

// C[m x n] (contiguous rows, row stride ldc) = alpha * A B + (accumulate ?
// C : 0) for any dtype. B must have unit column stride for the fast inner
// loop (callers make it contiguous). `acc_row` holds n opmath_t<T>.
template <typename T>
void gemm_reference(int64_t m, int64_t n, int64_t k, opmath_t<T> alpha, const MatrixView<T>& a, const MatrixView<T>& b,
                    T* c, int64_t ldc, bool accumulate, opmath_t<T>* acc_row) {
  using Acc = opmath_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) acc_row[j] = Acc(0);
    for (int64_t p = 0; p < k; ++p) {
      const Acc aip = static_cast<Acc>(a.at(i, p));
      const T* brow = b.data + p * b.row_stride;
      for (int64_t j = 0; j < n; ++j) acc_row[j] = arith::mul_add<Acc>(acc_row[j], aip, static_cast<Acc>(brow[j]));
    }
    T* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      Acc v = arith::mul_add<Acc>(Acc(0), alpha, acc_row[j]);
      if (accumulate) v = arith::mul_add<Acc>(v, Acc(1), static_cast<Acc>(crow[j]));
      crow[j] = static_cast<T>(v);
    }
  }
}

}  // namespace gemm
}  // namespace pare
