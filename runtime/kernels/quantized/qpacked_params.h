#pragma once
// Custom classes of the int8 layers: pare::classes::QConv2dPackedParams and
// pare::classes::QLinearPackedParams.
//
// The exporter computes each layer's requantization constants
// (pare/quantized_packing.py: an int32 zero-point correction, a float32
// multiplier and offset per output channel) and writes them, with the int8
// weights, as the program's constants; the method's init section calls
// pare::qconv2d_prepack / pare::qlinear_prepack on them, which check dtypes
// and sizes and keep pointers (the weights are used in place, as
// Conv2dPackedParams does). The body passes the object to
// pare::qconv2d_prepacked / pare::qlinear_prepacked with the output range:
//
//   acc = sum_k x[k] w[c, k] + correction[c]                      (int32)
//   out = clamp(round_half_even(float(acc) multiplier[c] + offset[c]),
//               output_min, output_max)                            (int8)
//
// where a convolution's padding reads as input_zero_point (qgemm.h).
// Every use of the classes is gated on their selection (selective_class_),
// and the kernels run under the tags qconv2d_kernel / qlinear_kernel
// (dtype Char), so a runtime that selects neither carries none of their code.

#include "runtime/registry/kernel.h"
#include "runtime/registry/selection.h"
#include "runtime/kernels/common/conv_plan.h"

namespace pare {
namespace classes {

// What both int8 layers keep: per output channel constants, by pointer.
struct Requantization {
  const int32_t* correction = nullptr;  // Int [out_channels]
  const float* multiplier = nullptr;    // Float [out_channels]
  const float* offset = nullptr;        // Float [out_channels]

  // Checks the three tensors (dtype, one contiguous entry per output
  // channel) and keeps their data.
  Error init(KernelContext& ctx, const Tensor& correction, const Tensor& multiplier, const Tensor& offset,
             int64_t out_channels);
};

// output_min <= output_max, both within int8; one-line error otherwise.
Error check_output_range(KernelContext& ctx, int64_t output_min, int64_t output_max);

class QConv2dPackedParams : public ObjectBase, public conv::Layer2d {
 public:
  static constexpr char kName[] = "QConv2dPackedParams";
  static constexpr ClassId kId = ClassId::QConv2dPackedParams;

  // weight Char [out_channels, in_channels / groups, kh, kw], contiguous,
  // in layout `layout` (conv::WeightLayout; AsGiven is the only one
  // accepted); the requantization constants [out_channels].
  Error init(KernelContext& ctx, const Tensor& weight, const Tensor& correction, const Tensor& multiplier,
             const Tensor& offset, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
             int64_t layout, int64_t input_zero_point);
  // input Char [N, C, H, W] (or [C, H, W]) -> out Char [N, O, OH, OW].
  Error run(KernelContext& ctx, const Tensor& input, Value& out, int32_t output_min, int32_t output_max) const;

  // The layer's shape and geometry(): conv::Layer2d.
  int32_t input_zero_point = 0;    // what padding reads
  const int8_t* weight = nullptr;  // [out_channels, in_channels / groups, kh, kw]
  Requantization requantization;
  // Each group's weights as qgemm::pack_columns lays them out, made at
  // init in the method's persistent memory (packed_group_bytes apart), or
  // nullptr when this machine's GEMM reads `weight` as it is (or the layer
  // is depthwise); packing: qgemm::columns_packing() then, which a call
  // checks (a copy chosen under a later ISA cap reads another layout).
  const uint8_t* packed = nullptr;
  int64_t packed_group_bytes = 0;
  int32_t packing = 0;
  // A depthwise layer's filters as qgemm::pack_depthwise_channels lays
  // them out (x86_64 with VNNI at init), or nullptr.
  const void* depthwise_packed = nullptr;
};

class QLinearPackedParams : public ObjectBase {
 public:
  static constexpr char kName[] = "QLinearPackedParams";
  static constexpr ClassId kId = ClassId::QLinearPackedParams;

  // weight Char [out_features, in_features], contiguous; the
  // requantization constants [out_features].
  Error init(KernelContext& ctx, const Tensor& weight, const Tensor& correction, const Tensor& multiplier,
             const Tensor& offset);
  // input Char [..., in_features] -> out Char [..., out_features].
  Error run(KernelContext& ctx, const Tensor& input, Value& out, int32_t output_min, int32_t output_max) const;

  int64_t in_features = 0;
  int64_t out_features = 0;
  const int8_t* weight = nullptr;
  Requantization requantization;
};

}  // namespace classes

inline constexpr auto kQConv2dPackedParamsClass = selective_class_<classes::QConv2dPackedParams>("QConv2dPackedParams");
inline constexpr auto kQLinearPackedParamsClass = selective_class_<classes::QLinearPackedParams>("QLinearPackedParams");

}  // namespace pare
