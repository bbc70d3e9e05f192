// Float GEMM packing, scratch and the choice of kernels (see gemm.h); the
// kernels themselves are gemm_kernels.inc's.

#include "runtime/kernels/common/gemm.h"

#include "runtime/core/cpu.h"
#include "runtime/kernels/common/transpose.h"

namespace pare {
namespace gemm {

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
      for (int64_t i0 = 0; i0 < m; i0 += blocks.mc) {
        const int64_t mc = m - i0 < blocks.mc ? m - i0 : blocks.mc;
        const float* a_block = pack_a_block(row0 + i0, mc, p0, kc, a_scratch);
        for (int64_t jr = 0; jr < nc; jr += kTileCols) {
          const int64_t nr = nc - jr < kTileCols ? nc - jr : kTileCols;
          tile.col_bias = first && out.col_bias != nullptr ? out.col_bias + j0 + jr : nullptr;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const int64_t mr = mc - ir < kMR ? mc - ir : kMR;
            tile.row_bias = first && out.row_bias != nullptr ? out.row_bias + i0 + ir : nullptr;
            tile.residual = residual != nullptr ? residual + (i0 + ir) * ldc + j0 + jr : nullptr;
            tile_fn(kc, a_block + (ir / kMR) * kc * kMR, b_block + (jr / kPanelCols) * kc * kPanelCols,
                    c + (i0 + ir) * ldc + j0 + jr, ldc, mr, nr, tile);
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
