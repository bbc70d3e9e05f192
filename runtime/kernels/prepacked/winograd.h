#pragma once
// Winograd F(2x2, 3x3) for pare::conv2d_prepacked: a 3x3 convolution with
// stride 1 and no dilation as 16 GEMMs instead of one 9x deeper im2col
// GEMM (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015).
//
// The output is cut into 2x2 tiles. Each tile's 4x4 input patch d becomes
// V = B^T d B, each filter g becomes U = G g G^T (ahead of time, in
// float64, by the exporter: pare/packing.py), and the tile's output is
// Y = A^T (sum over input channels of U . V) A. For each of the 16
// positions of the 4x4 transformed tile, the sum over input channels is one
// GEMM: M [out, tiles] = U [out, in] V [in, tiles]. That is 16 multiplies
// per 4 outputs instead of 36: 2.25x fewer, at the price of the two
// transforms (additions only, in vectors of tiles) and of scratch memory
// for V and M. The exporter chooses it where it pays (pare/packing.py,
// winograd_pays: 8 or more input channels, 9 or more tiles).
//
// Numerics (docs/performance.md, "Winograd"): an output's error is at most
// gamma_(in + 10) M, where gamma_n = n u / (1 - n u), u = 2^-24 (float32's
// unit roundoff) and M is the same computation done on the absolute values
// of the transform matrices, the filters and the input: every term passes
// through at most in + 9 roundings (the filter transform's, 2 in the input
// transform, the product and in - 1 sums, 4 in the output transform, the
// bias add). M is 7x to 16x the sum of |w| |x| that bounds a direct
// convolution's error (64 / 9 when every magnitude is equal), so the bound
// is about 1.6x im2col's gamma_(9 in) sum |w| |x| for wide layers; measured
// errors are the same order as im2col's.
// tests/runtime/kernels/test_prepacked.py checks the bound against float64.
// An inf or NaN in the input makes its whole 2x2 tile NaN (the transforms
// subtract), where a direct convolution gives inf in the outputs that read
// it; finite inputs within about 1/16 of float32's range never overflow.
//
// Memory: the input planes copied into a zero-bordered scratch (so every
// patch reads in bounds), and, per block of tiles, V [16, in, tiles] in the
// GEMM's packed B layout (the input transform writes it there; the GEMM
// reads it in place) and M [16, out, tiles]. A block holds as many tiles as
// keep V and M within kBlockBytes, so they stay in the cache between the
// GEMMs and the output transform.

#include "runtime/registry/kernel.h"
#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace winograd {

constexpr int64_t kPositions = 16;  // a 4x4 transformed tile
constexpr int64_t kBlockBytes = int64_t{1} << 18;

// One image's group of a 3x3, stride 1, undilated convolution.
struct Geometry {
  int64_t in_channels;   // of the group
  int64_t out_channels;  // of the group
  int64_t height, width, out_h, out_w;
  int64_t pad_h, pad_w;
};

// Floats of the weights as conv2d_prepack takes them, per group: the 16
// matrices U_e [out_channels, in_channels], each packed as the GEMM's A.
inline size_t packed_weight_floats(int64_t out_channels, int64_t in_channels) {
  return static_cast<size_t>(kPositions) * gemm::packed_a_size(out_channels, in_channels);
}

// Scratch for run(), allocated once per call and shared by every image and
// group of the same geometry.
struct Scratch {
  float* planes = nullptr;  // in_channels x padded plane
  float* v = nullptr;       // kPositions x packed [in_channels, block]
  float* m = nullptr;       // kPositions x [out_channels, block]
  float* rows = nullptr;    // kPositions x the block's columns: one channel's V rows
  int64_t block = 0;        // tiles per block
  gemm::Split split;
};
Result<Scratch> allocate(KernelContext& ctx, const Geometry& g);

// y [out_channels, out_h, out_w] = the convolution of x [in_channels,
// height, width] (contiguous) with the transformed filters `u`
// (packed_weight_floats floats), plus bias [out_channels] (null for none),
// clamped to [lo, hi] as the output transform stores it (NaN kept: the
// prepacked Epilogue's clamp; infinite bounds for none).
void run(KernelContext& ctx, const Geometry& g, const Scratch& s, const float* x, const float* u, const float* bias,
         float lo, float hi, float* y);

}  // namespace winograd
}  // namespace pare
