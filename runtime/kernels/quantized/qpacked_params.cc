// pare::qconv2d_prepack / qconv2d_prepacked / qlinear_prepack /
// qlinear_prepacked, and the init checks of their classes
// (qpacked_params.h). run() is in qconv.cc and qlinear.cc.
//
// As for the float prepacked ops: each op body runs only when its class is
// selected (a link-time constant), so a build without the class keeps the
// op's name but none of the class's code.

#include "runtime/kernels/quantized/qpacked_params.h"

#include "runtime/core/format.h"
#include "runtime/kernels/quantized/qgemm.h"
#include "runtime/registry/dispatch.h"

namespace pare {
namespace classes {
namespace {

// Dimensions of a layer: positive (out_channels may be 0) and small enough
// that every size computed from them fits in int64.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
bool valid_dimension(int64_t v, int64_t min = 1) { return v >= min && v <= kMaxDimension; }

const char kReexport[] = "; re-export the program with this version of tools.tracer";

Error check_channel_tensor(KernelContext& ctx, const Tensor& t, ScalarType dtype, int64_t n, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, t.dtype == dtype && t.dim == 1 && t.sizes[0] == n && t.is_contiguous(),
                       Error::InvalidArgument,
                       "argument '%s' must be a contiguous %s tensor of sizes [%lld] (one per output channel), got "
                       "%s %s%s",
                       name, to_string(dtype), static_cast<long long>(n), to_string(t.dtype),
                       sizes_to_string(t.size_span()).text, kReexport);
  return Error::Ok;
}

// Every value of a Float requantization constant finite: the kernels'
// clamps take a NaN to output_min in vectors and to 0 in scalar code, so
// an infinite multiplier (scales whose ratio overflows float32) or a NaN
// offset would give different bytes on different machines.
Error check_finite(KernelContext& ctx, const Tensor& t, const char* name) {
  const float* v = t.data_as<float>();
  for (int64_t c = 0; c < t.sizes[0]; ++c) {
    PARE_CHECK_OR_RETURN(ctx, v[c] - v[c] == 0.0f, Error::InvalidArgument,
                         "argument '%s' is %s at output channel %lld: the layer's scales or bias overflow float32; "
                         "recalibrate the model or leave this layer float (the quantize pass's blocklist)",
                         name, v[c] != v[c] ? "NaN" : (v[c] > 0 ? "+inf" : "-inf"), static_cast<long long>(c));
  }
  return Error::Ok;
}

Error check_int8_weight(KernelContext& ctx, const Tensor& weight, size_t dim, const char* what) {
  PARE_CHECK_OR_RETURN(ctx, weight.dtype == ScalarType::Char && weight.dim == dim && weight.is_contiguous(),
                       Error::InvalidArgument,
                       "argument 'weight' must be a contiguous %zu-D Char (int8) tensor %s, "
                       "got %s %s%s",
                       dim, what, to_string(weight.dtype), sizes_to_string(weight.size_span()).text, kReexport);
  return Error::Ok;
}

}  // namespace

Error Requantization::init(KernelContext& ctx, const Tensor& correction_t, const Tensor& multiplier_t,
                           const Tensor& offset_t, int64_t out_channels) {
  PARE_TRY(check_channel_tensor(ctx, correction_t, ScalarType::Int, out_channels, "correction"));
  PARE_TRY(check_channel_tensor(ctx, multiplier_t, ScalarType::Float, out_channels, "multiplier"));
  PARE_TRY(check_channel_tensor(ctx, offset_t, ScalarType::Float, out_channels, "offset"));
  PARE_TRY(check_finite(ctx, multiplier_t, "multiplier"));
  PARE_TRY(check_finite(ctx, offset_t, "offset"));
  correction = correction_t.data_as<int32_t>();
  multiplier = multiplier_t.data_as<float>();
  offset = offset_t.data_as<float>();
  return Error::Ok;
}

Error check_output_range(KernelContext& ctx, int64_t output_min, int64_t output_max) {
  PARE_CHECK_OR_RETURN(ctx, -128 <= output_min && output_min <= output_max && output_max <= 127, Error::InvalidArgument,
                       "output_min = %lld and output_max = %lld must satisfy -128 <= output_min <= output_max <= 127",
                       static_cast<long long>(output_min), static_cast<long long>(output_max));
  return Error::Ok;
}

Error QConv2dPackedParams::init(KernelContext& ctx, const Tensor& weight_t, const Tensor& correction,
                                const Tensor& multiplier, const Tensor& offset, IntArrayRef stride_arg,
                                IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups_arg,
                                int64_t layout_code, int64_t zero_point) {
  PARE_CHECK_OR_RETURN(ctx, layout_code == static_cast<int64_t>(conv::WeightLayout::AsGiven), Error::InvalidArgument,
                       "argument 'layout' = %lld is not a layout of int8 weights this runtime takes (only 0, as "
                       "given)%s",
                       static_cast<long long>(layout_code), kReexport);
  PARE_CHECK_OR_RETURN(ctx, stride_arg.size() == 2 && padding_arg.size() == 2 && dilation_arg.size() == 2,
                       Error::InvalidArgument, "stride, padding and dilation must each have 2 elements");
  PARE_TRY(check_int8_weight(ctx, weight_t, 4, "[out_channels, in_channels / groups, kh, kw]"));
  for (size_t i = 0; i < 4; ++i) {
    PARE_CHECK_OR_RETURN(ctx, valid_dimension(weight_t.sizes[i], i == 0 ? 0 : 1), Error::InvalidArgument,
                         "argument 'weight' of sizes %s: out_channels must be in [0, 2^24] and the others in [1, 2^24]",
                         sizes_to_string(weight_t.size_span()).text);
  }
  PARE_CHECK_OR_RETURN(ctx, groups_arg >= 1 && weight_t.sizes[0] % groups_arg == 0, Error::InvalidArgument,
                       "argument 'groups' = %lld must be positive and divide out_channels = %lld",
                       static_cast<long long>(groups_arg), static_cast<long long>(weight_t.sizes[0]));
  for (size_t i = 0; i < 2; ++i) {
    PARE_CHECK_OR_RETURN(ctx,
                         stride_arg[i] >= 1 && stride_arg[i] <= kMaxDimension && dilation_arg[i] >= 1 &&
                             dilation_arg[i] <= kMaxDimension && padding_arg[i] >= 0 && padding_arg[i] <= kMaxDimension,
                         Error::InvalidArgument,
                         "stride and dilation must be in [1, 2^24] and padding in [0, 2^24], got %lld, %lld, %lld",
                         static_cast<long long>(stride_arg[i]), static_cast<long long>(dilation_arg[i]),
                         static_cast<long long>(padding_arg[i]));
    stride[i] = stride_arg[i];
    padding[i] = padding_arg[i];
    dilation[i] = dilation_arg[i];
    kernel[i] = weight_t.sizes[2 + i];
  }
  PARE_CHECK_OR_RETURN(ctx, -128 <= zero_point && zero_point <= 127, Error::InvalidArgument,
                       "argument 'input_zero_point' = %lld must be within int8's [-128, 127]",
                       static_cast<long long>(zero_point));
  groups = groups_arg;
  out_channels = weight_t.sizes[0];
  const int64_t cg = weight_t.sizes[1];
  int64_t k = 0;  // the reduction's depth: cg kh kw (kh kw < 2^48, no overflow)
  PARE_CHECK_OR_RETURN(ctx,
                       !__builtin_mul_overflow(groups, cg, &in_channels) && in_channels <= kMaxDimension &&
                           !__builtin_mul_overflow(cg, kernel[0] * kernel[1], &k) && k <= kernels::qgemm::kMaxDepth,
                       Error::InvalidArgument,
                       "argument 'weight' of sizes %s with groups = %lld: a reduction deeper than 2^16 taps (or more "
                       "than 2^24 input channels) would overflow the int32 accumulator",
                       sizes_to_string(weight_t.size_span()).text, static_cast<long long>(groups));
  input_zero_point = static_cast<int32_t>(zero_point);
  weight = weight_t.data_as<int8_t>();
  PARE_TRY(requantization.init(ctx, correction, multiplier, offset, out_channels));
  // The GEMM's layout of the weights, once (qgemm.h's pack_columns).
  const int64_t og = out_channels / groups;
  packed_group_bytes = cg == 1 ? 0 : kernels::qgemm::columns_packed_bytes(og, k);
  if (packed_group_bytes > 0 && out_channels > 0) {
    PARE_TRY_ASSIGN(void* memory,
                    ctx.allocate_persistent(static_cast<size_t>(packed_group_bytes * groups), alignof(int32_t)));
    uint8_t* bytes = static_cast<uint8_t*>(memory);
    for (int64_t grp = 0; grp < groups; ++grp) {
      kernels::qgemm::pack_columns(og, k, weight + grp * og * k, bytes + grp * packed_group_bytes);
    }
    packed = bytes;
    packing = kernels::qgemm::columns_packing();
  }
#if defined(PARE_X86_64_DISPATCH)
  // A depthwise layer's filters as the layer across channels reads them
  // (qgemm.h), once: laid out per call, 16 channels' 3x3 filters cost a
  // fifth of a 7x7 layer.
  const int64_t filter_bytes =
      cg == 1 && og == 1 ? kernels::qgemm::depthwise_channels_packed_bytes(out_channels, kernel[0], kernel[1]) : 0;
  if (filter_bytes > 0) {
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_persistent(static_cast<size_t>(filter_bytes), 64));
    kernels::qgemm::pack_depthwise_channels(out_channels, kernel[0], kernel[1], weight, memory);
    depthwise_packed = memory;
  }
#endif
  return Error::Ok;
}

