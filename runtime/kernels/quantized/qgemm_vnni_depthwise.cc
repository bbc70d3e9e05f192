// The AVX-512 VNNI copies of the int8 depthwise kernels (qgemm.h): the
// depthwise plane and the depthwise layer across channels, which a runtime
// at --//runtime:x86_64_isa=auto runs on an x86-64-v4 CPU that also has
// AVX-512 VNNI (cpu::x86_64_vnni(); qgemm.cc and conv_plan.h choose).
// //runtime/kernels:kernels_v4 compiles this file as it does qgemm_vnni.cc
// (the convolution's GEMM); elsewhere it is empty. Only this file's own
// functions, qgemm_vnni.h's and compiler intrinsics are used here.
//
// The input + 128 (x ^ 0x80) is vpdpbusd's unsigned side, padded with the
// zero point + 128, against 4 taps of a filter row; the sum gains 128 sum w,
// taken out of the correction (per plane, or per channel across channels).
// The requantization is requantize16's (qgemm_vnni.h): the same bits as
// every other copy.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qgemm_vnni.h"

#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)

namespace pare {
namespace kernels {
namespace qgemm {
namespace x86_64_v4 {

// The depthwise plane (qgemm.h's depthwise_plane) on vpdpbusd over 4 taps
// of a filter row: the plane + 128 (x ^ 0x80) is the unsigned side, padded
// with the zero point + 128, against the filter's 4 bytes broadcast; the sum
// gains 128 sum w, taken out of the correction once per plane.
constexpr int64_t kMaxDepthwiseQuads = 64;  // a depthwise filter's rows x quads of taps

// A stride across as a type, for the kernels' compile-time vector counts.
template <int S>
struct Stride {
  static constexpr int value = S;
};

bool depthwise_plane_vnni_runs(const DepthwisePlane& d) {
  return d.dw == 1 && (d.sw == 1 || d.sw == 2) && d.kh * ((d.kw + 3) / 4) <= kMaxDepthwiseQuads;
}

void depthwise_plane_vnni(const DepthwisePlane& d, const int8_t* plane, const int8_t* filter, int32_t correction,
                          float multiplier, float offset, int32_t output_min, int32_t output_max, int8_t* out) {
  // The plane + 128 (x ^ 0x80) inside a border of the zero point + 128,
  // rows wp = width + 2 pw apart, then the slack a chunk reads past the
  // last row; at stride 1, after it, the outputs of every padded column
  // (qgemm.h's depthwise_padded_bytes covers both).
  const int64_t wp = d.width + 2 * d.pw;
  const int64_t rows = d.height + 2 * d.ph;
  const uint8_t border = static_cast<uint8_t>(d.zero_point) ^ 0x80u;
  uint8_t* padded = reinterpret_cast<uint8_t*>(d.padded);
  pad_plane(plane, d.height, d.width, d.ph, d.pw, static_cast<int8_t>(d.zero_point), static_cast<int8_t>(0x80),
            d.padded);
  const __m512i border_v = _mm512_set1_epi8(static_cast<char>(border));
  const int64_t slack = 128;
  _mm512_storeu_si512(padded + rows * wp, border_v);
  _mm512_storeu_si512(padded + rows * wp + 64, border_v);
  // The filter's quads per row (taps past kw 0) and the shift's correction.
  const int64_t kq = (d.kw + 3) / 4;
  int32_t wq[kMaxDepthwiseQuads];
  int32_t sum = 0;
  for (int64_t ky = 0; ky < d.kh; ++ky) {
    for (int64_t q = 0; q < kq; ++q) {
      uint32_t bytes = 0;
      for (int j = 0; j < 4; ++j) {
        const int64_t kx = 4 * q + j;
        const int8_t v = kx < d.kw ? filter[ky * d.kw + kx] : 0;
        sum += v;
        bytes |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * j);
      }
      wq[ky * kq + q] = static_cast<int32_t>(bytes);
    }
  }
  const __m512i correction_v =
      _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(correction) - 128u * static_cast<uint32_t>(sum)));
  const __m512 multiplier_v = _mm512_set1_ps(multiplier);
  const __m512 offset_v = _mm512_set1_ps(offset);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(output_min));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(output_max));
  const int64_t row_step = d.dh * wp;
  // Outputs [o0, o0 + 64) (stride 1) or [o0, o0 + 32) (stride 2) of the
  // outputs whose first tap is at padded[base + sw o]: vector v's lane j is
  // output 4 j + v (stride 1, its quad of taps the 4 bytes at base + 4 j +
  // v) or 2 j + v (stride 2, at base + 4 j + 2 v), every tap row ky dh wp
  // further; requantized and stored in order under `mask`.
  // The stride across is a template argument (Stride<1> or Stride<2>):
  // the vector count is then a constant and the accumulators stay in
  // registers (a run-time count kept them on the stack: the 112x112 stride-2
  // layer of MobileNetV2 took 1.5 us a plane).
  const auto chunk = [&](auto stride, const uint8_t* base, int8_t* dst, __mmask64 mask) {
    constexpr int kStride = decltype(stride)::value;
    constexpr int kVectors = kStride == 1 ? 4 : 2;
    __m512i acc[kVectors];
#pragma clang loop unroll(full)
    for (int v = 0; v < kVectors; ++v) acc[v] = _mm512_setzero_si512();
    for (int64_t ky = 0; ky < d.kh; ++ky) {
      const uint8_t* r = base + ky * row_step;
      for (int64_t q = 0; q < kq; ++q) {
        const __m512i w = _mm512_set1_epi32(wq[ky * kq + q]);
#pragma clang loop unroll(full)
        for (int v = 0; v < kVectors; ++v) {
          acc[v] = _mm512_dpbusd_epi32(acc[v], _mm512_loadu_si512(r + 4 * q + kStride * v), w);
        }
      }
    }
    __m128i b[kVectors];
#pragma clang loop unroll(full)
    for (int v = 0; v < kVectors; ++v) b[v] = requantize16(acc[v], correction_v, multiplier_v, offset_v, lo, hi);
    if constexpr (kVectors == 4) {
      _mm512_mask_storeu_epi8(dst, mask, interleave4(b[0], b[1], b[2], b[3]));
    } else {
      const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(b[0], b[1])),
                                                _mm_unpackhi_epi8(b[0], b[1]), 1);
      _mm256_mask_storeu_epi8(dst, static_cast<__mmask32>(mask), t);
    }
  };
  if (d.sw == 1 && d.sh == 1) {
    // Every padded column's output in flat order (f = oy wp + ox reads
    // padded[f + ky dh wp + kx]), 64 at a time, into scratch after the
    // plane; the kw - 1 columns past out_w are computed and dropped when
    // the rows are copied out (7x7 and 14x14 planes waste no tiles).
    int8_t* flat = reinterpret_cast<int8_t*>(padded + rows * wp + slack);
    const int64_t n = (d.out_h - 1) * wp + d.out_w;
    for (int64_t f0 = 0; f0 < n; f0 += 64) chunk(Stride<1>{}, padded + f0, flat + f0, bytes_mask(n - f0));
    for (int64_t oy = 0; oy < d.out_h; ++oy) {
      for (int64_t x = 0; x < d.out_w; x += 64) {
        const __mmask64 m = bytes_mask(d.out_w - x);
        _mm512_mask_storeu_epi8(out + oy * d.out_w + x, m, _mm512_maskz_loadu_epi8(m, flat + oy * wp + x));
      }
    }
    return;
  }
  // Row by row, 64 (stride 1) or 32 (stride 2) outputs at a time.
  const auto rows_of = [&](auto stride) {
    constexpr int64_t kStride = decltype(stride)::value;
    constexpr int64_t kStep = kStride == 1 ? 64 : 32;
    for (int64_t oy = 0; oy < d.out_h; ++oy) {
      const uint8_t* row = padded + oy * d.sh * wp;
      int8_t* o = out + oy * d.out_w;
      for (int64_t o0 = 0; o0 < d.out_w; o0 += kStep) {
        chunk(stride, row + o0 * kStride, o + o0, bytes_mask(d.out_w - o0));
      }
    }
  };
  if (d.sw == 1) {
    rows_of(Stride<1>{});
  } else {
    rows_of(Stride<2>{});
  }
}

