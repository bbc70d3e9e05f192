#pragma once
// Strided N-ary loops: the iteration engine under every elementwise kernel
// and dtype conversion.
//
// LoopGeometry describes a walk over an output shape in which each operand
// has its own element strides (0 where it is broadcast). Building one
// drops size-1 dims and merges dims that are contiguous for every operand,
// so a contiguous add of two [64, 128] tensors becomes one 8192-element
// loop. for_each_element() then runs the innermost dim with a loop
// specialised for its stride pattern: all operands contiguous, or one input
// broadcast from a single element (scalar or stride 0), which the compiler
// auto-vectorises; anything else takes a generic strided loop. Outer dims
// are walked with an odometer, so any rank <= kMaxDim and any strides work.
//
// All inputs share one element type In (kernels convert mixed inputs to the
// compute dtype first, see common/elementwise.h); the output type Out may
// differ (comparisons write bool).

#include "runtime/core/tensor.h"

namespace pare {
namespace loops {

constexpr size_t kMaxInputs = 3;

struct LoopGeometry {
  size_t dim = 0;
  size_t num_inputs = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDim] = {};
  int64_t out_strides[kMaxDim] = {};
  int64_t in_strides[kMaxInputs][kMaxDim] = {};
};

// Geometry for writing `out` (any strides) from `inputs`, each either a
// tensor broadcastable to out's sizes or null for a single element (a
// scalar). Broadcast compatibility must already have been checked.
LoopGeometry make_geometry(const Tensor& out, const Tensor* const* inputs, size_t num_inputs);

namespace detail {

template <typename Out, typename In, size_t N, typename Op>
PARE_ALWAYS_INLINE Out apply(Op& op, const In* const* p, const int64_t* offsets) {
  if constexpr (N == 1) {
    return op(p[0][offsets[0]]);
  } else if constexpr (N == 2) {
    return op(p[0][offsets[0]], p[1][offsets[1]]);
  } else {
    static_assert(N == 3, "up to three inputs");
    return op(p[0][offsets[0]], p[1][offsets[1]], p[2][offsets[2]]);
  }
}

// Innermost loop over n elements. kBroadcast = -1: every operand has
// stride 1; kBroadcast = k: input k is one repeated element, the others
// have stride 1. Written so the compiler sees unit-stride accesses and
// loop-invariant loads, and vectorises.
template <int kBroadcast, typename Out, typename In, size_t N, typename Op>
PARE_ALWAYS_INLINE void contiguous_loop(int64_t n, Out* PARE_RESTRICT out, const In* const* p, Op& op) {
  const In* PARE_RESTRICT a = p[0];
  if constexpr (N == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i]);
  } else if constexpr (N == 2) {
    const In* PARE_RESTRICT b = p[1];
    if constexpr (kBroadcast == 0) {
      const In av = a[0];
      for (int64_t i = 0; i < n; ++i) out[i] = op(av, b[i]);
    } else if constexpr (kBroadcast == 1) {
      const In bv = b[0];
      for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], bv);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
    }
  } else {
    const In* PARE_RESTRICT b = p[1];
    const In* PARE_RESTRICT c = p[2];
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i], c[i]);
  }
}

template <typename Out, typename In, size_t N, typename Op>
PARE_ALWAYS_INLINE void strided_loop(int64_t n, Out* out, int64_t out_stride, const In* const* p,
                                     const int64_t* strides, Op& op) {
  int64_t offsets[N];
  for (size_t k = 0; k < N; ++k) offsets[k] = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i * out_stride] = apply<Out, In, N>(op, p, offsets);
    for (size_t k = 0; k < N; ++k) offsets[k] += strides[k];
  }
}

}  // namespace detail

// out[idx] = op(in0[idx], ...) over the geometry. `out` and `in` point at
// element [0, ..., 0] of each operand.
template <typename Out, typename In, size_t N, typename Op>
void for_each_element(const LoopGeometry& g, Out* out, const In* const (&in)[N], Op op) {
  if (g.numel == 0) return;
  if (g.dim == 0) {
    const int64_t zero[N] = {};
    *out = detail::apply<Out, In, N>(op, in, zero);
    return;
  }
  const size_t inner = g.dim - 1;
  const int64_t n = g.sizes[inner];
  int64_t inner_strides[N];
  bool all_unit = g.out_strides[inner] == 1;
  int broadcast = -1;
  for (size_t k = 0; k < N; ++k) {
    inner_strides[k] = g.in_strides[k][inner];
    if (inner_strides[k] == 0 && N == 2 && broadcast < 0) {
      broadcast = static_cast<int>(k);
    } else if (inner_strides[k] != 1) {
      all_unit = false;
    }
  }

  Out* o = out;
  const In* p[N];
  for (size_t k = 0; k < N; ++k) p[k] = in[k];
  int64_t counter[kMaxDim] = {};
  const int64_t outer = g.numel / n;
  for (int64_t it = 0; it < outer; ++it) {
    if (all_unit) {
      if constexpr (N == 2) {
        if (broadcast == 0)
          detail::contiguous_loop<0, Out, In, N>(n, o, p, op);
        else if (broadcast == 1)
          detail::contiguous_loop<1, Out, In, N>(n, o, p, op);
        else
          detail::contiguous_loop<-1, Out, In, N>(n, o, p, op);
      } else {
        detail::contiguous_loop<-1, Out, In, N>(n, o, p, op);
      }
    } else {
      detail::strided_loop<Out, In, N>(n, o, g.out_strides[inner], p, inner_strides, op);
    }
    // Odometer over the outer dims.
    for (size_t d = inner; d-- > 0;) {
      o += g.out_strides[d];
      for (size_t k = 0; k < N; ++k) p[k] += g.in_strides[k][d];
      if (++counter[d] < g.sizes[d]) break;
      o -= g.out_strides[d] * g.sizes[d];
      for (size_t k = 0; k < N; ++k) p[k] -= g.in_strides[k][d] * g.sizes[d];
      counter[d] = 0;
    }
  }
}

}  // namespace loops
}  // namespace pare
