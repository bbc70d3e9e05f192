// The AVX-512 VNNI copies of the int8 linear layers' GEMMs (qgemm.h):
// pare::qlinear_dynamic's gemm_dynamic with its input's range and
// quantization, and pare::qlinear_prepacked's gemm_rows, which a runtime at
// --//runtime:x86_64_isa=auto runs on an x86-64-v4 CPU (the GEMMs where it
// also has AVX-512 VNNI: cpu::x86_64_vnni(); qgemm.cc chooses).
// //runtime/kernels:kernels_v4 compiles this file as it does qgemm_vnni.cc;
// elsewhere it is empty. Only this file's own functions, qgemm_vnni.h's and
// compiler intrinsics are used here.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qgemm_vnni.h"

#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)

namespace pare {
namespace kernels {
namespace qgemm {
namespace x86_64_v4 {

// pare::qlinear_dynamic (qgemm.h's gemm_dynamic): MR rows x NV blocks of 16
// output channels, per quad of reductions one broadcast int32 of each
// row's 4 unsigned bytes against NV vectors of 16 channels x 4 weights.
namespace {

constexpr int kDynamicRows = 8;

template <int MR, int NV>
PARE_ALWAYS_INLINE void dynamic_tile(int64_t k, const uint8_t* u, int64_t ldu, const int8_t* wb, int64_t block_bytes,
                                     int64_t c0, int64_t channels, const DynamicEpilogue& e, float* out) {
  __m512i acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  }
  const int64_t nq = (k + 3) / 4;
  for (int64_t q = 0; q < nq; ++q) {
    __m512i w[NV];
    for (int v = 0; v < NV; ++v) w[v] = _mm512_loadu_si512(wb + v * block_bytes + q * 64);
    for (int r = 0; r < MR; ++r) {
      int32_t bytes;
      __builtin_memcpy(&bytes, u + r * ldu + 4 * q, 4);
      const __m512i x = _mm512_set1_epi32(bytes);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], x, w[v]);
    }
  }
  // gemm_dynamic's epilogue, as the other copies' dynamic_store: the
  // correction in wrapping int32, the float product, then the bias.
  const __m512i zp = _mm512_set1_epi32(128 + e.zero_point);
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + 16 * v;
    const __mmask16 m = pixel_mask(static_cast<int>(channels - c < 16 ? channels - c : 16));
    const __m512i sums = _mm512_maskz_loadu_epi32(m, e.sums + c);
    const __m512 mult = _mm512_maskz_loadu_ps(m, e.multiplier + c);
    const __m512 bias = e.bias != nullptr ? _mm512_maskz_loadu_ps(m, e.bias + c) : _mm512_setzero_ps();
    const __m512i correction = _mm512_mullo_epi32(zp, sums);
    for (int r = 0; r < MR; ++r) {
      __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][v], correction)), mult);
      if (e.bias != nullptr) y = _mm512_add_ps(y, bias);
      _mm512_mask_storeu_ps(out + r * channels + c, m, y);
    }
  }
}

template <int MR>
void dynamic_rows_vnni(int64_t channels, int64_t k, const uint8_t* u, const int8_t* w, const DynamicEpilogue& e,
                       float* out) {
  const int64_t ldu = dynamic_row_bytes(k);
  const int64_t block_bytes = (k + 3) / 4 * 4 * kDynamicBlock;
  int64_t c0 = 0;
  for (; c0 + 16 < channels; c0 += 32) {
    dynamic_tile<MR, 2>(k, u, ldu, w + c0 / 16 * block_bytes, block_bytes, c0, channels, e, out);
  }
  if (c0 < channels) dynamic_tile<MR, 1>(k, u, ldu, w + c0 / 16 * block_bytes, block_bytes, c0, channels, e, out);
}

}  // namespace

void gemm_dynamic_vnni(int64_t rows, int64_t channels, int64_t k, const uint8_t* u, const int8_t* w,
                       const DynamicEpilogue& e, float* out) {
  const int64_t ldu = dynamic_row_bytes(k);
  int64_t r = 0;
  for (; r + kDynamicRows <= rows; r += kDynamicRows) {
    dynamic_rows_vnni<kDynamicRows>(channels, k, u + r * ldu, w, e, out + r * channels);
  }
  const uint8_t* ur = u + r * ldu;
  float* o = out + r * channels;
  switch (rows - r) {
    case 7: dynamic_rows_vnni<7>(channels, k, ur, w, e, o); break;
    case 6: dynamic_rows_vnni<6>(channels, k, ur, w, e, o); break;
    case 5: dynamic_rows_vnni<5>(channels, k, ur, w, e, o); break;
    case 4: dynamic_rows_vnni<4>(channels, k, ur, w, e, o); break;
    case 3: dynamic_rows_vnni<3>(channels, k, ur, w, e, o); break;
    case 2: dynamic_rows_vnni<2>(channels, k, ur, w, e, o); break;
    case 1: dynamic_rows_vnni<1>(channels, k, ur, w, e, o); break;
    default: break;
  }
}

