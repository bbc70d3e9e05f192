// The int8 GEMM and its requantizing epilogue (qgemm.h).
//
// Tiles of kChannels output channels x a few pixels keep their int32 sums in
// registers: gemm_rows' tile is 4 x 2 dot products over contiguous rows (k
// innermost, which clang vectorises as widened int16 products summed into
// int32 lanes, each loaded row used 2 or 4 times); gemm_columns' is 4
// channels x 16 pixels, a weight broadcast against 16 pixels per step.
// Build feature threads: not yet; the split would go over the tiles'
// channel blocks (disjoint outputs, the same bits for any split).

#include "runtime/kernels/quantized/qgemm.h"

#include "runtime/kernels/quantized/quantized.h"
// arm64's micro-kernels of gemm_rows (NEON, SDOT); empty elsewhere.
#include "runtime/kernels/quantized/qgemm_arm64.inc"

// The float product must round before the addition (round_half_even's magic
// constant too), on every ISA: no FMA, so every machine gives the same bits.
#pragma clang fp contract(off)

namespace pare {
namespace kernels {
namespace qgemm {
namespace {

constexpr int kChannels = 4;    // output channels per tile
constexpr int kRowPixels = 2;   // gemm_rows: pixels per tile
constexpr int kColPixels = 16;  // gemm_columns: pixels per tile

PARE_ALWAYS_INLINE int8_t requantize(int32_t acc, float multiplier, float offset, float lo, float hi) {
  const float product = static_cast<float>(acc) * multiplier;
  float v = quantized::round_half_even(product + offset);
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return static_cast<int8_t>(static_cast<int32_t>(v));
}

// acc[r][j] + correction of channel c0 + r, requantized and stored.
template <int MR, int NR>
PARE_ALWAYS_INLINE void store_tile(const int32_t (&acc)[MR][NR], int64_t c0, int64_t p0, int nr,
                                   const Requantization& rq, const Output& out) {
  const float lo = static_cast<float>(rq.output_min);
  const float hi = static_cast<float>(rq.output_max);
  for (int r = 0; r < MR; ++r) {
    const int64_t c = c0 + r;
    const int32_t correction = rq.correction[c];
    const float multiplier = rq.multiplier[c];
    const float offset = rq.offset[c];
    int8_t* row = out.data + c * out.channel_stride + p0 * out.pixel_stride;
    for (int j = 0; j < nr; ++j) {
      row[j * out.pixel_stride] = requantize(acc[r][j] + correction, multiplier, offset, lo, hi);
    }
  }
}

// MR x NR dot products of length k: rows of w (stride k) against rows of x
// (stride k). Each product keeps kLanes int32 partial sums of int16
// products (exact: |w x| <= 2^14), summed at the end with the k % kLanes
// tail. Clang vectorises the lanes at every x86_64 level (pmullw and
// pmaddwd at SSE2, vpmaddwd at AVX2) and on arm64 (smull / sadalp); 16
// lanes, one 16-byte load per row and step, is what the SSE2 cost model
// takes (8 stays scalar there).
constexpr int kLanes = 16;

template <int MR, int NR>
PARE_ALWAYS_INLINE void dot_tile(int64_t k, const int8_t* PARE_RESTRICT w, const int8_t* PARE_RESTRICT x,
                                 int32_t (&acc)[MR][NR]) {
  int32_t s[MR][NR][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    for (int r = 0; r < MR; ++r) {
      const int8_t* a = w + r * k + i;
      for (int j = 0; j < NR; ++j) {
        const int8_t* b = x + j * k + i;
        for (int l = 0; l < kLanes; ++l) {
          s[r][j][l] += static_cast<int16_t>(static_cast<int16_t>(a[l]) * static_cast<int16_t>(b[l]));
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) {
      int32_t t = 0;
      for (int l = 0; l < kLanes; ++l) t += s[r][j][l];
      for (int64_t q = i; q < k; ++q) t += static_cast<int16_t>(w[r * k + q]) * static_cast<int16_t>(x[j * k + q]);
      acc[r][j] = t;
    }
  }
}

template <int MR>
void rows_block(int64_t c0, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x, const Requantization& rq,
                const Output& out) {
  const int8_t* wb = w + c0 * k;
  int64_t p = 0;
  for (; p + kRowPixels <= pixels; p += kRowPixels) {
    int32_t acc[MR][kRowPixels];
    dot_tile<MR, kRowPixels>(k, wb, x + p * k, acc);
    store_tile<MR, kRowPixels>(acc, c0, p, kRowPixels, rq, out);
  }
  for (; p < pixels; ++p) {
    int32_t acc[MR][1];
    dot_tile<MR, 1>(k, wb, x + p * k, acc);
    store_tile<MR, 1>(acc, c0, p, 1, rq, out);
  }
}

template <int MR>
void columns_block(int64_t c0, int64_t pixels, int64_t k, const int8_t* PARE_RESTRICT w, const int8_t* PARE_RESTRICT x,
                   const Requantization& rq, const Output& out) {
  const int8_t* wb = w + c0 * k;
  for (int64_t p0 = 0; p0 < pixels; p0 += kColPixels) {
    const int nr = pixels - p0 < kColPixels ? static_cast<int>(pixels - p0) : kColPixels;
    int32_t acc[MR][kColPixels] = {};
    if (nr == kColPixels) {
      for (int64_t i = 0; i < k; ++i) {
        const int8_t* xr = x + i * pixels + p0;
        for (int r = 0; r < MR; ++r) {
          const int16_t a = wb[r * k + i];
          for (int j = 0; j < kColPixels; ++j) acc[r][j] += static_cast<int16_t>(a * xr[j]);
        }
      }
    } else {
      for (int64_t i = 0; i < k; ++i) {
        const int8_t* xr = x + i * pixels + p0;
        for (int r = 0; r < MR; ++r) {
          const int16_t a = wb[r * k + i];
          for (int j = 0; j < nr; ++j) acc[r][j] += static_cast<int16_t>(a * xr[j]);
        }
      }
    }
    store_tile<MR, kColPixels>(acc, c0, p0, nr, rq, out);
  }
}

}  // namespace

void gemm_rows(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x, const Requantization& rq,
               const Output& out) {
#if defined(__aarch64__)
  // arm64: qgemm_arm64.inc's tiles, SDOT where the CPU has it; this file's
  // epilogue.
  const auto store = [&](const auto& acc, int64_t c0, int64_t p0, int nr) { store_tile(acc, c0, p0, nr, rq, out); };
  arm64::gemm_rows(channels, pixels, k, w, x, store);
  return;
#endif
  int64_t c = 0;
  for (; c + kChannels <= channels; c += kChannels) rows_block<kChannels>(c, pixels, k, w, x, rq, out);
  for (; c < channels; ++c) rows_block<1>(c, pixels, k, w, x, rq, out);
}

void gemm_columns(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x,
                  const Requantization& rq, const Output& out) {
  int64_t c = 0;
  for (; c + kChannels <= channels; c += kChannels) columns_block<kChannels>(c, pixels, k, w, x, rq, out);
  for (; c < channels; ++c) columns_block<1>(c, pixels, k, w, x, rq, out);
}

void requantize_channel(const int32_t* acc, int64_t n, int32_t correction, float multiplier, float offset,
                        int32_t output_min, int32_t output_max, int8_t* out) {
  const float lo = static_cast<float>(output_min);
  const float hi = static_cast<float>(output_max);
  for (int64_t i = 0; i < n; ++i) out[i] = requantize(acc[i] + correction, multiplier, offset, lo, hi);  // vectorises
}

}  // namespace qgemm
}  // namespace kernels
}  // namespace pare
