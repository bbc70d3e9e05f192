#pragma once
// Element functions shared by the binary_math kernels: PyTorch's integer
// division, floor division, remainder, fmod and integer power, nonzero
// tests and the range check PyTorch applies when it converts a Scalar
// argument.
//
// They reproduce PyTorch's CPU results bit for bit where PyTorch defines
// them (c10/util/generic_math.h, aten/src/ATen/native/cpu/BinaryOpsKernel.cpp
// and its vectorized paths), including where the 16-bit float types round
// intermediate results, and stay defined where C++ is not: integer
// division by -1 of the minimum value wraps instead of trapping (PyTorch
// itself traps for trunc division of int64), and division by zero is the
// caller's to report (the functions return 0).

#include "runtime/registry/kernel.h"
#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/math.h"

namespace pare {
namespace kernels {
namespace binary_math {

// v rounded through T (a no-op unless T is Half or BFloat16): PyTorch's
// vectorized 16-bit float kernels round after every operation.
template <typename T>
PARE_ALWAYS_INLINE opmath_t<T> round_through(opmath_t<T> v) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<float>(T(v));
  } else {
    return v;
  }
}

// x != 0, without converting 16-bit floats (NaN is nonzero).
template <typename T>
PARE_ALWAYS_INLINE bool nonzero(T x) {
  if constexpr (is_reduced_float_v<T>) {
    return (x.bits & 0x7FFFu) != 0;
  } else {
    return x != T(0);
  }
}

// +0 or -0 with the sign of x.
PARE_ALWAYS_INLINE float signed_zero(float x) {
  return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x) & 0x80000000u);
}
PARE_ALWAYS_INLINE double signed_zero(double x) {
  return __builtin_bit_cast(double, __builtin_bit_cast(uint64_t, x) & 0x8000000000000000ull);
}

// trunc and floor without a libm call: exact, branch-free and vectorisable
// (a PAL call per element would dominate trunc division). Magnitudes from
// 2^23 (float) / 2^52 (double) up, infinities and NaN are already integral;
// the sign is copied back so -0.5 truncates to -0.0 as in libm.
PARE_ALWAYS_INLINE float trunc(float x) {
  const bool small = math::abs(x) < 8388608.0f;  // 2^23
  const float t = static_cast<float>(static_cast<int32_t>(small ? x : 0.0f));
  const uint32_t sign = __builtin_bit_cast(uint32_t, x) & 0x80000000u;
  return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, small ? t : x) | sign);
}
PARE_ALWAYS_INLINE double trunc(double x) {
  const bool small = math::abs(x) < 4503599627370496.0;  // 2^52
  const double t = static_cast<double>(static_cast<int64_t>(small ? x : 0.0));
  const uint64_t sign = __builtin_bit_cast(uint64_t, x) & 0x8000000000000000ull;
  return __builtin_bit_cast(double, __builtin_bit_cast(uint64_t, small ? t : x) | sign);
}
template <typename Acc>
PARE_ALWAYS_INLINE Acc floor(Acc x) {
  const Acc t = trunc(x);
  return t > x ? t - Acc(1) : t;
}

// Integer division rounding toward zero. b != 0.
template <typename T>
PARE_ALWAYS_INLINE T div_trunc_int(T a, T b) {
  if constexpr (is_same_v<T, int32_t> || is_same_v<T, int64_t>) {
    // MIN / -1 overflows (and traps on x86); PyTorch's types wrap.
    if (b == T(-1)) return arith::sub<T>(T(0), a);
  }
  return static_cast<T>(a / b);  // narrower types divide as int: no overflow
}

