#pragma once
// The int8 x int8 -> int32 GEMM of the int8 layers (pare::qconv2d_prepacked,
// pare::qlinear_prepacked) and their requantizing epilogue
// (pare/quantized_packing.py has the formulas):
//
//   acc[c, p] = sum_k w[c, k] * x[p, k] + correction[c]               (int32)
//   out[c, p] = clamp(round_half_even(float(acc) * multiplier[c] + offset[c]),
//                     output_min, output_max)                          (int8)
//
// Portable C++ written for clang's auto-vectoriser (int8 operands widened to
// int16 products summed in int32 lanes: pmaddwd on x86_64, smlal on arm64);
// ISA-specific micro-kernels (VNNI, SDOT) are to come. The float product is
// rounded before the addition on every ISA (qgemm.cc turns floating-point
// contraction off), so every machine gives the same bits.
//
// Callers guarantee k <= kMaxDepth: then |sum_k w x| <= 2^30, and the
// exporter's |correction| = |zx sum_k w| <= 2^30 too, so int32 never
// overflows.

#include "runtime/core/compiler.h"
#include <stddef.h>
#include <stdint.h>

namespace pare {
namespace kernels {
namespace qgemm {

// The deepest reduction the int8 layers take (see above).
constexpr int64_t kMaxDepth = int64_t{1} << 16;

// Per output channel requantization (each array has one entry per output
// channel of the product, already offset to its first) and the output
// range, both within [-128, 127].
struct Requantization {
  const int32_t* correction;
  const float* multiplier;
  const float* offset;
  int32_t output_min;
  int32_t output_max;
};

// Where out[c, p] goes: out + c * channel_stride + p * pixel_stride (a
// convolution's output plane [channels, pixels]: channel_stride = pixels,
// pixel_stride = 1; a linear layer's rows [pixels, channels]: 1 and
// channels).
struct Output {
  int8_t* data;
  int64_t channel_stride;
  int64_t pixel_stride;
};

// w [channels, k] and x [pixels, k], both rows contiguous (row strides k):
// every output is a dot product of two contiguous int8 rows.
void gemm_rows(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x, const Requantization& rq,
               const Output& out);

// w [channels, k] and x [k, pixels] (row stride `pixels`): a 1x1,
// stride-1, unpadded convolution's image as it is in NCHW, no im2col;
// vectorised across pixels.
void gemm_columns(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x,
                  const Requantization& rq, const Output& out);

// out[i * out_stride] = requantized acc[i] + correction, for n values of one
// output channel (the depthwise kernel's rows).
void requantize_channel(const int32_t* acc, int64_t n, int32_t correction, float multiplier, float offset,
                        int32_t output_min, int32_t output_max, int8_t* out);

}  // namespace qgemm
}  // namespace kernels
}  // namespace pare
