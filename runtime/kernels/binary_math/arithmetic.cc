// aten::sub, mul.Scalar, div (true, trunc and floor; Tensor and Scalar
// overloads), remainder, fmod, pow and atan2.
//
// The Scalar overloads PyTorch implements as composites (sub.Scalar,
// mul.Scalar, div.Scalar, div.Scalar_mode, remainder.Scalar, fmod.Scalar)
// forward to their Tensor overload through the registry with `other` as a
// wrapped number, as PyTorch does, so traces record the callee as a
// non-root op.
// pow.Tensor_Scalar and pow.Scalar are kernels of their own in PyTorch and
// here.
//
// Half and BFloat16 follow PyTorch's CPU kernels bit for bit, which round
// at different points per op: div by a single-element divisor (a Python
// number or a one-element tensor) computes in float with the divisor's
// original value; trunc and floor division of two tensors round the
// quotient to the 16-bit type first; sub rounds alpha to the result type;
// pow rounds the exponent. Where PyTorch's vectorised and scalar loops
// disagree (sub with alpha rounds alpha * other in its scalar loop only),
// the runtime follows the vectorised loop, which handles contiguous data.
// See binary_math.h for the element functions.

#include "runtime/core/format.h"
#include "runtime/kernels/binary_math/binary_math.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/common/scalar_overload.h"