// The depthwise layer across channels (qgemm.h's depthwise_channels): 16
// channels of an output pixel per vector, for the small planes whose
// per-plane work (the padded copy, the filter's broadcasts, rows of 7 or 14
// outputs in 64-lane vectors) outweighs their taps. Per block of 16
// channels, each padded input row is turned channels-last (a 16x16 byte
// transpose of 16 planes' rows, + 128 as in the plane kernel), then into
// quads: Q[py][px] holds, per channel, the 4 bytes of pixels px .. px + 3,
// as vpdpbusd reads them against a channel's 4 taps of a filter row
// (dilated: pixels px, px + dw, px + 2 dw, px + 3 dw). An
// output pixel is kh * quads(kw) vpdpbusd (3 for a 3x3), its 16 channels
// requantized at once with their own constants (requantize16: the same
// bits), then 16 pixels' results transposed back to the planes.
constexpr int64_t kMaxChannelQuads = 32;  // a filter's rows x quads of taps

// The layout's sizes: quads per padded row (every pixel a chunk of 16
// outputs, rounded up to 4, reads), pixels of the channels-last row.
PARE_ALWAYS_INLINE int64_t quads_per_row(const DepthwisePlane& d) {
  const int64_t reads = (d.out_w + 3) * d.sw + 4 * ((d.kw + 3) / 4) * d.dw;
  return reads > d.width + 2 * d.pw ? reads : d.width + 2 * d.pw;
}

