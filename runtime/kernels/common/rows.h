#pragma once
// Reductions along one contiguous row, written so they vectorise: the max
// (NaN wins) of the softmax family (aten::_softmax, aten::_log_softmax)
// and the sums of the normalisations and softmaxes. The compiler
// vectorises plain maps (exp(x - max), a scaling) but not a reduction,
// since reassociating a float sum or a NaN-aware max changes its result;
// these keep several partial results, folded at the end, so their order
// differs from a left-to-right loop's (as torch's vectorised kernels' does)
// by rounding only.

#include "runtime/kernels/common/simd.h"

namespace pare {
namespace rows {

// Max that lets NaN win, as PyTorch's softmax family.
template <typename Acc>
PARE_ALWAYS_INLINE Acc nan_max(Acc a, Acc v) {
  return (v > a || v != v) ? v : a;
}

inline float max(const float* x, int64_t n) {
  using simd::vec;
  float m = -__builtin_inff();
  int64_t k = 0;
  if (n >= simd::kLanes) {
    vec acc = simd::loadv(x);
    for (k = simd::kLanes; k + simd::kLanes <= n; k += simd::kLanes) {
      const vec v = simd::loadv(x + k);
      acc = ((v > acc) | (v != v)) ? v : acc;
    }
    float lanes[simd::kLanes];
    simd::storev(lanes, acc);
    for (float v : lanes) m = nan_max(m, v);
  }
  for (; k < n; ++k) m = nan_max(m, x[k]);
  return m;
}

// Dot product of n floats: vectors of kLanes with two accumulators (the
// rows of bmm's transposed operand, attention's scores over a KV cache).
PARE_ALWAYS_INLINE float dot(const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, int64_t n) {
  using simd::kLanes;
  using simd::loadv;
  using simd::vec;
  vec acc0{}, acc1{};
  int64_t p = 0;
  for (; p + 2 * kLanes <= n; p += 2 * kLanes) {
    acc0 += loadv(a + p) * loadv(b + p);
    acc1 += loadv(a + p + kLanes) * loadv(b + p + kLanes);
  }
  for (; p + kLanes <= n; p += kLanes) acc0 += loadv(a + p) * loadv(b + p);
  acc0 += acc1;
  float sum = 0.0f;
  for (int64_t i = 0; i < kLanes; ++i) sum += acc0[i];
  for (; p < n; ++p) sum += a[p] * b[p];
  return sum;
}

// Sum of n values of x (converted to Acc) with 8 independent accumulators:
// the compiler can vectorise it, and float sums are more accurate than one
// running total.
template <typename Acc, typename T>
PARE_ALWAYS_INLINE Acc sum(const T* PARE_RESTRICT x, int64_t n) {
  Acc lanes[8] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) lanes[k] += Acc(x[i + k]);
  }
  for (; i < n; ++i) lanes[0] += Acc(x[i]);
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

// Sum of (x - mean)^2 over n values, like sum.
template <typename Acc, typename T>
PARE_ALWAYS_INLINE Acc sum_sq_dev(const T* PARE_RESTRICT x, int64_t n, Acc mean) {
  Acc lanes[8] = {Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0), Acc(0)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const Acc d = Acc(x[i + k]) - mean;
      lanes[k] += d * d;
    }
  }
  for (; i < n; ++i) {
    const Acc d = Acc(x[i]) - mean;
    lanes[0] += d * d;
  }
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

}  // namespace rows
}  // namespace pare
