// aten::nonzero: the coordinates of an input's non-zero elements, one row
// per element in row-major order, as torch.nonzero.
//
// The output's size is known only once the kernel has run, so it is a
// dynamic-bound tensor (docs/c_api.md, "Outputs of data-dependent size"):
// the kernel allocates the upper bound, numel(self) x dim(self), which
// depends on the input's shape alone, so the method's plan stays valid
// whatever the data, and then shrinks the output's first size to the rows
// it wrote. A contiguous [rows, dim] tensor keeps its strides when its
// leading size shrinks, so every reader sees an ordinary tensor.

#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {

// aten::nonzero(Tensor self) -> Tensor
Error aten_nonzero(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 1, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  const size_t dim = self.dim;
  const int64_t numel = static_cast<int64_t>(self.numel());
  const int64_t bound[2] = {numel, static_cast<int64_t>(dim)};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Long, IntArrayRef(bound, 2)));
  int64_t rows = 0;
  PARE_TRY(PARE_DISPATCH(nonzero_kernel, ctx, self.dtype, T, {
    const T* base = self.data_as<T>();
    int64_t* coords = out->data_as<int64_t>();
    int64_t index[kMaxDim] = {};
    int64_t offset = 0;  // of element `index`, in elements
    for (int64_t n = 0; n < numel; ++n) {
      if (opmath_t<T>(base[offset]) != opmath_t<T>(0)) {  // NaN counts, as in torch
        for (size_t d = 0; d < dim; ++d) coords[rows * static_cast<int64_t>(dim) + static_cast<int64_t>(d)] = index[d];
        ++rows;
      }
      // Next element in row-major order: the last dim fastest.
      for (size_t d = dim; d-- > 0;) {
        offset += self.strides[d];
        if (++index[d] < self.sizes[d]) break;
        offset -= self.strides[d] * self.sizes[d];
        index[d] = 0;
      }
    }
    return Error::Ok;
  }));
  out->sizes[0] = rows;
  return Error::Ok;
}

}  // namespace kernels
}  // namespace pare