namespace pare {
namespace kernels {

namespace binary_math {

Error scalar_overflow(KernelContext& ctx, const char* name, const Scalar& value, ScalarType dtype, const char* note) {
  if (value.is_floating_point()) {
    return PARE_FAIL(ctx, Error::InvalidArgument,
                     "argument '%s': value %s cannot be converted to %s without overflow%s", name,
                     real_to_string(value.as_double()).text, to_string(dtype), note);
  }
  return PARE_FAIL(ctx, Error::InvalidArgument,
                   "argument '%s': value %lld cannot be converted to %s without overflow%s", name,
                   static_cast<long long>(value.as_int()), to_string(dtype), note);
}

}  // namespace binary_math

namespace {

using binary_math::round_through;

// PARE_UNUSED: only integral dispatch cases call it, and selective builds may
// drop them all.
PARE_UNUSED Error integer_division_by_zero(KernelContext& ctx) {
  return PARE_FAIL(ctx, Error::InvalidArgument,
                   "argument 'other': integer division by zero "
                   "(ZeroDivisionError in PyTorch)");
}

// ---------------------------------------------------------------------------
// sub

Error sub(KernelContext& ctx, const Operand& self, const Operand& other, const Scalar& alpha, Value& out) {
  // PyTorch's sub_check; a Python bool counts as a Bool operand.
  PARE_CHECK_OR_RETURN(ctx, self.dtype() != ScalarType::Bool && other.dtype() != ScalarType::Bool,
                       Error::UnsupportedDtype,
                       "argument '%s' is Bool: subtraction with a bool tensor "
                       "is not supported; to invert "
                       "a mask use logical_not (the ~ operator)",
                       self.dtype() == ScalarType::Bool ? "self" : "other");
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, other);
  PARE_TRY(check_alpha(ctx, dtype, alpha));
  PARE_TRY(e.prepare(out, dtype, dtype));
  // PyTorch subtracts by adding -alpha * other and converts -alpha to the
  // result type, checking that it fits.
  Scalar negated = alpha;
  if (alpha.is_floating_point()) {
    negated = Scalar::from_double(-alpha.as_double());
  } else if (!alpha.is_bool()) {
    negated = Scalar::from_int(static_cast<int64_t>(0ull - static_cast<uint64_t>(alpha.as_int())));  // wraps
  }
  return PARE_DISPATCH(sub_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if (!binary_math::scalar_fits<T>(negated)) {
      return binary_math::scalar_overflow(ctx, "alpha", negated, dtype, " (sub converts -alpha)");
    }
    if constexpr (is_integral_v<T>) {
      const T a = alpha.to<T>();
      if (a == T(1)) {
        e.run<T, T>([](T x, T y) { return arith::sub<T>(x, y); });
      } else {
        e.run<T, T>([a](T x, T y) { return arith::sub<T>(x, arith::mul<T>(a, y)); });
      }
    } else {
      const Acc a = static_cast<Acc>(alpha.to<T>());  // PyTorch rounds alpha to T
      if (a == Acc(1)) {
        e.run<T, T>([](T x, T y) { return T(Acc(x) - Acc(y)); });
      } else {
        e.run<T, T>([a](T x, T y) { return T(Acc(x) - a * Acc(y)); });
      }
    }
    return Error::Ok;
  });
}

// ---------------------------------------------------------------------------
// div

enum class RoundingMode : uint8_t { kNone, kTrunc, kFloor };

Error parse_rounding_mode(KernelContext& ctx, const char* text, RoundingMode* mode) {
  if (text == nullptr) {
    *mode = RoundingMode::kNone;
  } else if (string_equal(text, "trunc")) {
    *mode = RoundingMode::kTrunc;
  } else if (string_equal(text, "floor")) {
    *mode = RoundingMode::kFloor;
  } else {
    return PARE_FAIL(ctx, Error::InvalidArgument, "argument 'rounding_mode' must be None, 'trunc' or 'floor', got '%s'",
                     text);
  }
  return Error::Ok;
}

// For a Half/BFloat16 result PyTorch divides by a single-element divisor
// (a Python number, or any one-element tensor) in float, reading the
// divisor at its own dtype rather than rounded to the result's. Returns
// whether that path applies and the divisor as float.
Result<bool> single_element_divisor(KernelContext& ctx, const Operand& other, float* value) {
  if (other.is_scalar()) {
    *value = other.scalar.to<float>();
    return true;
  }
  if (other.tensor->numel() != 1) return false;
  PARE_TRY_ASSIGN(const Tensor as_float, as_contiguous(ctx, *other.tensor, ScalarType::Float));
  *value = *as_float.data_as<float>();
  return true;
}

Error div_true(KernelContext& ctx, Elementwise<2>& e, const Operand& other, ScalarType common, Value& out) {
  // Integer and Bool inputs divide in the default float dtype.
  const ScalarType dtype = is_floating_type(common) ? common : ScalarType::Float;
  PARE_TRY(e.prepare(out, dtype, dtype));
  float divisor = 0.0f;
  bool single = false;
  if (dtype == ScalarType::Half || dtype == ScalarType::BFloat16) {
    PARE_TRY_ASSIGN(single, single_element_divisor(ctx, other, &divisor));
  }
  return PARE_DISPATCH(div_true_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if constexpr (is_reduced_float_v<T>) {
      if (single) {
        e.run<T, T>([divisor](T x, T) { return T(Acc(x) / divisor); });
        return Error::Ok;
      }
    }
    e.run<T, T>([](T x, T y) { return T(Acc(x) / Acc(y)); });
    return Error::Ok;
  });
}

// Integer division or modulo, op(x, y) for each nonzero divisor y: a zero
// divisor anywhere fails the op after the loop, which stays free of early
// exits.
template <typename T, typename Op>
PARE_ALWAYS_INLINE Error divide_integers(KernelContext& ctx, Elementwise<2>& e, Op op) {
  bool by_zero = false;
  e.run<T, T>([&by_zero, op](T x, T y) -> T {
    if (y == T(0)) {
      by_zero = true;
      return T(0);
    }
    return op(x, y);
  });
  if (by_zero) return integer_division_by_zero(ctx);
  return Error::Ok;
}

