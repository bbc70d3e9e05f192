// Winograd F(2x2, 3x3) and F(4x4, 3x3) (see winograd.h).

#include "runtime/kernels/prepacked/winograd.h"

#include "runtime/kernels/common/simd.h"

namespace pare {
namespace winograd {
namespace {

using simd::kLanes;
using simd::vec;

// The 1-D transforms of output tile T, for vectors and floats alike: B^T
// on a patch column d[0, T + 2), A^T on a transformed column m[0, T + 2).
// Each is applied down the columns and then along the rows.
template <int T>
struct Transforms;

// F(2x2, 3x3): B^T rows 0 - 2, 1 + 2, 2 - 1, 1 - 3; A^T rows 0 + 1 + 2,
// 1 - 2 - 3. One rounding per input stage, two per output stage.
template <>
struct Transforms<2> {
  template <typename V>
  static PARE_ALWAYS_INLINE void input(const V* d, V* out) {
    out[0] = d[0] - d[2];
    out[1] = d[1] + d[2];
    out[2] = d[2] - d[1];
    out[3] = d[1] - d[3];
  }
  template <typename V>
  static PARE_ALWAYS_INLINE void output(const V* m, V* out) {
    out[0] = m[0] + m[1] + m[2];
    out[1] = m[1] - m[2] - m[3];
  }
};

// F(4x4, 3x3) at the points 0, 1, -1, 2, -2 and infinity (Lavin and Gray's
// matrices). B^T:
//   4 0 -5  0 1 0      A^T: 1 1  1 1  1 0
//   0 -4 -4 1 1 0           0 1 -1 2 -2 0
//   0 4 -4 -1 1 0           0 1  1 4  4 0
//   0 -2 -1 2 1 0           0 1 -1 8 -8 1
//   0 2 -1 -2 1 0
//   0 4  0 -5 0 1
// grouped so that every multiply is by a power of two (exact): two
// roundings per input stage, at most three per output stage.
template <>
struct Transforms<4> {
  template <typename V>
  static PARE_ALWAYS_INLINE void input(const V* d, V* out) {
    const V d42 = d[4] - d[2];
    const V d31 = d[3] - d[1];
    out[0] = 4.0f * (d[0] - d[2]) + d42;
    out[1] = (d[3] + d[4]) - 4.0f * (d[1] + d[2]);
    out[2] = (d[4] - d[3]) + 4.0f * (d[1] - d[2]);
    out[3] = d42 + 2.0f * d31;
    out[4] = d42 - 2.0f * d31;
    out[5] = 4.0f * (d[1] - d[3]) + (d[5] - d[3]);
  }
  template <typename V>
  static PARE_ALWAYS_INLINE void output(const V* m, V* out) {
    const V a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
    out[0] = m[0] + a + c;
    out[1] = b + 2.0f * d;
    out[2] = a + 4.0f * c;
    out[3] = b + 8.0f * d + m[5];
  }
};

// The planes every tile's patch lies in: the input, zero-bordered, each
// row split into its T column phases (column T k + p at phase p, index k),
// so that a patch column of kLanes adjacent tiles is one contiguous load.
template <int T>
struct Tiles {
  static constexpr int kAlpha = T + 2;  // the patch's side
  int64_t rows, cols;                   // tiles per column and per row of the output
  int64_t plane_h;                      // padded rows: T rows per tile and 2 more
  int64_t phase_w;                      // floats per phase of a row: a tile's column, and one more
  int64_t row_floats() const { return T * phase_w; }
  int64_t plane_floats() const { return plane_h * row_floats(); }
};

template <int T>
Tiles<T> tiles_of(const Geometry& g) {
  const int64_t rows = (g.out_h + T - 1) / T;
  const int64_t cols = (g.out_w + T - 1) / T;
  return {rows, cols, T * rows + 2, cols + 1};
}

// Floats a vector of tiles may read past the end of the last plane's last
// row (a run's last vector past the run's end, one index past the tile).
constexpr int64_t kReadSlack = kLanes + 1;

// V's floats per position: the packed B [in_channels, block] (gemm.h).
size_t v_floats(const Geometry& g, int64_t block) { return gemm::packed_b_size(g.in_channels, block); }

// Calls fn(i, ty, tx, count) for the runs of tiles [t0, t0 + n) that lie
// in one row of tiles: tiles i .. i + count - 1 of the block are tiles
// (ty, tx) .. (ty, tx + count - 1).
template <int T, typename F>
PARE_ALWAYS_INLINE void for_each_run(const Tiles<T>& tl, int64_t t0, int64_t n, F&& fn) {
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

// Floats per row of the input transform's rows: a block's columns and a
// vector's overrun.
int64_t row_floats(int64_t block) { return gemm::round_up(block, gemm::kPadCols) + kLanes; }

// Splits T * kLanes consecutive floats v[0], v[1], ... (kLanes each) into
// their T column phases: phase p gets floats p, p + T, p + 2 T, ...
PARE_ALWAYS_INLINE void split_phases(const vec (&v)[2], vec (&phase)[2]) {
  phase[0] = simd::even_lanes(v[0], v[1]);
  phase[1] = simd::odd_lanes(v[0], v[1]);
}
PARE_ALWAYS_INLINE void split_phases(const vec (&v)[4], vec (&phase)[4]) {
  const vec e01 = simd::even_lanes(v[0], v[1]), o01 = simd::odd_lanes(v[0], v[1]);
  const vec e23 = simd::even_lanes(v[2], v[3]), o23 = simd::odd_lanes(v[2], v[3]);
  phase[0] = simd::even_lanes(e01, e23);
  phase[1] = simd::even_lanes(o01, o23);
  phase[2] = simd::odd_lanes(e01, e23);
  phase[3] = simd::odd_lanes(o01, o23);
}

// Copies x's planes [c0, c1) into the zero-bordered, phase-split scratch
// planes.
template <int T>
void fill_planes(const Geometry& g, const Tiles<T>& tl, const float* x, float* planes, int64_t c0, int64_t c1) {
  // The planes, and the slack after the last, start as zeros (no garbage
  // in the lanes a vector reads past a plane).
  const int64_t plane = tl.plane_floats();
  const int64_t zeros_end = c1 * plane + (c1 == g.in_channels ? kReadSlack : 0);
  for (int64_t i = c0 * plane; i < zeros_end; ++i) planes[i] = 0.0f;
  // Padded column col goes to phase col % T, index col / T.
  auto put = [&](float* dst, int64_t col, float v) {
    const uint64_t c = static_cast<uint64_t>(col);
    dst[static_cast<int64_t>(c % T) * tl.phase_w + static_cast<int64_t>(c / T)] = v;
  };
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t r = 0; r < g.height; ++r) {
      const float* src = x + (c * g.height + r) * g.width;
      float* dst = planes + c * plane + (r + g.pad_h) * tl.row_floats();
      int64_t q = 0;
      PARE_SCALAR_LOOP
      for (; q < g.width && (q + g.pad_w) % T != 0; ++q) put(dst, q + g.pad_w, src[q]);
      for (; q + T * kLanes <= g.width; q += T * kLanes) {  // T vectors at a time, from phase 0
        vec v[T];
        for (int i = 0; i < T; ++i) v[i] = simd::loadv(src + q + i * kLanes);
        vec phase[T];
        split_phases(v, phase);
        const int64_t k = (q + g.pad_w) / T;
        for (int p = 0; p < T; ++p) simd::storev(dst + p * tl.phase_w + k, phase[p]);
      }
      PARE_SCALAR_LOOP
      for (; q < g.width; ++q) put(dst, q + g.pad_w, src[q]);
    }
  }
}

// V_e's rows [c0, c1) for tiles [t0, t0 + n) (n <= the block), from the
// padded planes.
// Per channel, the positions' rows are computed into `rows` (row e at rows
// + e * row_floats(n)), kLanes tiles of a run at a time: B^T d B for kLanes
// patches, written as out(e, v) for e = (T + 2) i + j, position (i, j). A
// run's last vector may run past its end, reading past its row of the
// plane (kReadSlack) and writing columns that the next run, or the
// padding, then overwrites (kLanes spare columns per row). Then they are
// copied panel by panel to where the GEMM's packed B layout puts (row c,
// column t - t0); the padding columns of the last panels are zeros (the
// micro-kernel reads them).
template <int T>
void input_transform(const Geometry& g, const Tiles<T>& tl, const float* planes, int64_t t0, int64_t n, float* v,
                     size_t position_floats, float* rows, int64_t c0, int64_t c1) {
  constexpr int kAlpha = Tiles<T>::kAlpha;
  const int64_t cols = gemm::round_up(n, gemm::kPadCols);
  const int64_t stride = row_floats(n);
  const int64_t w = tl.row_floats();
  for (int64_t c = c0; c < c1; ++c) {
    const float* plane = planes + c * tl.plane_floats();
    for_each_run(tl, t0, n, [&](int64_t i, int64_t ty, int64_t tx, int64_t count) {
      const float* base = plane + T * ty * w + tx;
      float* out = rows + i;
      for (int64_t k = 0; k < count; k += kLanes) {
        vec b[kAlpha][kAlpha];  // B^T d: b[i][q]
        for (int q = 0; q < kAlpha; ++q) {
          const float* d = base + k + (q % T) * tl.phase_w + q / T;
          vec col[kAlpha];
          for (int r = 0; r < kAlpha; ++r) col[r] = simd::loadv(d + r * w);
          vec t[kAlpha];
          Transforms<T>::input(col, t);
          for (int r = 0; r < kAlpha; ++r) b[r][q] = t[r];
        }
        for (int r = 0; r < kAlpha; ++r) {  // (B^T d) B: the same along the rows
          vec t[kAlpha];
          Transforms<T>::input(b[r], t);
          for (int j = 0; j < kAlpha; ++j) simd::storev(out + (kAlpha * r + j) * stride + k, t[j]);
        }
      }
    });
    const int64_t p0 = c / gemm::kKC * gemm::kKC;
    const int64_t kc = g.in_channels - p0 < gemm::kKC ? g.in_channels - p0 : gemm::kKC;
    for (int64_t e = 0; e < positions(T); ++e) {
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

// A^T M A plus the bias for a tile, M's element e = (T + 2) i + j read by
// m(e), into y[r][q] (row r, column q of the T x T output tile). V is
// float or simd::vec.
template <int T, typename V, typename Load>
PARE_ALWAYS_INLINE void output_tile(Load m, V bias, V (&y)[T][T]) {
  constexpr int kAlpha = Tiles<T>::kAlpha;
  V s[T][kAlpha];  // A^T M
  for (int q = 0; q < kAlpha; ++q) {
    V col[kAlpha];
    for (int i = 0; i < kAlpha; ++i) col[i] = m(kAlpha * i + q);
    V t[T];
    Transforms<T>::output(col, t);
    for (int r = 0; r < T; ++r) s[r][q] = t[r];
  }
  for (int r = 0; r < T; ++r) {  // (A^T M) A: the same along the rows
    Transforms<T>::output(s[r], y[r]);
    for (int q = 0; q < T; ++q) y[r][q] = y[r][q] + bias;
  }
}

// Stores T vectors' lanes interleaved at p: y[0][0] y[1][0] .. y[T-1][0]
// y[0][1] ..., T * kLanes floats (row r of kLanes tiles' outputs, given
// y[q] = column q of the row).
PARE_ALWAYS_INLINE void store_row(float* p, const vec (&y)[2]) { simd::store_interleaved(p, y[0], y[1]); }
PARE_ALWAYS_INLINE void store_row(float* p, const vec (&y)[4]) {
  // Interleaving (0, 2) and (1, 3), then those two, puts the four in order.
  float even[2 * kLanes];
  float odd[2 * kLanes];
  simd::store_interleaved(even, y[0], y[2]);
  simd::store_interleaved(odd, y[1], y[3]);
  simd::store_interleaved(p, simd::loadv(even), simd::loadv(odd));
  simd::store_interleaved(p + 2 * kLanes, simd::loadv(even + kLanes), simd::loadv(odd + kLanes));
}

// Where each tile of a block goes: its first output's offset in an output
// plane, and how many of its rows and columns lie inside the output (T,
// except for the tiles of the bottom and right edges).
template <int T>
void tile_places(const Geometry& g, const Tiles<T>& tl, int64_t t0, int64_t n, TilePlace* places) {
  for_each_run(tl, t0, n, [&](int64_t i, int64_t ty, int64_t tx, int64_t count) {
    const int64_t rows = g.out_h - T * ty < T ? g.out_h - T * ty : T;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t x0 = T * (tx + k);
      places[i + k] = {T * ty * g.out_w + x0, static_cast<int32_t>(rows),
                       static_cast<int32_t>(g.out_w - x0 < T ? g.out_w - x0 : T)};
    }
  });
}

// Output channels [o0, o1) of y's tiles [t0, t0 + n) = A^T M A + bias
// (bias null for none), M_e [out, n] at m + e * out * n, each tile where
// `places` says. The block's tiles
// go kLanes at a time whatever rows of tiles they lie in (the last vector
// overlapping the one before: it writes the same values again): kLanes
// whole tiles of one row are stored as interleaved vectors, other tiles'
// rows one by one, clipped at the bottom and right edges. A block of fewer
// than kLanes tiles goes one tile at a time.
template <int T>
void output_transform(const Geometry& g, const float* m, int64_t n, const TilePlace* places, const float* bias,
                      float lo, float hi, float* y, int64_t o0, int64_t o1) {
  const int64_t stride = g.out_channels * n;
  const bool clamps = simd::bounded(lo, hi);
  // Row r of a tile from T floats at `row` (clipped).
  auto store_tile_row = [&](float* plane, const TilePlace& place, int r, const float* row) {
    if (r >= place.rows) return;
    float* out = plane + place.offset + r * g.out_w;
    if (place.cols == T) {
      __builtin_memcpy(out, row, T * sizeof(float));
    } else {
      PARE_SCALAR_LOOP
      for (int q = 0; q < place.cols; ++q) out[q] = row[q];
    }
  };
  for (int64_t o = o0; o < o1; ++o) {
    const float* mo = m + o * n;
    float* yo = y + o * g.out_h * g.out_w;
    const float b = bias == nullptr ? 0.0f : bias[o];
    int64_t k = 0;
    if (n >= kLanes) {
      const vec bv = simd::splat(b);
      const vec lov = simd::splat(lo);
      const vec hiv = simd::splat(hi);
      for (;; k += kLanes) {
        if (k > n - kLanes) k = n - kLanes;
        vec t[T][T];
        output_tile<T>([&](int e) { return simd::loadv(mo + e * stride + k); }, bv, t);
        if (clamps) {  // more work for the transform: only when asked
          for (int r = 0; r < T; ++r) {
            for (int q = 0; q < T; ++q) t[r][q] = simd::clamp(t[r][q], lov, hiv);
          }
        }
        const TilePlace& first = places[k];
        const TilePlace& last = places[k + kLanes - 1];
        if (first.rows == T && last.cols == T && last.offset == first.offset + T * (kLanes - 1)) {
          // One row of whole tiles (only a row's last tile may be clipped).
          for (int r = 0; r < T; ++r) store_row(yo + first.offset + r * g.out_w, t[r]);
        } else {
          for (int r = 0; r < T; ++r) {
            float row[T * kLanes];
            store_row(row, t[r]);
            for (int64_t j = 0; j < kLanes; ++j) store_tile_row(yo, places[k + j], r, row + T * j);
          }
        }
        if (k == n - kLanes) break;
      }
      k = n;
    }
    PARE_SCALAR_LOOP
    for (; k < n; ++k) {
      float t[T][T];
      output_tile<T>([&](int e) { return mo[e * stride + k]; }, b, t);
      for (int r = 0; r < T; ++r) {
        for (int q = 0; q < T; ++q) t[r][q] = simd::clamp(t[r][q], lo, hi);
        store_tile_row(yo, places[k], r, t[r]);
      }
    }
  }
}

}  // namespace

template <int T>
Result<Scratch> allocate(KernelContext& ctx, const Geometry& g) {
  const Tiles<T> tl = tiles_of<T>(g);
  const int64_t tiles = tl.rows * tl.cols;
  // Tiles per block: V and M within kBlockBytes, in whole packed panels
  // (at least one tile's worth of register tile).
  int64_t block = (T == 4 ? 4 : 1) * kBlockBytes /
                  (positions(T) * static_cast<int64_t>(sizeof(float)) * (g.in_channels + g.out_channels));
  block = block / gemm::kPadCols * gemm::kPadCols;
  if (block < gemm::kPadCols) block = gemm::kPadCols;
  if (block > tiles) block = tiles;
  Scratch s;
  s.block = block;
  // The stages' splits (see Scratch), by a block's work: the transforms
  // about 4 operations per element of V or M, the products a multiply-add
  // per element of U times a tile.
  const int64_t elements = positions(T) * block;
  s.in_chunks = ctx.chunks_for(g.in_channels, 1, 4 * elements * g.in_channels);
  s.gemm_chunks = ctx.chunks_for(g.out_channels, gemm::kMR, elements * g.out_channels * g.in_channels);
  s.out_chunks = ctx.chunks_for(g.out_channels, 1, 4 * elements * g.out_channels);
  // The planes are the only part that grows with the image (and its
  // padding): checked for overflow. The rest is a few blocks' worth.
  int64_t plane_floats = 0;
  const size_t v = positions(T) * v_floats(g, block);
  const size_t m = static_cast<size_t>(positions(T) * g.out_channels * block);
  s.rows_floats = static_cast<size_t>(positions(T) * row_floats(block));
  const size_t rows = s.in_chunks * s.rows_floats;
  int64_t bytes = 0;
  const int64_t places = block * static_cast<int64_t>(sizeof(TilePlace));  // a multiple of 16: floats follow
  PARE_CHECK_OR_RETURN(ctx,
                       !__builtin_mul_overflow(g.in_channels, tl.plane_floats(), &plane_floats) &&
                           !__builtin_add_overflow(plane_floats, kReadSlack, &plane_floats) &&
                           !__builtin_add_overflow(plane_floats, static_cast<int64_t>(v + m + rows), &bytes) &&
                           !__builtin_mul_overflow(bytes, static_cast<int64_t>(sizeof(float)), &bytes) &&
                           !__builtin_add_overflow(bytes, places, &bytes),
                       Error::LimitExceeded, "the Winograd scratch of a %lldx%lld image with %lld channels overflows",
                       static_cast<long long>(g.height), static_cast<long long>(g.width),
                       static_cast<long long>(g.in_channels));
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(bytes)));
  s.places = static_cast<TilePlace*>(memory);
  s.planes = reinterpret_cast<float*>(static_cast<char*>(memory) + places);
  s.v = s.planes + plane_floats;
  s.m = s.v + v;
  s.rows = s.m + m;
  return s;
}

template <int T>
void run(KernelContext& ctx, const Geometry& g, const Scratch& s, const float* x, const float* u, const float* bias,
         float lo, float hi, float* y) {
  const Tiles<T> tl = tiles_of<T>(g);
  ctx.parallel(s.in_chunks, g.in_channels, 1,
               [&](uint32_t, int64_t c0, int64_t c1) { fill_planes(g, tl, x, s.planes, c0, c1); });
  const size_t position_floats = v_floats(g, s.block);
  const size_t a_floats = gemm::packed_a_size(g.out_channels, g.in_channels);
  const int64_t tiles = tl.rows * tl.cols;
  for (int64_t t0 = 0; t0 < tiles; t0 += s.block) {
    const int64_t n = tiles - t0 < s.block ? tiles - t0 : s.block;
    ctx.parallel(s.in_chunks, g.in_channels, 1, [&](uint32_t chunk, int64_t c0, int64_t c1) {
      input_transform(g, tl, s.planes, t0, n, s.v, position_floats, s.rows + chunk * s.rows_floats, c0, c1);
    });
    // Rows [r0, r1) of every position's M_e [out, n] = U_e [out, in] V_e [in, n].
    ctx.parallel(s.gemm_chunks, g.out_channels, gemm::kMR, [&](uint32_t, int64_t r0, int64_t r1) {
      for (int64_t e = 0; e < positions(T); ++e) {
        gemm::sgemm(r1 - r0, n, g.in_channels, gemm::PrepackedA{u + e * a_floats, g.out_channels},
                    gemm::PrepackedB{s.v + e * position_floats, n}, s.m + (e * g.out_channels + r0) * n, n,
                    gemm::Output{}, nullptr, nullptr, r0, 0);
      }
    });
    tile_places(g, tl, t0, n, s.places);
    ctx.parallel(s.out_chunks, g.out_channels, 1, [&](uint32_t, int64_t o0, int64_t o1) {
      output_transform<T>(g, s.m, n, s.places, bias, lo, hi, y, o0, o1);
    });
  }
}

template Result<Scratch> allocate<2>(KernelContext&, const Geometry&);
template Result<Scratch> allocate<4>(KernelContext&, const Geometry&);
template void run<2>(KernelContext&, const Geometry&, const Scratch&, const float*, const float*, const float*, float,
                     float, float*);
template void run<4>(KernelContext&, const Geometry&, const Scratch&, const float*, const float*, const float*, float,
                     float, float*);

}  // namespace winograd
}  // namespace pare
