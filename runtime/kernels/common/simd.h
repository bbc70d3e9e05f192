#pragma once
// Portable float vectors for the float fast paths (GEMM, depthwise
// convolution): clang vector extensions, which clang lowers to SSE2 or AVX
// on x86_64 and NEON on arm64, with no target intrinsics in our code.
//
// The width follows the ISA the runtime is compiled for: 4 lanes on arm64
// (NEON) and baseline x86_64 (SSE2), 8 lanes with AVX2+FMA
// (--//runtime:x86_64_isa=v3, rules/private/isa.bzl). `acc += a * b`
// contracts to one fused multiply-add where the ISA has one (NEON, FMA):
// clang's default -ffp-contract=on fuses within an expression.

#include "runtime/core/compiler.h"

// The ISA this translation unit's vector code is compiled for, as a
// namespace name. A runtime at --//runtime:x86_64_isa=auto compiles some
// kernels twice (SSE2 and x86-64-v3: gemm_kernels.inc, in gemm_kernels.cc
// and kernels_x86_64_v3.cc) into one library, so everything here lives in an
// inline namespace of that name: the two copies of an inline function are
// two functions, and the baseline code can never call the v3 one.
#if defined(__AVX512F__)
#define PARE_SIMD_ISA x86_64_v4  // simd.h's vectors stay 8 lanes wide there
#elif defined(__AVX2__) && defined(__FMA__)
#define PARE_SIMD_ISA x86_64_v3
#elif defined(__aarch64__)
#define PARE_SIMD_ISA arm64_neon
#else
#define PARE_SIMD_ISA x86_64_baseline
#endif

namespace pare {
namespace simd {
inline namespace PARE_SIMD_ISA {

#if defined(__AVX2__) && defined(__FMA__)
constexpr long kLanes = 8;
#else
constexpr long kLanes = 4;
#endif

typedef float vec __attribute__((vector_size(kLanes * sizeof(float))));

// x in every lane.
PARE_ALWAYS_INLINE vec splat(float x) {
  vec v;
  for (long i = 0; i < kLanes; ++i) v[i] = x;
  return v;
}

// Lane L of v in every lane (an FMLA by element where it feeds one).
template <int L>
PARE_ALWAYS_INLINE vec lane(vec v) {
#if defined(__AVX2__) && defined(__FMA__)
  return __builtin_shufflevector(v, v, L, L, L, L, L, L, L, L);
#else
  return __builtin_shufflevector(v, v, L, L, L, L);
#endif
}

// Unaligned loads and stores (memcpy: no alignment or aliasing assumption).
PARE_ALWAYS_INLINE vec loadv(const float* p) {
  vec v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
PARE_ALWAYS_INLINE void storev(float* p, vec v) { __builtin_memcpy(p, &v, sizeof(v)); }

// Lanes kFirst, kFirst + 2, kFirst + 4, ... of the 2 * kLanes floats in a
// then b: the even lanes (a[0], a[2], ..., b[0], b[2], ...) for kFirst = 0,
// the odd ones for 1.
template <int kFirst>
PARE_ALWAYS_INLINE vec alternate_lanes(vec a, vec b) {
#if defined(__AVX2__) && defined(__FMA__)
  return __builtin_shufflevector(a, b, kFirst, kFirst + 2, kFirst + 4, kFirst + 6, kFirst + 8, kFirst + 10, kFirst + 12,
                                 kFirst + 14);
#else
  return __builtin_shufflevector(a, b, kFirst, kFirst + 2, kFirst + 4, kFirst + 6);
#endif
}
PARE_ALWAYS_INLINE vec even_lanes(vec a, vec b) { return alternate_lanes<0>(a, b); }
PARE_ALWAYS_INLINE vec odd_lanes(vec a, vec b) { return alternate_lanes<1>(a, b); }

// Lanes 0, 2, 4, ... of the 2 * kLanes floats at p (p[0], p[2], ...): a
// stride-2 row as one vector.
PARE_ALWAYS_INLINE vec load_even(const float* p) { return even_lanes(loadv(p), loadv(p + kLanes)); }

// Stores a's and b's lanes interleaved, a[0] b[0] a[1] b[1] ..., at p:
// 2 * kLanes floats (a stride-2 row written as two vectors).
PARE_ALWAYS_INLINE void store_interleaved(float* p, vec a, vec b) {
#if defined(__AVX2__) && defined(__FMA__)
  storev(p, __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11));
  storev(p + kLanes, __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15));
#else
  storev(p, __builtin_shufflevector(a, b, 0, 4, 1, 5));
  storev(p + kLanes, __builtin_shufflevector(a, b, 2, 6, 3, 7));
#endif
}

// Whether clamping to [lo, hi] can change a value: a bound is finite. (A
// fused clamp with infinite bounds, e.g. relu's upper one, costs nothing.)
PARE_ALWAYS_INLINE bool bounded(float lo, float hi) { return lo > -__builtin_inff() || hi < __builtin_inff(); }

// v clamped to [lo, hi], for vectors and floats alike; NaN stays NaN (the
// comparisons are false), as in the clamp ops a fused relu, relu6,
// hardtanh or clamp replaces.
template <typename V>
PARE_ALWAYS_INLINE V clamp(V v, V lo, V hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}
}  // namespace PARE_SIMD_ISA
}  // namespace simd
}  // namespace pare
