#pragma once
// The one convolution plan, shared by every convolution entry point
// (aten::convolution in nn/convolution.cc, pare::conv2d_prepacked in
// prepacked/, pare::qconv2d_prepacked in quantized/ (int8), and the
// delegated convolutions to come): a layer's
// geometry, the output-size check, the layout of its weights and the choice
// of algorithm are computed here once, and each entry point runs the
// algorithm the plan names (runtime/kernels/README.md, "Convolution: one plan").
//
// Every case is viewed as 2-d over NCHW planes (a 1-d convolution is a 2-d
// one of height 1; a 3-d one folds its temporal taps into channels and runs
// 2-d over one slab per output frame). A new entry point fills a Geometry
// from its arguments (the kernel, stride, padding, dilation and groups, and
// the input's sizes), calls plan_output() for a 1-d or 2-d output size, and
// choose() (weights as given) or choose_packed() (weights the exporter
// packed) for the algorithm; a new algorithm is a new Algorithm value and
// a test in the plan, never a second copy of the geometry.

#include "runtime/kernels/common/depthwise.h"
#include "runtime/kernels/common/gemm.h"
#include "runtime/kernels/common/im2col.h"
#include "runtime/registry/dispatch.h"

namespace pare {
namespace conv {

// A convolution's output length along one dim: (in + 2 pad - dilation
// (kernel - 1) - 1) / stride + 1. False when the dilated kernel is larger
// than the padded input, or on overflow. Callers pass kernel, stride,
// dilation >= 1 and 0 <= pad <= 2^30. (Pooling's windows, with ceil_mode,
// are nn::window_output_size.)
PARE_ALWAYS_INLINE bool output_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                                      int64_t* out) {
  int64_t span = 0;    // dilation (kernel - 1)
  int64_t padded = 0;  // in + 2 pad
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) || __builtin_add_overflow(in, 2 * pad, &padded) ||
      padded <= span) {
    return false;
  }
  *out = (padded - span - 1) / stride + 1;
  return true;
}

// Range [lo, hi) of output positions o with 0 <= o * stride + offset < size:
// the outputs a kernel tap at `offset` reads inside the input (or, for a
// transposed convolution, writes inside the output).
PARE_ALWAYS_INLINE void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count, int64_t* lo,
                                    int64_t* hi) {
  int64_t first = 0;
  if (offset < 0) first = (-offset + stride - 1) / stride;
  int64_t last = 0;  // one past
  if (offset <= size - 1) last = (size - 1 - offset) / stride + 1;
  if (last > count) last = count;
  *lo = first;
  *hi = last > first ? last : first;
}

// A 2-d convolution over contiguous NCHW data: output channel o of group
// o / og reads input channels [grp * cg, (grp + 1) * cg).
struct Geometry {
  int64_t batch;
  int64_t in_channels;
  int64_t out_channels;
  int64_t groups;
  int64_t cg;  // input channels per group
  int64_t og;  // output channels per group
  int64_t height, width, out_h, out_w;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;

  // The 2-d window: a kh x kw kernel, and (height, width) pairs of stride,
  // padding and dilation (a 3-d convolution passes its arrays' last two).
  void set_window(int64_t kernel_h, int64_t kernel_w, const int64_t* stride, const int64_t* padding,
                  const int64_t* dilation) {
    kh = kernel_h;
    kw = kernel_w;
    sh = stride[0];
    sw = stride[1];
    ph = padding[0];
    pw = padding[1];
    dh = dilation[0];
    dw = dilation[1];
  }

  int64_t k() const { return cg * kh * kw; }  // the GEMM's depth: one output's taps
  int64_t planes_in() const { return height * width; }
  int64_t planes_out() const { return out_h * out_w; }
  // A 1x1 kernel, stride 1, no padding: the image itself is the GEMM's
  // operand (no im2col).
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
  // Where image n's group grp starts in the input, and its output.
  int64_t group_input(int64_t n, int64_t grp) const { return (n * in_channels + grp * cg) * planes_in(); }
  int64_t group_output(int64_t n, int64_t grp) const { return (n * out_channels + grp * og) * planes_out(); }
  gemm::Im2ColGeometry im2col() const { return {height, width, out_w, kh, kw, sh, sw, ph, pw, dh, dw}; }
  // As the depthwise kernels take it (square kernel, equal strides: their
  // fast path's condition, depthwise::has_fast_path).
  depthwise::Geometry depthwise() const {
    return {batch, in_channels, out_channels, height, width, out_h, out_w, kh, sh, ph, pw};
  }
};

