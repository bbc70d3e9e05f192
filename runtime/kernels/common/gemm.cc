// Float GEMM packing, scratch and the choice of kernels (see gemm.h); the
// kernels themselves are gemm_kernels.inc's.

#include "runtime/kernels/common/gemm.h"

#include "runtime/core/cpu.h"
#include "runtime/kernels/common/transpose.h"

namespace pare {
namespace gemm {

namespace {
typedef float f4 __attribute__((vector_size(4 * sizeof(float))));
PARE_ALWAYS_INLINE f4 load4(const float* p) {
  f4 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
PARE_ALWAYS_INLINE void store4(float* p, f4 v) { __builtin_memcpy(p, &v, sizeof(v)); }

// Depths [p, p + 4) of a whole panel from kMR unit-stride rows: 24 floats,
// depth by depth, a 4 x 4 transpose of rows 0 to 3 and pairs of rows 4 and
// 5 (SSE2 or NEON shuffles on every build).
PARE_ALWAYS_INLINE void pack_a_depths4(const float* const* src, int64_t p, float* out) {
  static_assert(kMR == 6, "four rows and two");
  const f4 r0 = load4(src[0] + p), r1 = load4(src[1] + p), r2 = load4(src[2] + p), r3 = load4(src[3] + p);
  const f4 r4 = load4(src[4] + p), r5 = load4(src[5] + p);
  const f4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5), t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
  const f4 t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5), t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
  const f4 u0 = __builtin_shufflevector(r4, r5, 0, 4, 1, 5), u1 = __builtin_shufflevector(r4, r5, 2, 6, 3, 7);
  const f4 c1 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7), c3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
  store4(out, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
  store4(out + 4, __builtin_shufflevector(u0, c1, 0, 1, 4, 5));
  store4(out + 8, __builtin_shufflevector(c1, u0, 2, 3, 6, 7));
  store4(out + 12, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
  store4(out + 16, __builtin_shufflevector(u1, c3, 0, 1, 4, 5));
  store4(out + 20, __builtin_shufflevector(c3, u1, 2, 3, 6, 7));
}
}  // namespace

void pack_a(const MatrixView<float>& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = mc - ip < kMR ? mc - ip : kMR;
    float* panel = dst + (ip / kMR) * kc * kMR;
    // A whole panel of a row-major A (mm's input, a linear layer's,
    // channels-last pixels) four depths at a time: element by element, the
    // stores kMR floats apart took 13% of mm's time at n = 1,024 on an Ice
    // Lake Xeon (docs/performance.md, "SGEMM against the core's peak").
    int64_t done = 0;
    if (rows == kMR && a.col_stride == 1) {
      const float* src[kMR];
      for (int64_t r = 0; r < kMR; ++r) src[r] = a.data + (i0 + ip + r) * a.row_stride + p0;
      for (; done + 4 <= kc; done += 4) pack_a_depths4(src, done, panel + done * kMR);
    }
    // The rest row by row, each read in order into its lane of the panel:
    // one pointer step per element whatever the strides.
    for (int64_t r = 0; r < kMR; ++r) {
      if (r < rows) {
        const float* src = a.data + (i0 + ip + r) * a.row_stride + p0 * a.col_stride;
        for (int64_t p = done; p < kc; ++p) panel[p * kMR + r] = src[p * a.col_stride];
      } else {
        for (int64_t p = done; p < kc; ++p) panel[p * kMR + r] = 0.0f;
      }
    }
  }
}

void pack_b(const MatrixView<float>& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  const int64_t padded = round_up(nc, kTileCols);  // a tile's panels beyond nc are zeros
  for (int64_t jp = 0; jp < padded; jp += kPanelCols) {
    const int64_t left = nc - jp;
    const int64_t cols = left < 0 ? 0 : left < kPanelCols ? left : kPanelCols;
    float* panel = dst + (jp / kPanelCols) * kc * kPanelCols;
    if (cols == kPanelCols && b.col_stride == 1) {
      // Row-major B: each panel row is kPanelCols consecutive floats.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.data + (p0 + p) * b.row_stride + j0 + jp;
        for (int64_t v = 0; v < kPanelCols; v += simd::kLanes)
          simd::storev(panel + p * kPanelCols + v, simd::loadv(src + v));
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

#if defined(__x86_64__)
Blocking blocking() { return blocking_for(cpu::l2_cache_bytes()); }
#endif

#if defined(PARE_X86_64_DISPATCH)
TileKernel tile_kernel() {
  switch (cpu::kernel_isa()) {
    case cpu::Isa::x86_64_v4: return x86_64_v4::tile;
    case cpu::Isa::x86_64_v3: return x86_64_v3::tile;
    default: return PARE_SIMD_ISA::tile;
  }
}
TileKernel pair_tile_kernel(const Blocking& blocks) {
  return blocks.pairs && cpu::kernel_isa() == cpu::Isa::x86_64_v4 ? x86_64_v4::tile_pair : nullptr;
}
#endif

void sgemm_narrow(int64_t m, int64_t n, int64_t k, const float* packed_a, const MatrixView<float>& b, float* c,
                  int64_t ldc, const Output& out, float* scratch) {
#if defined(PARE_X86_64_DISPATCH)
  // (An AVX-512 CPU runs the v3 copy: there is no v4 narrow product.)
  if (cpu::kernel_isa() >= cpu::Isa::x86_64_v3) {
    return x86_64_v3::sgemm_narrow(m, n, k, packed_a, b, c, ldc, out, scratch);
  }
#endif
  PARE_SIMD_ISA::sgemm_narrow(m, n, k, packed_a, b, c, ldc, out, scratch);
}

void sgemm_blocks(int64_t m, int64_t n, int64_t k, const BlockPacker& pack_a_block, const BlockPacker& pack_b_block,
                  float* c, int64_t ldc, const Output& out, float* a_scratch, float* b_scratch, int64_t row0,
                  int64_t col0) {
  if (m == 0 || n == 0) return;
  const TileKernel tile_fn = tile_kernel();
  const Blocking blocks = blocking();
  const TileKernel pair_fn = pair_tile_kernel(blocks);
  for (int64_t j0 = 0; j0 < n; j0 += blocks.nc) {
    const int64_t nc = n - j0 < blocks.nc ? n - j0 : blocks.nc;
    // One block of depth 0 when k is 0: the tiles store C as Output says of a zero A B.
    for (int64_t p0 = 0; p0 < k || p0 == 0; p0 += kKC) {
      const int64_t kc = k - p0 < kKC ? k - p0 : kKC;
      const float* b_block = pack_b_block(p0, kc, col0 + j0, nc, b_scratch);
      // The bias goes in with the first depth block, the residual and the
      // clamp with the last.
      const bool first = p0 == 0;
      const bool last = p0 + kc == k;
      Output tile{out.alpha, out.accumulate || !first,          nullptr,
                  nullptr,   last ? out.lo : -__builtin_inff(), last ? out.hi : __builtin_inff()};
      // (No residual code in a runtime without prepacked_residual_kernel.)
      const float* residual =
          last && kernel_dtype_selected(TagId::prepacked_residual_kernel, ScalarType::Float) ? out.residual : nullptr;
      const bool pairs = pair_fn != nullptr && kc >= kPairMinDepth;
      for (int64_t i0 = 0; i0 < m; i0 += blocks.mc) {
        const int64_t mc = m - i0 < blocks.mc ? m - i0 : blocks.mc;
        const float* a_block = pack_a_block(row0 + i0, mc, p0, kc, a_scratch);
        for (int64_t jr = 0; jr < nc; jr += kTileCols) {
          const int64_t nr = nc - jr < kTileCols ? nc - jr : kTileCols;
          tile.col_bias = first && out.col_bias != nullptr ? out.col_bias + j0 + jr : nullptr;
          for (int64_t ir = 0; ir < mc;) {
            const bool pair = pairs && nr > kPadCols && mc - ir >= 2 * kMR;
            const int64_t mr = pair ? 2 * kMR : mc - ir < kMR ? mc - ir : kMR;
            tile.row_bias = first && out.row_bias != nullptr ? out.row_bias + i0 + ir : nullptr;
            tile.residual = residual != nullptr ? residual + (i0 + ir) * ldc + j0 + jr : nullptr;
            (pair ? pair_fn : tile_fn)(kc, a_block + (ir / kMR) * kc * kMR,
                                       b_block + (jr / kPanelCols) * kc * kPanelCols, c + (i0 + ir) * ldc + j0 + jr,
                                       ldc, mr, nr, tile);
            ir += mr;
          }
        }
      }
    }
  }
}

void sgemm_parallel(KernelContext& ctx, const Split& split, int64_t m, int64_t n, int64_t k,
                    const BlockPacker& pack_a_block, const BlockPacker& pack_b_block, float* c, int64_t ldc,
                    const Output& out) {
  ctx.parallel(split.chunks, split.rows ? m : n, split.rows ? kMR : kTileCols,
               [&](uint32_t chunk, int64_t begin, int64_t end) {
                 float* a_scratch = split.a_scratch == nullptr ? nullptr : split.a_scratch + chunk * split.a_floats;
                 float* b_scratch = split.b_scratch == nullptr ? nullptr : split.b_scratch + chunk * split.b_floats;
                 const int64_t row0 = split.rows ? begin : 0;
                 const int64_t col0 = split.rows ? 0 : begin;
                 Output part = out;
                 if (part.row_bias != nullptr) part.row_bias += row0;
                 if (part.col_bias != nullptr) part.col_bias += col0;
                 if (part.residual != nullptr) part.residual += row0 * ldc + col0;
                 sgemm_blocks(split.rows ? end - begin : m, split.rows ? n : end - begin, k, pack_a_block, pack_b_block,
                              c + row0 * ldc + col0, ldc, part, a_scratch, b_scratch, row0, col0);
               });
}

Result<Split> split_for(KernelContext& ctx, int64_t m, int64_t n, int64_t k, bool pack_a, bool pack_b) {
  Split split;
  if (feature_selected(FeatureId::threads)) {
    const int64_t work = m * n * k;
    const uint32_t by_columns = ctx.chunks_for(n, kTileCols, work);
    const uint32_t by_rows = ctx.chunks_for(m, kMR, work);
    split.rows = by_rows > by_columns;
    split.chunks = split.rows ? by_rows : by_columns;
  }
  const int64_t rows = split.rows ? KernelContext::chunk_size(m, kMR, split.chunks) : m;
  const int64_t columns = split.rows ? n : KernelContext::chunk_size(n, kTileCols, split.chunks);
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
