#pragma once
// quantize_per_tensor to a one-byte type (per_tensor.cc: an int8 model's
// input) on vectors of kLanes floats: quantize_value's steps lane by lane
// (the product rounded, then torch.round half to even by quantized.h's
// magic constant, the zero point, the clamp, NaN to 0), exact in float
// and int32 for a one-byte range: the same bits at any width. At
// --//runtime:x86_64_isa=auto an x86-64-v4 CPU runs 16 lanes
// (per_tensor_x86_64_v4.cc); the build's own loop does the rest.

#include "runtime/core/compiler.h"
#include <stddef.h>
#include <stdint.h>

namespace pare {
namespace kernels {
namespace quantize_bytes {

// q[i] for i < n rounded down to whole vectors; returns how many were done.
template <int kLanes, typename Q>
PARE_ALWAYS_INLINE size_t vectors(const float* x, size_t n, float inv_scale, float zp, float qmin, float qmax, Q* q) {
#pragma clang fp contract(off)
  typedef float V __attribute__((vector_size(kLanes * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(kLanes * sizeof(int32_t))));
  typedef Q B __attribute__((vector_size(kLanes * sizeof(Q))));
  const V magic = V{} + 12582912.0f;  // quantized.h's round_half_even
  const V exact = V{} + 4194304.0f;
  size_t i = 0;
#pragma clang loop vectorize(disable) unroll(disable)
  for (; i + kLanes <= n; i += kLanes) {
    V p;
    __builtin_memcpy(&p, x + i, sizeof(p));
    p = p * inv_scale;
    V v = ((p < 0.0f ? -p : p) < exact ? (p + magic) - magic : p) + zp;
    v = v < qmin ? qmin : v;
    v = v > qmax ? qmax : v;
    const I whole = v != v ? I{} : __builtin_convertvector(v, I);
    const B r = __builtin_convertvector(whole, B);
    __builtin_memcpy(q + i, &r, sizeof(r));
  }
  return i;
}

#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v4 {
size_t to_int8(const float* x, size_t n, float inv_scale, float zp, float qmin, float qmax, int8_t* q);
size_t to_uint8(const float* x, size_t n, float inv_scale, float zp, float qmin, float qmax, uint8_t* q);
}  // namespace x86_64_v4
#endif

}  // namespace quantize_bytes
}  // namespace kernels
}  // namespace pare
