// aten::_softmax: the pattern for reductions along one dim. The input is
// made contiguous and viewed as [outer, dim, inner]; each (outer, inner)
// line is reduced in opmath_t<T> (float for Half/BFloat16), subtracting the
// max for stability, as PyTorch does. A float softmax over the last dim
// (the usual case: attention, classifier heads) runs on contiguous rows:
// vector max and sum (common/rows.h) around maps the compiler vectorises.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"

namespace pare {
namespace kernels {

// aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
Error aten__softmax(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const bool half_to_float = args.boolean(2, "half_to_float");
  PARE_TRY(args.status());
  // Same contract as PyTorch's CPU kernel.
  PARE_CHECK_OR_RETURN(ctx, !half_to_float, Error::NotImplemented,
                       "argument 'half_to_float': softmax with half to float conversion is not supported on CPU");
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(self.dtype), Error::UnsupportedDtype,
                       "argument 'self': softmax needs a floating point tensor, got %s", to_string(self.dtype));

  int64_t outer = 1;
  int64_t inner = 1;
  const int64_t length = self.dim == 0 ? 1 : self.sizes[dim];
  for (int64_t d = 0; d < self.dim; ++d) {
    if (d < dim) outer *= self.sizes[d];
    if (d > dim) inner *= self.sizes[d];
  }
  PARE_TRY_ASSIGN(Tensor* out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, self, self.dtype));

  return PARE_DISPATCH(softmax_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const T* x = in.data_as<T>();
    T* y = out->data_as<T>();
    if constexpr (is_same_v<T, float>) {
      if (inner == 1) {
        for (int64_t o = 0; o < outer; ++o) {
          const float* PARE_RESTRICT xr = x + o * length;
          float* PARE_RESTRICT yr = y + o * length;
          const float max = rows::max(xr, length);
          for (int64_t k = 0; k < length; ++k) yr[k] = math::exp(xr[k] - max);
          const float scale = 1.0f / rows::sum(yr, length);
          for (int64_t k = 0; k < length; ++k) yr[k] *= scale;
        }
        return Error::Ok;
      }
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* xl = x + o * length * inner + i;
        T* yl = y + o * length * inner + i;
        Acc max = -math::kInfinityF;
        for (int64_t k = 0; k < length; ++k) {
          const Acc v = Acc(xl[k * inner]);
          max = rows::nan_max(max, v);  // NaN wins: a NaN line yields NaN, as in PyTorch
        }
        Acc sum = 0;
        for (int64_t k = 0; k < length; ++k) {
          const Acc e = math::exp(Acc(xl[k * inner]) - max);
          sum += e;
          yl[k * inner] = T(e);
        }
        const Acc scale = Acc(1) / sum;
        if constexpr (is_reduced_float_v<T>) {
          // Recompute rather than re-read the rounded 16-bit exponentials.
          for (int64_t k = 0; k < length; ++k) {
            yl[k * inner] = T(math::exp(Acc(xl[k * inner]) - max) * scale);
          }
        } else {
          for (int64_t k = 0; k < length; ++k) yl[k * inner] = T(Acc(yl[k * inner]) * scale);
        }
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