Error QLinearPackedParams::init(KernelContext& ctx, const Tensor& weight_t, const Tensor& correction,
                                const Tensor& multiplier, const Tensor& offset) {
  PARE_TRY(check_int8_weight(ctx, weight_t, 2, "[out_features, in_features]"));
  PARE_CHECK_OR_RETURN(ctx, valid_dimension(weight_t.sizes[0], 0) && weight_t.sizes[1] <= kernels::qgemm::kMaxDepth,
                       Error::InvalidArgument,
                       "argument 'weight' of sizes %s: out_features must be in [0, 2^24] and in_features at most "
                       "2^16 (a deeper reduction would overflow the int32 accumulator)",
                       sizes_to_string(weight_t.size_span()).text);
  out_features = weight_t.sizes[0];
  in_features = weight_t.sizes[1];
  weight = weight_t.data_as<int8_t>();
  return requantization.init(ctx, correction, multiplier, offset, out_features);
}

}  // namespace classes

namespace kernels {
namespace {

// The prepacked ops' input: int8, the dtype their kernels dispatch on.
PARE_UNUSED Error check_int8_input(KernelContext& ctx, const Tensor& input) {
  PARE_CHECK_OR_RETURN(ctx, input.dtype == ScalarType::Char, Error::UnsupportedDtype,
                       "argument 'input' must be an int8 (Char) tensor, got %s: an int8 layer takes the output of a "
                       "quantize_per_tensor to int8",
                       to_string(input.dtype));
  return Error::Ok;
}

// The arguments of an int8 layer's op (Tensor input, <Params> packed, int
// output_min, int output_max), read and checked.
template <typename Params>
struct RunArgs {
  const Tensor* input;
  const Params* params;
  Value* output;
  int32_t output_min;
  int32_t output_max;
};

// pare::qconv2d_prepacked and pare::qlinear_prepacked: when the class is
// selected, the arguments read and checked, then run(args), the op's own
// dtype dispatch (in the op, whose name the size report gives its
// dispatch_case instances by).
template <typename Params, typename Run>
PARE_ALWAYS_INLINE Error run_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs,
                                       const selective_class_<Params>& params_class, const Run& run) {
  if (!params_class.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, params_class.name());
  } else {
    KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
    const Tensor& input = args.tensor(0, "input");
    const Params* params = args.object<Params>(1, "packed");
    const int64_t output_min = args.int64(2, "output_min");
    const int64_t output_max = args.int64(3, "output_max");
    PARE_TRY(args.status());
    PARE_TRY(check_int8_input(ctx, input));
    PARE_TRY(classes::check_output_range(ctx, output_min, output_max));
    return run(RunArgs<Params>{&input, params, &args.output(0), static_cast<int32_t>(output_min),
                               static_cast<int32_t>(output_max)});
  }
}

}  // namespace

