#pragma once
// Reductions along one contiguous float row, in simd vectors: the max (NaN
// wins) and the sum that the softmax family (aten::_softmax,
// aten::_log_softmax) takes over each row of its last dim. The loops in
// between (exp(x - max), the scaling) are plain maps the compiler
// vectorises; a reduction it cannot, since reassociating a float sum or a
// NaN-aware max changes its result, so these are written out: kLanes
// partial results, folded at the end. The sum's order thus differs from a
// left-to-right loop (as torch's vectorised kernels' does) by rounding only.

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

inline float sum(const float* x, int64_t n) {
  simd::vec acc = {};
  int64_t k = 0;
  for (; k + simd::kLanes <= n; k += simd::kLanes) acc += simd::loadv(x + k);
  float lanes[simd::kLanes];
  simd::storev(lanes, acc);
  float s = 0.0f;
  for (float v : lanes) s += v;
  for (; k < n; ++k) s += x[k];
  return s;
}

}  // namespace rows
}  // namespace pare
