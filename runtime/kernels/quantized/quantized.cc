// The quantized family's shared checks (quantized.h).

#include "runtime/kernels/quantized/quantized.h"

namespace pare {
namespace kernels {
namespace quantized {

bool quantized_dtype_range(ScalarType dtype, int64_t* lo, int64_t* hi) {
  switch (dtype) {
    case ScalarType::Byte: *lo = 0, *hi = 255; return true;
    case ScalarType::Char: *lo = -128, *hi = 127; return true;
    case ScalarType::Short: *lo = -32768, *hi = 32767; return true;
    case ScalarType::Int: *lo = -2147483647 - 1, *hi = 2147483647; return true;
    default: return false;
  }
}

Error check_quant_dtype(KernelContext& ctx, ScalarType dtype) {
  int64_t lo = 0;
  int64_t hi = 0;
  PARE_CHECK_OR_RETURN(ctx, quantized_dtype_range(dtype, &lo, &hi), Error::UnsupportedDtype,
                       "argument 'dtype': %s is not a quantized dtype Pare supports; quantize to torch.int8 or "
                       "torch.uint8 (torch.int16 and torch.int32 work too)",
                       to_string(dtype));
  return Error::Ok;
}

Error check_quant_args(KernelContext& ctx, int64_t quant_min, int64_t quant_max, ScalarType dtype) {
  PARE_TRY(check_quant_dtype(ctx, dtype));
  int64_t lo = 0;
  int64_t hi = 0;
  quantized_dtype_range(dtype, &lo, &hi);
  PARE_CHECK_OR_RETURN(ctx, quant_min >= lo, Error::InvalidArgument,
                       "argument 'quant_min': %lld is below the smallest %s, %lld; use a quant_min in [%lld, %lld]",
                       static_cast<long long>(quant_min), to_string(dtype), static_cast<long long>(lo),
                       static_cast<long long>(lo), static_cast<long long>(hi));
  PARE_CHECK_OR_RETURN(ctx, quant_max <= hi, Error::InvalidArgument,
                       "argument 'quant_max': %lld is above the largest %s, %lld; use a quant_max in [%lld, %lld]",
                       static_cast<long long>(quant_max), to_string(dtype), static_cast<long long>(hi),
                       static_cast<long long>(lo), static_cast<long long>(hi));
  PARE_CHECK_OR_RETURN(ctx, quant_min <= quant_max, Error::InvalidArgument,
                       "argument 'quant_min': %lld is above quant_max %lld; give the quantizer a range with "
                       "quant_min <= quant_max",
                       static_cast<long long>(quant_min), static_cast<long long>(quant_max));
  return Error::Ok;
}

Result<double> one_element(KernelContext& ctx, const Tensor& t, const char* name, bool integral) {
  PARE_CHECK_OR_RETURN(ctx, t.numel() == 1, Error::InvalidShape,
                       "argument '%s' must have one element, got %zu; pass a 0-dim or 1-element tensor", name,
                       t.numel());
  const void* p = t.data();
  switch (t.dtype) {
    case ScalarType::Long: return static_cast<double>(*static_cast<const int64_t*>(p));
    case ScalarType::Int: return static_cast<double>(*static_cast<const int32_t*>(p));
    case ScalarType::Short: return static_cast<double>(*static_cast<const int16_t*>(p));
    case ScalarType::Char: return static_cast<double>(*static_cast<const int8_t*>(p));
    case ScalarType::Byte: return static_cast<double>(*static_cast<const uint8_t*>(p));
    default: break;
  }
  PARE_CHECK_OR_RETURN(ctx, !integral, Error::UnsupportedDtype,
                       "argument '%s' must be an integer tensor (torch.int64), got %s", name, to_string(t.dtype));
  switch (t.dtype) {
    case ScalarType::Double: return *static_cast<const double*>(p);
    case ScalarType::Float: return static_cast<double>(*static_cast<const float*>(p));
    default: break;
  }
  return PARE_FAIL(ctx, Error::UnsupportedDtype, "argument '%s' must be a float32 or float64 tensor, got %s", name,
                   to_string(t.dtype));
}

ScalarType quant_dtype_arg(KernelArgs& args, size_t i) {
  const Optional<ScalarType> dtype = args.optional_dtype(i, "dtype");
  return dtype.has_value ? dtype.value : ScalarType::Undefined;
}

Error check_out_dtype(KernelContext& ctx, const Optional<ScalarType>& out_dtype) {
  PARE_CHECK_OR_RETURN(ctx, !out_dtype.has_value || out_dtype.value == ScalarType::Float, Error::NotImplemented,
                       "argument 'out_dtype': only float32 is supported, got %s; dequantize to float32 (out_dtype "
                       "None) and convert with .to()",
                       to_string(out_dtype.value));
  return Error::Ok;
}

}  // namespace quantized
}  // namespace kernels
}  // namespace pare
