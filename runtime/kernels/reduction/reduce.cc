// Dim lists, output shapes and input layout for reductions (see reduce.h).

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {
namespace reduction {

DimMask single_dim(const Tensor& self, int64_t dim) {
  DimMask mask{};
  mask.ndim = self.dim;
  if (self.dim > 0) mask.reduce[dim] = true;
  return mask;
}

DimMask all_dims(const Tensor& self) {
  DimMask mask{};
  mask.ndim = self.dim;
  for (size_t d = 0; d < self.dim; ++d) mask.reduce[d] = true;
  return mask;
}

Error read_dims(KernelArgs& args, size_t i, const char* name, const Tensor& self, bool empty_means_all, DimMask* mask) {
  KernelContext& ctx = args.ctx();
  *mask = DimMask{};
  mask->ndim = self.dim;
  if (!args.has(i)) {
    *mask = all_dims(self);
    return Error::Ok;
  }
  // `int[1]` also accepts a single int.
  if (args.value(i).kind == ValueKind::Int) {
    const int64_t d = args.dim(i, name, self.dim);
    PARE_TRY(args.status());
    *mask = single_dim(self, d);
    return Error::Ok;
  }
  const IntArrayRef dims = args.int_list(i, name);
  PARE_TRY(args.status());
  if (dims.empty() && empty_means_all) {
    *mask = all_dims(self);
    return Error::Ok;
  }
  bool seen[kMaxDim] = {};
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[k], self.dim, name, &d));
    PARE_CHECK_OR_RETURN(ctx, !seen[d], Error::InvalidArgument,
                         "argument '%s': dim %lld appears multiple times in the list of dims", name,
                         static_cast<long long>(d));
    seen[d] = true;
    // A 0-dim tensor accepts dim 0 (or -1) and has nothing to reduce.
    if (self.dim > 0) mask->reduce[d] = true;
  }
  return Error::Ok;
}

OutputShape reduced_shape(const Tensor& self, const DimMask& mask, bool keepdim) {
  OutputShape shape{};
  for (size_t d = 0; d < self.dim; ++d) {
    if (!mask.reduce[d]) {
      shape.sizes[shape.dim++] = self.sizes[d];
    } else if (keepdim) {
      shape.sizes[shape.dim++] = 1;
    }
  }
  return shape;
}

int64_t first_empty_reduced_dim(const Tensor& self, const DimMask& mask) {
  for (size_t d = 0; d < self.dim; ++d) {
    if (mask.reduce[d] && self.sizes[d] == 0) return static_cast<int64_t>(d);
  }
  return -1;
}

Result<Plan> plan(KernelContext& ctx, const Tensor& self, const DimMask& mask, ScalarType compute_dtype) {
  Plan p{};
  p.outer = 1;
  p.length = 1;
  p.inner = 1;
  // Are the reduced dims (ignoring size-1 dims, which do not affect the
  // layout) one block in the logical order? Then the contiguous input is
  // already [outer, length, inner].
  bool seen_reduced = false;
  bool seen_kept_after = false;
  bool one_block = true;
  for (size_t d = 0; d < self.dim; ++d) {
    if (self.sizes[d] == 1) continue;
    if (mask.reduce[d]) {
      if (seen_kept_after) one_block = false;
      seen_reduced = true;
    } else if (seen_reduced) {
      seen_kept_after = true;
    }
  }
  if (one_block) {
    seen_reduced = false;
    for (size_t d = 0; d < self.dim; ++d) {
      const int64_t s = self.sizes[d];
      if (mask.reduce[d]) {
        p.length *= s;
        if (s != 1) seen_reduced = true;
      } else if (seen_reduced) {
        p.inner *= s;
      } else {
        p.outer *= s;
      }
    }
    PARE_TRY_ASSIGN(p.input, as_contiguous(ctx, self, compute_dtype));
    return p;
  }
  // Kept dims first, then reduced dims: a permuted view, copied.
  Tensor view = self;
  size_t k = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t d = 0; d < self.dim; ++d) {
      if (mask.reduce[d] != (pass == 1)) continue;
      view.sizes[k] = self.sizes[d];
      view.strides[k] = self.strides[d];
      ++k;
      if (pass == 0) {
        p.outer *= self.sizes[d];
      } else {
        p.length *= self.sizes[d];
      }
    }
  }
  PARE_TRY_ASSIGN(p.input, as_contiguous(ctx, view, compute_dtype));
  return p;
}

}  // namespace reduction
}  // namespace kernels
}  // namespace pare