// A 2-d convolution layer's shape, as the packed-weights objects keep it
// (prepacked/packed_params.h, quantized/qpacked_params.h).
struct Layer2d {
  int64_t out_channels = 0;
  int64_t in_channels = 0;
  int64_t groups = 1;
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};

  // The layer's geometry for an input of sizes [batch, in_channels,
  // height, width] (output size not yet planned: plan_output).
  Geometry geometry(int64_t batch, int64_t height, int64_t width) const {
    Geometry g{};
    g.batch = batch;
    g.in_channels = in_channels;
    g.out_channels = out_channels;
    g.groups = groups;
    g.cg = in_channels / groups;
    g.og = out_channels / groups;
    g.height = height;
    g.width = width;
    g.set_window(kernel[0], kernel[1], stride, padding, dilation);
    return g;
  }
};

// The InvalidShape error of plan_output, naming the input's sizes and the
// weight's ([out_channels, cg, kh, kw], or [out_channels, cg, kw] when
// weight_dim is 3: a 1-d convolution).
PARE_COLD Error output_too_small(KernelContext& ctx, const Geometry& g, IntArrayRef input_sizes, size_t weight_dim);

// Sets g->out_h and g->out_w from the other fields, or fails with
// InvalidShape when the dilated kernel is larger than the padded input.
// Inline, so the caller's geometry stays in registers.
PARE_ALWAYS_INLINE Error plan_output(KernelContext& ctx, Geometry* g, IntArrayRef input_sizes, size_t weight_dim) {
  if (PARE_LIKELY(output_extent(g->height, g->kh, g->sh, g->ph, g->dh, &g->out_h) &&
                  output_extent(g->width, g->kw, g->sw, g->pw, g->dw, &g->out_w))) {
    return Error::Ok;
  }
  return output_too_small(ctx, *g, input_sizes, weight_dim);
}

// How a layer's weights are laid out. aten::convolution receives them
// [out_channels, in_channels / groups, kh, kw] (AsGiven); the exporter
// packs a prepacked layer's ahead of time (pare/packing.py,
// docs/program_format.md "Prepacked weights") in the layout of the
// algorithm it runs, and says which in the program (pare::conv2d_prepack's
// `layout`, its codes these enumerators, from program_format.def):
// - AsGiven: OIHW; a prepacked layer's only for the direct depthwise kernel;
// - DepthwiseHwio: [kh, kw, 1, out_channels], a depthwise layer for the
//   channels-last kernel;
// - GemmA: per group [og, k] packed as the GEMM's A (gemm::prepack_a);
// - Winograd2: per group the 16 F(2x2, 3x3) matrices U [og, cg], each
//   packed as A (winograd.h); Winograd4: the 36 of F(4x4, 3x3);
// - PixelRows: per group W^T [k, og] packed as the GEMM's B (gemm.h,
//   pixel_rows).
enum class WeightLayout : uint8_t {
#define PARE_WEIGHT_LAYOUT(enumerator, python_name, code, display_name) enumerator = code,
#include "runtime/core/program_format.def"
};
constexpr int64_t kNumWeightLayouts = 0
#define PARE_WEIGHT_LAYOUT(enumerator, python_name, code, display_name) +1
#include "runtime/core/program_format.def"
    ;

// The float algorithms.
enum class Algorithm : uint8_t {
  Depthwise,              // direct kernel over NCHW planes (depthwise.h, or the generic loop)
  DepthwiseChannelsLast,  // direct kernel over NHWC (depthwise::run_float_nhwc)
  Winograd2,              // F(2x2, 3x3)
  Winograd4,              // F(4x4, 3x3)
  PixelRows,              // C^T = X^T W^T, the pixels as rows (gemm::pixel_rows)
  NarrowGemm,             // a 1x1 over 1 to 4 pixels (gemm::sgemm_narrow)
  Gemm,                   // the blocked GEMM, B the image (pointwise) or its im2col panels
};

