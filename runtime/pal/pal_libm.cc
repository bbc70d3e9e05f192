// The PAL's libm hooks over the platform libm (every supported platform has
// one). Shared by pal_posix.cc and pal_test_double.cc builds; a port
// without libm provides its own implementations of these hooks instead.

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

extern "C" {

#define PARE_LIBM_UNARY(name)                              \
  float pare_pal_##name##f(float x) { return name##f(x); } \
  double pare_pal_##name(double x) { return name(x); }
#define PARE_LIBM_BINARY(name)                                         \
  float pare_pal_##name##f(float x, float y) { return name##f(x, y); } \
  double pare_pal_##name(double x, double y) { return name(x, y); }
#include "runtime/pal/libm.def"

}  // extern "C"
