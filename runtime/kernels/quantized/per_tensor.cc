// quantized_decomposed::quantize_per_tensor and dequantize_per_tensor, with
// scale and zero point as arguments (.default: static activations) or as
// one-element tensors (.tensor: dynamic activations, from choose_qparams).
// The reference computes in float32: quantize rounds x * float(1 / scale),
// dequantize rounds (float(q) - zero_point) * float(scale).

#include "runtime/core/cpu.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/quantized/quantize_bytes.h"
#include "runtime/kernels/quantized/quantized.h"

// The product must round before the rounding to an integer (quantized.h).
#pragma clang fp contract(off)

namespace pare {
namespace kernels {
namespace {

// quantize_value's steps for a one-byte range (exact in float and int32,
// so its int64 clamp changes nothing), in a loop that vectorises (restrict:
// the output never overlaps the input): an int8 model's input.
template <typename Q>
void quantize_bytes(const float* PARE_RESTRICT x, size_t n, float inv_scale, float zp, float qmin, float qmax,
                    Q* PARE_RESTRICT q) {
  for (size_t i = 0; i < n; ++i) {
    float v = quantized::round_half_even(x[i] * inv_scale) + zp;
    v = v < qmin ? qmin : v;
    v = v > qmax ? qmax : v;
    q[i] = static_cast<Q>(v != v ? 0 : static_cast<int32_t>(v));
  }
}

// The shared body of both quantize overloads.
Error quantize_per_tensor(KernelContext& ctx, KernelArgs& args, const Tensor& input, double scale, int64_t zero_point,
                          int64_t quant_min, int64_t quant_max, ScalarType dtype) {
  PARE_TRY(quantized::check_quant_args(ctx, quant_min, quant_max, dtype));
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(input.dtype) && input.dtype != ScalarType::Double, Error::UnsupportedDtype,
                       "argument 'input': expected a float32 (or float16, bfloat16) tensor, got %s",
                       to_string(input.dtype));
  PARE_CHECK_OR_RETURN(ctx, scale != 0.0, Error::InvalidArgument,
                       "argument 'scale' is 0; a quantization scale must be non-zero (recalibrate the model)");
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), dtype, input.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, ScalarType::Float));
  // Python computes 1.0 / scale in double; torch's float product rounds it to float.
  const float inv_scale = static_cast<float>(1.0 / scale);
  const float zp = static_cast<float>(zero_point);
  const float qmin = static_cast<float>(quant_min);
  const float qmax = static_cast<float>(quant_max);
  const size_t n = in.numel();
  return PARE_DISPATCH(quantize_per_tensor_kernel, ctx, dtype, Q, {
    const float* x = in.data_as<float>();
    Q* q = out->data_as<Q>();
    if constexpr (sizeof(Q) == 1) {
      size_t done = 0;
#if defined(PARE_X86_64_DISPATCH)
      // 16 lanes on an x86-64-v4 CPU (quantize_bytes.h), the same bits.
      if (cpu::kernel_isa() >= cpu::Isa::x86_64_v4) {
        if constexpr (is_same_v<Q, int8_t>) {
          done = quantize_bytes::x86_64_v4::to_int8(x, n, inv_scale, zp, qmin, qmax, q);
        } else {
          done = quantize_bytes::x86_64_v4::to_uint8(x, n, inv_scale, zp, qmin, qmax, q);
        }
      }
#endif
      quantize_bytes(x + done, n - done, inv_scale, zp, qmin, qmax, q + done);
    } else {
      for (size_t i = 0; i < n; ++i) {
        q[i] = quantized::quantize_value<Q, float>(x[i], inv_scale, zp, qmin, qmax, quant_min, quant_max);
      }
    }
    return Error::Ok;
  });
}

