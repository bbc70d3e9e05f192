#pragma once
// Custom classes holding weights prepacked for the float GEMM
// (common/gemm.h): pare::classes::LinearPackedParams and
// pare::classes::Conv2dPackedParams.
//
// How a program uses them (docs/program_format.md, "Objects" and "Prepacked
// weights"): the exporter packs each layer's weights ahead of time into the
// layout the GEMM reads (pare/packing.py), stored as the program's
// constants; the method's init section calls pare::linear_prepack /
// pare::conv2d_prepack on them, which validates the sizes and keeps
// pointers: the weights are used in place from the loaded program, never
// copied, and the objects take a few dozen bytes of the instance's
// persistent memory. The body passes the object to pare::linear_prepacked /
// pare::conv2d_prepacked. For linear layers at small batch sizes packing W
// per call is as much work as the product itself, so the prepacked op is
// about twice as fast as aten::addmm; for convolutions the packed weights
// are read panel by panel and the input is packed straight from the image
// (no im2col buffer).
//
// Every use of the classes is gated on their selection (selective_class_),
// so a build that does not select a class contains none of its code.

#include "runtime/registry/kernel.h"
#include "runtime/registry/selection.h"
#include "runtime/kernels/common/conv_plan.h"
#include "runtime/kernels/common/simd.h"

namespace pare {
namespace classes {

// An output clamp fused into a prepacked op (pare::*_prepacked's optional
// output_min / output_max): relu is [0, inf], relu6 [0, 6], hardtanh and
// clamp their bounds. NaN stays NaN, as in the ops it replaces.
struct Clamp {
  float min = -__builtin_inff();
  float max = __builtin_inff();
  bool active() const { return simd::bounded(min, max); }
  void apply(float* data, int64_t n) const;
};

// An activation fused into a prepacked op (its optional `activation`
// argument), with the formula of the aten:: op it replaces
// (common/activation.h).
enum class Activation : uint8_t { None, Hardswish, Hardsigmoid, Sigmoid, Silu, Gelu, GeluTanh };

// What a prepacked op does to its output after the product: out =
// activation(clamp(out + residual)), for a convolution per (image, group)
// right after that group's GEMM, for a linear layer over its whole output
// after the GEMM (no extra operator, dispatch or output tensor either way;
// elementwise, so the same for a channels-last output).
// The GEMMs add the residual and apply the clamp as they store their
// output, and the other products the clamp when there is no residual
// (product_clamp(), gemm::Output): what is left is after_product(). The residual (a fused `add`, e.g. a ResNet
// or MobileNetV2 shortcut) has the output's sizes and is read in its memory order. The residual add and each activation
// run under kernel tags of their own (prepacked_residual_kernel, prepacked_<activation>_kernel), so only the epilogues
// a model uses are compiled into its runtime; an unselected one fails with the not-selected error.
struct Epilogue {
  // Whether the build selects any fused activation:
  // a runtime that selects none has no epilogue code beyond the clamp (and
  // rejects a program that asks for one, naming what is not selected).
  // (Link-time constants, selection.h.)
  static bool any_activation() {
    return kernel_dtype_selected(TagId::prepacked_hardswish_kernel, ScalarType::Float) ||
           kernel_dtype_selected(TagId::prepacked_hardsigmoid_kernel, ScalarType::Float) ||
           kernel_dtype_selected(TagId::prepacked_sigmoid_kernel, ScalarType::Float) ||
           kernel_dtype_selected(TagId::prepacked_silu_kernel, ScalarType::Float) ||
           kernel_dtype_selected(TagId::prepacked_gelu_kernel, ScalarType::Float) ||
           kernel_dtype_selected(TagId::prepacked_gelu_tanh_kernel, ScalarType::Float);
  }

  Clamp clamp;
  Activation activation = Activation::None;
  const Tensor* residual = nullptr;

  // The clamp a product applies as it stores its output (gemm::Output):
  // the epilogue's clamp when nothing comes before it, or when the product
  // also adds the residual (`adds_residual`: the GEMMs do); else none.
  Clamp product_clamp(bool adds_residual) const { return residual == nullptr || adds_residual ? clamp : Clamp{}; }
  // The epilogue left for after a product that applied product_clamp()
  // (and the residual, when it adds it: then apply it with no residual).
  Epilogue after_product(bool adds_residual) const {
    Epilogue rest = *this;
    if (residual == nullptr || adds_residual) rest.clamp = Clamp{};
    return rest;
  }