Range dynamic_range_v4(const float* x, int64_t n) {
  __m512 lo0 = _mm512_set1_ps(x[0]), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i);
    const __m512 b = _mm512_loadu_ps(x + i + 16);
    nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    lo0 = _mm512_min_ps(lo0, a);
    hi0 = _mm512_max_ps(hi0, a);
    lo1 = _mm512_min_ps(lo1, b);
    hi1 = _mm512_max_ps(hi1, b);
  }
  for (; i < n; i += 16) {
    const __m512 a = _mm512_mask_loadu_ps(lo0, pixel_mask(static_cast<int>(n - i < 16 ? n - i : 16)), x + i);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    lo0 = _mm512_min_ps(lo0, a);
    hi0 = _mm512_max_ps(hi0, a);
  }
  return {_mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1)), _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1)), nan != 0};
}

void quantize_dynamic_v4(const float* x, int64_t rows, int64_t k, float inv_scale, float zero_point, float qmin,
                         float qmax, uint8_t* u) {
  const int64_t ldu = dynamic_row_bytes(k);
  const __m512 inv = _mm512_set1_ps(inv_scale);
  const __m512 zp = _mm512_set1_ps(zero_point);
  const __m512 lo = _mm512_set1_ps(qmin);
  const __m512 hi = _mm512_set1_ps(qmax);
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    uint8_t* ur = u + r * ldu;
    for (int64_t i = 0; i < k; i += 16) {
      const __mmask16 m = pixel_mask(static_cast<int>(k - i < 16 ? k - i : 16));
      // quantize_dynamic's order: the product rounded half to even (as
      // round_half_even: beyond 2^22 both clamp alike), the zero point,
      // the clamp (max / min keep a NaN: it is their second operand),
      // NaN to 0.
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), inv);
      v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
      v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
      const __m512i q = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
      _mm_mask_storeu_epi8(ur + i, m, _mm_xor_si128(_mm512_cvtepi32_epi8(q), flip));
    }
    for (int64_t i = k; i < ldu; ++i) ur[i] = 0x80;
  }
}

// gemm_rows (pare::qlinear_prepacked: w [channels, k] and x [pixels, k],
// rows contiguous) on vpdpbusd, the weights the unsigned side: w + 128 (w
// ^ 0x80) against x, so the sum gains 128 sum_k x[p, k], one number per
// pixel taken back out (where the columns GEMM's correction is per
// channel). Tiles of 4 channels x 4 pixels, 64 reductions per step, the
// sums added across lanes at the end; the requantization is the other
// copies' store_tile, value for value. A single pixel (a classifier's row,
// or the last of a batch) runs 16 channels per tile (rows_vector_vnni).
namespace {

PARE_ALWAYS_INLINE int8_t requantize_one(int32_t acc, float multiplier, float offset, float lo, float hi) {
#pragma clang fp contract(off)
  const float product = static_cast<float>(acc) * multiplier;
  const float v0 = product + offset;
  const float a = v0 < 0.0f ? -v0 : v0;
  float v = a < 4194304.0f ? (v0 + 12582912.0f) - 12582912.0f : v0;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return static_cast<int8_t>(static_cast<int32_t>(v));
}

template <int MR, int NR>
PARE_ALWAYS_INLINE void rows_tile_vnni(int64_t k, const int8_t* w, const int8_t* x, const int32_t* xsum, int64_t c0,
                                       int64_t p0, const Requantization& rq, const Output& out) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_si512();
  }
  for (int64_t i = 0; i < k; i += 64) {
    // Past k: x reads 0, so the weight's 128 adds nothing.
    const __mmask64 m = bytes_mask(k - i);
    __m512i xv[NR];
    for (int j = 0; j < NR; ++j) xv[j] = _mm512_maskz_loadu_epi8(m, x + j * k + i);
    for (int r = 0; r < MR; ++r) {
      const __m512i wv = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, w + r * k + i), flip);
      for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], wv, xv[j]);
    }
  }
  const float lo = static_cast<float>(rq.output_min);
  const float hi = static_cast<float>(rq.output_max);
  for (int r = 0; r < MR; ++r) {
    const int64_t c = c0 + r;
    int8_t* row = out.data + c * out.channel_stride + p0 * out.pixel_stride;
    for (int j = 0; j < NR; ++j) {
      const uint32_t sum = static_cast<uint32_t>(_mm512_reduce_add_epi32(acc[r][j])) -
                           128u * static_cast<uint32_t>(xsum[j]) + static_cast<uint32_t>(rq.correction[c]);
      row[j * out.pixel_stride] = requantize_one(static_cast<int32_t>(sum), rq.multiplier[c], rq.offset[c], lo, hi);
    }
  }
}

