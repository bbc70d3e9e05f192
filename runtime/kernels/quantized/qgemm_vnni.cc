// The AVX-512 VNNI copies of the int8 convolution's GEMM (qgemm.h):
// gemm_columns, with its tiles packed from the image or from im2col's
// columns, which a runtime at --//runtime:x86_64_isa=auto runs on an
// x86-64-v4 CPU that also has AVX-512 VNNI (cpu::x86_64_vnni(); qgemm.cc
// chooses). //runtime/kernels:kernels_v4 compiles this file with
// -march=x86-64-v4 and its functions for the VNNI extension too; elsewhere
// it is empty. As in qgemm_kernels.inc, only this file's own functions,
// qgemm_vnni.h's and compiler intrinsics are used here. The depthwise
// kernels' VNNI copies are qgemm_vnni_depthwise.cc's, the linear layers'
// qgemm_vnni_linear.cc's.
//
// In the GEMM the activations are vpdpbusd's unsigned side (qgemm_vnni.h):
// each int8 x is read as the byte x + 128 (x ^ 0x80), and the sum gains 128
// sum_k w[c, k], which the packed weights carry per channel (-128 sum_k w[c,
// k], made once by pack_columns at the layer's init) and the epilogue adds
// to the exporter's correction. The requantization is the AVX2 copy's, lane
// for lane (product rounded before the addition, round half to even): every
// copy gives the same bits.
//
// Tile: 8 output channels x up to 48 pixels (three vectors of 16 int32
// sums, 24 accumulators), per step of 4 reductions one broadcast int32 of
// 4 weights per channel against three vectors of 16 pixels x 4 bytes. x
// [k, pixels] is packed per panel of tiles as the tile reads it (per 4 rows
// of x, 64 contiguous bytes per 16 pixels), read once and reused by every
// channel block while it stays in L2 (from the image, each 64-byte
// vector's 4 rows side by side in one register and interleaved by 2
// shuffles, interleave_lanes); a plane's last pixels are a partial tile
// loaded and stored under AVX-512 masks.
//
// A convolution's im2col matrix is never written (gemm_image_vnni): the
// tiles are packed straight from the image, each tap's masked loads (per
// output-row segment of a 16-pixel vector, the zero point outside the
// image) planned once per tile for every input channel. ResNet-18's 3x3
// layers at 224x224 went from about 410 to 300-360 us each. Where the
// output is 16 or more wide the image is first laid out with its padding
// (pad_channels) and the tiles packed from that copy (pack_padded_tile): a
// row is then one load per vector in one output row, with no per-tap
// plans or branches.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qgemm_vnni.h"

#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)

