// Loop geometry construction (see loops.h).

#include "runtime/kernels/common/loops.h"

namespace pare {
namespace loops {

LoopGeometry make_geometry(const Tensor& out, const Tensor* const* inputs, size_t num_inputs) {
  LoopGeometry g;
  g.num_inputs = num_inputs;
  g.numel = static_cast<int64_t>(out.numel());
  // Right-align each input against the output; missing or size-1 dims are
  // broadcast (stride 0).
  size_t kept = 0;
  for (size_t d = 0; d < out.dim; ++d) {
    if (out.sizes[d] == 1) continue;  // contributes nothing to the walk
    g.sizes[kept] = out.sizes[d];
    g.out_strides[kept] = out.strides[d];
    for (size_t k = 0; k < num_inputs; ++k) {
      const Tensor* t = inputs[k];
      int64_t stride = 0;
      if (t != nullptr) {
        const int64_t offset = static_cast<int64_t>(out.dim) - static_cast<int64_t>(t->dim);
        const int64_t td = static_cast<int64_t>(d) - offset;
        if (td >= 0 && t->sizes[td] != 1) stride = t->strides[td];
      }
      g.in_strides[k][kept] = stride;
    }
    ++kept;
  }
  // Merge dim d into d+1 when, for every operand, stepping d equals
  // stepping d+1 all the way: stride[d] == stride[d+1] * size[d+1].
  size_t merged = 0;
  for (size_t d = 0; d < kept; ++d) {
    if (merged > 0) {
      const size_t prev = merged - 1;
      bool can_merge = g.out_strides[prev] == g.out_strides[d] * g.sizes[d];
      for (size_t k = 0; k < num_inputs && can_merge; ++k) {
        can_merge = g.in_strides[k][prev] == g.in_strides[k][d] * g.sizes[d];
      }
      if (can_merge) {
        g.sizes[prev] *= g.sizes[d];
        g.out_strides[prev] = g.out_strides[d];
        for (size_t k = 0; k < num_inputs; ++k) g.in_strides[k][prev] = g.in_strides[k][d];
        continue;
      }
    }
    g.sizes[merged] = g.sizes[d];
    g.out_strides[merged] = g.out_strides[d];
    for (size_t k = 0; k < num_inputs; ++k) g.in_strides[k][merged] = g.in_strides[k][d];
    ++merged;
  }
  g.dim = merged;
  return g;
}

}  // namespace loops
}  // namespace pare
