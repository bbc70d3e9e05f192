// The AVX-512 VNNI tile over output channels, the int8 convolution's GEMM
// (qgemm_vnni.cc) where its pixel tiles would leave lanes idle: small
// planes (ResNet-18's 7x7: 49 pixels fill 4 vectors of 16) and a pixel
// tiles' last few pixels (14x14: 196 = 4 x 48 + 4). 16 channels per vector:
// a pixel's 4 bytes of x + 128, packed by the pixel tiles' packers
// (qgemm_vnni.h's PackTiles) with their flip, broadcast as vpdpbusd's
// unsigned side against the packed weights as they are, so no lane is a
// pixel past the plane; the blocks' -128 sum_k w (pack_block's) take the
// 128 back out, as in the pixel tile. The value is the pixel tile's
// exactly (int32 additions wrap and the result fits), and requantize16
// gives the same bits. Every pixel's tiles are packed in scratch at once.
// The results, 16 channels of a pixel per vector, are stored channels-last
// in scratch ([pixels][channels]) and turned into the output's planes 16 x
// 16 at a time (store_planes). Compiled with the x86-64-v4 copy, its
// functions for avx512vnni too, as qgemm_vnni.cc is; empty elsewhere.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qgemm_vnni.h"

#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)

namespace pare {
namespace kernels {
namespace qgemm {
namespace x86_64_v4 {
namespace {

constexpr int kMR = kQuadsChannelBlock;        // output channels per block of the packed weights
constexpr int kTilePixels = kImageTilePixels;  // pixels per packed tile of x

// quads() and block_ints(): the packed weights' layout.
#include "runtime/kernels/quantized/qgemm_quads.inc"

// 16 channels' packed weights at quad q (or their -128 sum_k w at q = nq):
// the 8 of the block at `blocks` and the 8 of the next, `stride` ints on.
PARE_ALWAYS_INLINE __m512i channel_quads(const int32_t* blocks, int64_t stride, int64_t q) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + q * kMR));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + stride + q * kMR));
  return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

// Channels [c0, c0 + 16 CV) x NP pixels, channels-last into `last` (row
// p + j of `ldc` bytes: pixel p + j's channels): pixel j's quad q (x + 128,
// as the pixel tiles pack it) is the int32 xq[q * lanes + j] (lanes: its
// tile's 16 NV), broadcast as vpdpbusd's unsigned side against the
// weights as they are; the blocks' -128 sum_k w take the 128 back out.
template <int CV, int NP>
void channel_tile(int64_t nq, const int32_t* PARE_RESTRICT blocks, int64_t stride, const int32_t* PARE_RESTRICT xq,
                  int64_t lanes, int64_t c0, int64_t p, const Requantization& rq, int8_t* last, int64_t ldc) {
  // Fully unrolled: the 24 accumulators stay in registers (clang's own
  // unrolling kept them on the stack, 2.3x slower).
  __m512i acc[CV][NP];
#pragma clang loop unroll(full)
  for (int v = 0; v < CV; ++v) {
#pragma clang loop unroll(full)
    for (int j = 0; j < NP; ++j) acc[v][j] = _mm512_setzero_si512();
  }
  for (int64_t q = 0; q < nq; ++q) {
    __m512i wv[CV];
#pragma clang loop unroll(full)
    for (int v = 0; v < CV; ++v) wv[v] = channel_quads(blocks + 2 * v * stride, stride, q);
    const int32_t* x = xq + q * lanes;
#pragma clang loop unroll(full)
    for (int j = 0; j < NP; ++j) {
      const __m512i xb = _mm512_set1_epi32(x[j]);
#pragma clang loop unroll(full)
      for (int v = 0; v < CV; ++v) acc[v][j] = _mm512_dpbusd_epi32(acc[v][j], xb, wv[v]);
    }
  }
  const __m512 lo = _mm512_set1_ps(static_cast<float>(rq.output_min));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(rq.output_max));
  for (int v = 0; v < CV; ++v) {
    const int64_t c = c0 + 16 * v;
    const __m512i correction =
        _mm512_add_epi32(_mm512_loadu_si512(rq.correction + c), channel_quads(blocks + 2 * v * stride, stride, nq));
    const __m512 multiplier = _mm512_loadu_ps(rq.multiplier + c);
    const __m512 offset = _mm512_loadu_ps(rq.offset + c);
    for (int j = 0; j < NP; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(last + (p + j) * ldc + c),
                       requantize16(acc[v][j], correction, multiplier, offset, lo, hi));
    }
  }
}

template <int CV>
void channel_tiles(int64_t nq, const int32_t* blocks, int64_t stride, const int32_t* xq, int64_t lanes, int64_t c0,
                   int64_t p, int n, const Requantization& rq, int8_t* last, int64_t ldc) {
  int j = 0;
  for (; j + kChannelTilePixels <= n; j += kChannelTilePixels) {
    if (n - j == kChannelTilePixels + 1) {  // 12 + 1: one tile of 13 reads the weights once (26 accumulators)
      channel_tile<CV, kChannelTilePixels + 1>(nq, blocks, stride, xq + j, lanes, c0, p + j, rq, last, ldc);
      return;
    }
    channel_tile<CV, kChannelTilePixels>(nq, blocks, stride, xq + j, lanes, c0, p + j, rq, last, ldc);
  }
  for (; j + 4 <= n; j += 4) {
    channel_tile<CV, 4>(nq, blocks, stride, xq + j, lanes, c0, p + j, rq, last, ldc);
  }
  for (; j < n; ++j) channel_tile<CV, 1>(nq, blocks, stride, xq + j, lanes, c0, p + j, rq, last, ldc);
}