  // The residual as floats in `out`'s memory order (contiguous or
  // channels-last) with its sizes (null without one); InvalidShape when
  // its sizes differ.
  Result<const float*> residual_data(KernelContext& ctx, const Tensor& out) const;
  // out[0, n) = activation(clamp(out[0, n) + residual[0, n))), residual
  // null for none; split over the method's threads when large (build
  // feature threads: elementwise, so the same bits for any split).
  Error apply(KernelContext& ctx, float* out, const float* residual, int64_t n) const;

 private:
  Error apply_range(KernelContext& ctx, float* out, const float* residual, int64_t n) const;
};

class LinearPackedParams : public ObjectBase {
 public:
  static constexpr char kName[] = "LinearPackedParams";
  static constexpr ClassId kId = ClassId::LinearPackedParams;

  // packed: W [out_features, in_features] transposed and packed as the
  // GEMM's B (gemm::packed_b_size floats); bias [out_features] or null.
  // Both float, contiguous, and kept by pointer.
  Error init(KernelContext& ctx, const Tensor& packed, const Tensor* bias, int64_t in_features, int64_t out_features);
  // input [..., in_features] -> out [..., out_features], then `epilogue`.
  Error run(KernelContext& ctx, const Tensor& input, Value& out, const Epilogue& epilogue) const;

  int64_t in_features = 0;
  int64_t out_features = 0;
  const float* packed_weight = nullptr;  // W^T in the packed B layout (gemm.h)
  const float* bias = nullptr;
};

class Conv2dPackedParams : public ObjectBase, public conv::Layer2d {
 public:
  static constexpr char kName[] = "Conv2dPackedParams";
  static constexpr ClassId kId = ClassId::Conv2dPackedParams;

  // weight_sizes [out_channels, in_channels / groups, kh, kw]; weight is
  // in the packed layout `layout` names (a conv::WeightLayout code, from
  // the program: common/conv_plan.h), which init checks against the
  // layer and the weight's sizes:
  // - GemmA, 1-D: run as im2col GEMMs (groups x gemm::packed_a_size floats);
  // - Winograd2, 2-D [groups x 16, gemm::packed_a_size(og, cg)]: a 3x3,
  //   stride 1, undilated convolution's filters transformed for Winograd
  //   F(2x2, 3x3) (winograd.h); Winograd4, [groups x 36, ...]: F(4x4, 3x3);
  // - PixelRows, 3-D [groups, in_channels / groups x kh x kw, round_up(og,
  //   gemm::kPadCols)]: a convolution over few pixels, per group W^T [k,
  //   og] packed as the GEMM's B (the image itself as A for a 1x1, stride
  //   1, unpadded kernel, its im2col matrix otherwise);
  // - AsGiven, 4-D as weight_sizes: a depthwise convolution for the direct
  //   kernel (depthwise::has_fast_path); DepthwiseHwio, 4-D [K, K, 1, C]:
  //   the same for the channels-last kernel (depthwise.h, run_float_nhwc),
  //   whatever the input's layout (the output is channels-last).
  // bias [out_channels] or null. Float, contiguous, kept by pointer.
  Error init(KernelContext& ctx, const Tensor& weight, const Tensor* bias, IntArrayRef stride, IntArrayRef padding,
             IntArrayRef dilation, int64_t groups, IntArrayRef weight_sizes, int64_t layout);
  // input [N, C, H, W] (or [C, H, W]) -> out [N, O, OH, OW], then `epilogue`.
  // Channels-last (NHWC) when the layer runs so: HWIO depthwise weights, or
  // a 1x1 layer's pixel rows on a channels-last input (a residual is read in the
  // output's memory order); NCHW otherwise.
  Error run(KernelContext& ctx, const Tensor& input, Value& out, const Epilogue& epilogue) const;

  // Whether run() computes in channels-last (NHWC) order for this input.
  bool runs_channels_last(const Tensor& input) const;
  // The layer's shape and geometry(): conv::Layer2d.
  // The weights in `layout` (a depthwise layer's AsGiven weights are
  // [out_channels, 1, K, K] as given).
  const float* packed_weight = nullptr;
  const float* bias = nullptr;
  conv::WeightLayout layout = conv::WeightLayout::GemmA;

 private:
  // run() in channels-last order (runs_channels_last), for the layer's
  // dimensions `dims` (conv::Geometry::depthwise()).
  Error run_channels_last(KernelContext& ctx, const Tensor& input, const depthwise::Geometry& dims, Tensor& result,
                          const Epilogue& epilogue) const;
};

}  // namespace classes

inline constexpr auto kLinearPackedParamsClass = selective_class_<classes::LinearPackedParams>("LinearPackedParams");
inline constexpr auto kConv2dPackedParamsClass = selective_class_<classes::Conv2dPackedParams>("Conv2dPackedParams");

}  // namespace pare