namespace pare {
namespace kernels {
namespace qgemm {
namespace x86_64_v4 {
namespace {

constexpr int kMR = 8;          // output channels per tile
constexpr int kMaxVectors = 3;  // 16-pixel vectors per tile
constexpr int kTilePixels = 16 * kMaxVectors;
static_assert(kTilePixels == kImageTilePixels, "qgemm.h's kImageTilePixels names the tile");
static_assert(kMR <= kColumnsScratchChannels, "qgemm.h's scratch size must cover the tile's channels");

// quads(), block_ints() and pack_block(): the quads layout the arm64
// copies read too.
#include "runtime/kernels/quantized/qgemm_quads.inc"

// A 16-lane mask moved to 128-bit lane j of 64 bytes, and the address
// that puts `at` at that lane's first byte (lanes before it never read).
PARE_ALWAYS_INLINE __mmask64 lane_mask(__mmask16 mask, int j) { return static_cast<__mmask64>(mask) << (16 * j); }
PARE_ALWAYS_INLINE const void* lane_base(const int8_t* at, int j) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(at) - static_cast<uintptr_t>(16 * j));
}

// NV * 16 columns of x [k, pixels] (rows ldx apart, from x; nr of them
// real, the rest read as 0) as the tile reads them: per quad q, NV
// vectors of 16 lanes (x[4q, p], .., x[4q + 3, p]) as bytes, each xor
// `flip`: 0x80 (x + 128; 0x80 for a row past k, whose weights are 0), for
// the pixel tiles and the tile over channels alike.
template <int NV>
void pack_x_tile(int64_t k, const int8_t* x, int64_t ldx, int nr, int8_t flip_byte, __m512i* PARE_RESTRICT dst) {
  const __m128i flip = _mm_set1_epi8(flip_byte);
  __mmask16 mask[NV];
  for (int v = 0; v < NV; ++v) mask[v] = pixel_mask(nr - 16 * v);
  const int64_t nq = quads(k);
  for (int64_t q = 0; q < nq; ++q) {
    for (int v = 0; v < NV; ++v) {
      __m128i a[4];
      for (int j = 0; j < 4; ++j) {
        const int64_t i = 4 * q + j;
        a[j] = i < k ? _mm_maskz_loadu_epi8(mask[v], x + i * ldx + 16 * v) : _mm_setzero_si128();
        a[j] = _mm_xor_si128(a[j], flip);
      }
      _mm512_store_si512(dst + q * NV + v, interleave4(a[0], a[1], a[2], a[3]));
    }
  }
}

// Lanes [a, b) of 16.
PARE_ALWAYS_INLINE __mmask16 lanes(int a, int b) {
  return static_cast<__mmask16>(((1u << b) - 1u) & ~((1u << a) - 1u));
}

// The pixels of one 16-pixel vector in one output row: lanes [l0, l1)
// hold columns ox, ox + 1, .. of output row oy.
struct Segment {
  int64_t oy, ox;
  int l0, l1;
};

// The n <= 16 pixels from p, split by output row (at most kMaxSegments:
// out_w >= 5).
PARE_ALWAYS_INLINE int segments_of(int64_t p, int n, int64_t out_w, Segment* seg) {
  int count = 0;
  for (int l = 0; l < n;) {
    const int64_t oy = (p + l) / out_w;
    const int64_t ox = (p + l) - oy * out_w;
    const int64_t room = out_w - ox;
    const int len = room < n - l ? static_cast<int>(room) : n - l;
    seg[count++] = {oy, ox, l, l + len};
    l += len;
  }
  return count;
}

// One masked load of a row of the im2col matrix: its lanes `mask` from
// the input channel's plane + offset (lane l at offset + l * stride; the
// offset of lane 0 may lie before the plane, masked lanes are never read).
struct TapLoad {
  int64_t offset;
  __mmask16 mask;
};

// The loads of tap (ky, kx) at one vector's segments: at most one per
// segment, none where the tap is outside the image (the zero point).
template <int64_t kStride>
PARE_ALWAYS_INLINE int tap_loads(const ImageColumns& s, int64_t ky, int64_t kx, const Segment* seg, int count,
                                 TapLoad* loads) {
  const int64_t lo = s.lo[kx];
  const int64_t hi = s.hi[kx];
  const int64_t column = kx * s.dw - s.pw;
  int n = 0;
  for (int i = 0; i < count; ++i) {
    const Segment& g = seg[i];
    const int64_t iy = g.oy * s.sh - s.ph + ky * s.dh;
    if (iy < 0 || iy >= s.height) continue;
    const int64_t a = g.ox > lo ? g.ox : lo;
    const int64_t end = g.ox + (g.l1 - g.l0);
    const int64_t b = end < hi ? end : hi;
    if (a >= b) continue;
    const int la = g.l0 + static_cast<int>(a - g.ox);
    const int lb = g.l0 + static_cast<int>(b - g.ox);
    loads[n++] = {iy * s.width + a * kStride + column - la * kStride, lanes(la, lb)};
  }
  return n;
}

// A row of the im2col matrix at one vector (stride 1: masked byte loads)
// into 128-bit lane j of rows, which holds the zero point there.
PARE_ALWAYS_INLINE __m512i image_row(const int8_t* plane, const TapLoad* loads, int n, int j, __m512i rows) {
  for (int i = 0; i < n; ++i) {
    rows = _mm512_mask_loadu_epi8(rows, lane_mask(loads[i].mask, j), lane_base(plane + loads[i].offset, j));
  }
  return rows;
}

// The same at stride 2 into 32 bytes: the even bytes of masked 32-byte
// loads (the odd bytes the zero point; 64-byte loads into a vector's
// halves split cache lines more often and ran slower).
PARE_ALWAYS_INLINE __m256i image_row_stride2(const int8_t* plane, const TapLoad* loads, int n, __m256i wide) {
  for (int i = 0; i < n; ++i) {
    wide = _mm256_mask_loadu_epi8(wide, _pdep_u32(loads[i].mask, 0x55555555u), plane + loads[i].offset);
  }
  return wide;
}

// The most taps (kh kw) and output-row segments per vector the image
// packing plans for (gemm_image_vnni_runs).
constexpr int64_t kMaxImageTaps = 49;
constexpr int kMaxSegments = 4;

// NV * 16 columns (pixels [p0, p0 + nr)) of the im2col matrix of s, read
// from the image, packed as pack_x_tile packs them (each byte xor
// flip_byte). Rows run (c, ky, kx)
// in the weights' order; each tap's loads are planned once per tile and
// serve every input channel.
template <int NV, int64_t kStride>
void pack_image_tile(const ImageColumns& s, int64_t k, int64_t p0, int nr, int8_t flip_byte,
                     __m512i* PARE_RESTRICT dst) {
  const int64_t taps = s.kh * s.kw;
  TapLoad loads[kMaxImageTaps][NV][kMaxSegments];
  int8_t count[kMaxImageTaps][NV];
  for (int v = 0; v < NV; ++v) {
    Segment seg[16];
    const int n = nr - 16 * v < 16 ? nr - 16 * v : 16;
    const int segments = segments_of(p0 + 16 * v, n, s.out_w, seg);
    for (int64_t t = 0; t < taps; ++t) {
      count[t][v] = static_cast<int8_t>(tap_loads<kStride>(s, t / s.kw, t % s.kw, seg, segments, loads[t][v]));
    }
  }
  const int64_t plane_bytes = s.height * s.width;
  const int8_t* plane = s.image;
  int64_t t = 0;
  const int64_t nq = quads(k);
  // Per quad and vector, its 4 rows in the 4 128-bit lanes of one vector
  // (stride 2: each in 32 bytes, the 4 put side by side and narrowed to
  // their even bytes), flipped and interleaved at once: a row past k stays
  // the zero point (its weights are 0).
  const __m512i flip = _mm512_set1_epi8(flip_byte);
  const __m512i zero_point = _mm512_set1_epi8(s.zero_point);
  for (int64_t q = 0; q < nq; ++q) {
    __m512i rows[NV];
    __m256i wide[4][NV];
    for (int v = 0; v < NV; ++v) {
      rows[v] = zero_point;
      for (int j = 0; j < 4; ++j) wide[j][v] = _mm512_castsi512_si256(zero_point);
    }
    for (int j = 0; j < 4 && 4 * q + j < k; ++j) {
      for (int v = 0; v < NV; ++v) {
        if constexpr (kStride == 1) {
          rows[v] = image_row(plane, loads[t][v], count[t][v], j, rows[v]);
        } else {
          wide[j][v] = image_row_stride2(plane, loads[t][v], count[t][v], wide[j][v]);
        }
      }
      if (++t == taps) {
        t = 0;
        plane += plane_bytes;
      }
    }
    for (int v = 0; v < NV; ++v) {
      __m512i r = rows[v];
      if constexpr (kStride == 2) {
        const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(wide[0][v]), wide[1][v], 1);
        const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(wide[2][v]), wide[3][v], 1);
        r = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(a)), _mm512_cvtepi16_epi8(b), 1);
      }
      _mm512_store_si512(dst + q * NV + v, interleave_lanes(_mm512_xor_si512(r, flip)));
    }
  }
}

