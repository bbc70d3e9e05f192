// aten::_log_softmax: x - max - log(sum(exp(x - max))) along one dim, in
// opmath_t<T> (float for Half/BFloat16), as PyTorch's CPU kernel.
//
// The input is made contiguous and viewed as [outer, length, inner]. With
// inner == 1 (the last dim, the usual case) each row is contiguous; else
// the reduction runs over whole contiguous rows of `inner` elements into
// per-column buffers, so every loop is unit-stride. A float row's max and
// sum are vector reductions (common/rows.h), its exponentials a map the
// compiler vectorises, written to the output row before the result
// replaces them.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"

namespace pare {
namespace kernels {

// aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
Error aten__log_softmax(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.dim(1, "dim", self.dim);
  const bool half_to_float = args.boolean(2, "half_to_float");
  PARE_TRY(args.status());
  // Same contract as PyTorch's CPU kernel.
  PARE_CHECK_OR_RETURN(ctx, !half_to_float, Error::NotImplemented,
                       "argument 'half_to_float': softmax with half to float conversion is not supported on CPU");
  int64_t outer = 1;
  int64_t inner = 1;
  const int64_t length = self.dim == 0 ? 1 : self.sizes[dim];
  for (int64_t d = 0; d < self.dim; ++d) {
    if (d < dim) outer *= self.sizes[d];
    if (d > dim) inner *= self.sizes[d];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, self, self.dtype));

  return PARE_DISPATCH(log_softmax_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const T* x = in.data_as<T>();
    T* y = out->data_as<T>();
    if (inner == 1) {
      for (int64_t o = 0; o < outer; ++o) {
        const T* PARE_RESTRICT xr = x + o * length;
        T* PARE_RESTRICT yr = y + o * length;
        Acc max = -Acc(__builtin_inf());
        Acc sum = 0;
        if constexpr (is_same_v<T, float>) {
          max = rows::max(xr, length);
          for (int64_t k = 0; k < length; ++k) yr[k] = math::exp(xr[k] - max);
          sum = rows::sum<float>(yr, length);
        } else {
          for (int64_t k = 0; k < length; ++k) max = rows::nan_max<Acc>(max, Acc(xr[k]));
          for (int64_t k = 0; k < length; ++k) sum += math::exp(Acc(xr[k]) - max);
        }
        // (x - max) - log(sum), in PyTorch's order: exact near the max.
        const Acc log_sum = math::log(sum);
        for (int64_t k = 0; k < length; ++k) yr[k] = T((Acc(xr[k]) - max) - log_sum);
      }
      return Error::Ok;
    }
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(2 * static_cast<size_t>(inner) * sizeof(Acc)));
    Acc* max = static_cast<Acc*>(memory);
    Acc* sum = max + inner;
    for (int64_t o = 0; o < outer; ++o) {
      const T* xb = x + o * length * inner;
      T* yb = y + o * length * inner;
      for (int64_t i = 0; i < inner; ++i) {
        max[i] = -Acc(__builtin_inf());
        sum[i] = Acc(0);
      }
      for (int64_t k = 0; k < length; ++k) {
        const T* PARE_RESTRICT xr = xb + k * inner;
        for (int64_t i = 0; i < inner; ++i) max[i] = rows::nan_max<Acc>(max[i], Acc(xr[i]));
      }
      for (int64_t k = 0; k < length; ++k) {
        const T* PARE_RESTRICT xr = xb + k * inner;
        for (int64_t i = 0; i < inner; ++i) sum[i] += math::exp(Acc(xr[i]) - max[i]);
      }
      for (int64_t i = 0; i < inner; ++i) sum[i] = math::log(sum[i]);
      for (int64_t k = 0; k < length; ++k) {
        const T* PARE_RESTRICT xr = xb + k * inner;
        T* PARE_RESTRICT yr = yb + k * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = T((Acc(xr[i]) - max[i]) - sum[i]);
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