// Division rounding toward negative infinity when kFloor, else toward zero
// (each mode has its own tag).
template <typename Tag, bool kFloor>
Error div_rounded(KernelContext& ctx, Elementwise<2>& e, const Operand& other, ScalarType dtype, Value& out) {
  PARE_TRY(e.prepare(out, dtype, dtype));
  float divisor = 0.0f;
  bool single = false;
  if (dtype == ScalarType::Half || dtype == ScalarType::BFloat16) {
    PARE_TRY_ASSIGN(single, single_element_divisor(ctx, other, &divisor));
  }
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_integral_v<T>) {
      return divide_integers<T>(ctx, e, [](T x, T y) {
        return kFloor ? binary_math::div_floor_int<T>(x, y) : binary_math::div_trunc_int<T>(x, y);
      });
    } else if constexpr (is_reduced_float_v<T>) {
      if (single) {
        e.run<T, T>([divisor](T x, T) {
          return T(kFloor ? binary_math::div_floor_float<T, false>(Acc(x), divisor)
                          : binary_math::trunc(Acc(x) / divisor));
        });
      } else {
        e.run<T, T>([](T x, T y) {
          return T(kFloor ? binary_math::div_floor_float<T, true>(Acc(x), Acc(y))
                          : binary_math::trunc(round_through<T>(Acc(x) / Acc(y))));
        });
      }
    } else {
      e.run<T, T>(
          [](T x, T y) { return kFloor ? binary_math::div_floor_float<T, false>(x, y) : binary_math::trunc(x / y); });
    }
    return Error::Ok;
  });
}

Error div(KernelContext& ctx, const Operand& self, const Operand& other, RoundingMode mode, Value& out) {
  Elementwise<2> e(ctx);
  const ScalarType common = e.add_inputs(self, other);
  if (mode == RoundingMode::kNone) return div_true(ctx, e, other, common, out);
  PARE_CHECK_OR_RETURN(ctx, common != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'rounding_mode': '%s' division of two Bool "
                       "operands is not supported",
                       mode == RoundingMode::kTrunc ? "trunc" : "floor");
  if (mode == RoundingMode::kTrunc) return div_rounded<tags::div_trunc_kernel, false>(ctx, e, other, common, out);
  return div_rounded<tags::div_floor_kernel, true>(ctx, e, other, common, out);
}

// ---------------------------------------------------------------------------
// remainder and fmod

// remainder (Python's modulo: the sign of the divisor) when kFloor, else
// fmod (C's: the sign of the dividend). Each has its own tag, so a build
// selecting one has no code for the other.
template <typename Tag, bool kFloor>
Error modulo(KernelContext& ctx, const Operand& self, const Operand& other, Value& out) {
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, other);
  PARE_CHECK_OR_RETURN(ctx, dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "arguments 'self' and 'other': %s of two Bool operands is not supported",
                       kFloor ? "remainder" : "fmod");
  PARE_TRY(e.prepare(out, dtype, dtype));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_integral_v<T>) {
      return divide_integers<T>(ctx, e, [](T x, T y) {
        return kFloor ? binary_math::remainder_int<T>(x, y) : binary_math::fmod_int<T>(x, y);
      });
    } else if constexpr (kFloor) {
      e.run<T, T>([](T x, T y) { return T(binary_math::remainder_float<Acc>(Acc(x), Acc(y))); });
    } else {
      // Exact, so Half and BFloat16 need no rounding of their own.
      e.run<T, T>([](T x, T y) { return T(math::fmod(Acc(x), Acc(y))); });
    }
    return Error::Ok;
  });
}

// ---------------------------------------------------------------------------
// pow

// pow.Tensor_Tensor and pow.Scalar (a Python number base).
Error pow_tensor_tensor(KernelContext& ctx, const Operand& self, const Operand& exponent, Value& out) {
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, exponent, "exponent");
  PARE_CHECK_OR_RETURN(ctx, dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "arguments 'self' and 'exponent': pow of two Bool "
                       "operands is not supported");
  PARE_TRY(e.prepare(out, dtype, dtype));
  return PARE_DISPATCH(pow_tensor_tensor_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    if constexpr (is_integral_v<T>) {
      e.run<T, T>([](T x, T y) { return binary_math::powi<T>(x, y); });
    } else {
      e.run<T, T>([](T x, T y) { return T(math::pow(Acc(x), Acc(y))); });
    }
    return Error::Ok;
  });
}