// Channels [c0, c0 + mr) x pixels [p0, p0 + nr) of out from a channel
// block's packed weights and a tile's packed columns (NV = ceil(nr / 16)).
// Each row's sums start at its correction (the exporter's and the block's
// shift, wrapping int32 as the sums do: the same value in any order), and
// every loop over the rows is unrolled, so the 24 accumulators live in
// registers from the first step to the stores: with a loop over the mr
// rows the epilogue indexed them at run time, which kept them on the
// stack, and the zeroing, spilling and requantization took 74% of a 1x1
// layer over 16 channels at 112x112 (perf annotate), its vpdpbusd loop 27%.
template <int NV>
void tile(int64_t k, const int32_t* PARE_RESTRICT wb, const __m512i* PARE_RESTRICT xp, int64_t c0, int64_t p0, int mr,
          int nr, const Requantization& rq, const Output& out) {
  const int64_t nq = quads(k);
  const int32_t* shift = wb + nq * kMR;
  __m512i acc[kMR][NV];
#pragma clang loop unroll(full)
  for (int r = 0; r < kMR; ++r) {
    // Rows past mr (past the last channel) sum to nothing that is stored.
    const uint32_t correction =
        r < mr ? static_cast<uint32_t>(rq.correction[c0 + r]) + static_cast<uint32_t>(shift[r]) : 0;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_set1_epi32(static_cast<int32_t>(correction));
  }
  for (int64_t q = 0; q < nq; ++q) {
    __m512i xv[NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) xv[v] = _mm512_load_si512(xp + q * NV + v);
    const int32_t* wq = wb + q * kMR;
#pragma clang loop unroll(full)
    for (int r = 0; r < kMR; ++r) {
      const __m512i wv = _mm512_set1_epi32(wq[r]);
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], xv[v], wv);
    }
  }
  const __m512 lo = _mm512_set1_ps(static_cast<float>(rq.output_min));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(rq.output_max));
  const __m512i none = _mm512_setzero_si512();
  // A plane's rows (out.pixel_stride is 1: qgemm.h's Output), in masked
  // stores.