// Lane i of the result: the sum of a[i]'s 16 lanes (wrapping, as
// vpdpbusd's). A tree of unpacks and 128-bit shuffles, 45 instructions
// where 16 _mm512_reduce_add_epi32 take about 130: after the first two
// levels, 128-bit lane L of u[i] holds lane L's sums of a[4 i], ..,
// a[4 i + 3]; the last two add the four 128-bit lanes.
PARE_ALWAYS_INLINE __m512i sum_lanes16(const __m512i* a) {
  __m512i t[8];
  for (int i = 0; i < 8; ++i) {
    t[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
  }
  __m512i u[4];
  for (int i = 0; i < 4; ++i) {
    u[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * i], t[2 * i + 1]), _mm512_unpackhi_epi64(t[2 * i], t[2 * i + 1]));
  }
  const auto halves = [](__m512i p, __m512i q) {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(p, q, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
  };
  return halves(halves(u[0], u[1]), halves(u[2], u[3]));
}

// Channels [c0, c0 + 16) of one pixel (a classifier's one row): one
// accumulator per channel, the 16 sums added across lanes by one tree and
// requantized 16 at a time by requantize16 (requantize_one's value: both
// round half to even, and past 2^22 both clamp; the multiplier and offset
// are finite, qpacked_params.cc checks). Four layers of 1280 x
// 1280 went 0.77x the time of the 4 x 1 tile's (tools.bench.ab, 21
// rounds); a software prefetch of the next block's rows as this one runs
// cost 1.14x.
void rows_vector_vnni(int64_t k, const int8_t* w, const int8_t* x, int32_t xsum, int64_t c0, const Requantization& rq,
                      int8_t* row) {
  constexpr int kRows = 16;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_si512();
  for (int64_t i = 0; i < k; i += 64) {
    // Past k: x reads 0, so the weight's 128 adds nothing.
    const __mmask64 m = bytes_mask(k - i);
    const __m512i xv = _mm512_maskz_loadu_epi8(m, x + i);
    for (int r = 0; r < kRows; ++r) {
      const __m512i wv = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, w + r * k + i), flip);
      acc[r] = _mm512_dpbusd_epi32(acc[r], wv, xv);
    }
  }
  const __m512i correction =
      _mm512_sub_epi32(_mm512_loadu_si512(rq.correction + c0),
                       _mm512_set1_epi32(static_cast<int32_t>(128u * static_cast<uint32_t>(xsum))));
  const __m128i b = requantize16(sum_lanes16(acc), correction, _mm512_loadu_ps(rq.multiplier + c0),
                                 _mm512_loadu_ps(rq.offset + c0), _mm512_set1_ps(static_cast<float>(rq.output_min)),
                                 _mm512_set1_ps(static_cast<float>(rq.output_max)));
  // A row's channels are contiguous (out.channel_stride is 1: qgemm.h's
  // Output).
  _mm_storeu_si128(reinterpret_cast<__m128i*>(row + c0), b);
}

template <int NR>
void rows_pixels_vnni(int64_t channels, int64_t k, const int8_t* w, const int8_t* x, int64_t p0,
                      const Requantization& rq, const Output& out) {
  // sum_k x[p, k] per pixel: vpdpbusd of ones against x.
  const __m512i ones = _mm512_set1_epi8(1);
  int32_t xsum[NR];
  for (int j = 0; j < NR; ++j) {
    __m512i s = _mm512_setzero_si512();
    for (int64_t i = 0; i < k; i += 64) {
      s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi8(bytes_mask(k - i), x + j * k + i));
    }
    xsum[j] = _mm512_reduce_add_epi32(s);
  }
  int64_t c = 0;
  if (NR == 1) {
    int8_t* row = out.data + p0 * out.pixel_stride;
    for (; c + 16 <= channels; c += 16) rows_vector_vnni(k, w + c * k, x, xsum[0], c, rq, row);
  }
  for (; c + 4 <= channels; c += 4) rows_tile_vnni<4, NR>(k, w + c * k, x, xsum, c, p0, rq, out);
  for (; c < channels; ++c) rows_tile_vnni<1, NR>(k, w + c * k, x, xsum, c, p0, rq, out);
}

}  // namespace

void gemm_rows_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x,
                    const Requantization& rq, const Output& out) {
  int64_t p = 0;
  for (; p + 4 <= pixels; p += 4) rows_pixels_vnni<4>(channels, k, w, x + p * k, p, rq, out);
  for (; p < pixels; ++p) rows_pixels_vnni<1>(channels, k, w, x + p * k, p, rq, out);
}

}  // namespace x86_64_v4
}  // namespace qgemm
}  // namespace kernels
}  // namespace pare

#pragma clang attribute pop

#endif
