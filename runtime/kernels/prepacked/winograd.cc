// Winograd F(2x2, 3x3) (see winograd.h).

#include "runtime/kernels/prepacked/winograd.h"

#include "runtime/kernels/common/simd.h"

namespace pare {
namespace winograd {
namespace {

using simd::kLanes;
using simd::vec;

struct Tiles {
  int64_t rows, cols;  // tiles per column and per row of the output
  // The zero-bordered input plane every tile's 4x4 patch lies in, two
  // columns wider than the tiles need, so that a vector of tiles' stride-2
  // loads (simd::load_even, 2 * kLanes floats) stays inside its row.
  int64_t plane_h, plane_w;
};

Tiles tiles_of(const Geometry& g) {
  const int64_t rows = (g.out_h + 1) / 2;
  const int64_t cols = (g.out_w + 1) / 2;
  return {rows, cols, 2 * rows + 2, 2 * cols + 4};
}

// V's floats per position: the packed B [in_channels, block] (gemm.h).
size_t v_floats(const Geometry& g, int64_t block) { return gemm::packed_b_size(g.in_channels, block); }

// Calls fn(i, ty, tx, count) for the runs of tiles [t0, t0 + n) that lie
// in one row of tiles: tiles i .. i + count - 1 of the block are tiles
// (ty, tx) .. (ty, tx + count - 1).
template <typename F>
PARE_ALWAYS_INLINE void for_each_run(const Tiles& tl, int64_t t0, int64_t n, F&& fn) {
  int64_t ty = t0 / tl.cols;
  int64_t tx = t0 % tl.cols;
  for (int64_t i = 0; i < n;) {
    const int64_t count = n - i < tl.cols - tx ? n - i : tl.cols - tx;
    fn(i, ty, tx, count);
    i += count;
    tx = 0;
    ++ty;
  }
}

// B^T d B for kLanes 4x4 patches d (d(r, q): row r, column q), written as
// out(e, v) for e = 4 i + j, position (i, j).
template <typename Load, typename Store>
PARE_ALWAYS_INLINE void input_tile(Load d, Store out) {
  vec b[4][4];  // B^T d: rows 0 - 2, 1 + 2, 2 - 1, 1 - 3
  for (int q = 0; q < 4; ++q) {
    const vec d0 = d(0, q), d1 = d(1, q), d2 = d(2, q), d3 = d(3, q);
    b[0][q] = d0 - d2;
    b[1][q] = d1 + d2;
    b[2][q] = d2 - d1;
    b[3][q] = d1 - d3;
  }
  for (int r = 0; r < 4; ++r) {  // (B^T d) B: the same on the columns
    out(4 * r + 0, b[r][0] - b[r][2]);
    out(4 * r + 1, b[r][1] + b[r][2]);
    out(4 * r + 2, b[r][2] - b[r][1]);
    out(4 * r + 3, b[r][1] - b[r][3]);
  }
}

// Floats per row of the input transform's rows: a block's columns and a
// vector's overrun.
int64_t row_floats(int64_t block) { return gemm::round_up(block, gemm::kPadCols) + kLanes; }

// Floats a vector of tiles may read past the end of a plane's last row.
constexpr int64_t kReadSlack = 2 * kLanes + 4;

// V_e for tiles [t0, t0 + n) (n <= the block), from the padded planes.
// Per channel, the 16 rows are computed into `rows` (row e at rows + e *
// row_floats(n)), kLanes tiles of a run at a time: a run's last vector may
// run past its end, reading past its row of the plane (kReadSlack) and
// writing columns that the next run, or the padding, then overwrites
// (kLanes spare columns per row). Then they are copied panel by panel to
// where the GEMM's packed B layout puts (row c, column t - t0); the padding
// columns of the last panels are zeros (the micro-kernel reads them).
void input_transform(const Geometry& g, const Tiles& tl, const float* planes, int64_t t0, int64_t n, float* v,
                     size_t position_floats, float* rows) {
  const int64_t cols = gemm::round_up(n, gemm::kPadCols);
  const int64_t stride = row_floats(n);
  const int64_t w = tl.plane_w;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    const float* plane = planes + c * tl.plane_h * w;
    for_each_run(tl, t0, n, [&](int64_t i, int64_t ty, int64_t tx, int64_t count) {
      const float* base = plane + 2 * ty * w + 2 * tx;
      float* out = rows + i;
      for (int64_t k = 0; k < count; k += kLanes) {
        const float* d = base + 2 * k;
        input_tile([&](int r, int q) { return simd::load_even(d + r * w + q); },
                   [&](int e, vec x) { simd::storev(out + e * stride + k, x); });
      }
    });
    const int64_t p0 = c / gemm::kKC * gemm::kKC;
    const int64_t kc = g.in_channels - p0 < gemm::kKC ? g.in_channels - p0 : gemm::kKC;
    for (int64_t e = 0; e < kPositions; ++e) {
      float* row = rows + e * stride;
      PARE_SCALAR_LOOP
      for (int64_t j = n; j < cols; ++j) row[j] = 0.0f;
      float* dst = v + e * position_floats + p0 * cols + (c - p0) * gemm::kPanelCols;
      for (int64_t j = 0; j < cols; j += gemm::kPanelCols) {
        __builtin_memcpy(dst + (j / gemm::kPanelCols) * kc * gemm::kPanelCols, row + j,
                         gemm::kPanelCols * sizeof(float));
      }
    }
  }
}

// A^T M A plus the bias for a tile, M's element e = 4 i + j read by m(e):
// rows 0 + 1 + 2 and 1 - 2 - 3, then the same on the columns. T is float
// or simd::vec.
template <typename T>
struct OutTile {
  T y00, y01, y10, y11;
};
template <typename T, typename Load>
PARE_ALWAYS_INLINE OutTile<T> output_tile(Load m, T bias) {
  T s[2][4];
  for (int q = 0; q < 4; ++q) {
    const T m0 = m(q), m1 = m(4 + q), m2 = m(8 + q), m3 = m(12 + q);
    s[0][q] = m0 + m1 + m2;
    s[1][q] = m1 - m2 - m3;
  }
  return {s[0][0] + s[0][1] + s[0][2] + bias, s[0][1] - s[0][2] - s[0][3] + bias, s[1][0] + s[1][1] + s[1][2] + bias,
          s[1][1] - s[1][2] - s[1][3] + bias};
}

// y's tiles [t0, t0 + n) = A^T M A + bias (bias null for none), M_e [out,
// n] at m + e * out * n. A run of whole tiles (both rows inside the output,
// not the last column of an odd width) goes kLanes tiles at a time (the
// last vector overlapping the one before: it writes the same values
// again); the clipped tiles of the bottom and right edges, and runs shorter
// than a vector, one tile at a time.
void output_transform(const Geometry& g, const Tiles& tl, const float* m, int64_t t0, int64_t n, const float* bias,
                      float lo, float hi, float* y) {
  const int64_t stride = g.out_channels * n;
  const bool clamps = lo > -__builtin_inff() || hi < __builtin_inff();
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const float* mo = m + o * n;
    float* yo = y + o * g.out_h * g.out_w;
    const float b = bias == nullptr ? 0.0f : bias[o];
    for_each_run(tl, t0, n, [&](int64_t i, int64_t ty, int64_t tx, int64_t count) {
      const int64_t r0 = 2 * ty;
      float* y0 = yo + r0 * g.out_w + 2 * tx;
      float* y1 = y0 + g.out_w;
      const float* mi = mo + i;
      const bool two_rows = r0 + 1 < g.out_h;
      const int64_t whole = !two_rows ? 0 : (g.out_w & 1) && tx + count == tl.cols ? count - 1 : count;
      int64_t k = 0;
      if (whole >= kLanes) {
        const vec bv = vec{} + b;
        const vec lov = lo - vec{};  // splats; x - 0 is x for every x
        const vec hiv = hi - vec{};
        for (;; k += kLanes) {
          if (k > whole - kLanes) k = whole - kLanes;
          OutTile<vec> t = output_tile<vec>([&](int e) { return simd::loadv(mi + e * stride + k); }, bv);
          if (clamps) {  // a fifth more work for the transform: only when asked
            t = {simd::clamp(t.y00, lov, hiv), simd::clamp(t.y01, lov, hiv), simd::clamp(t.y10, lov, hiv),
                 simd::clamp(t.y11, lov, hiv)};
          }
          simd::store_interleaved(y0 + 2 * k, t.y00, t.y01);
          simd::store_interleaved(y1 + 2 * k, t.y10, t.y11);
          if (k == whole - kLanes) break;
        }
        k = whole;
      }
      PARE_SCALAR_LOOP
      for (; k < count; ++k) {
        const OutTile<float> t = output_tile<float>([&](int e) { return mi[e * stride + k]; }, b);
        const bool second_col = 2 * (tx + k) + 1 < g.out_w;
        y0[2 * k] = simd::clamp(t.y00, lo, hi);
        if (second_col) y0[2 * k + 1] = simd::clamp(t.y01, lo, hi);
        if (two_rows) {
          y1[2 * k] = simd::clamp(t.y10, lo, hi);
          if (second_col) y1[2 * k + 1] = simd::clamp(t.y11, lo, hi);
        }
      }
    });
  }
}

}  // namespace