#pragma clang loop unroll(full)
  for (int r = 0; r < kMR; ++r) {
    if (r < mr) {
      const int64_t c = c0 + r;
      const __m512 multiplier = _mm512_set1_ps(rq.multiplier[c]);
      const __m512 offset = _mm512_set1_ps(rq.offset[c]);
      int8_t* row = out.data + c * out.channel_stride + p0;
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v) {
        _mm_mask_storeu_epi8(row + 16 * v, pixel_mask(nr - 16 * v),
                             requantize16(acc[r][v], none, multiplier, offset, lo, hi));
      }
    }
  }
}

}  // namespace

int64_t columns_packed_bytes_vnni(int64_t channels, int64_t k) { return packed_quads_bytes(channels, k); }

void pack_columns_vnni(int64_t channels, int64_t k, const int8_t* w, void* packed) {
  pack_quads(channels, k, w, packed);
}

namespace {

// A packer (a lambda) as the tile over channels calls it.
template <typename Pack>
PackTiles pack_tiles(const Pack& pack) {
  return {[](const void* packer, int64_t p0, int nr, int8_t flip_byte, __m512i* dst) {
            (*static_cast<const Pack*>(packer))(p0, nr, flip_byte, dst);
          },
          &pack};
}

// The GEMM over x's packed tiles, pack(p0, nr, flip_byte, dst) packing the
// tile of pixels [p0, p0 + nr) (NV = ceil(nr / 16) vectors per quad), each
// byte xor flip_byte, into dst.
template <typename Pack>
void gemm_tiles(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed_w,
                const Requantization& rq, const Output& out, void* scratch, const Pack& pack) {
  // Scratch: the packed weights when the caller has none (an ISA cap set
  // after the layer's init), then a panel of packed tiles of x, 64-byte
  // aligned (qgemm.h's columns_scratch_bytes).
  const int64_t blocks = (channels + kMR - 1) / kMR;
  const int64_t stride = block_ints(k);
  const int32_t* packed = static_cast<const int32_t*>(packed_w);
  uint8_t* rest = static_cast<uint8_t*>(scratch);
  if (packed == nullptr) {
    pack_columns_vnni(channels, k, w, rest);
    packed = reinterpret_cast<const int32_t*>(rest);
    rest += blocks * stride * 4;
  }
  const int64_t room = columns_scratch_bytes(channels, k) - (rest - static_cast<uint8_t*>(scratch));
  if (channel_tiles_run(channels, pixels, k, room)) {
    gemm_channel_tiles(channels, pixels, k, packed, rq, out, rest, pack_tiles(pack));
    return;
  }
  // A last tile of a few pixels (14x14: 196 = 4 x 48 + 4) would leave
  // most of its lanes idle in a pixel tile (tile<1>: 8 vpdpbusd a step
  // for 4 pixels x 8 channels): it runs the tile over channels first, in
  // the scratch the panel then takes (at 14x14, interleaved: 3x3 256 -> 256
  // 0.953x, 1x1 96 -> 576 0.965x, 576 -> 96 0.967x, 384 -> 64 0.980x).
  const int64_t tail = pixels % kTilePixels;
  if (tail > 0 && tail <= kChannelTilePixels && pixels > tail && channels % 16 == 0 &&
      channel_scratch(channels, tail, k) <= room) {
    pixels -= tail;
    const Output at{out.data + pixels * out.pixel_stride, out.channel_stride, out.pixel_stride};
    const auto tail_pack = [&](int64_t p0, int nr, int8_t flip_byte, __m512i* dst) {
      pack(pixels + p0, nr, flip_byte, dst);
    };
    gemm_channel_tiles(channels, tail, k, packed, rq, at, rest, pack_tiles(tail_pack));
  }
  __m512i* panel = reinterpret_cast<__m512i*>((reinterpret_cast<uintptr_t>(rest) + 63) & ~uintptr_t{63});
  const int64_t tile_vectors = quads(k) * kMaxVectors;
  const int64_t tiles = (pixels + kTilePixels - 1) / kTilePixels;
  int64_t panel_tiles = kPanelBytes / (tile_vectors * 64);
  panel_tiles = panel_tiles < 1 ? 1 : panel_tiles;
  for (int64_t t0 = 0; t0 < tiles; t0 += panel_tiles) {
    const int64_t t1 = t0 + panel_tiles < tiles ? t0 + panel_tiles : tiles;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p0 = t * kTilePixels;
      const int nr = pixels - p0 < kTilePixels ? static_cast<int>(pixels - p0) : kTilePixels;
      pack(p0, nr, static_cast<int8_t>(0x80), panel + (t - t0) * tile_vectors);
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kMR;
      const int mr = channels - c0 < kMR ? static_cast<int>(channels - c0) : kMR;
      const int32_t* wb = packed + b * stride;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p0 = t * kTilePixels;
        const int nr = pixels - p0 < kTilePixels ? static_cast<int>(pixels - p0) : kTilePixels;
        const __m512i* xp = panel + (t - t0) * tile_vectors;
        if (nr > 32) {
          tile<3>(k, wb, xp, c0, p0, mr, nr, rq, out);
        } else if (nr > 16) {
          tile<2>(k, wb, xp, c0, p0, mr, nr, rq, out);
        } else {
          tile<1>(k, wb, xp, c0, p0, mr, nr, rq, out);
        }
      }
    }
  }
}

