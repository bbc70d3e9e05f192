// quantized_decomposed::quantize_per_channel and dequantize_per_channel:
// one scale and zero point per index along `axis` (a convolution's or a
// linear layer's output channels: axis 0 of its weight). The reference
// (torch/ao/quantization/fx/_decomposed.py) computes with tensors, so
// torch's type promotion decides the precision: float32 scales keep the
// math in float, float64 scales move it to double. The input is walked as
// [outer, channels, inner].

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/quantized/quantized.h"

// The product must round before the rounding to an integer (quantized.h).
#pragma clang fp contract(off)

namespace pare {
namespace kernels {
namespace {

struct ChannelPlan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
};

ChannelPlan plan_of(const Tensor& t, int64_t axis) {
  ChannelPlan p;
  p.channels = t.sizes[axis];
  for (int64_t d = 0; d < static_cast<int64_t>(t.dim); ++d) {
    if (d < axis) p.outer *= t.sizes[d];
    if (d > axis) p.inner *= t.sizes[d];
  }
  return p;
}

// scales (float32 or float64) and zero_points (integer, optional): 1-d with
// one entry per channel, or one entry for all (torch broadcasts it).
Error check_params(KernelContext& ctx, const Tensor& scales, const Tensor* zero_points, int64_t channels) {
  PARE_CHECK_OR_RETURN(ctx, scales.dtype == ScalarType::Float || scales.dtype == ScalarType::Double,
                       Error::UnsupportedDtype, "argument 'scales' must be a float32 or float64 tensor, got %s",
                       to_string(scales.dtype));
  PARE_CHECK_OR_RETURN(ctx, scales.dim == 1 && (scales.sizes[0] == channels || scales.sizes[0] == 1),
                       Error::InvalidShape,
                       "argument 'scales' must be 1-d with one scale per channel (%lld) along 'axis', got sizes %s",
                       static_cast<long long>(channels), sizes_to_string(scales.size_span()).text);
  if (zero_points == nullptr) return Error::Ok;
  PARE_CHECK_OR_RETURN(ctx, is_integral_type(zero_points->dtype, false), Error::UnsupportedDtype,
                       "argument 'zero_points' must be an integer tensor (torch.int64), got %s",
                       to_string(zero_points->dtype));
  PARE_CHECK_OR_RETURN(ctx, zero_points->dim == 1 && (zero_points->sizes[0] == channels || zero_points->sizes[0] == 1),
                       Error::InvalidShape,
                       "argument 'zero_points' must be 1-d with one zero point per channel (%lld) along 'axis', got "
                       "sizes %s",
                       static_cast<long long>(channels), sizes_to_string(zero_points->size_span()).text);
  return Error::Ok;
}

}  // namespace

// quantized_decomposed::quantize_per_channel(Tensor input, Tensor scales, Tensor zero_points,
//   int axis, int quant_min, int quant_max, ScalarType dtype) -> Tensor
Error quantized_decomposed_quantize_per_channel(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 7, 7, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& scales = args.tensor(1, "scales");
  const Tensor& zero_points = args.tensor(2, "zero_points");
  const int64_t axis = args.dim(3, "axis", input.dim);
  const int64_t quant_min = args.int64(4, "quant_min");
  const int64_t quant_max = args.int64(5, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 6);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(input.dtype) && input.dtype != ScalarType::Double, Error::UnsupportedDtype,
                       "argument 'input': expected a float32 (or float16, bfloat16) tensor, got %s",
                       to_string(input.dtype));
  PARE_TRY(quantized::check_quant_args(ctx, quant_min, quant_max, dtype));
  const ChannelPlan plan = plan_of(input, axis);
  PARE_TRY(check_params(ctx, scales, &zero_points, plan.channels));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), dtype, input.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, ScalarType::Float));
  PARE_TRY_ASSIGN(const Tensor zps, as_contiguous(ctx, zero_points, ScalarType::Long));
  PARE_TRY_ASSIGN(const Tensor sc, as_contiguous(ctx, scales, scales.dtype));
  const bool per_scale = sc.sizes[0] != 1;
  const bool per_zp = zps.sizes[0] != 1;
  return PARE_DISPATCH(quantize_per_channel_kernel, ctx, dtype, Q, {
    const float* x = in.data_as<float>();
    Q* q = out->data_as<Q>();
    const int64_t* zp = zps.data_as<int64_t>();
    for (int64_t o = 0; o < plan.outer; ++o) {
      for (int64_t c = 0; c < plan.channels; ++c) {
        const int64_t base = (o * plan.channels + c) * plan.inner;
        const float z = static_cast<float>(zp[per_zp ? c : 0]);
        if (sc.dtype == ScalarType::Float) {
          // 1.0 / scales is a float32 tensor; the product, round, + zero
          // point and clamp stay float32.
          const float inv = 1.0f / sc.data_as<float>()[per_scale ? c : 0];
          const float lo = static_cast<float>(quant_min);
          const float hi = static_cast<float>(quant_max);
          for (int64_t i = 0; i < plan.inner; ++i) {
            q[base + i] = quantized::quantize_value<Q, float>(x[base + i], inv, z, lo, hi, quant_min, quant_max);
          }
        } else {
          // float64 scales promote the product to double.
          const double inv = 1.0 / sc.data_as<double>()[per_scale ? c : 0];
          for (int64_t i = 0; i < plan.inner; ++i) {
            q[base + i] = quantized::quantize_value<Q, double>(x[base + i], inv, static_cast<double>(z),
                                                               static_cast<double>(quant_min),
                                                               static_cast<double>(quant_max), quant_min, quant_max);
          }
        }
      }
    }
    return Error::Ok;
  });
}