Result<Scratch> allocate(KernelContext& ctx, const Geometry& g) {
  const Tiles tl = tiles_of(g);
  const int64_t tiles = tl.rows * tl.cols;
  // Tiles per block: V and M within kBlockBytes, in whole packed panels
  // (at least one tile's worth of register tile).
  int64_t block = kBlockBytes / (kPositions * static_cast<int64_t>(sizeof(float)) * (g.in_channels + g.out_channels));
  block = block / gemm::kPadCols * gemm::kPadCols;
  if (block < gemm::kPadCols) block = gemm::kPadCols;
  if (block > tiles) block = tiles;
  Scratch s;
  s.block = block;
  // The planes are the only part that grows with the image (and its
  // padding): checked for overflow. The rest is a few blocks' worth.
  int64_t plane_floats = 0;
  const size_t v = kPositions * v_floats(g, block);
  const size_t m = static_cast<size_t>(kPositions * g.out_channels * block);
  const size_t rows = static_cast<size_t>(kPositions * row_floats(block));
  int64_t bytes = 0;
  PARE_CHECK_OR_RETURN(ctx,
                       !__builtin_mul_overflow(g.in_channels, tl.plane_h * tl.plane_w, &plane_floats) &&
                           !__builtin_add_overflow(plane_floats, kReadSlack, &plane_floats) &&
                           !__builtin_add_overflow(plane_floats, static_cast<int64_t>(v + m + rows), &bytes) &&
                           !__builtin_mul_overflow(bytes, static_cast<int64_t>(sizeof(float)), &bytes),
                       Error::LimitExceeded, "the Winograd scratch of a %lldx%lld image with %lld channels overflows",
                       static_cast<long long>(g.height), static_cast<long long>(g.width),
                       static_cast<long long>(g.in_channels));
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(bytes)));
  s.planes = static_cast<float*>(memory);
  s.v = s.planes + plane_floats;
  s.m = s.v + v;
  s.rows = s.m + m;
  PARE_TRY_ASSIGN(s.split, gemm::split_for(ctx, g.out_channels, block, g.in_channels, /*pack_a=*/false,
                                           /*pack_b=*/false));
  return s;
}