// x's image laid out with its padding in x.padded (image_padded_bytes):
// per channel (height + 2 ph) rows of width + 2 pw bytes (pad_plane), the
// zero point outside the image, and 64 bytes of it after the last row.
void pad_channels(const ImageColumns& x, int64_t channels) {
  const int64_t plane_bytes = (x.height + 2 * x.ph) * (x.width + 2 * x.pw);
  for (int64_t c = 0; c < channels; ++c) {
    pad_plane(x.image + c * x.height * x.width, x.height, x.width, x.ph, x.pw, x.zero_point, 0,
              x.padded + c * plane_bytes);
  }
  _mm512_storeu_si512(x.padded + channels * plane_bytes, _mm512_set1_epi8(x.zero_point));
}

// pack_image_tile from x.padded (pad_channels): the same bytes. Every tap of
// a pixel lies inside the padded image, so a row of the im2col matrix at a
// vector is one load where its pixels sit in one output row (16 bytes at
// stride 1; at stride 2 32, whose even bytes are the row; its address:
// the tap's offset plus the vector's), else one masked load per output
// row, the masks and offsets the same for every (channel, tap) of the
// tile: no per-tap plans, no branches on them.
template <int NV, int64_t kStride>
void pack_padded_tile(const ImageColumns& s, int64_t k, int64_t p0, int nr, int8_t flip_byte,
                      __m512i* PARE_RESTRICT dst) {
  static_assert(kStride == 1 || kStride == 2, "16 or 32 bytes per row");
  const int64_t pitch = s.width + 2 * s.pw;
  const int64_t plane_bytes = (s.height + 2 * s.ph) * pitch;
  const int64_t taps = s.kh * s.kw;
  int64_t tap_offset[kMaxImageTaps];
  for (int64_t t = 0; t < taps; ++t) tap_offset[t] = t / s.kw * s.dh * pitch + t % s.kw * s.dw;
  int64_t base[NV][kMaxSegments];
  uint32_t mask[NV][kMaxSegments];  // stride 2: each pixel's even byte
  int segments[NV];
  bool whole[NV];
  for (int v = 0; v < NV; ++v) {
    Segment seg[16];
    const int n = nr - 16 * v < 16 ? nr - 16 * v : 16;
    segments[v] = segments_of(p0 + 16 * v, n, s.out_w, seg);
    for (int i = 0; i < segments[v]; ++i) {
      base[v][i] = seg[i].oy * s.sh * pitch + (seg[i].ox - seg[i].l0) * kStride;
      mask[v][i] = kStride == 1 ? lanes(seg[i].l0, seg[i].l1) : _pdep_u32(lanes(seg[i].l0, seg[i].l1), 0x55555555u);
    }
    whole[v] = segments[v] == 1 && n == 16;
  }
  const __m512i zero_point = _mm512_set1_epi8(s.zero_point);
  const __m512i flip = _mm512_set1_epi8(flip_byte);
  const auto load = [](const int8_t* at) {
    if constexpr (kStride == 1) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    } else {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
    }
  };
  using Row = decltype(load(nullptr));  // 16 or 32 bytes
  const Row fill = [&] {
    if constexpr (kStride == 1) {
      return _mm512_castsi512_si128(zero_point);
    } else {
      return _mm512_castsi512_si256(zero_point);
    }
  }();
  // One row at vector v from `at` (the row's channel plane + its tap's
  // offset).
  const auto row = [&](int v, const int8_t* at) {
    if (whole[v]) return load(at + base[v][0]);
    Row r = fill;
    for (int i = 0; i < segments[v]; ++i) {
      if constexpr (kStride == 1) {
        r = _mm_mask_loadu_epi8(r, static_cast<__mmask16>(mask[v][i]), at + base[v][i]);
      } else {
        r = _mm256_mask_loadu_epi8(r, mask[v][i], at + base[v][i]);
      }
    }
    return r;
  };
  // Quad q's 4 rows at vector v, one in each 128-bit lane (stride 2: the
  // 4 put side by side and narrowed to their even bytes), flipped and
  // interleaved.
  const auto store = [&](int64_t q, int v, Row r0, Row r1, Row r2, Row r3) {
    __m512i rows;
    if constexpr (kStride == 1) {
      const __m256i low = _mm256_inserti128_si256(_mm256_castsi128_si256(r0), r1, 1);
      const __m256i high = _mm256_inserti128_si256(_mm256_castsi128_si256(r2), r3, 1);
      rows = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    } else {
      const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
      const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(r2), r3, 1);
      rows = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(a)), _mm512_cvtepi16_epi8(b), 1);
    }
    _mm512_store_si512(dst + q * NV + v, interleave_lanes(_mm512_xor_si512(rows, flip)));
  };
  const int8_t* plane = s.padded;
  int64_t t = 0;
  // The next row's channel plane + its tap's offset (rows run (c, ky, kx)).
  const auto next = [&]() {
    const int8_t* at = plane + tap_offset[t];
    if (++t == taps) {
      t = 0;
      plane += plane_bytes;
    }
    return at;
  };
  const int64_t whole_quads = k / 4;
  bool all_whole = true;
  for (int v = 0; v < NV; ++v) all_whole = all_whole && whole[v];
  // The whole quads, each row at vector v read(v, at).
  const auto run = [&](const auto& read) {
    for (int64_t q = 0; q < whole_quads; ++q) {
      const int8_t* a0 = next();
      const int8_t* a1 = next();
      const int8_t* a2 = next();
      const int8_t* a3 = next();
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v) store(q, v, read(v, a0), read(v, a1), read(v, a2), read(v, a3));
    }
  };
  if (all_whole) {
    // Every vector's pixels in one output row (out_w a multiple of 16, or
    // a tile that happens to fall so): 4 plain loads per vector.
    run([&](int v, const int8_t* at) { return load(at + base[v][0]); });
  } else {
    run(row);
  }
  if (const int64_t left = k - 4 * whole_quads; left > 0) {
    // The last quad's rows past k read as the zero point (their weights
    // are 0).
    const int8_t* a0 = next();
    const int8_t* a1 = left > 1 ? next() : nullptr;
    const int8_t* a2 = left > 2 ? next() : nullptr;
    for (int v = 0; v < NV; ++v) {
      store(whole_quads, v, row(v, a0), a1 != nullptr ? row(v, a1) : fill, a2 != nullptr ? row(v, a2) : fill, fill);
    }
  }
}