// Pixels of a channels-last row: every quad's 4 pixels, the last 3 dw
// past the last quad's first.
PARE_ALWAYS_INLINE int64_t pixels_per_last_row(const DepthwisePlane& d) { return quads_per_row(d) + 3 * d.dw + 1; }

bool depthwise_channels_vnni_runs(const DepthwisePlane& d) {
  return (d.sw == 1 || d.sw == 2) && d.kh * ((d.kw + 3) / 4) <= kMaxChannelQuads;
}

int64_t depthwise_channels_vnni_bytes(const DepthwisePlane& d) {
  return (d.height + 2 * d.ph) * quads_per_row(d) * 64 + d.height * pixels_per_last_row(d) * 16 + 64;
}

namespace {

// A block of 16 channels' filters as the kernel reads them
// (depthwise_channels_block_bytes): kh x quads(kw) vectors, lane j of quad
// (ky, q) channel j's taps 4 q .. 4 q + 3 of row ky (0 past kw and past
// the last of `nc` channels), then the 16 channels' 128 sum w (int32),
// which x + 128 adds to each sum.
void pack_channel_block(int64_t kh, int64_t kw, int nc, const int8_t* w, int8_t* block) {
  const int64_t kq = (kw + 3) / 4;
  __builtin_memset(block, 0, static_cast<size_t>(depthwise_channels_block_bytes(kh, kw)));
  int32_t* sums = reinterpret_cast<int32_t*>(block + kh * kq * 64);
  for (int j = 0; j < nc; ++j) {
    int32_t sum = 0;
    const int8_t* f = w + j * kh * kw;
    for (int64_t ky = 0; ky < kh; ++ky) {
      int8_t* dst = block + ky * kq * 64 + 4 * j;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int8_t v = f[ky * kw + kx];
        dst[(kx >> 2) * 64 + (kx & 3)] = v;
        sum += v;
      }
    }
    sums[j] = sum * 128;
  }
}

}  // namespace

void pack_depthwise_channels_vnni(int64_t channels, int64_t kh, int64_t kw, const int8_t* w, void* packed) {
  const int64_t block = depthwise_channels_block_bytes(kh, kw);
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    pack_channel_block(kh, kw, channels - c0 < 16 ? static_cast<int>(channels - c0) : 16, w + c0 * kh * kw,
                       static_cast<int8_t*>(packed) + c0 / 16 * block);
  }
}

