#pragma once
// The toolchain smoke library: the smallest freestanding C++ that exercises
// what every Pare platform build needs (hidden-by-default visibility, one
// exported C symbol, a libm call through the platform's system library,
// dynamic relocations).
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PARE_SMOKE_API __attribute__((visibility("default")))

// Returns 2 * x + sqrt(4): 42 for x = 20.
PARE_SMOKE_API int32_t pare_smoke_answer(int32_t x);

#ifdef __cplusplus
}
#endif