// f(Vectors<NV>{}) for a tile of nr pixels: NV = ceil(nr / 16) vectors.
template <int NV>
struct Vectors {
  static constexpr int value = NV;
};
template <typename F>
PARE_ALWAYS_INLINE void per_width(int nr, const F& f) {
  if (nr > 32) {
    f(Vectors<3>{});
  } else if (nr > 16) {
    f(Vectors<2>{});
  } else {
    f(Vectors<1>{});
  }
}

template <int64_t kStride>
void gemm_image_stride(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed_w,
                       const ImageColumns& x, const Requantization& rq, const Output& out, void* scratch) {
  if (x.padded != nullptr) {
    gemm_tiles(channels, pixels, k, w, packed_w, rq, out, scratch,
               [&](int64_t p0, int nr, int8_t flip_byte, __m512i* dst) {
                 per_width(nr, [&](auto nv) {
                   pack_padded_tile<decltype(nv)::value, kStride>(x, k, x.first_pixel + p0, nr, flip_byte, dst);
                 });
               });
    return;
  }
  gemm_tiles(channels, pixels, k, w, packed_w, rq, out, scratch,
             [&](int64_t p0, int nr, int8_t flip_byte, __m512i* dst) {
               per_width(nr, [&](auto nv) {
                 pack_image_tile<decltype(nv)::value, kStride>(x, k, x.first_pixel + p0, nr, flip_byte, dst);
               });
             });
}

}  // namespace

