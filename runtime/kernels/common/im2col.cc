// im2col packing for the float GEMM (see im2col.h).

#include "runtime/kernels/common/im2col.h"

namespace pare {
namespace gemm {
// One depth of a panel whose columns lie on one output row: `cols`
// columns from input row `row` at columns ix0, ix0 + sw, ..., zeros for
// the padding and past `cols`.
namespace {
PARE_ALWAYS_INLINE void copy_row(const Im2ColGeometry& g, const float* row, int64_t ix0, int64_t cols, float* out) {
  constexpr int64_t kW = kPanelCols;
  if (cols == kW && ix0 >= 0 && ix0 + (kW - 1) * g.sw < g.width) {  // the panel inside the row
    if (g.sw == 1) {
      for (int64_t q = 0; q < kW; ++q) out[q] = row[ix0 + q];
    } else if (g.sw == 2 && ix0 + 2 * kW <= g.width) {
      // Stride 2 (a network's stem): the even lanes of two vectors
      // (MobileNetV2's first layer at 224x224 spent 60% of its time
      // in the scalar loop below).
      for (int64_t q = 0; q < kW; q += simd::kLanes) simd::storev(out + q, simd::load_even(row + ix0 + 2 * q));
    } else {
      PARE_SCALAR_LOOP
      for (int64_t q = 0; q < kW; ++q) out[q] = row[ix0 + q * g.sw];
    }
    return;
  }
  int64_t q = 0;
  PARE_SCALAR_LOOP
  for (; q < cols; ++q) {
    const int64_t ix = ix0 + q * g.sw;
    out[q] = (ix >= 0 && ix < g.width) ? row[ix] : 0.0f;
  }
  for (; q < kW; ++q) out[q] = 0.0f;
}
}  // namespace

const float* Im2ColPanels::operator()(int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) const {
  const int64_t taps = g.kh * g.kw;
  const int64_t plane_size = g.height * g.width;
  constexpr int64_t kW = kPanelCols;
  const int64_t padded = round_up(nc, kTileCols);  // a tile's panels beyond nc are zeros
  for (int64_t jp = 0; jp < padded; jp += kW) {
    float* panel = dst + (jp / kW) * kc * kW;
    if (jp >= nc) {
      PARE_SCALAR_LOOP
      for (int64_t q = 0; q < kc * kW; ++q) panel[q] = 0.0f;
      continue;
    }
    const int64_t cols = nc - jp < kW ? nc - jp : kW;
    const int64_t j = j0 + jp;
    const int64_t oy = j / g.out_w;
    const int64_t ox = j % g.out_w;
    // All columns of the panel on one output row: one input row per tap.
    const bool one_row = ox + cols <= g.out_w;
    // A panel that wraps onto the next output row: where each column's
    // window starts (two divisions per column, so only here).
    int64_t iy_base[kW];
    int64_t ix_base[kW];
    if (!one_row) {
      PARE_SCALAR_LOOP
      for (int64_t q = 0; q < cols; ++q) {
        iy_base[q] = ((j + q) / g.out_w) * g.sh - g.ph;
        ix_base[q] = ((j + q) % g.out_w) * g.sw - g.pw;
      }
    }
    int64_t channel = p0 / taps;
    int64_t ky = (p0 % taps) / g.kw;
    int64_t kx = (p0 % taps) % g.kw;
    float* out = panel;
    // The depths in runs of one (channel, ky): the taps of one input row.
    for (int64_t p = 0; p < kc;) {
      const int64_t run = g.kw - kx < kc - p ? g.kw - kx : kc - p;
      const float* plane = image + channel * plane_size;
      if (one_row) {
        const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.height) {
          PARE_SCALAR_LOOP
          for (int64_t q = 0; q < run * kW; ++q) out[q] = 0.0f;
          out += run * kW;
        } else {
          const float* row = plane + iy * g.width;
          for (int64_t t = kx; t < kx + run; ++t, out += kW) copy_row(g, row, ox * g.sw - g.pw + t * g.dw, cols, out);
        }
      } else {
        for (int64_t t = kx; t < kx + run; ++t, out += kW) {
          int64_t q = 0;
          PARE_SCALAR_LOOP
          for (; q < cols; ++q) {
            const int64_t iy = iy_base[q] + ky * g.dh;
            const int64_t ix = ix_base[q] + t * g.dw;
            out[q] = (iy >= 0 && iy < g.height && ix >= 0 && ix < g.width) ? plane[iy * g.width + ix] : 0.0f;
          }
          for (; q < kW; ++q) out[q] = 0.0f;
        }
      }
      p += run;
      kx = 0;
      if (++ky == g.kh) {
        ky = 0;
        ++channel;
      }
    }
  }
  return dst;
}

void im2col_matrix(const float* image, const Im2ColGeometry& g, int64_t channels, int64_t p, float* x) {
  const int64_t plane_size = g.height * g.width;
  const int64_t out_h = p / g.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * plane_size;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        float* out = x + ((c * g.kh + ky) * g.kw + kx) * p;
        for (int64_t oy = 0; oy < out_h; ++oy, out += g.out_w) {
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.height) {  // the vertical padding
            for (int64_t ox = 0; ox < g.out_w; ++ox) out[ox] = 0.0f;
            continue;
          }
          const float* row = plane + iy * g.width;
          PARE_SCALAR_LOOP
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
            out[ox] = ix >= 0 && ix < g.width ? row[ix] : 0.0f;
          }
        }
      }
    }
  }
}

}  // namespace gemm
}  // namespace pare