Error dequantize_per_tensor(KernelContext& ctx, KernelArgs& args, const Tensor& input, double scale, int64_t zero_point,
                            ScalarType dtype, const Optional<ScalarType>& out_dtype) {
  PARE_TRY(quantized::check_quant_dtype(ctx, dtype));
  PARE_CHECK_OR_RETURN(ctx, input.dtype == dtype, Error::UnsupportedDtype,
                       "argument 'input': expected dtype %s (the 'dtype' argument), got %s", to_string(dtype),
                       to_string(input.dtype));
  PARE_TRY(quantized::check_out_dtype(ctx, out_dtype));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, input.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, input.dtype));
  const float s = static_cast<float>(scale);
  const float zp = static_cast<float>(zero_point);
  const size_t n = in.numel();
  return PARE_DISPATCH(dequantize_per_tensor_kernel, ctx, dtype, Q, {
    const Q* q = in.data_as<Q>();
    float* y = out->data_as<float>();
    for (size_t i = 0; i < n; ++i) y[i] = (static_cast<float>(q[i]) - zp) * s;
    return Error::Ok;
  });
}

}  // namespace

// quantized_decomposed::quantize_per_tensor(Tensor input, float scale, int zero_point,
//   int quant_min, int quant_max, ScalarType dtype) -> Tensor
Error quantized_decomposed_quantize_per_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& input = args.tensor(0, "input");
  const double scale = args.real(1, "scale");
  const int64_t zero_point = args.int64(2, "zero_point");
  const int64_t quant_min = args.int64(3, "quant_min");
  const int64_t quant_max = args.int64(4, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 5);
  PARE_TRY(args.status());
  return quantize_per_tensor(ctx, args, input, scale, zero_point, quant_min, quant_max, dtype);
}

// quantized_decomposed::quantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point,
//   int quant_min, int quant_max, ScalarType dtype) -> Tensor
Error quantized_decomposed_quantize_per_tensor_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& scale = args.tensor(1, "scale");
  const Tensor& zero_point = args.tensor(2, "zero_point");
  const int64_t quant_min = args.int64(3, "quant_min");
  const int64_t quant_max = args.int64(4, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 5);
  PARE_TRY(args.status());
  PARE_TRY_ASSIGN(const double s, quantized::one_element(ctx, scale, "scale", false));
  PARE_TRY_ASSIGN(const double zp, quantized::one_element(ctx, zero_point, "zero_point", true));
  return quantize_per_tensor(ctx, args, input, s, static_cast<int64_t>(zp), quant_min, quant_max, dtype);
}

// quantized_decomposed::dequantize_per_tensor(Tensor input, float scale, int zero_point,
//   int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor
Error quantized_decomposed_dequantize_per_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 7, 1);
  const Tensor& input = args.tensor(0, "input");
  const double scale = args.real(1, "scale");
  const int64_t zero_point = args.int64(2, "zero_point");
  (void)args.int64(3, "quant_min");  // the reference ignores them too
  (void)args.int64(4, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 5);
  const Optional<ScalarType> out_dtype = args.optional_dtype(6, "out_dtype");
  PARE_TRY(args.status());
  return dequantize_per_tensor(ctx, args, input, scale, zero_point, dtype, out_dtype);
}

// quantized_decomposed::dequantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point,
//   int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor
Error quantized_decomposed_dequantize_per_tensor_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 7, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& scale = args.tensor(1, "scale");
  const Tensor& zero_point = args.tensor(2, "zero_point");
  (void)args.int64(3, "quant_min");
  (void)args.int64(4, "quant_max");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 5);
  const Optional<ScalarType> out_dtype = args.optional_dtype(6, "out_dtype");
  PARE_TRY(args.status());
  PARE_TRY_ASSIGN(const double s, quantized::one_element(ctx, scale, "scale", false));
  PARE_TRY_ASSIGN(const double zp, quantized::one_element(ctx, zero_point, "zero_point", true));
  return dequantize_per_tensor(ctx, args, input, s, static_cast<int64_t>(zp), dtype, out_dtype);
}

}  // namespace kernels
}  // namespace pare