// pare::qconv2d_prepack(Tensor weight, Tensor correction, Tensor multiplier, Tensor offset, int[] stride,
//   int[] padding, int[] dilation, int groups, int layout, int input_zero_point) -> QConv2dPackedParams
Error pare_qconv2d_prepack(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  if (!kQConv2dPackedParamsClass.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kQConv2dPackedParamsClass.name());
  } else {
    KernelArgs args(ctx, inputs, outputs, 10, 10, 1);
    const Tensor& weight = args.tensor(0, "weight");
    const Tensor& correction = args.tensor(1, "correction");
    const Tensor& multiplier = args.tensor(2, "multiplier");
    const Tensor& offset = args.tensor(3, "offset");
    const IntArrayRef stride = args.int_list(4, "stride");
    const IntArrayRef padding = args.int_list(5, "padding");
    const IntArrayRef dilation = args.int_list(6, "dilation");
    const int64_t groups = args.int64(7, "groups");
    const int64_t layout = args.int64(8, "layout");
    const int64_t input_zero_point = args.int64(9, "input_zero_point");
    PARE_TRY(args.status());
    PARE_TRY_ASSIGN(classes::QConv2dPackedParams * params,
                    ctx.create_object<classes::QConv2dPackedParams>(args.output(0)));
    return params->init(ctx, weight, correction, multiplier, offset, stride, padding, dilation, groups, layout,
                        input_zero_point);
  }
}

