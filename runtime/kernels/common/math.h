#pragma once
// Overloaded math for kernels (float and double), over the PAL's libm hooks
// (float exp, tanh and erf are inline polynomials, below).
// Kernels write pare::math::exp(x) for Acc = float or double and never call
// libm directly, so the runtime stays freestanding and every port provides
// the same functions. A kernel that needs a new function adds it to
// runtime/pal/libm.def, which makes the hooks and these overloads.

#include "runtime/pal/pal.h"

namespace pare {
namespace math {

// The hooks of runtime/pal/libm.def as overloads: exp(float) calls
// pare_pal_expf, exp(double) pare_pal_exp. The float exp, tanh and erf
// (PARE_LIBM_UNARY_POLY) are inline polynomials instead, below.
#define PARE_LIBM_UNARY(name)                                  \
  inline float name(float x) { return pare_pal_##name##f(x); } \
  inline double name(double x) { return pare_pal_##name(x); }
#define PARE_LIBM_UNARY_POLY(name) \
  inline double name(double x) { return pare_pal_##name(x); }
#define PARE_LIBM_BINARY(name)                                             \
  inline float name(float x, float y) { return pare_pal_##name##f(x, y); } \
  inline double name(double x, double y) { return pare_pal_##name(x, y); }
#include "runtime/pal/libm.def"

// Header-only, exact and branch-free: no PAL call needed.
inline float abs(float x) { return __builtin_fabsf(x); }
inline double abs(double x) { return __builtin_fabs(x); }
inline bool isnan(float x) { return x != x; }
inline bool isnan(double x) { return x != x; }

constexpr float kInfinityF = __builtin_inff();
constexpr double kInfinity = __builtin_inf();

// float exp and tanh: inline and branch-free (selects, not branches), so a
// contiguous loop over them (exp, sigmoid, tanh, silu, softmax, gelu's tanh
// form) vectorises with no call per element. Cephes' minimax polynomials:
// both within 1 ulp of the correctly rounded result on a 400,001-point sweep
// (as torch's own float kernels are); tests/runtime/kernels/test_unary_math.py
// holds them to 2 ulps against float64, FMA or not, and checks the special
// values below exactly.
// Special values follow C: exp(NaN) = NaN, exp(+inf) = +inf, exp(-inf) = 0,
// overflow to +inf, gradual underflow; tanh(+-inf) = +-1, tanh(-0) = -0.
inline float exp(float x) {
  // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 with ln 2 in
  // two parts (Cody-Waite), |r| <= ln(2) / 2. Clamping keeps n in
  // [-150, 128], where 2^n is two normal factors; beyond it the result is
  // 0 or +inf either way. NaN is carried through by the final select (the
  // integer conversion must not see it).
  const float clamped = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float v = clamped == clamped ? clamped : 0.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (v * 1.44269504088896341f + kRound) - kRound;
  float r = v - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int ni = static_cast<int>(n);
  const int n1 = ni / 2;  // 2^n = 2^n1 * 2^n2, each a normal float
  const float s1 = __builtin_bit_cast(float, (n1 + 127) << 23);
  const float s2 = __builtin_bit_cast(float, (ni - n1 + 127) << 23);
  const float result = y * s1 * s2;
  return x == x ? result : x;
}

inline float tanh(float x) {
  // |x| < 0.625: x + x^3 P(x^2) (its sign forced to x's, so tanh(-0) is
  // -0); else sign(x) (1 - 2 / (exp(2|x|) + 1)), with |x| capped at 44,
  // where the formula gives exactly 1 and exp(88) is still finite (at 9
  // it would give 1 - 2^-25, one ulp below the 1.0f tanh rounds to).
  const float a = __builtin_fabsf(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = __builtin_copysignf(p * z * x + x, x);
  const float e = exp(2.0f * (a < 44.0f ? a : 44.0f));
  const float large = __builtin_copysignf(1.0f - 2.0f / (e + 1.0f), x);
  return a < 0.625f ? small : (a == a ? large : x);
}

// float erf, the same way: two polynomials, both evaluated and one selected,
// fitted for this runtime (weighted minimax by Lawson's iteratively
// reweighted least squares on Chebyshev nodes, in float64 against Python's
// math.erf / math.erfc, coefficients rounded to float):
//   |x| < 0.875:  a + a P(a^2), fitted to erf(a) / a - 1;
//   |x| >= 0.875: 1 - exp(-a^2) Q(a - 0.875), Q fitted to erfc(a) exp(a^2);
// both weighted for erf's relative error. From 3.9192059 on, where float
// erf rounds to 1, exactly +-1. Checked on all 2^32 inputs: within 1 ulp of
// the correctly rounded result, with FMA contraction or without
// (tests/runtime/kernels/test_unary_math.py sweeps it against float64). exp(-a^2)
// loses nothing that matters: its error is scaled by erfc(a) <= 0.22.
// erf(+-0) = +-0, erf(+-inf) = +-1, erf(NaN) = NaN.
inline float erf(float x) {
  const float a = __builtin_fabsf(x);
  const float z = a * a;
  float p = 8.675421850e-05f;
  p = p * z + -8.211111417e-04f;
  p = p * z + 5.206748378e-03f;
  p = p * z + -2.686158568e-02f;
  p = p * z + 1.128373295e-01f;
  p = p * z + -3.761263490e-01f;
  p = p * z + 1.283791661e-01f;
  const float small = a + a * p;
  const float t = a - 0.875f;
  float q = 1.455001766e-04f;
  q = q * t + -1.452805707e-03f;
  q = q * t + 6.749857683e-03f;
  q = q * t + -2.050211653e-02f;
  q = q * t + 4.872249439e-02f;
  q = q * t + -1.006349325e-01f;
  q = q * t + 1.879227012e-01f;
  q = q * t + -3.158323467e-01f;
  q = q * t + 4.643115699e-01f;
  const float large = 1.0f - exp(-z) * q;  // NaN comes through here
  float r = a < 0.875f ? small : large;
  r = a >= 3.9192059f ? 1.0f : r;  // where float erf rounds to 1; also +-inf to +-1
  return __builtin_copysignf(r, x);
}

}  // namespace math
}  // namespace pare
