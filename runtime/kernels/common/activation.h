#pragma once
// Activation formulas shared by the aten:: ops (unary_math/) and the fused
// epilogues of the prepacked layers (prepacked/): one definition each, in
// PyTorch's operand order (aten/src/ATen/native/cpu/Activation.cpp and
// UnaryOpsKernel.cpp), so a fused epilogue gives what the separate operator
// gives, NaN and infinities included. `A` is the compute type (float for
// Half/BFloat16). Piecewise-linear ones are selects, which clang vectorises;
// exp, tanh and erf are inline polynomials (common/math.h), so a loop over
// any of these vectorises with no call per element.

#include "runtime/core/compiler.h"
#include "runtime/kernels/common/math.h"

namespace pare {
namespace activation {

// min(max(x + 3, 0), 6) with the C++ library's max/min NaN behaviour (NaN in,
// NaN out), shared by hardswish and hardsigmoid.
template <typename A>
PARE_ALWAYS_INLINE A relu6_of_x_plus_3(A x) {
  A v = x + A(3);
  v = v < A(0) ? A(0) : v;
  return A(6) < v ? A(6) : v;
}

template <typename A>
PARE_ALWAYS_INLINE A hardswish(A x) {
  return x * relu6_of_x_plus_3(x) / A(6);
}

template <typename A>
PARE_ALWAYS_INLINE A hardsigmoid(A x) {
  return relu6_of_x_plus_3(x) / A(6);
}

template <typename A>
PARE_ALWAYS_INLINE A sigmoid(A x) {
  return A(1) / (A(1) + math::exp(-x));
}

template <typename A>
PARE_ALWAYS_INLINE A silu(A x) {
  return x / (A(1) + math::exp(-x));
}

// gelu(approximate='none'): x / 2 (1 + erf(x / sqrt 2)).
template <typename A>
PARE_ALWAYS_INLINE A gelu(A x) {
  constexpr double kSqrtHalf = 0.70710678118654752440;  // M_SQRT1_2
  return x * A(0.5) * (A(1) + math::erf(x * A(kSqrtHalf)));
}

// gelu(approximate='tanh'): x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
template <typename A>
PARE_ALWAYS_INLINE A gelu_tanh(A x) {
  constexpr double kSqrt2 = 1.41421356237309504880;        // M_SQRT2
  constexpr double k2OverSqrtPi = 1.12837916709551257390;  // M_2_SQRTPI
  const A beta = A(kSqrt2 * k2OverSqrtPi * 0.5);
  const A kappa = A(0.044715);
  const A inner = beta * (x + kappa * (x * x * x));
  return A(0.5) * x * (A(1) + math::tanh(inner));
}

}  // namespace activation
}  // namespace pare