// Python's floor division (c10::div_floor_integer). b != 0.
template <typename T>
PARE_ALWAYS_INLINE T div_floor_int(T a, T b) {
  if constexpr (is_same_v<T, uint8_t>) {
    return static_cast<T>(a / b);
  } else {
    if (b == T(-1)) return arith::sub<T>(T(0), a);
    const T quot = static_cast<T>(a / b);
    const T rem = static_cast<T>(a % b);
    // Opposite signs and inexact: truncation rounded up, so step down.
    // quot - 1 cannot overflow: |quot| < |a| here.
    return (rem != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(quot - 1) : quot;
  }
}

// Python's modulo: the result has the sign of the divisor. b != 0.
template <typename T>
PARE_ALWAYS_INLINE T remainder_int(T a, T b) {
  if constexpr (is_same_v<T, uint8_t>) {
    return static_cast<T>(a % b);
  } else {
    if (b == T(-1)) return T(0);  // MIN % -1 traps in C++
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  }
}

// C's modulo (PyTorch's fmod): the result has the sign of the dividend. b != 0.
template <typename T>
PARE_ALWAYS_INLINE T fmod_int(T a, T b) {
  if constexpr (is_same_v<T, int32_t> || is_same_v<T, int64_t>) {
    if (b == T(-1)) return T(0);  // MIN % -1 traps in C++
  }
  return static_cast<T>(a % b);  // narrower types divide as int: no overflow
}

// Python's modulo for floating types, computed in Acc.
template <typename Acc>
PARE_ALWAYS_INLINE Acc remainder_float(Acc a, Acc b) {
  const Acc mod = math::fmod(a, b);
  return (mod != 0 && ((b < 0) != (mod < 0))) ? mod + b : mod;
}

// Python's floor division for floating types, following PyTorch's
// vectorized div_floor_floating_vec. kRoundSteps rounds every step through
// T, as PyTorch's Half/BFloat16 vectors do for two tensor operands; with a
// single-element divisor PyTorch computes in float and rounds once.
template <typename T, bool kRoundSteps>
PARE_ALWAYS_INLINE opmath_t<T> div_floor_float(opmath_t<T> a, opmath_t<T> b) {
  using Acc = opmath_t<T>;
  const auto r = [](Acc v) { return kRoundSteps ? round_through<T>(v) : v; };
  const Acc basic = r(a / b);
  if (b == 0) return basic;  // IEEE result: +-inf or NaN
  const Acc mod = r(math::fmod(a, b));
  const Acc inf = static_cast<Acc>(math::kInfinity);
  // Sleef's fmod is inexact when a / b overflows; PyTorch uses a there.
  const Acc exact = (math::abs(basic) == inf && math::abs(a) != inf) ? a : r(a - mod);
  Acc div = r(exact / b);
  if (mod != 0 && ((b < 0) != (mod < 0))) div = r(div - Acc(1));
  if (div == 0) return signed_zero(basic);
  Acc floordiv = floor(div);
  if (r(div - floordiv) > Acc(0.5)) floordiv = r(floordiv + Acc(1));
  return floordiv;
}

// Integer power by squaring with wrapping (at::native::powi): negative
// exponents give 1 for base 1, +-1 for base -1 and 0 otherwise.
template <typename T>
PARE_ALWAYS_INLINE T powi(T base, T exp) {
  if constexpr (!is_same_v<T, uint8_t>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = T(1);
  while (exp != 0) {
    if (exp & 1) result = arith::mul<T>(result, base);
    exp = static_cast<T>(exp / 2);
    base = arith::mul<T>(base, base);
  }
  return result;
}

// Largest finite value of floating type T.
template <typename T>
constexpr double max_finite() {
  if constexpr (is_same_v<T, Half>) {
    return 65504.0;
  } else if constexpr (is_same_v<T, BFloat16>) {
    return 3.3895313892515355e38;
  } else {
    return 3.4028234663852886e38;  // float
  }
}

// PyTorch's Scalar::to<T>() (checked_convert) refuses values T cannot
// represent: integers out of range, finite floats beyond T's largest value.
template <typename T>
bool scalar_fits(const Scalar& s) {
  if constexpr (is_same_v<T, bool> || is_same_v<T, double>) {
    return true;
  } else if constexpr (is_integral_v<T>) {
    if (s.is_floating_point()) {
      // Only reachable through a float Scalar for an integral result, which
      // the callers reject first; kept exact for the int64 bounds anyway.
      const double d = s.as_double();
      const double lo = is_same_v<T, uint8_t> ? -255.0 : -static_cast<double>(uint64_t(1) << (8 * sizeof(T) - 1));
      const double hi = static_cast<double>(uint64_t(1) << (8 * sizeof(T) - (is_same_v<T, uint8_t> ? 0 : 1)));
      return d >= lo && d < hi;
    }
    if constexpr (is_same_v<T, int64_t>) {
      return true;
    } else if constexpr (is_same_v<T, uint8_t>) {
      // c10 lets negative values wrap into unsigned types (a - b is a + 255 * b).
      return s.as_int() >= -255 && s.as_int() <= 255;
    } else {
      constexpr int64_t kMax = static_cast<int64_t>((uint64_t(1) << (8 * sizeof(T) - 1)) - 1);
      return s.as_int() >= -kMax - 1 && s.as_int() <= kMax;
    }
  } else {
    const double d = s.as_double();
    if (d != d || d == math::kInfinity || d == -math::kInfinity) return true;
    return d >= -max_finite<T>() && d <= max_finite<T>();
  }
}

// Reports a Scalar argument that scalar_fits<T> rejected, naming it:
// "argument 'alpha': value 1000 cannot be converted to Char without overflow",
// then `note`.
Error scalar_overflow(KernelContext& ctx, const char* name, const Scalar& value, ScalarType dtype,
                      const char* note = "");

}  // namespace binary_math
}  // namespace kernels
}  // namespace pare
