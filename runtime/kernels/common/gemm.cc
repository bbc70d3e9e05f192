// Float GEMM packing and micro-kernel (see gemm.h).

#include "runtime/kernels/common/gemm.h"

#include "runtime/kernels/common/transpose.h"
#include "runtime/registry/selection.h"

namespace pare {
namespace gemm {
namespace {

using simd::loadv;
using simd::storev;
using simd::vec;

static_assert(kMR == 6 && kNR == 2 * kLanes, "micro_kernel is written for a 6 x (2 vectors) tile");

// Where a tile's second B vector starts, from its first: in the next panel
// with 8 lanes (a panel is one vector wide), in the same panel with 4.
constexpr int64_t kHiPanel = kLanes / kPanelCols;
constexpr int64_t kHiOffset = kLanes % kPanelCols;

// Whether the build has a residual for the GEMM to add (a link-time
// constant: without prepacked_residual_kernel, no residual code).
PARE_ALWAYS_INLINE bool adds_residual(const Output& out) {
  return kernel_dtype_selected(TagId::prepacked_residual_kernel, ScalarType::Float) && out.residual != nullptr;
}

// Stores a full row of a finished tile, r0 and r1 its two vectors of
// alpha * A B: C's row i (kNR floats at `row`) = r (+ row) + bias +
// residual, clamped (gemm.h, Output; the residual's rows ldc apart).
PARE_ALWAYS_INLINE void store_row(vec r0, vec r1, float* row, int64_t i, int64_t ldc, const Output& out) {
  if (out.accumulate) {
    r0 += loadv(row);
    r1 += loadv(row + kLanes);
  }
  if (out.row_bias != nullptr) {
    r0 += out.row_bias[i];
    r1 += out.row_bias[i];
  }
  if (out.col_bias != nullptr) {
    r0 += loadv(out.col_bias);
    r1 += loadv(out.col_bias + kLanes);
  }
  if (adds_residual(out)) {
    r0 += loadv(out.residual + i * ldc);
    r1 += loadv(out.residual + i * ldc + kLanes);
  }
  if (out.clamps()) {  // on SSE2 the clamp competes with the multiplies and adds for ports
    const vec lo = simd::splat(out.lo);
    const vec hi = simd::splat(out.hi);
    r0 = simd::clamp(r0, lo, hi);
    r1 = simd::clamp(r1, lo, hi);
  }
  storev(row, r0);
  storev(row + kLanes, r1);
}

// Rows [0, mr) x columns [0, nr) of a finished tile, alpha * A B in
// `tile`, into C as store_row does. Out of line, for the edge tiles and the
// few-rows kernels: one copy of the finishing code rather than one per
// kernel (the full tile's rows inline store_row).
PARE_NOINLINE void store_tile(const float (*tile)[kNR], float* c, int64_t ldc, int64_t mr, int64_t nr,
                              const Output& out) {
  for (int64_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    if (nr == kNR) {
      store_row(loadv(tile[i]), loadv(tile[i] + kLanes), row, i, ldc, out);
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

}  // namespace

void pack_a(const MatrixView<float>& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = mc - ip < kMR ? mc - ip : kMR;
    float* panel = dst + (ip / kMR) * kc * kMR;
    // Row by row, each read in order into its lane of the panel: a
    // row-major A (a linear layer's input, channels-last pixels) streams,
    // and the loop is one pointer step per element whatever the strides.
    for (int64_t r = 0; r < kMR; ++r) {
      if (r < rows) {
        const float* src = a.data + (i0 + ip + r) * a.row_stride + p0 * a.col_stride;
        for (int64_t p = 0; p < kc; ++p) panel[p * kMR + r] = src[p * a.col_stride];
      } else {
        for (int64_t p = 0; p < kc; ++p) panel[p * kMR + r] = 0.0f;
      }
    }
  }
}

void pack_b(const MatrixView<float>& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  const int64_t padded = round_up(nc, kNR);  // a tile's panels beyond nc are zeros
  for (int64_t jp = 0; jp < padded; jp += kPanelCols) {
    const int64_t left = nc - jp;
    const int64_t cols = left < 0 ? 0 : left < kPanelCols ? left : kPanelCols;
    float* panel = dst + (jp / kPanelCols) * kc * kPanelCols;
    if (cols == kPanelCols && b.col_stride == 1) {
      // Row-major B: each panel row is kPanelCols consecutive floats.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.data + (p0 + p) * b.row_stride + j0 + jp;
        for (int64_t v = 0; v < kPanelCols; v += kLanes) storev(panel + p * kPanelCols + v, loadv(src + v));
      }
      continue;
    }
    for (int64_t p = 0; p < kc; ++p) {
      float* out = panel + p * kPanelCols;
      int64_t col = 0;
      for (; col < cols; ++col) out[col] = b.at(p0 + p, j0 + jp + col);
      for (; col < kPanelCols; ++col) out[col] = 0.0f;
    }
  }
}

void prepack_a(const MatrixView<float>& a, float* dst) {
  const int64_t padded = round_up(a.rows, kMR);
  for (int64_t p0 = 0; p0 < a.cols; p0 += kKC) {
    const int64_t kc = a.cols - p0 < kKC ? a.cols - p0 : kKC;
    pack_a(a, 0, a.rows, p0, kc, dst + p0 * padded);
  }
}

namespace {

// One to four rows of A: batch-1 and batch-2 linear layers (a recurrent
// step of an LSTM or GRU over a batch of two), a product's last rows, and a
// 1x1 convolution over a few pixels run as pixel rows (gemm.h). The full
// tile would compute kMR rows and keep R; this computes R, with kSteps
// depths per step, each into its own accumulators, so that 8 chains keep
// the loop bound by loading B, not by the latency of one chain of
// multiply-adds. Three and four rows (kSteps 1: the full tile's order of
// operations, so the same bits) are compiled only into runtimes that select
// pixel_rows_kernel, where a product of 9 or 10 pixels ends in them: the
// two make the micro-kernel 804 B larger on android_arm64. Five rows take
// the full tile.
template <int R>
void few_rows_kernel(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c, int64_t ldc,
                     int64_t nr, const Output& out) {
  constexpr int kSteps = 4 / R;
  const float* PARE_RESTRICT b_hi = b + kHiPanel * kc * kPanelCols + kHiOffset;
  vec acc[kSteps][R][2] = {};
  int64_t p = 0;
  for (; p + kSteps <= kc; p += kSteps) {
    for (int s = 0; s < kSteps; ++s) {
      const vec b0 = loadv(b + (p + s) * kPanelCols);
      const vec b1 = loadv(b_hi + (p + s) * kPanelCols);
      for (int i = 0; i < R; ++i) {
        acc[s][i][0] += a[(p + s) * kMR + i] * b0;
        acc[s][i][1] += a[(p + s) * kMR + i] * b1;
      }
    }
  }
  for (; p < kc; ++p) {
    const vec b0 = loadv(b + p * kPanelCols);
    const vec b1 = loadv(b_hi + p * kPanelCols);
    for (int i = 0; i < R; ++i) {
      acc[0][i][0] += a[p * kMR + i] * b0;
      acc[0][i][1] += a[p * kMR + i] * b1;
    }
  }
  float tile[R][kNR];
  for (int i = 0; i < R; ++i) {
    for (int s = 1; s < kSteps; ++s) {
      acc[0][i][0] += acc[s][i][0];
      acc[0][i][1] += acc[s][i][1];
    }
    storev(tile[i], out.alpha * acc[0][i][0]);
    storev(tile[i] + kLanes, out.alpha * acc[0][i][1]);
  }
  store_tile(tile, c, ldc, R, nr, out);
}

// Floats per step of the narrow kernel: three vectors, a multiple of kMR
// (24 with 8 lanes, 12 with 4), so lane t of a step always belongs to row
// t % kMR.
constexpr int64_t kPeriod = 3 * kLanes;
static_assert(kPeriod % kMR == 0, "the narrow kernel's step must hold whole depths");

// The kMR row sums of one step's three accumulators (f = the step's floats
// f[0..kPeriod)): row r is the sum of f[r], f[r + kMR], ..., in lanes 0..5.
PARE_ALWAYS_INLINE vec fold_rows(vec f0, vec f1, vec f2) {
#if defined(__AVX2__) && defined(__FMA__)
  // f[r] + f[r + 12] and f[r + 6] + f[r + 18].
  const vec lo = f0 + __builtin_shufflevector(f1, f2, 4, 5, 6, 7, 8, 9, 10, 11);
  const vec hi = __builtin_shufflevector(f0, f1, 6, 7, 8, 9, 10, 11, 12, 13) +
                 __builtin_shufflevector(f2, f2, 2, 3, 4, 5, 6, 7, 0, 1);
  return lo + hi;
#else
  // Rows 0-3: f[r] + f[r + 6]; rows 4-5 (lanes 4, 5, beyond the vector)
  // come back in lanes 0, 1 of the second half, folded by the caller.
  static_assert(kLanes == 4, "fold_rows handles 4 and 8 lanes");
  return f0 + __builtin_shufflevector(f1, f2, 2, 3, 4, 5);
#endif
}

// rows[j][r] = sum over k of A[i0 + r, p] * B[p, j]: one kMR-row panel of
// prepacked A (every depth block) times N expanded columns (column j at
// xe + j * xe_stride). With one column, two steps in flight hide the FMA
// latency.
template <int N>
void narrow_panel(const float* PARE_RESTRICT packed_a, int64_t padded_m, int64_t i0, int64_t k,
                  const float* PARE_RESTRICT xe, int64_t xe_stride, float rows[kNarrowN][kMR]) {
  constexpr int kUnroll = N == 1 ? 2 : 1;
  constexpr int kVecs = 3 * kUnroll;
  vec acc[N][kVecs] = {};
  float tail[N][kMR] = {};
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t kc = k - p0 < kKC ? k - p0 : kKC;
    const float* a = packed_a + p0 * padded_m + i0 * kc;
    const float* x = xe + p0 * kMR;
    const int64_t len = kc * kMR;
    int64_t i = 0;
    for (; i + kUnroll * kPeriod <= len; i += kUnroll * kPeriod) {
      vec av[kVecs];
      for (int v = 0; v < kVecs; ++v) av[v] = loadv(a + i + v * kLanes);
      for (int j = 0; j < N; ++j) {
        for (int v = 0; v < kVecs; ++v) acc[j][v] += av[v] * loadv(x + j * xe_stride + i + v * kLanes);
      }
    }
    for (; i < len; i += kMR) {  // whole depths
      for (int j = 0; j < N; ++j) {
        for (int64_t r = 0; r < kMR; ++r) tail[j][r] += a[i + r] * x[j * xe_stride + i + r];
      }
    }
  }
  for (int j = 0; j < N; ++j) {
    vec f0 = acc[j][0];
    vec f1 = acc[j][1];
    vec f2 = acc[j][2];
    if constexpr (kUnroll == 2) {
      f0 += acc[j][3];
      f1 += acc[j][4];
      f2 += acc[j][5];
    }
    float lanes[kLanes];
    storev(lanes, fold_rows(f0, f1, f2));
    if constexpr (kLanes == 8) {
      for (int64_t r = 0; r < kMR; ++r) rows[j][r] = lanes[r] + tail[j][r];
    } else {
      for (int64_t r = 0; r < 4; ++r) rows[j][r] = lanes[r] + tail[j][r];
      // Rows 4, 5: f1[0, 1] + f2[2, 3].
      float hi1[kLanes];
      float hi2[kLanes];
      storev(hi1, f1);
      storev(hi2, f2);
      rows[j][4] = (hi1[0] + hi2[2]) + tail[j][4];
      rows[j][5] = (hi1[1] + hi2[3]) + tail[j][5];
    }
  }
}

using NarrowPanelFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t, float[kNarrowN][kMR]);

}  // namespace

void sgemm_narrow(int64_t m, int64_t n, int64_t k, const float* packed_a, const MatrixView<float>& b, float* c,
                  int64_t ldc, const Output& out, float* scratch) {
  if (m == 0 || n == 0) return;
  // Column j of B, each element kMR times: xe_j[p * kMR + r] = B[p, j].
  const int64_t xe_stride = kMR * k;
  for (int64_t j = 0; j < n; ++j) {
    float* xe = scratch + j * xe_stride;
    for (int64_t p = 0; p < k; ++p) {
      const float v = b.at(p, j);
      for (int64_t r = 0; r < kMR; ++r) xe[p * kMR + r] = v;
    }
  }
  static constexpr NarrowPanelFn kPanels[kNarrowN] = {narrow_panel<1>, narrow_panel<2>, narrow_panel<3>,
                                                      narrow_panel<4>};
  const NarrowPanelFn panel_fn = kPanels[n - 1];
  const int64_t padded_m = round_up(m, kMR);
  for (int64_t i0 = 0; i0 < m; i0 += kMR) {
    float rows[kNarrowN][kMR];
    panel_fn(packed_a, padded_m, i0, k, scratch, xe_stride, rows);
    float tile[kMR][kNR];
    for (int64_t r = 0; r < kMR; ++r) {
      for (int64_t j = 0; j < n; ++j) tile[r][j] = rows[j][r];
    }
    Output rows_out = out;
    if (rows_out.row_bias != nullptr) rows_out.row_bias += i0;
    if (rows_out.residual != nullptr) rows_out.residual += i0 * ldc;
    store_tile(tile, c + i0 * ldc, ldc, m - i0 < kMR ? m - i0 : kMR, n, rows_out);
  }
}

void micro_kernel(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c, int64_t ldc,
                  int64_t mr, int64_t nr, const Output& out) {
  if (mr == 1) return few_rows_kernel<1>(kc, a, b, c, ldc, nr, out);
  if (mr == 2) return few_rows_kernel<2>(kc, a, b, c, ldc, nr, out);
  if (kernel_dtype_selected(TagId::pixel_rows_kernel, ScalarType::Float)) {  // a link-time constant
    if (mr == 3) return few_rows_kernel<3>(kc, a, b, c, ldc, nr, out);
    if (mr == 4) return few_rows_kernel<4>(kc, a, b, c, ldc, nr, out);
  }
  vec acc[kMR][2];
  for (int64_t i = 0; i < kMR; ++i) {
    acc[i][0] = vec{};
    acc[i][1] = vec{};
  }
  const float* PARE_RESTRICT b_hi = b + kHiPanel * kc * kPanelCols + kHiOffset;
  for (int64_t p = 0; p < kc; ++p) {
    const vec b0 = loadv(b);
    const vec b1 = loadv(b_hi);
    for (int64_t i = 0; i < kMR; ++i) {
      acc[i][0] += a[i] * b0;
      acc[i][1] += a[i] * b1;
    }
    a += kMR;
    b += kPanelCols;
    b_hi += kPanelCols;
  }
  if (mr == kMR && nr == kNR) {
    // Unrolled, so the accumulators stay in registers, and from a copy of
    // `out` that the stores to C cannot alias (a loop over the rows spilled
    // the tile and reloaded `out` per row: Winograd's GEMMs ran 5% slower).
    const Output o = out;
#pragma clang loop unroll(full)
    for (int64_t i = 0; i < kMR; ++i) store_row(o.alpha * acc[i][0], o.alpha * acc[i][1], c + i * ldc, i, ldc, o);
    return;
  }
  float tile[kMR][kNR];
  for (int64_t i = 0; i < kMR; ++i) {
    storev(tile[i], out.alpha * acc[i][0]);
    storev(tile[i] + kLanes, out.alpha * acc[i][1]);
  }
  store_tile(tile, c, ldc, mr, nr, out);
}

Result<Split> split_for(KernelContext& ctx, int64_t m, int64_t n, int64_t k, bool pack_a, bool pack_b) {
  Split split;
  if (feature_selected(FeatureId::threads)) {
    const int64_t work = m * n * k;
    const uint32_t by_columns = ctx.chunks_for(n, kNR, work);
    const uint32_t by_rows = ctx.chunks_for(m, kMR, work);
    split.rows = by_rows > by_columns;
    split.chunks = split.rows ? by_rows : by_columns;
  }
  const int64_t rows = split.rows ? KernelContext::chunk_size(m, kMR, split.chunks) : m;
  const int64_t columns = split.rows ? n : KernelContext::chunk_size(n, kNR, split.chunks);
  if (pack_a) {
    split.a_floats = static_cast<size_t>(round_up(static_cast<int64_t>(a_scratch_floats(rows, k)), 16));  // 64 B
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch((split.a_floats * split.chunks + 1) * sizeof(float)));
    split.a_scratch = static_cast<float*>(memory);
  }
  if (pack_b) {
    split.b_floats = static_cast<size_t>(round_up(static_cast<int64_t>(b_scratch_floats(columns, k)), 16));
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch((split.b_floats * split.chunks + 1) * sizeof(float)));
    split.b_scratch = static_cast<float*>(memory);
  }
  return split;
}

Result<PixelRows> pixel_rows_scratch(KernelContext& ctx, int64_t p, int64_t og, int64_t cg, bool pack_b) {
  PixelRows s;
  PARE_TRY_ASSIGN(s.split, split_for(ctx, p, og, cg, /*pack_a=*/true, pack_b));
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(p * og + 1) * sizeof(float)));
  s.product = static_cast<float*>(memory);
  return s;
}

void transpose_product(const float* PARE_RESTRICT product, int64_t p, int64_t og, float* PARE_RESTRICT c) {
  transpose_matrix(product, p, og, c);
}

}  // namespace gemm
}  // namespace pare