// The algorithm of a float layer whose weights need no packing ahead of
// time: the narrow GEMM for a 1x1 over 1 to 4 pixels when the build selects
// it, else the blocked GEMM.
PARE_ALWAYS_INLINE Algorithm gemm_algorithm(const Geometry& g) {
  if constexpr (fast_path_compiled<tags::gemm_narrow_kernel, float>()) {
    if (g.pointwise() && g.planes_out() <= gemm::kNarrowN && fast_path_selected<tags::gemm_narrow_kernel, float>()) {
      return Algorithm::NarrowGemm;
    }
  }
  return Algorithm::Gemm;
}

// The algorithm a float layer of geometry g runs on weights as given
// (aten::convolution): depthwise with one input channel per group, pixel
// rows over a 1x1's 5 to 12 pixels (W^T read from the weights as they
// are), else gemm_algorithm(). Fast paths the build does not select fall
// through to the GEMM (link-time constants, so a runtime without them has
// no code for them).
PARE_ALWAYS_INLINE Algorithm choose(const Geometry& g) {
  if (g.cg == 1) return Algorithm::Depthwise;
  if constexpr (fast_path_compiled<tags::pixel_rows_kernel, float>()) {
    if (g.pointwise() && gemm::pixel_rows_pay(g.planes_out()) && fast_path_selected<tags::pixel_rows_kernel, float>()) {
      return Algorithm::PixelRows;
    }
  }
  return gemm_algorithm(g);
}

// The algorithm a float layer of geometry g runs on weights the exporter
// packed in `layout`: the layout names it (the exporter chose it), except
// that weights packed as the GEMM's A run gemm_algorithm().
PARE_ALWAYS_INLINE Algorithm choose_packed(const Geometry& g, WeightLayout layout) {
  // Tests, not a switch: a switch may become a jump table, which costs
  // every runtime its relocations.
  if (layout == WeightLayout::AsGiven) return Algorithm::Depthwise;
  if (layout == WeightLayout::DepthwiseHwio) return Algorithm::DepthwiseChannelsLast;
  if (layout == WeightLayout::Winograd2) return Algorithm::Winograd2;
  if (layout == WeightLayout::Winograd4) return Algorithm::Winograd4;
  if (layout == WeightLayout::PixelRows) return Algorithm::PixelRows;
  return gemm_algorithm(g);
}

// The int8 algorithms (quantized/qconv.cc, pare::qconv2d_prepacked), over
// the same geometry: the direct kernel for one input channel per group
// (depthwise, any channel multiplier), the image itself as the int8 GEMM's
// operand for a pointwise layer, else per (image, group) the im2col matrix
// [pixels, k] of the int8 input (padding reads as the input zero point) in
// scratch, then the GEMM. Weights as given (layout AsGiven) for all three.
enum class Int8Algorithm : uint8_t {
  Depthwise,          // direct kernel over NCHW planes
  DepthwiseChannels,  // across 16 channels of an output pixel, small planes (x86_64 VNNI or AVX2; else Depthwise)
  PointwiseGemm,      // a 1x1, stride 1, unpadded layer: the image [cg, H*W] as it is
  Im2colGemm,         // channel-major im2col [k, pixels], then the same GEMM
};

// A depthwise layer (channel multiplier 1, 16 channels or more) across
// channels where its planes are small: outputs up to 14x14 (inputs up to
// 28x28), whose per-plane work (qgemm::depthwise_plane) costs more than
// their taps. A 28x28 stride 1 plane is faster per plane (docs/
// quantization.md, "Int8 depthwise across channels").
constexpr int64_t kDepthwiseChannelsMaxInputs = 28 * 28;
constexpr int64_t kDepthwiseChannelsMaxOutputs = 14 * 14;

PARE_ALWAYS_INLINE Int8Algorithm choose_int8(const Geometry& g) {
  if (g.cg == 1) {
    const bool small = g.og == 1 && g.out_channels >= 16 && g.planes_in() <= kDepthwiseChannelsMaxInputs &&
                       g.planes_out() <= kDepthwiseChannelsMaxOutputs;
    return small ? Int8Algorithm::DepthwiseChannels : Int8Algorithm::Depthwise;
  }
  if (g.pointwise()) return Int8Algorithm::PointwiseGemm;
  return Int8Algorithm::Im2colGemm;
}

}  // namespace conv
}  // namespace pare
