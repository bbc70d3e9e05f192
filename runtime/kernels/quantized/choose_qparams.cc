// quantized_decomposed::choose_qparams.tensor: a dynamic activation's
// per-tensor scale and zero point, from the range of the tensor itself
// (torch.ao.quantization.utils.determine_qparams, per_tensor_affine):
// float32 arithmetic as the reference's tensors do it, then returned as a
// float64 scale and an int64 zero point of one element each.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/quantized/quantized.h"

#pragma clang fp contract(off)

namespace pare {
namespace kernels {

namespace quantized {

TensorQParams choose_qparams(const float* x, size_t n, int64_t quant_min, int64_t quant_max, double eps) {
  // torch.aminmax: NaN propagates to both.
  float lo = x[0];
  float hi = x[0];
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    nan |= x[i] != x[i];
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  return qparams_from_range(lo, hi, nan, quant_min, quant_max, eps);
}

TensorQParams qparams_from_range(float lo, float hi, bool nan, int64_t quant_min, int64_t quant_max, double eps) {
  if (nan) lo = hi = __builtin_nanf("");
  // torch.min / torch.max with zeros: NaN propagates.
  const float min_neg = lo != lo ? lo : (lo < 0.0f ? lo : 0.0f);
  const float max_pos = hi != hi ? hi : (hi > 0.0f ? hi : 0.0f);
  float scale = (max_pos - min_neg) / static_cast<float>(static_cast<double>(quant_max - quant_min));
  const float eps_f = static_cast<float>(eps);  // torch.Tensor([eps]) is float32
  scale = scale != scale ? scale : (scale > eps_f ? scale : eps_f);
  // quant_min - round(min_neg / scale).to(int32), then clamped: int32 arithmetic.
  const float r = round_half_even(min_neg / scale);
  const int32_t rounded = r != r ? 0 : static_cast<int32_t>(static_cast<int64_t>(r));
  int64_t zp =
      static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(quant_min) - static_cast<uint32_t>(rounded)));
  zp = zp < quant_min ? quant_min : zp;
  zp = zp > quant_max ? quant_max : zp;
  return {static_cast<double>(scale), zp};
}

Error check_choose_qparams_range(KernelContext& ctx, int64_t quant_min, int64_t quant_max) {
  // validate_qmin_qmax's two rules.
  PARE_CHECK_OR_RETURN(ctx, quant_min <= 0 && quant_max >= 0, Error::InvalidArgument,
                       "arguments 'quant_min' and 'quant_max': the range [%lld, %lld] must include 0",
                       static_cast<long long>(quant_min), static_cast<long long>(quant_max));
  PARE_CHECK_OR_RETURN(ctx, quant_min < quant_max, Error::InvalidArgument,
                       "argument 'quant_min': %lld must be below quant_max %lld", static_cast<long long>(quant_min),
                       static_cast<long long>(quant_max));
  return Error::Ok;
}

}  // namespace quantized

// quantized_decomposed::choose_qparams.tensor(Tensor input, int quant_min, int quant_max,
//   float eps, ScalarType dtype) -> (Tensor, Tensor)
Error quantized_decomposed_choose_qparams_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 5, 5, 2);
  const Tensor& input = args.tensor(0, "input");
  const int64_t quant_min = args.int64(1, "quant_min");
  const int64_t quant_max = args.int64(2, "quant_max");
  const double eps = args.real(3, "eps");
  const ScalarType dtype = quantized::quant_dtype_arg(args, 4);
  PARE_TRY(args.status());
  // The reference's aminmax and arithmetic run in a float16 input's own
  // dtype, which these float32 kernels would not match.
  PARE_CHECK_OR_RETURN(ctx, input.dtype == ScalarType::Float, Error::UnsupportedDtype,
                       "argument 'input': expected a float32 tensor, got %s; quantize float32 activations",
                       to_string(input.dtype));
  PARE_TRY(quantized::check_quant_dtype(ctx, dtype));
  PARE_TRY(quantized::check_choose_qparams_range(ctx, quant_min, quant_max));
  PARE_CHECK_OR_RETURN(ctx, input.numel() > 0, Error::InvalidShape,
                       "argument 'input' is empty: the range of an empty tensor is undefined (torch.aminmax "
                       "fails too); quantize non-empty activations");
  const int64_t one[] = {1};
  PARE_TRY_ASSIGN(Tensor * scale_out, ctx.allocate_output(args.output(0), ScalarType::Double, IntArrayRef(one, 1)));
  PARE_TRY_ASSIGN(Tensor * zp_out, ctx.allocate_output(args.output(1), ScalarType::Long, IntArrayRef(one, 1)));
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, input.dtype));
  const size_t n = in.numel();
  return PARE_DISPATCH(choose_qparams_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, float>, "choose_qparams takes float32 inputs");
    const quantized::TensorQParams q = quantized::choose_qparams(in.data_as<float>(), n, quant_min, quant_max, eps);
    scale_out->data_as<double>()[0] = q.scale;
    zp_out->data_as<int64_t>()[0] = q.zero_point;
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
