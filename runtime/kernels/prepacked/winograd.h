#pragma once
// Winograd F(2x2, 3x3) and F(4x4, 3x3) for pare::conv2d_prepacked: a 3x3
// convolution with stride 1 and no dilation as (T + 2)^2 GEMMs instead of
// one 9x deeper im2col GEMM (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015). T, the output tile, is 2 or 4.
//
// The output is cut into T x T tiles. Each tile's (T + 2) x (T + 2) input
// patch d becomes V = B^T d B, each filter g becomes U = G g G^T (ahead of
// time, in float64, by the exporter: pare/packing.py), and the tile's
// output is Y = A^T (sum over input channels of U . V) A. For each of the
// (T + 2)^2 positions of the transformed tile, the sum over input channels
// is one GEMM: M [out, tiles] = U [out, in] V [in, tiles]. F(2x2, 3x3)
// does 16 multiplies per 4 outputs instead of 36 (2.25x fewer); F(4x4,
// 3x3) 36 per 16 instead of 144 (4x fewer), at the price of larger
// transforms (additions and multiplies by powers of two, in vectors of
// tiles) and a larger rounding error. The exporter chooses which, if
// either, pays (pare/packing.py, winograd_tile).
//
// Numerics (docs/performance.md, "Winograd"): an output's error is at most
// gamma_(in + k) M, where gamma_n = n u / (1 - n u), u = 2^-24 (float32's
// unit roundoff), k = 10 for T = 2 and 14 for T = 4, and M is the same
// computation done on the absolute values of the transform matrices, the
// filters and the input: every term passes through at most in + k - 1
// roundings (the filter transform's; 2 (T = 2) or 4 (T = 4) in the input
// transform; the product and in - 1 sums; 4 or 6 in the output transform;
// the bias add). For T = 2, M is 7x to 16x the sum of |w| |x| that bounds
// a direct convolution's error (64 / 9 when every magnitude is equal); for
// T = 4 it is about 50x to 150x, so F(4x4, 3x3)'s errors are several times
// F(2x2, 3x3)'s (docs/performance.md gives them per layer).
// tests/runtime/kernels/test_prepacked.py checks both bounds against
// float64. An inf or NaN in the input makes its whole tile NaN (the
// transforms subtract), where a direct convolution gives inf in the outputs
// that read it; finite inputs within about 1/16 (T = 2) or 1/400 (T = 4)
// of float32's range never overflow.
//
// Memory: the input planes copied into a zero-bordered scratch (so every
// patch reads in bounds), each row split into its T column phases (column
// T k + p at phase p, index k: a vector of tiles' patch column is then one
// contiguous load), and, per block of tiles, V [positions, in, tiles] in
// the GEMM's packed B layout (the input transform writes it there; the GEMM
// reads it in place) and M [positions, out, tiles]. A block holds as many
// tiles as keep V and M within kBlockBytes, so they stay in the cache
// between the GEMMs and the output transform.

#include "runtime/registry/kernel.h"
#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace winograd {

// The transformed tile's positions for output tile T: (T + 2)^2.
constexpr int64_t positions(int tile) { return static_cast<int64_t>(tile + 2) * (tile + 2); }
constexpr int64_t kBlockBytes = int64_t{1} << 18;

// One image's group of a 3x3, stride 1, undilated convolution.
struct Geometry {
  int64_t in_channels;   // of the group
  int64_t out_channels;  // of the group
  int64_t height, width, out_h, out_w;
  int64_t pad_h, pad_w;
};

// Floats of the weights as conv2d_prepack takes them, per group: the
// positions(tile) matrices U_e [out_channels, in_channels], each packed as
// the GEMM's A.
inline size_t packed_weight_floats(int tile, int64_t out_channels, int64_t in_channels) {
  return static_cast<size_t>(positions(tile)) * gemm::packed_a_size(out_channels, in_channels);
}

// Where a tile of a block goes in an output plane.
struct TilePlace {
  int64_t offset;      // of the tile's first output
  int32_t rows, cols;  // of the tile inside the output (T but at the bottom and right edges)
};

// Scratch for run<T>(), allocated once per call and shared by every image
// and group of the same geometry.
//
// Build feature threads: each stage of a block splits over the method's
// threads by channels, every channel computed as on one thread (results
// are bitwise identical for every thread count): the planes and the input
// transform by input channel (each chunk with V rows of its own), the
// products by output channel in whole register tiles (every position's
// product for the chunk's rows, gemm.h's split by rows), the output
// transform by output channel. Three joins per block, not one per position.
struct Scratch {
  float* planes = nullptr;      // in_channels x padded plane, rows split into phases
  float* v = nullptr;           // positions x packed [in_channels, block]
  float* m = nullptr;           // positions x [out_channels, block]
  float* rows = nullptr;        // in_chunks x rows_floats: one channel's V rows, per chunk
  TilePlace* places = nullptr;  // the block's tiles
  int64_t block = 0;            // tiles per block
  size_t rows_floats = 0;       // positions x the block's columns
  uint32_t in_chunks = 1;       // the planes and the input transform
  uint32_t gemm_chunks = 1;     // the products
  uint32_t out_chunks = 1;      // the output transform
};
template <int T>
Result<Scratch> allocate(KernelContext& ctx, const Geometry& g);

// y [out_channels, out_h, out_w] = the convolution of x [in_channels,
// height, width] (contiguous) with the filters `u` transformed for output
// tile T (packed_weight_floats(T, ...) floats), plus bias [out_channels]
// (null for none), clamped to [lo, hi] as the output transform stores it
// (NaN kept: the prepacked Epilogue's clamp; infinite bounds for none).
// Instantiated for T = 2 and T = 4, each only reachable from its kernel
// tag's dispatch.
template <int T>
void run(KernelContext& ctx, const Geometry& g, const Scratch& s, const float* x, const float* u, const float* bias,
         float lo, float hi, float* y);

}  // namespace winograd
}  // namespace pare