void gemm_columns_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed_w,
                       const int8_t* x, const Requantization& rq, const Output& out, void* scratch) {
  gemm_tiles(channels, pixels, k, w, packed_w, rq, out, scratch,
             [&](int64_t p0, int nr, int8_t flip_byte, __m512i* dst) {
               per_width(nr, [&](auto nv) { pack_x_tile<decltype(nv)::value>(k, x + p0, pixels, nr, flip_byte, dst); });
             });
}

// A vector of 16 pixels spans at most 4 output rows from 5 columns wide.
bool gemm_image_vnni_runs(const ImageColumns& x) {
  return (x.sw == 1 || x.sw == 2) && x.out_w >= 5 && x.kh * x.kw <= kMaxImageTaps;
}

void pad_image_vnni(const ImageColumns& x, int64_t k) { pad_channels(x, k / (x.kh * x.kw)); }

void gemm_image_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed_w,
                     const ImageColumns& x, const Requantization& rq, const Output& out, void* scratch) {
  if (x.sw == 1) {
    gemm_image_stride<1>(channels, pixels, k, w, packed_w, x, rq, out, scratch);
  } else {
    gemm_image_stride<2>(channels, pixels, k, w, packed_w, x, rq, out, scratch);
  }
}

}  // namespace x86_64_v4
}  // namespace qgemm
}  // namespace kernels
}  // namespace pare

#pragma clang attribute pop

#endif
