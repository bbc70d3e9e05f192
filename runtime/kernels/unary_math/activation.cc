// Activations: aten::gelu (none/tanh), silu, hardswish, hardsigmoid,
// leaky_relu, elu and hardtanh.
//
// Like PyTorch's CPU kernels these take floating tensors only (hardtanh
// also integers) and keep the input dtype; Half/BFloat16 compute in float.
// Formulas and operand order follow PyTorch's (aten/src/ATen/native/cpu/
// Activation.cpp) so results match, NaN included; gelu, silu, hardswish and
// hardsigmoid are common/activation.h's, which the prepacked layers' fused
// epilogues share. Piecewise-linear ones are written as selects, which
// clang vectorises.

#include "runtime/core/format.h"
#include "runtime/kernels/common/activation.h"
#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {

using unary_math::check_scalar_fits;
using unary_math::opmath_dtype;
using unary_math::prepare_same_dtype;
using unary_math::same_dtype_unary;

// aten::gelu(Tensor self, *, str approximate='none') -> Tensor
Error aten_gelu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const char* approximate = args.optional_string(1, "approximate");
  PARE_TRY(args.status());
  const bool use_tanh = approximate != nullptr && string_equal(approximate, "tanh");
  PARE_CHECK_OR_RETURN(ctx, approximate == nullptr || use_tanh || string_equal(approximate, "none"),
                       Error::InvalidArgument, "argument 'approximate' must be 'none' or 'tanh', got '%s'",
                       approximate);
  Elementwise<1> e(ctx);
  // The two forms are two tags: a model carries only the one it uses.
  if (use_tanh) {
    PARE_TRY(prepare_same_dtype<tags::gelu_tanh_kernel>(ctx, e, self, args.output(0)));
    return PARE_DISPATCH(gelu_tanh_kernel, ctx, self.dtype, T, {
      using Acc = opmath_t<T>;
      e.run<T, T>([](T v) { return T(activation::gelu_tanh(Acc(v))); });
      return Error::Ok;
    });
  }
  PARE_TRY(prepare_same_dtype<tags::gelu_kernel>(ctx, e, self, args.output(0)));
  return PARE_DISPATCH(gelu_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    e.run<T, T>([](T v) { return T(activation::gelu(Acc(v))); });
    return Error::Ok;
  });
}

// aten::silu(Tensor self) -> Tensor
Error aten_silu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return same_dtype_unary<tags::silu_kernel>(ctx, inputs, outputs, [](auto x) { return activation::silu(x); });
}

// aten::hardswish(Tensor self) -> Tensor
Error aten_hardswish(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return same_dtype_unary<tags::hardswish_kernel>(ctx, inputs, outputs,
                                                  [](auto x) { return activation::hardswish(x); });
}

// aten::hardsigmoid(Tensor self) -> Tensor
Error aten_hardsigmoid(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return same_dtype_unary<tags::hardsigmoid_kernel>(ctx, inputs, outputs,
                                                    [](auto x) { return activation::hardsigmoid(x); });
}

// aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor
Error aten_leaky_relu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar negative_slope = args.scalar_or(1, "negative_slope", Scalar::from_double(0.01));
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  PARE_TRY(prepare_same_dtype<tags::leaky_relu_kernel>(ctx, e, self, args.output(0)));
  PARE_TRY(check_scalar_fits(ctx, negative_slope, opmath_dtype(self.dtype), "negative_slope"));
  return PARE_DISPATCH(leaky_relu_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const Acc slope = negative_slope.to<Acc>();
    e.run<T, T>([slope](T v) {
      const Acc x = Acc(v);
      return T(x > Acc(0) ? x : x * slope);
    });
    return Error::Ok;
  });
}

// aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
Error aten_elu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar alpha = args.scalar_or(1, "alpha", Scalar::from_int(1));
  const Scalar scale = args.scalar_or(2, "scale", Scalar::from_int(1));
  const Scalar input_scale = args.scalar_or(3, "input_scale", Scalar::from_int(1));
  PARE_TRY(args.status());
  Elementwise<1> e(ctx);
  PARE_TRY(prepare_same_dtype<tags::elu_kernel>(ctx, e, self, args.output(0)));
  const ScalarType param_dtype = opmath_dtype(self.dtype);
  PARE_TRY(check_scalar_fits(ctx, alpha, param_dtype, "alpha"));
  PARE_TRY(check_scalar_fits(ctx, scale, param_dtype, "scale"));
  PARE_TRY(check_scalar_fits(ctx, input_scale, param_dtype, "input_scale"));
  return PARE_DISPATCH(elu_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const Acc negcoef = alpha.to<Acc>() * scale.to<Acc>();
    const Acc poscoef = scale.to<Acc>();
    const Acc negiptcoef = input_scale.to<Acc>();
    e.run<T, T>([negcoef, poscoef, negiptcoef](T v) {
      const Acc x = Acc(v);
      return T(x > Acc(0) ? x * poscoef : math::expm1(x * negiptcoef) * negcoef);
    });
    return Error::Ok;
  });
}

// aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
//
// As in PyTorch: clamp(self, min_val, max_val), called through the
// registry (traces record aten::clamp as a non-root op), with the bounds
// truncated to integers for integral tensors so they never promote them.
Error aten_hardtanh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  Scalar min_val = args.scalar_or(1, "min_val", Scalar::from_int(-1));
  Scalar max_val = args.scalar_or(2, "max_val", Scalar::from_int(1));
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'self': hardtanh is not defined for Bool tensors");
  if (is_integral_type(self.dtype, /*include_bool=*/false)) {
    PARE_TRY(check_scalar_fits(ctx, min_val, ScalarType::Long, "min_val"));
    PARE_TRY(check_scalar_fits(ctx, max_val, ScalarType::Long, "max_val"));
    min_val = Scalar::from_int(min_val.as_int());
    max_val = Scalar::from_int(max_val.as_int());
    PARE_CHECK_OR_RETURN(ctx, self.dtype != ScalarType::Byte || (min_val.as_int() >= 0 && max_val.as_int() >= 0),
                         Error::InvalidArgument,
                         "arguments 'min_val' and 'max_val' must not be negative for a Byte tensor, got %lld and %lld",
                         static_cast<long long>(min_val.as_int()), static_cast<long long>(max_val.as_int()));
  }
  PARE_TRY(check_scalar_fits(ctx, min_val, self.dtype, "min_val"));
  PARE_TRY(check_scalar_fits(ctx, max_val, self.dtype, "max_val"));
  Value min_value = Value::make_scalar(min_val);
  Value max_value = Value::make_scalar(max_val);
  Value* forwarded[] = {inputs[0], &min_value, &max_value};
  return PARE_CALL_OP(ctx, "aten::clamp", ValueSpan(forwarded, 3), outputs);
}

}  // namespace kernels
}  // namespace pare
