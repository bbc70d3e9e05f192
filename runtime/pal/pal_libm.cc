// The PAL's libm hooks over the platform libm (every supported platform has
// one). Shared by pal_posix.cc and pal_test_double.cc builds; a port
// without libm provides its own implementations of these hooks instead.

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

extern "C" {

float pare_pal_expf(float x) { return expf(x); }
double pare_pal_exp(double x) { return exp(x); }
float pare_pal_expm1f(float x) { return expm1f(x); }
double pare_pal_expm1(double x) { return expm1(x); }
float pare_pal_logf(float x) { return logf(x); }
double pare_pal_log(double x) { return log(x); }
float pare_pal_log1pf(float x) { return log1pf(x); }
double pare_pal_log1p(double x) { return log1p(x); }
float pare_pal_tanhf(float x) { return tanhf(x); }
double pare_pal_tanh(double x) { return tanh(x); }
float pare_pal_erff(float x) { return erff(x); }
double pare_pal_erf(double x) { return erf(x); }
float pare_pal_powf(float x, float y) { return powf(x, y); }
double pare_pal_pow(double x, double y) { return pow(x, y); }
float pare_pal_sqrtf(float x) { return sqrtf(x); }
double pare_pal_sqrt(double x) { return sqrt(x); }
float pare_pal_sinf(float x) { return sinf(x); }
double pare_pal_sin(double x) { return sin(x); }
float pare_pal_cosf(float x) { return cosf(x); }
double pare_pal_cos(double x) { return cos(x); }
float pare_pal_floorf(float x) { return floorf(x); }
double pare_pal_floor(double x) { return floor(x); }
float pare_pal_ceilf(float x) { return ceilf(x); }
double pare_pal_ceil(double x) { return ceil(x); }
float pare_pal_nearbyintf(float x) { return nearbyintf(x); }
double pare_pal_nearbyint(double x) { return nearbyint(x); }
float pare_pal_fmodf(float x, float y) { return fmodf(x, y); }
double pare_pal_fmod(double x, double y) { return fmod(x, y); }

}  // extern "C"