// quantized_decomposed::dequantize_per_channel(Tensor input, Tensor scales, Tensor? zero_points,
//   int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor
Error quantized_decomposed_dequantize_per_channel(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 7, 8, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& scales = args.tensor(1, "scales");
  const Tensor* zero_points = args.optional_tensor(2, "zero_points");
  const int64_t axis = args.dim(3, "axis", input.dim);
  const int64_t quant_min = args.int64(4, "quant_min");
  const int64_t quant_max = args.int64(5, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 6);
  const Optional<ScalarType> out_dtype = args.optional_dtype(7, "out_dtype");
  PARE_TRY(args.status());
  PARE_TRY(quantized::check_quant_args(ctx, quant_min, quant_max, dtype));
  PARE_CHECK_OR_RETURN(ctx, input.dtype == dtype, Error::UnsupportedDtype,
                       "argument 'input': expected dtype %s (the 'dtype' argument), got %s", to_string(dtype),
                       to_string(input.dtype));
  PARE_TRY(quantized::check_out_dtype(ctx, out_dtype));
  const ChannelPlan plan = plan_of(input, axis);
  PARE_TRY(check_params(ctx, scales, zero_points, plan.channels));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, input.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, input.dtype));
  PARE_TRY_ASSIGN(const Tensor sc, as_contiguous(ctx, scales, scales.dtype));
  Tensor zps{};
  if (zero_points != nullptr) {
    PARE_TRY_ASSIGN(zps, as_contiguous(ctx, *zero_points, ScalarType::Long));
  }
  const bool per_scale = sc.sizes[0] != 1;
  const bool per_zp = zero_points != nullptr && zps.sizes[0] != 1;
  return PARE_DISPATCH(dequantize_per_channel_kernel, ctx, dtype, Q, {
    const Q* q = in.data_as<Q>();
    float* y = out->data_as<float>();
    for (int64_t o = 0; o < plan.outer; ++o) {
      for (int64_t c = 0; c < plan.channels; ++c) {
        const int64_t base = (o * plan.channels + c) * plan.inner;
        // input - zero_points is an exact integer tensor; its product with
        // the scales rounds once, in the scales' dtype.
        const int64_t z = zero_points != nullptr ? zps.data_as<int64_t>()[per_zp ? c : 0] : 0;
        if (sc.dtype == ScalarType::Float) {
          const float s = sc.data_as<float>()[per_scale ? c : 0];
          for (int64_t i = 0; i < plan.inner; ++i) {
            y[base + i] = static_cast<float>(static_cast<int64_t>(q[base + i]) - z) * s;
          }
        } else {
          const double s = sc.data_as<double>()[per_scale ? c : 0];
          for (int64_t i = 0; i < plan.inner; ++i) {
            y[base + i] = static_cast<float>(static_cast<double>(static_cast<int64_t>(q[base + i]) - z) * s);
          }
        }
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