// pare::qconv2d_prepacked(Tensor input, QConv2dPackedParams packed, int output_min, int output_max) -> Tensor
Error pare_qconv2d_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return run_prepacked(ctx, inputs, outputs, kQConv2dPackedParamsClass, [&](const auto& a) {
    return PARE_DISPATCH(qconv2d_kernel, ctx, a.input->dtype, T, {
      static_assert(is_same_v<T, int8_t>, "int8 layers take int8 inputs");
      return a.params->run(ctx, *a.input, *a.output, a.output_min, a.output_max);
    });
  });
}

// pare::qlinear_prepack(Tensor weight, Tensor correction, Tensor multiplier, Tensor offset) -> QLinearPackedParams
Error pare_qlinear_prepack(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  if (!kQLinearPackedParamsClass.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kQLinearPackedParamsClass.name());
  } else {
    KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
    const Tensor& weight = args.tensor(0, "weight");
    const Tensor& correction = args.tensor(1, "correction");
    const Tensor& multiplier = args.tensor(2, "multiplier");
    const Tensor& offset = args.tensor(3, "offset");
    PARE_TRY(args.status());
    PARE_TRY_ASSIGN(classes::QLinearPackedParams * params,
                    ctx.create_object<classes::QLinearPackedParams>(args.output(0)));
    return params->init(ctx, weight, correction, multiplier, offset);
  }
}

// pare::qlinear_prepacked(Tensor input, QLinearPackedParams packed, int output_min, int output_max) -> Tensor
Error pare_qlinear_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return run_prepacked(ctx, inputs, outputs, kQLinearPackedParamsClass, [&](const auto& a) {
    return PARE_DISPATCH(qlinear_kernel, ctx, a.input->dtype, T, {
      static_assert(is_same_v<T, int8_t>, "int8 layers take int8 inputs");
      return a.params->run(ctx, *a.input, *a.output, a.output_min, a.output_max);
    });
  });
}

}  // namespace kernels
}  // namespace pare
