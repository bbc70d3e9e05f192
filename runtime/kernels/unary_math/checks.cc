// Argument checks shared by the unary_math family (see unary_math.h).

#include "runtime/kernels/unary_math/unary_math.h"

#include "runtime/core/format.h"

namespace pare {
namespace kernels {
namespace unary_math {
namespace {

// Largest finite values, as c10's numeric_limits for each dtype.
constexpr double kHalfMax = 65504.0;
constexpr double kBFloat16Max = 3.3895313892515355e38;
constexpr double kFloatMax = 3.4028234663852886e38;
constexpr double kTwoPow63 = 9223372036854775808.0;

// c10::overflows<T>(value) for the Scalar's stored type.
bool overflows(const Scalar& value, ScalarType dtype) {
  if (value.is_bool() || dtype == ScalarType::Bool || dtype == ScalarType::Double) return false;
  if (value.is_floating_point()) {
    const double d = value.as_double();
    // Infinities and NaN convert to floating types.
    const bool finite = d == d && d != math::kInfinity && d != -math::kInfinity;
    switch (dtype) {
      case ScalarType::Half: return finite && (d < -kHalfMax || d > kHalfMax);
      case ScalarType::BFloat16: return finite && (d < -kBFloat16Max || d > kBFloat16Max);
      case ScalarType::Float: return finite && (d < -kFloatMax || d > kFloatMax);
      // NaN fails every comparison, so it overflows integral types.
      case ScalarType::Byte: return !(d >= 0.0 && d <= 255.0);
      case ScalarType::Char: return !(d >= -128.0 && d <= 127.0);
      case ScalarType::Short: return !(d >= -32768.0 && d <= 32767.0);
      case ScalarType::Int: return !(d >= -2147483648.0 && d <= 2147483647.0);
      case ScalarType::Long: return !(d >= -kTwoPow63 && d < kTwoPow63);
      default: return false;
    }
  }
  const int64_t v = value.as_int();
  switch (dtype) {
    case ScalarType::Half: return v < -65504 || v > 65504;
    // Negative values wrap into unsigned types (torch treats a - b as a + 255 * b).
    case ScalarType::Byte: return v > 255 || v < -255;
    case ScalarType::Char: return v < -128 || v > 127;
    case ScalarType::Short: return v < -32768 || v > 32767;
    case ScalarType::Int: return v < -2147483648LL || v > 2147483647LL;
    default: return false;
  }
}

}  // namespace

Error unsupported_dtype(KernelContext& ctx, const TagInfo& tag, ScalarType dtype, const char* what) {
  char list[128];
  FormatBuffer out(list, sizeof(list));
  detail::append_dtype_list(out, tag);
  return PARE_FAIL(ctx, Error::UnsupportedDtype, "%s has dtype %s, which is not supported (kernel tag %s handles %s)",
                   what, to_string(dtype), tag.name, list);
}

Error check_scalar_fits(KernelContext& ctx, const Scalar& value, ScalarType dtype, const char* name) {
  if (!overflows(value, dtype)) return Error::Ok;
  if (value.is_floating_point()) {
    return PARE_FAIL(ctx, Error::InvalidArgument, "argument '%s': value %s cannot be converted to %s without overflow",
                     name, real_to_string(value.as_double()).text, to_string(dtype));
  }
  return PARE_FAIL(ctx, Error::InvalidArgument, "argument '%s': value %lld cannot be converted to %s without overflow",
                   name, static_cast<long long>(value.as_int()), to_string(dtype));
}

}  // namespace unary_math
}  // namespace kernels
}  // namespace pare
