#pragma once
// The float depthwise convolution fast path, shared by aten::convolution
// (runtime/kernels/nn/convolution.cc) and pare::conv2d_prepacked
// (runtime/kernels/prepacked/): square K x K kernels (K = 3, 5, 7:
// MobileNet, EfficientNet, ConvNeXt), equal strides 1 or 2, no dilation,
// one input channel per group (a channel multiplier is fine).
//
// Each input plane is copied once into a zero-bordered scratch plane wide
// enough that every tap of every output vector reads in bounds, so the
// inner loop has no bounds tests: simd::kLanes outputs at a time, K * K
// broadcast weights, the taps summed in the generic loop's order (bias, then
// ky, kx). Stride 2 loads two vectors and keeps the even lanes. 3x3 is
// unrolled at compile time; 5x5 and 7x7 share one loop over a run-time size,
// so the rarer sizes cost no code of their own. Padding taps multiply the
// zero border, as torch's zero-padded convolution does: an inf or NaN weight
// makes a border output NaN here (the generic loop skips those taps), and a
// -0.0 sum next to the border comes out +0.0. Planes of at most 4 output
// pixels (a network's last stages) run with vectors across kLanes channels
// instead, skipping padding taps (depthwise.cc, tiny_block).
//
// Each (K, stride) variant's loop sits behind a fast-path tag of its own
// (depthwise_3x3_s1_kernel, ..._s2, depthwise_5x5_7x7_s1_kernel, ..._s2;
// runtime/inventory/nn/nn.tags.def), so a runtime carries only the loops
// its models' layers run; selected() says whether this one has a layer's,
// and a caller without it runs its general path.

#include "runtime/kernels/common/simd.h"
#include "runtime/registry/kernel.h"

namespace pare {
namespace depthwise {

struct Geometry {
  int64_t batch;
  int64_t in_channels;
  int64_t out_channels;  // a multiple of in_channels: output channel oc reads input channel oc / (out / in)
  int64_t height, width, out_h, out_w;
  int64_t kernel;  // K (square)
  int64_t stride;  // 1 or 2 (both dims)
  int64_t pad_h, pad_w;
};

constexpr bool has_fast_path(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
  return kh == kw && (kh == 3 || kh == 5 || kh == 7) && sh == sw && (sh == 1 || sh == 2) && dh == 1 && dw == 1;
}

// Whether run_float has a loop for `g` (a has_fast_path geometry) in this
// runtime: the tiny planes' tag for a tiny plane, else the (K, stride)
// variant's (link-time constants, runtime/registry/selection.h).
bool selected(const Geometry& g);

// y [batch, out_channels, out_h, out_w] = depthwise conv of x [batch,
// in_channels, height, width] (contiguous) with w [out_channels, 1, K, K]
// (contiguous) plus bias[oc * bias_stride] (bias may be null), clamped to
// [lo, hi] as it is stored (NaN kept, as simd::clamp; infinite bounds for
// none). The geometry must pass has_fast_path and selected.
Error run_float(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias,
                int64_t bias_stride, float lo, float hi, float* y);

// Channels-last: y [batch, out_h, out_w, C] = depthwise conv of x [batch,
// height, width, C] (NHWC memory order, both contiguous in it) with w [K,
// K, C] (HWIO: per tap, every channel's weight; pare/packing.py lays it
// out) plus bias[C] (may be null), clamped as run_float does; in_channels
// == out_channels. Vectors run across kLanes channels, so every output
// pixel is a few loads and multiply-adds per tap whatever the plane's size
// (the small planes of a network's last stages, where rows of the NCHW
// kernel are mostly empty). Padding taps are skipped, and the taps are
// summed in the generic loop's order (bias, then ky, kx). Output rows are
// split over the method's threads.
Error run_float_nhwc(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias, float lo,
                     float hi, float* y);

// The vector loops each ISA's copy of depthwise_kernels.inc defines: this
// build's (PARE_SIMD_ISA, simd.h) and, at --//runtime:x86_64_isa=auto
// (PARE_X86_64_DISPATCH), the x86-64-v3 copy (kernels_x86_64_v3.cc) and
// the AVX-512 copy of plane (depthwise_x86_64_v4.cc).
// depthwise.cc chooses between them (cpu::kernel_isa()).
//
// plane<K, S>: one output plane [out_h, out_w] of a K x K kernel `wk` (K
// * K floats; K = 0: the size `k` given at run time, 5 or 7) at stride S
// over a zero-bordered input plane (rows padded_w apart) plus bias b,
// clamped to [lo, hi]. Instantiated for <3, 1>, <3, 2>, <0, 1> and <0, 2>;
// depthwise.cc takes a variant's address only where its tag is selected.
// The padded plane (depthwise.cc) is sized for the widest vectors of any
// copy, the x86-64-v3 copy's 8 lanes at level auto where depthwise.cc
// itself is SSE2's 4: each copy checks its own lanes against it
// (depthwise_kernels.inc), or it would read past the plane.
constexpr int64_t kWidestLanes = 8;
using PlaneFn = void (*)(const float* padded, int64_t padded_w, const float* wk, int64_t k, float b, float lo, float hi,
                         float* out, int64_t out_h, int64_t out_w);
// nhwc_rows: output rows [begin, end) of run_float_nhwc (a row: one
// image's output row, batch * out_h of them).
using NhwcRowsFn = void (*)(const Geometry& g, const float* x, const float* w, const float* bias, float lo, float hi,
                            float* y, int64_t begin, int64_t end);
namespace PARE_SIMD_ISA {
template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* wk, int64_t k, float b, float lo, float hi, float* out,
           int64_t out_h, int64_t out_w);
void nhwc_rows(const Geometry& g, const float* x, const float* w, const float* bias, float lo, float hi, float* y,
               int64_t begin, int64_t end);
}  // namespace PARE_SIMD_ISA
#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v3 {
template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* wk, int64_t k, float b, float lo, float hi, float* out,
           int64_t out_h, int64_t out_w);
void nhwc_rows(const Geometry& g, const float* x, const float* w, const float* bias, float lo, float hi, float* y,
               int64_t begin, int64_t end);
}  // namespace x86_64_v3
// The AVX-512 copy of the loops, the same four variants
// (depthwise_x86_64_v4.cc): 16 lanes, four output rows at a time.
namespace x86_64_v4 {
template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* wk, int64_t k, float b, float lo, float hi, float* out,
           int64_t out_h, int64_t out_w);
}  // namespace x86_64_v4
#endif

}  // namespace depthwise
}  // namespace pare
