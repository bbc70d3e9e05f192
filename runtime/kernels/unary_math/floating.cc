// Floating unary ops: aten::sqrt, rsqrt, exp, log, reciprocal, sigmoid,
// tanh, sin, cos, erf, expm1, log1p, log2, log10, tan, asin, acos, atan,
// sinh, cosh, asinh, acosh, atanh.
//
// All share unary_math::float_unary: integral and Bool inputs promote to
// Float, Half/BFloat16 compute in float and round once, and each op has
// its own kernel tag (Half, BFloat16, Float, Double) so a manifest keeps
// exactly the (op, dtype) pairs a model uses. Each op is one generic lambda
// over float and double (opmath_t). The formulas are PyTorch's CPU ones
// (e.g. sigmoid = 1 / (1 + exp(-x))) over the C library's functions
// (runtime/pal/libm.def), so special values (0, -0, outside the domain,
// inf, NaN) give the same results.

#include "runtime/kernels/common/activation.h"
#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {

using unary_math::float_unary;

// aten::sqrt(Tensor self) -> Tensor
Error aten_sqrt(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sqrt_kernel>(ctx, inputs, outputs, [](auto x) { return math::sqrt(x); });
}

// aten::rsqrt(Tensor self) -> Tensor
Error aten_rsqrt(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::rsqrt_kernel>(ctx, inputs, outputs, [](auto x) { return decltype(x)(1) / math::sqrt(x); });
}

// aten::exp(Tensor self) -> Tensor
Error aten_exp(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::exp_kernel>(ctx, inputs, outputs, [](auto x) { return math::exp(x); });
}

// aten::log(Tensor self) -> Tensor
Error aten_log(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::log_kernel>(ctx, inputs, outputs, [](auto x) { return math::log(x); });
}

// aten::reciprocal(Tensor self) -> Tensor
Error aten_reciprocal(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::reciprocal_kernel>(ctx, inputs, outputs, [](auto x) { return decltype(x)(1) / x; });
}

// aten::sigmoid(Tensor self) -> Tensor
Error aten_sigmoid(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sigmoid_kernel>(ctx, inputs, outputs, [](auto x) { return activation::sigmoid(x); });
}

// aten::tanh(Tensor self) -> Tensor
Error aten_tanh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::tanh_kernel>(ctx, inputs, outputs, [](auto x) { return math::tanh(x); });
}

// aten::sin(Tensor self) -> Tensor
Error aten_sin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sin_kernel>(ctx, inputs, outputs, [](auto x) { return math::sin(x); });
}

// aten::cos(Tensor self) -> Tensor
Error aten_cos(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::cos_kernel>(ctx, inputs, outputs, [](auto x) { return math::cos(x); });
}

// aten::erf(Tensor self) -> Tensor
Error aten_erf(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::erf_kernel>(ctx, inputs, outputs, [](auto x) { return math::erf(x); });
}

// aten::expm1(Tensor self) -> Tensor
Error aten_expm1(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::expm1_kernel>(ctx, inputs, outputs, [](auto x) { return math::expm1(x); });
}

// aten::log1p(Tensor self) -> Tensor
Error aten_log1p(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::log1p_kernel>(ctx, inputs, outputs, [](auto x) { return math::log1p(x); });
}

// aten::log2(Tensor self) -> Tensor
Error aten_log2(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::log2_kernel>(ctx, inputs, outputs, [](auto x) { return math::log2(x); });
}

// aten::log10(Tensor self) -> Tensor
Error aten_log10(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::log10_kernel>(ctx, inputs, outputs, [](auto x) { return math::log10(x); });
}

// aten::tan(Tensor self) -> Tensor
Error aten_tan(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::tan_kernel>(ctx, inputs, outputs, [](auto x) { return math::tan(x); });
}

// aten::asin(Tensor self) -> Tensor
Error aten_asin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::asin_kernel>(ctx, inputs, outputs, [](auto x) { return math::asin(x); });
}

// aten::acos(Tensor self) -> Tensor
Error aten_acos(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::acos_kernel>(ctx, inputs, outputs, [](auto x) { return math::acos(x); });
}

// aten::atan(Tensor self) -> Tensor
Error aten_atan(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::atan_kernel>(ctx, inputs, outputs, [](auto x) { return math::atan(x); });
}

// aten::sinh(Tensor self) -> Tensor
Error aten_sinh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sinh_kernel>(ctx, inputs, outputs, [](auto x) { return math::sinh(x); });
}

// aten::cosh(Tensor self) -> Tensor
Error aten_cosh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::cosh_kernel>(ctx, inputs, outputs, [](auto x) { return math::cosh(x); });
}

// aten::asinh(Tensor self) -> Tensor
Error aten_asinh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::asinh_kernel>(ctx, inputs, outputs, [](auto x) { return math::asinh(x); });
}

// aten::acosh(Tensor self) -> Tensor
Error aten_acosh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::acosh_kernel>(ctx, inputs, outputs, [](auto x) { return math::acosh(x); });
}

// aten::atanh(Tensor self) -> Tensor
Error aten_atanh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::atanh_kernel>(ctx, inputs, outputs, [](auto x) { return math::atanh(x); });
}

}  // namespace kernels
}  // namespace pare
