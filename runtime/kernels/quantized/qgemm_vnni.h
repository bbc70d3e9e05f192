#pragma once
// The AVX-512 pieces the int8 kernels' VNNI copies share: the
// convolution's (qgemm_vnni.cc, its tile over output channels
// qgemm_vnni_channels.cc), the depthwise kernels'
// (qgemm_vnni_depthwise.cc) and the linear layers'
// (qgemm_vnni_linear.cc). Only those files include it, and
// //runtime/kernels:kernels_v4 compiles them with -march=x86-64-v4: every
// copy of these inline functions is an AVX-512 one, so none can be the copy
// a baseline caller ends up calling (tests/runtime/test_isa.py);
// elsewhere the header is empty.
//
// vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes and adds the 4
// products to an int32 lane; each kernel reads one side as the byte v + 128
// (v ^ 0x80) and takes 128 times the other side's sum back out. The int32
// sums are exact: a lane's 4 products are at most 4 * 255 * 128 in
// magnitude, and int32 additions wrap, so the result, which fits (qgemm.h),
// is the exact sum whatever the order.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qgemm.h"

#include <immintrin.h>

namespace pare {
namespace kernels {
namespace qgemm {
namespace x86_64_v4 {

// The first n lanes of 16 (all 16 from n >= 16).
PARE_ALWAYS_INLINE __mmask16 pixel_mask(int n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// The first n bytes of 64 (all 64 from n >= 64).
PARE_ALWAYS_INLINE __mmask64 bytes_mask(int64_t n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1u; }

// A plane [height, width] laid out with its padding: rows of width + 2 pw
// bytes, ph rows above and below, each byte xor `flip` and the border
// zero_point ^ flip, in 64-byte masked stores (no calls: small planes, 7x7
// and 14x14, spend most of their time here). The int8 depthwise plane
// (flip 0x80, vpdpbusd's unsigned side) and the convolution's tiles packed
// from a padded image (flip 0) read such copies.
PARE_ALWAYS_INLINE void pad_plane(const int8_t* plane, int64_t height, int64_t width, int64_t ph, int64_t pw,
                                  int8_t zero_point, int8_t flip, int8_t* padded) {
  const int64_t wp = width + 2 * pw;
  const int64_t rows = height + 2 * ph;
  const __m512i flip_v = _mm512_set1_epi8(flip);
  const __m512i border_v = _mm512_set1_epi8(static_cast<char>(zero_point ^ flip));
  if (wp <= 64) {
    // A padded row in one vector (every plane of MobileNetV2's at 56x56 and
    // below): one masked load over the zero point, one flip, one store.
    const __mmask64 inner = bytes_mask(pw + width) & ~bytes_mask(pw);
    const __mmask64 row_mask = bytes_mask(wp);
    const __m512i zero_point_v = _mm512_set1_epi8(zero_point);
    for (int64_t py = 0; py < ph; ++py) _mm512_mask_storeu_epi8(padded + py * wp, row_mask, border_v);
    for (int64_t iy = 0; iy < height; ++iy) {
      // Lane l holds image column l - pw (lanes outside `inner` never read).
      const uintptr_t lane0 = reinterpret_cast<uintptr_t>(plane + iy * width) - static_cast<uintptr_t>(pw);
      const __m512i v = _mm512_mask_loadu_epi8(zero_point_v, inner, reinterpret_cast<const void*>(lane0));
      _mm512_mask_storeu_epi8(padded + (iy + ph) * wp, row_mask, _mm512_xor_si512(v, flip_v));
    }
    for (int64_t py = ph + height; py < rows; ++py) _mm512_mask_storeu_epi8(padded + py * wp, row_mask, border_v);
    return;
  }
  // Wider rows: the borders in masked stores, the inside in whole
  // 64-byte loads and stores and a masked last one (a mask per segment and
  // a blend cost MobileNetV2's 112x112 planes about a third of their time).
  const auto border = [&](int8_t* dst, int64_t n) {
    for (int64_t x = 0; x < n; x += 64) _mm512_mask_storeu_epi8(dst + x, bytes_mask(n - x), border_v);
  };
  for (int64_t py = 0; py < rows; ++py) {
    int8_t* dst = padded + py * wp;
    const int64_t iy = py - ph;
    if (iy < 0 || iy >= height) {
      border(dst, wp);
      continue;
    }
    border(dst, pw);
    const int8_t* src = plane + iy * width;
    int64_t x = 0;
    for (; x + 64 <= width; x += 64) {
      _mm512_storeu_si512(dst + pw + x, _mm512_xor_si512(_mm512_loadu_si512(src + x), flip_v));
    }
    if (x < width) {
      const __mmask64 m = bytes_mask(width - x);
      _mm512_mask_storeu_epi8(dst + pw + x, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + x), flip_v));
    }
    border(dst + pw + width, pw);
  }
}

// The 16 bytes of b0, .., b3 interleaved, as vpdpbusd reads 4 bytes per
// int32 lane: byte 4 j + v of the result is bv[j].
PARE_ALWAYS_INLINE __m512i interleave4(__m128i b0, __m128i b1, __m128i b2, __m128i b3) {
  const __m128i ab_lo = _mm_unpacklo_epi8(b0, b1);
  const __m128i ab_hi = _mm_unpackhi_epi8(b0, b1);
  const __m128i cd_lo = _mm_unpacklo_epi8(b2, b3);
  const __m128i cd_hi = _mm_unpackhi_epi8(b2, b3);
  __m512i t = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab_lo, cd_lo));
  t = _mm512_inserti32x4(t, _mm_unpackhi_epi16(ab_lo, cd_lo), 1);
  t = _mm512_inserti32x4(t, _mm_unpacklo_epi16(ab_hi, cd_hi), 2);
  return _mm512_inserti32x4(t, _mm_unpackhi_epi16(ab_hi, cd_hi), 3);
}

// interleave4 of the 4 128-bit lanes of rows: byte 4 p + j of the result
// is byte p of lane j (lane L, byte 4 i + j: lane j's byte 4 L + i). Two
// shuffles (AVX-512F/BW only, no VBMI): a 4 x 4 transpose of int32 across
// lanes (lane l's int32 j <- lane j's int32 l: row j's bytes 4 l .. 4 l +
// 3), then of bytes within each int32 group. The image tiles
// (qgemm_vnni.cc) and transpose16x16 use it.
PARE_ALWAYS_INLINE __m512i interleave_lanes(__m512i rows) {
  const __m512i across = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i within = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(across, rows), within);
}

