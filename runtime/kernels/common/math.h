#pragma once
// Overloaded math for kernels (float and double), over the PAL's libm hooks.
// Kernels write pare::math::exp(x) for Acc = float or double and never call
// libm directly, so the runtime stays freestanding and every port provides
// the same functions. Add an overload pair here (and the hook to
// runtime/pal/pal.h and every PAL) when a kernel needs a new function.

#include "runtime/pal/pal.h"

namespace pare {
namespace math {

inline float exp(float x) { return pare_pal_expf(x); }
inline double exp(double x) { return pare_pal_exp(x); }
inline float expm1(float x) { return pare_pal_expm1f(x); }
inline double expm1(double x) { return pare_pal_expm1(x); }
inline float log(float x) { return pare_pal_logf(x); }
inline double log(double x) { return pare_pal_log(x); }
inline float log1p(float x) { return pare_pal_log1pf(x); }
inline double log1p(double x) { return pare_pal_log1p(x); }
inline float tanh(float x) { return pare_pal_tanhf(x); }
inline double tanh(double x) { return pare_pal_tanh(x); }
inline float erf(float x) { return pare_pal_erff(x); }
inline double erf(double x) { return pare_pal_erf(x); }
inline float pow(float x, float y) { return pare_pal_powf(x, y); }
inline double pow(double x, double y) { return pare_pal_pow(x, y); }
inline float sqrt(float x) { return pare_pal_sqrtf(x); }
inline double sqrt(double x) { return pare_pal_sqrt(x); }
inline float sin(float x) { return pare_pal_sinf(x); }
inline double sin(double x) { return pare_pal_sin(x); }
inline float cos(float x) { return pare_pal_cosf(x); }
inline double cos(double x) { return pare_pal_cos(x); }
inline float floor(float x) { return pare_pal_floorf(x); }
inline double floor(double x) { return pare_pal_floor(x); }
inline float ceil(float x) { return pare_pal_ceilf(x); }
inline double ceil(double x) { return pare_pal_ceil(x); }
inline float nearbyint(float x) { return pare_pal_nearbyintf(x); }
inline double nearbyint(double x) { return pare_pal_nearbyint(x); }
inline float fmod(float x, float y) { return pare_pal_fmodf(x, y); }
inline double fmod(double x, double y) { return pare_pal_fmod(x, y); }

// Header-only, exact and branch-free: no PAL call needed.
inline float abs(float x) { return __builtin_fabsf(x); }
inline double abs(double x) { return __builtin_fabs(x); }
inline bool isnan(float x) { return x != x; }
inline bool isnan(double x) { return x != x; }

constexpr float kInfinityF = __builtin_inff();
constexpr double kInfinity = __builtin_inf();

}  // namespace math
}  // namespace pare
