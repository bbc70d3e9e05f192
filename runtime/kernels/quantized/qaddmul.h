#pragma once
// The same-shape loop of pare::qadd / pare::qmul (qelementwise.cc): kLanes
// elements per step in float vectors, the steps of the general loop
// (dequantize each input, the sum or product, quantize_per_tensor's
// rounding) lane by lane, without its NaN and int64 cases, which int8
// inputs and finite scales never reach: the same bits at any width. The
// baseline build runs 4 lanes (SSE2 and NEON registers); at
// --//runtime:x86_64_isa=auto an x86-64-v4 CPU runs the 16-lane copy
// (qelementwise_x86_64_v4.cc).

#include "runtime/core/compiler.h"
#include <stdint.h>

namespace pare {
namespace kernels {
namespace qaddmul {

struct Params {
  float a_scale, a_zero_point, b_scale, b_zero_point;  // the inputs' dequantization
  float inv_scale, zero_point, lo, hi;                 // the output's quantization and range
};

// The output's int8 of v = the sum or product, kLanes at a time.
template <int kLanes, typename V>
PARE_ALWAYS_INLINE void store_quantized(V v, int8_t* o, const Params& p) {
#pragma clang fp contract(off)
  typedef int32_t I __attribute__((vector_size(kLanes * sizeof(int32_t))));
  typedef int8_t B __attribute__((vector_size(kLanes)));
  const V magic = V{} + 12582912.0f;  // quantized.h's round_half_even
  const V exact = V{} + 4194304.0f;
  const V q = v * p.inv_scale;
  const V rounded = (q + magic) - magic;
  V r = ((q < 0.0f ? -q : q) < exact ? rounded : q) + p.zero_point;
  r = r < p.lo ? p.lo : r;
  r = r > p.hi ? p.hi : r;
  const B b = __builtin_convertvector(__builtin_convertvector(r, I), B);
  __builtin_memcpy(o, &b, sizeof(b));
}

// o[i] for i < n rounded down to whole vectors; returns how many were done.
// `f` adds or multiplies two vectors.
template <int kLanes, typename F>
PARE_ALWAYS_INLINE int64_t vectors(const int8_t* x, const int8_t* y, int8_t* o, int64_t n, const Params& p, F f) {
#pragma clang fp contract(off)
  typedef float V __attribute__((vector_size(kLanes * sizeof(float))));
  typedef int8_t B __attribute__((vector_size(kLanes)));
  int64_t i = 0;
#pragma clang loop vectorize(disable) unroll(disable)
  for (; i + kLanes <= n; i += kLanes) {
    B xs, ys;
    __builtin_memcpy(&xs, x + i, sizeof(xs));
    __builtin_memcpy(&ys, y + i, sizeof(ys));
    const V u = (__builtin_convertvector(xs, V) - p.a_zero_point) * p.a_scale;
    const V w = (__builtin_convertvector(ys, V) - p.b_zero_point) * p.b_scale;
    store_quantized<kLanes>(f(u, w), o + i, p);
  }
  return i;
}

// vectors() against one dequantized value w of the other operand (a
// squeeze-excitation's [N, C, 1, 1] scale of a [N, C, H, W] image: w is
// the same float the general loop dequantizes, for every element of a
// row); p's b_scale and b_zero_point are unused.
template <int kLanes, typename F>
PARE_ALWAYS_INLINE int64_t vectors_by(const int8_t* x, float w, int8_t* o, int64_t n, const Params& p, F f) {
#pragma clang fp contract(off)
  typedef float V __attribute__((vector_size(kLanes * sizeof(float))));
  typedef int8_t B __attribute__((vector_size(kLanes)));
  const V ws = V{} + w;
  int64_t i = 0;
#pragma clang loop vectorize(disable) unroll(disable)
  for (; i + kLanes <= n; i += kLanes) {
    B xs;
    __builtin_memcpy(&xs, x + i, sizeof(xs));
    const V u = (__builtin_convertvector(xs, V) - p.a_zero_point) * p.a_scale;
    store_quantized<kLanes>(f(u, ws), o + i, p);
  }
  return i;
}

#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v4 {
int64_t add_vectors(const int8_t* x, const int8_t* y, int8_t* o, int64_t n, const Params& p);
int64_t mul_vectors(const int8_t* x, const int8_t* y, int8_t* o, int64_t n, const Params& p);
int64_t add_vectors_by(const int8_t* x, float w, int8_t* o, int64_t n, const Params& p);
int64_t mul_vectors_by(const int8_t* x, float w, int8_t* o, int64_t n, const Params& p);
// pare::qlut's y[i] = table[x[i] + 128] for i < n, 64 bytes per step
// (vpermi2b), on a CPU with AVX-512 VBMI (cpu::x86_64_vbmi()).
void lut_vbmi(const int8_t* x, const int8_t* table, int8_t* y, int64_t n);
}  // namespace x86_64_v4
#endif

}  // namespace qaddmul
}  // namespace kernels
}  // namespace pare