// A 16x16 byte matrix transposed: row r (16 bytes) of m is lane r % 4 of
// m[r / 4]; the result the same way. The depthwise layer across channels
// turns 16 planes channels-last and back with it; the convolution's tile
// over output channels, its channels-last results back to planes.
PARE_ALWAYS_INLINE void transpose16x16(__m512i m[4]) {
  __m512i b[4];
  for (int v = 0; v < 4; ++v) b[v] = interleave_lanes(m[v]);  // lane L of b[v]: block (v, L) transposed
  const __m512i b01lo = _mm512_shuffle_i32x4(b[0], b[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i b01hi = _mm512_shuffle_i32x4(b[0], b[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i b23lo = _mm512_shuffle_i32x4(b[2], b[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i b23hi = _mm512_shuffle_i32x4(b[2], b[3], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i dwords = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  // Lane k of every b[v], then its dwords transposed.
  m[0] = _mm512_permutexvar_epi32(dwords, _mm512_shuffle_i32x4(b01lo, b23lo, _MM_SHUFFLE(2, 0, 2, 0)));
  m[1] = _mm512_permutexvar_epi32(dwords, _mm512_shuffle_i32x4(b01lo, b23lo, _MM_SHUFFLE(3, 1, 3, 1)));
  m[2] = _mm512_permutexvar_epi32(dwords, _mm512_shuffle_i32x4(b01hi, b23hi, _MM_SHUFFLE(2, 0, 2, 0)));
  m[3] = _mm512_permutexvar_epi32(dwords, _mm512_shuffle_i32x4(b01hi, b23hi, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The rows r < count of a 16x16 byte matrix as transpose16x16 takes them:
// row r's first n bytes (n <= 16) from base + r stride, the rest 0.
PARE_ALWAYS_INLINE void load_rows16(const int8_t* base, int64_t stride, int count, int64_t n, __m512i m[4]) {
  for (int v = 0; v < 4; ++v) {
    m[v] = _mm512_setzero_si512();
    for (int i = 0; i < 4 && 4 * v + i < count; ++i) {
      // Lane i from its row: the address that puts the row at the lane's
      // first byte (the bytes before it are never read).
      const uintptr_t lane0 = reinterpret_cast<uintptr_t>(base + (4 * v + i) * stride) - static_cast<uintptr_t>(16 * i);
      m[v] = _mm512_mask_loadu_epi8(m[v], bytes_mask(n) << (16 * i), reinterpret_cast<const void*>(lane0));
    }
  }
}

// The rows r < count of m (as transpose16x16 leaves them): row r's first n
// bytes to base + r stride.
PARE_ALWAYS_INLINE void store_rows16(const __m512i m[4], int count, int64_t n, int8_t* base, int64_t stride) {
  for (int r = 0; r < count; ++r) {
    const uintptr_t lane0 = reinterpret_cast<uintptr_t>(base + r * stride) - static_cast<uintptr_t>(16 * (r % 4));
    _mm512_mask_storeu_epi8(reinterpret_cast<void*>(lane0), bytes_mask(n) << (16 * (r % 4)), m[r / 4]);
  }
}

// 16 sums + correction requantized (qgemm_kernels.inc's requantize8, 16
// lanes: the product rounded before the addition, round half to even, so
// every copy gives the same bits) to 16 int8. The clamp comes before the
// rounding here, which is the same value (lo and hi are integers, and
// rounding is monotone and keeps integers): the rounding then folds into
// the conversion (embedded rounding, whatever MXCSR says), one instruction
// where roundscale and a truncating conversion were two.
PARE_ALWAYS_INLINE __m128i requantize16(__m512i acc, __m512i correction, __m512 multiplier, __m512 offset, __m512 lo,
                                        __m512 hi) {
#pragma clang fp contract(off)
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc, correction)), multiplier);
  v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, offset), lo), hi);
  return _mm512_cvtsepi32_epi8(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The tile over output channels (qgemm_vnni_channels.cc), which the pixel
// tiles of qgemm_vnni.cc hand small planes and last tiles of a few pixels.
// Pixels per run of the tile (24 accumulators at 32 channels).
constexpr int kChannelTilePixels = 12;

// Packs the tile of pixels [p0, p0 + nr) (nr <= qgemm.h's
// kImageTilePixels; ceil(nr / 16) vectors per quad of k), each byte xor
// flip_byte, into dst: one of qgemm_vnni.cc's packers, through a pointer
// (a call per tile).
struct PackTiles {
  void (*pack)(const void* packer, int64_t p0, int nr, int8_t flip_byte, __m512i* dst);
  const void* packer;

  void operator()(int64_t p0, int nr, int8_t flip_byte, __m512i* dst) const { pack(packer, p0, nr, flip_byte, dst); }
};

// The scratch the tile over channels needs for `pixels` (after the
// weights), and whether a layer runs it on all its pixels (small planes
// whose pixel vectors waste over an eighth of their lanes, deep enough,
// whole vectors of 16 channels, its scratch within `room` bytes).
int64_t channel_scratch(int64_t channels, int64_t pixels, int64_t k);
bool channel_tiles_run(int64_t channels, int64_t pixels, int64_t k, int64_t room);

// out [channels, pixels] = the GEMM of the packed weights (qgemm_quads.inc)
// and x's tiles as pack writes them, requantized by rq; `rest`: scratch of
// channel_scratch(channels, pixels, k) bytes. channels a multiple of 16.
void gemm_channel_tiles(int64_t channels, int64_t pixels, int64_t k, const int32_t* packed, const Requantization& rq,
                        const Output& out, uint8_t* rest, const PackTiles& pack);

}  // namespace x86_64_v4
}  // namespace qgemm
}  // namespace kernels
}  // namespace pare

#endif