void run(KernelContext& ctx, const Geometry& g, const Scratch& s, const float* x, const float* u, const float* bias,
         float lo, float hi, float* y) {
  const Tiles tl = tiles_of(g);
  const int64_t plane = tl.plane_h * tl.plane_w;
  // The planes, and the slack after them, start as zeros (no garbage in
  // the lanes a vector reads past a plane).
  for (int64_t i = 0; i < g.in_channels * plane + kReadSlack; ++i) s.planes[i] = 0.0f;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    float* dst = s.planes + c * plane;
    for (int64_t r = 0; r < g.height; ++r) {
      __builtin_memcpy(dst + (r + g.pad_h) * tl.plane_w + g.pad_w, x + (c * g.height + r) * g.width,
                       static_cast<size_t>(g.width) * sizeof(float));
    }
  }
  const size_t position_floats = v_floats(g, s.block);
  const size_t a_floats = gemm::packed_a_size(g.out_channels, g.in_channels);
  const int64_t tiles = tl.rows * tl.cols;
  for (int64_t t0 = 0; t0 < tiles; t0 += s.block) {
    const int64_t n = tiles - t0 < s.block ? tiles - t0 : s.block;
    input_transform(g, tl, s.planes, t0, n, s.v, position_floats, s.rows);
    for (int64_t e = 0; e < kPositions; ++e) {
      gemm::sgemm(ctx, s.split, g.out_channels, n, g.in_channels, gemm::PrepackedA{u + e * a_floats, g.out_channels},
                  gemm::PrepackedB{s.v + e * position_floats, n}, s.m + e * g.out_channels * n, n, gemm::Output{});
    }
    output_transform(g, tl, s.m, t0, n, bias, lo, hi, y);
  }
}

}  // namespace winograd
}  // namespace pare