// last [pixels][channels] (channels-last, channels a multiple of 16) into
// out's planes (channel c's pixels from out.data + c channel_stride, pixel
// stride 1), 16 pixels x 16 channels per transpose: 16 vector stores where
// the results went out one byte each (a 1x1 layer at 7x7 over 256 channels
// lost to its byte stores).
void store_planes(const int8_t* last, int64_t channels, int64_t pixels, const Output& out) {
  for (int64_t p0 = 0; p0 < pixels; p0 += 16) {
    const int n = pixels - p0 < 16 ? static_cast<int>(pixels - p0) : 16;
    for (int64_t c = 0; c < channels; c += 16) {
      __m512i m[4];
      load_rows16(last + p0 * channels + c, channels, n, 16, m);  // row i: pixel p0 + i's 16 channels
      transpose16x16(m);                                          // row j: channel c + j's n pixels
      store_rows16(m, 16, n, out.data + c * out.channel_stride + p0, out.channel_stride);
    }
  }
}

// The scratch every pixel's packed tiles and the channels-last results
// need (after the weights).
}  // namespace

int64_t channel_scratch(int64_t channels, int64_t pixels, int64_t k) {
  return (pixels + 15) / 16 * quads(k) * 64 + 64 + pixels * channels;
}

// Whether a layer runs the tile over channels: whole vectors of 16
// channels, planes whose pixel vectors waste over an eighth of their
// lanes, reductions of kChannelTileDepth or more, and its
// scratch within the `room` bytes left after the packed weights. The
// depth, at 7x7 against the pixel tile (interleaved, one core): 1x1 over
// 160 channels 1.055x (out), 256 0.978x, 320 0.939x (in; at 512 before the
// results were stored 16 x 16 at a time, when 256 lost 54 -> 65 us).
constexpr int64_t kChannelTileDepth = 256;
bool channel_tiles_run(int64_t channels, int64_t pixels, int64_t k, int64_t room) {
  const int64_t waste = (pixels + 15) / 16 * 16 - pixels;
  return channels % 16 == 0 && pixels <= 64 && 8 * waste > pixels && k >= kChannelTileDepth &&
         channel_scratch(channels, pixels, k) <= room;
}

// The pixels of the packed tile from p0: kTilePixels, except that a plane
// whose last tile would hold one pixel (7x7: 49 = 48 + 1) ends in 36 + 13,
// so that the tile over channels runs 12 + 12 + 12 + 13 and never one
// pixel alone, which read a block's every weight for one pixel (7x7 3x3
// 512 -> 512 and 1x1 960 -> 160, 960 -> 320: 0.95x). Tiles start at ceil(p0 / 16) vectors: every tile but
// the last is 48 pixels or, just before the last, 36.
namespace {

PARE_ALWAYS_INLINE int channel_pack_pixels(int64_t p0, int64_t pixels) {
  const int64_t rest = pixels - p0;
  return rest == kTilePixels + 1 ? 3 * kChannelTilePixels : rest < kTilePixels ? static_cast<int>(rest) : kTilePixels;
}

}  // namespace

void gemm_channel_tiles(int64_t channels, int64_t pixels, int64_t k, const int32_t* packed, const Requantization& rq,
                        const Output& out, uint8_t* rest, const PackTiles& pack) {
  const int64_t nq = quads(k);
  const int64_t stride = block_ints(k);
  __m512i* xp = reinterpret_cast<__m512i*>((reinterpret_cast<uintptr_t>(rest) + 63) & ~uintptr_t{63});
  int8_t* last = reinterpret_cast<int8_t*>(xp + (pixels + 15) / 16 * nq);  // [pixels][channels]
  // Every pixel's tiles (channel_pack_pixels), x + 128 as the pixel tiles pack it.
  for (int64_t p0 = 0, nr; p0 < pixels; p0 += nr) {
    nr = channel_pack_pixels(p0, pixels);
    pack(p0, static_cast<int>(nr), static_cast<int8_t>(0x80), xp + (p0 + 15) / 16 * nq);
  }
  for (int64_t c0 = 0; c0 < channels; c0 += 32) {
    const int32_t* blocks = packed + c0 / kMR * stride;
    for (int64_t p0 = 0, nr; p0 < pixels; p0 += nr) {
      nr = channel_pack_pixels(p0, pixels);
      const int64_t lanes = (nr + 15) / 16 * 16;
      const int32_t* xq = reinterpret_cast<const int32_t*>(xp + (p0 + 15) / 16 * nq);
      if (channels - c0 >= 32) {
        channel_tiles<2>(nq, blocks, stride, xq, lanes, c0, p0, static_cast<int>(nr), rq, last, channels);
      } else {
        channel_tiles<1>(nq, blocks, stride, xq, lanes, c0, p0, static_cast<int>(nr), rq, last, channels);
      }
    }
  }
  store_planes(last, channels, pixels, out);
}

}  // namespace x86_64_v4
}  // namespace qgemm
}  // namespace kernels
}  // namespace pare

#pragma clang attribute pop

#endif