// pow.Tensor_Scalar for a floating result: PyTorch's
// pow_tensor_scalar_optimized_kernel and its sqrt / rsqrt / reciprocal
// shortcuts. Half always calls pow with the exponent rounded to Half;
// BFloat16 squares and cubes in BFloat16 arithmetic.
template <typename T>
Error pow_float_exponent(KernelContext& ctx, Elementwise<1>& e, const Scalar& exponent, ScalarType dtype) {
  using Acc = opmath_t<T>;
  if constexpr (!is_same_v<T, Half>) {
    const double d = exponent.to<double>();
    if (d == 0.5) {
      e.run<T, T>([](T x) { return T(math::sqrt(Acc(x))); });
      return Error::Ok;
    }
    if (d == -0.5) {
      e.run<T, T>([](T x) { return T(Acc(1) / math::sqrt(Acc(x))); });
      return Error::Ok;
    }
    if (d == -1.0) {
      e.run<T, T>([](T x) { return T(Acc(1) / Acc(x)); });
      return Error::Ok;
    }
  }
  if constexpr (is_reduced_float_v<T>) {
    if (!binary_math::scalar_fits<T>(exponent)) return binary_math::scalar_overflow(ctx, "exponent", exponent, dtype);
    // The exponent is rounded to T; BFloat16 then squares and cubes in
    // BFloat16 arithmetic (rounding the square), Half always calls pow.
    const Acc exp = static_cast<Acc>(exponent.to<T>());
    if constexpr (is_same_v<T, BFloat16>) {
      if (exp == Acc(2)) {
        e.run<T, T>([](T x) { return T(Acc(x) * Acc(x)); });
        return Error::Ok;
      }
      if (exp == Acc(3)) {
        e.run<T, T>([](T x) { return T(round_through<T>(Acc(x) * Acc(x)) * Acc(x)); });
        return Error::Ok;
      }
      if (exp == Acc(-2)) {
        e.run<T, T>([](T x) { return T(Acc(1) / round_through<T>(Acc(x) * Acc(x))); });
        return Error::Ok;
      }
    }
    e.run<T, T>([exp](T x) { return T(math::pow(Acc(x), exp)); });
    return Error::Ok;
  } else {
    // float and double compare the exponent as double, then pass it as T.
    const double d = exponent.to<double>();
    if (d == 2.0) {
      e.run<T, T>([](T x) { return x * x; });
    } else if (d == 3.0) {
      e.run<T, T>([](T x) { return x * x * x; });
    } else if (d == -2.0) {
      e.run<T, T>([](T x) { return T(1) / (x * x); });
    } else {
      const T exp = static_cast<T>(d);
      e.run<T, T>([exp](T x) { return math::pow(x, exp); });
    }
    return Error::Ok;
  }
}

}  // namespace

// aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
Error aten_sub_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  const Scalar alpha = args.scalar_or(2, "alpha", Scalar::from_int(1));
  PARE_TRY(args.status());
  return sub(ctx, self, other, alpha, args.output(0));
}

// aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
Error aten_sub_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::sub.Tensor",
                                      /*has_alpha=*/true);
}

// aten::mul.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_mul_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::mul.Tensor",
                                      /*has_alpha=*/false);
}

// aten::div.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_div_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return with_binary_operands(ctx, inputs, outputs, [&](const Operand& self, const Operand& other, Value& out) {
    return div(ctx, self, other, RoundingMode::kNone, out);
  });
}

// aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) ->
// Tensor
Error aten_div_Tensor_mode(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  const char* rounding_mode = args.optional_string(2, "rounding_mode");
  PARE_TRY(args.status());
  RoundingMode mode;
  PARE_TRY(parse_rounding_mode(ctx, rounding_mode, &mode));
  return div(ctx, self, other, mode, args.output(0));
}

// aten::div.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_div_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::div.Tensor",
                                      /*has_alpha=*/false);
}

// aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) ->
// Tensor
Error aten_div_Scalar_mode(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  (void)args.tensor(0, "self");
  Value other = Value::make_scalar(args.scalar(1, "other"));
  const char* rounding_mode = args.optional_string(2, "rounding_mode");
  PARE_TRY(args.status());
  Value mode = rounding_mode != nullptr ? Value::make_string(rounding_mode) : Value::make_none();
  Value* forwarded[] = {inputs[0], &other, &mode};
  return PARE_CALL_OP(ctx, "aten::div.Tensor_mode", ValueSpan(forwarded, 3), outputs);
}

// aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_remainder_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return with_binary_operands(ctx, inputs, outputs, [&](const Operand& self, const Operand& other, Value& out) {
    return modulo<tags::remainder_kernel, true>(ctx, self, other, out);
  });
}

// aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_remainder_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::remainder.Tensor", /*has_alpha=*/false);
}

// aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_fmod_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return with_binary_operands(ctx, inputs, outputs, [&](const Operand& self, const Operand& other, Value& out) {
    return modulo<tags::fmod_kernel, false>(ctx, self, other, out);
  });
}

// aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_fmod_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::fmod.Tensor",
                                      /*has_alpha=*/false);
}

// aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
Error aten_pow_Tensor_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand exponent = tensor_or_scalar(args, 1, "exponent");
  PARE_TRY(args.status());
  return pow_tensor_tensor(ctx, self, exponent, args.output(0));
}

// aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor
Error aten_pow_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Scalar self = args.scalar(0, "self");
  const Tensor& exponent = args.tensor(1, "exponent");
  PARE_TRY(args.status());
  // pow(1, y) is 1 for every y, NaN included, so PyTorch's ones shortcut
  // needs no code of its own.
  return pow_tensor_tensor(ctx, Operand::of(self), Operand::of(exponent), args.output(0));
}

// aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
Error aten_pow_Tensor_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar exponent = args.scalar(1, "exponent");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx,
                       !(is_integral_type(self.dtype, /*include_bool=*/true) && exponent.kind() == Scalar::Kind::Int &&
                         exponent.as_int() < 0),
                       Error::InvalidArgument,
                       "argument 'exponent': integers to negative integer powers are not "
                       "allowed "
                       "(self is %s, exponent %lld)",
                       to_string(self.dtype), static_cast<long long>(exponent.as_int()));
  const Operand operands[] = {Operand::of(self), Operand::of(exponent)};
  const ScalarType dtype = result_type(operands, 2);
  // PyTorch fills ones for exponent 0 (or False) and copies for 1 (or True).
  const bool is_zero = exponent.is_bool() ? !exponent.as_bool() : exponent.as_double() == 0.0;
  const bool is_one = exponent.is_bool() ? exponent.as_bool() : exponent.as_double() == 1.0;
  Elementwise<1> e(ctx);
  e.add_input(operands[0], "self");
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return PARE_DISPATCH(pow_tensor_scalar_kernel, ctx, dtype, T, {
    if (is_zero) {
      e.run<T, T>([](T) { return T(1); });
      return Error::Ok;
    }
    if (is_one) {
      e.run<T, T>([](T x) { return x; });
      return Error::Ok;
    }
    if constexpr (is_same_v<T, bool>) {
      // A Bool result needs a Bool exponent, which is 0 or 1.
      return PARE_FAIL(ctx, Error::Internal, "Bool result with exponent other than True or False");
    } else if constexpr (is_integral_v<T>) {
      if (!binary_math::scalar_fits<T>(exponent)) {
        return binary_math::scalar_overflow(ctx, "exponent", exponent, dtype);
      }
      const T exp = exponent.to<T>();
      e.run<T, T>([exp](T x) { return binary_math::powi<T>(x, exp); });
      return Error::Ok;
    } else {
      return pow_float_exponent<T>(ctx, e, exponent, dtype);
    }
  });
}

// aten::atan2(Tensor self, Tensor other) -> Tensor
//
// atan2(self, other), the angle of (other, self): integral and Bool operands
// compute in the default float dtype, as true division does; Half and
// BFloat16 compute in float and round once.
Error aten_atan2(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  PARE_TRY(args.status());
  Elementwise<2> e(ctx);
  const ScalarType common = e.add_inputs(self, other);
  const ScalarType dtype = is_floating_type(common) ? common : ScalarType::Float;
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return PARE_DISPATCH(atan2_kernel, ctx, dtype, T, {
    using Acc = opmath_t<T>;
    e.run<T, T>([](T y, T x) { return T(math::atan2(Acc(y), Acc(x))); });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