void depthwise_channels_vnni(const DepthwisePlane& d, int64_t channels, const int8_t* x, const int8_t* w,
                             const void* packed, const int32_t* correction, const float* multiplier,
                             const float* offset, int32_t output_min, int32_t output_max, int8_t* out) {
  const int64_t qw = quads_per_row(d);
  const int64_t rows = d.height + 2 * d.ph;
  uint8_t* quads = reinterpret_cast<uint8_t*>(d.padded);  // [rows][qw][64]
  uint8_t* lasts = quads + rows * qw * 64;                // [height][pixels_per_last_row][16], channels last
  const int64_t last_row = pixels_per_last_row(d) * 16;
  const uint8_t border = static_cast<uint8_t>(d.zero_point) ^ 0x80u;
  const __m512i border_v = _mm512_set1_epi8(static_cast<char>(border));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  // The border rows' quads, and the channels-last rows' borders, once: the
  // blocks rewrite the inside only.
  __builtin_memset(lasts, border, static_cast<size_t>(d.height * last_row));
  for (int64_t py = 0; py < rows; ++py) {
    if (py >= d.ph && py < d.ph + d.height) continue;
    for (int64_t px = 0; px < qw; ++px) _mm512_storeu_si512(quads + (py * qw + px) * 64, border_v);
  }
  const int64_t kq = (d.kw + 3) / 4;
  const int64_t taps = d.kh * d.kw;
  const int64_t in_plane = d.height * d.width;
  const int64_t out_plane = d.out_h * d.out_w;
  const int64_t block_bytes = depthwise_channels_block_bytes(d.kh, d.kw);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(output_min));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(output_max));
  alignas(64) int8_t own[(kMaxChannelQuads + 1) * 64];
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    const int nc = channels - c0 < 16 ? static_cast<int>(channels - c0) : 16;
    // The block's filters, packed at the layer's init (pack_depthwise_
    // channels_vnni) or now.
    const int8_t* filter = packed != nullptr ? static_cast<const int8_t*>(packed) + c0 / 16 * block_bytes : own;
    if (packed == nullptr) pack_channel_block(d.kh, d.kw, nc, w + c0 * taps, own);
    const __mmask16 live = pixel_mask(nc);
    const __m512i correction_v =
        _mm512_sub_epi32(_mm512_maskz_loadu_epi32(live, correction + c0), _mm512_loadu_si512(filter + d.kh * kq * 64));
    const __m512 multiplier_v = _mm512_maskz_loadu_ps(live, multiplier + c0);
    const __m512 offset_v = _mm512_maskz_loadu_ps(live, offset + c0);
    // The inside rows, channels last, then (once all are stored: a quad's
    // load spans two of the transpose's stores, which a load just after
    // them cannot take forwarded) as quads.
    const int8_t* planes = x + c0 * in_plane;
    for (int64_t iy = 0; iy < d.height; ++iy) {
      for (int64_t x0 = 0; x0 < d.width; x0 += 16) {
        const int64_t n = d.width - x0 < 16 ? d.width - x0 : 16;
        __m512i m[4];
        load_rows16(planes + iy * d.width + x0, in_plane, nc, n, m);  // row j: channel j's bytes [x0, x0 + n)
        transpose16x16(m);                                            // m[k]: pixels x0 + 4 k .. + 3, 16 channels each
        uint8_t* dst = lasts + iy * last_row + (d.pw + x0) * 16;
        for (int k = 0; k < 4 && 4 * k < n; ++k) {
          _mm512_mask_storeu_epi8(dst + 64 * k, bytes_mask((n - 4 * k) * 16), _mm512_xor_si512(m[k], flip));
        }
      }
    }
    for (int64_t iy = 0; iy < d.height; ++iy) {
      const uint8_t* row = lasts + iy * last_row;
      uint8_t* q = quads + (iy + d.ph) * qw * 64;
      if (d.dw == 1) {
        for (int64_t px = 0; px < qw; ++px) {
          _mm512_storeu_si512(q + px * 64, interleave_lanes(_mm512_loadu_si512(row + px * 16)));
        }
        continue;
      }
      // Dilated: pixels px, px + dw, px + 2 dw, px + 3 dw.
      const int64_t step = d.dw * 16;
      for (int64_t px = 0; px < qw; ++px) {
        const uint8_t* at = row + px * 16;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + step)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 2 * step)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 3 * step)), 3);
        _mm512_storeu_si512(q + px * 64, interleave_lanes(v));
      }
    }
    // 4 pixels' sums of a row at once (output row oy, from pixel p0), each
    // pixel's 16 channels requantized into b[at + u].
    __m128i b[16];
    const auto four = [&](int64_t oy, int64_t p0, __m128i* at) {
      const uint8_t* first = quads + (oy * d.sh * qw + p0 * d.sw) * 64;
      __m512i acc[4];
      for (int u = 0; u < 4; ++u) acc[u] = _mm512_setzero_si512();
      for (int64_t ky = 0; ky < d.kh; ++ky) {
        const uint8_t* r = first + ky * d.dh * qw * 64;
        for (int64_t q = 0; q < kq; ++q) {
          const __m512i wv = _mm512_loadu_si512(filter + (ky * kq + q) * 64);
          for (int u = 0; u < 4; ++u) {
            acc[u] = _mm512_dpbusd_epi32(acc[u], _mm512_loadu_si512(r + (u * d.sw + 4 * q * d.dw) * 64), wv);
          }
        }
      }
      for (int u = 0; u < 4; ++u) at[u] = requantize16(acc[u], correction_v, multiplier_v, offset_v, lo, hi);
    };
    // b's 16 pixels transposed back to the planes: `n` outputs of each
    // channel from pixel `at` of its plane.
    int8_t* block_out = out + c0 * out_plane;
    const auto store = [&](int64_t at, int64_t n) {
      __m512i m[4];
      for (int v = 0; v < 4; ++v) {
        __m512i t = _mm512_castsi128_si512(b[4 * v]);
        t = _mm512_inserti32x4(t, b[4 * v + 1], 1);
        t = _mm512_inserti32x4(t, b[4 * v + 2], 2);
        m[v] = _mm512_inserti32x4(t, b[4 * v + 3], 3);
      }
      transpose16x16(m);  // row j: channel j's 16 outputs
      store_rows16(m, nc, n, block_out + at, out_plane);
    };
    if (d.out_w < 8) {
      // Rows narrower than 8: 16 pixels of the plane per transpose, across
      // rows (a 7x7 plane's 49 in 4, not 7: its layer 0.83x).
      int staged = 0;
      int64_t stored = 0;
      for (int64_t oy = 0; oy < d.out_h; ++oy) {
        for (int64_t p0 = 0; p0 < d.out_w; p0 += 4) {
          __m128i results[4];
          four(oy, p0, results);
          const int n = d.out_w - p0 < 4 ? static_cast<int>(d.out_w - p0) : 4;
          for (int u = 0; u < n; ++u) {
            b[staged++] = results[u];
            if (staged < 16) continue;
            store(stored, 16);
            stored += 16;
            staged = 0;
          }
        }
      }
      if (staged > 0) store(stored, staged);
      continue;
    }
    // Wider rows: 16 outputs of a row per transpose (staged across rows,
    // a 14-wide plane's layer ran 1.10x).
    for (int64_t oy = 0; oy < d.out_h; ++oy) {
      for (int64_t x0 = 0; x0 < d.out_w; x0 += 16) {
        const int64_t n = d.out_w - x0 < 16 ? d.out_w - x0 : 16;
        for (int p0 = 0; p0 < 16; p0 += 4) {
          if (p0 < n) {
            four(oy, x0 + p0, b + p0);
          } else {
            for (int u = 0; u < 4; ++u) b[p0 + u] = _mm_setzero_si128();
          }
        }
        store(oy * d.out_w + x0, n);
      }
    }
  }
}

}  // namespace x86_64_v4
}  // namespace qgemm
}  // namespace kernels
}  // namespace pare

#pragma clang attribute pop

#endif
