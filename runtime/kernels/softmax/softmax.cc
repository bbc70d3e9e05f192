// aten::_softmax: the pattern for reductions along one dim. The input is
// made contiguous and viewed as [outer, dim, inner]; each (outer, inner)
// line is reduced in opmath_t<T> (float for Half/BFloat16), subtracting the
// max for stability, as PyTorch does. Float lines run one row kernel:
// vector max and sum (common/rows.h) around maps the compiler vectorises,
// in place for the last dim (the usual case: attention, classifier heads),
// through a contiguous copy for any other.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"

namespace pare {
namespace kernels {
namespace {

// y = softmax(x) over one contiguous float row of n > 0 elements.
// PARE_UNUSED (here and below): selective builds may drop the float case
// that calls it.
PARE_UNUSED void softmax_row(const float* PARE_RESTRICT x, float* PARE_RESTRICT y, int64_t n) {
  const float max = rows::max(x, n);
#pragma clang loop interleave_count(1)
  for (int64_t k = 0; k < n; ++k) y[k] = math::exp(x[k] - max);
  const float scale = 1.0f / rows::sum<float>(y, n);
#pragma clang loop interleave_count(1)
  for (int64_t k = 0; k < n; ++k) y[k] *= scale;
}

// Softmax of every line of a contiguous float [outer, length, inner]: one
// row kernel for all, a strided line (inner > 1) gathered into `line` (2 *
// length floats) and its result scattered back. The copies stay scalar:
// vectorising strided copies buys nothing and costs code.
PARE_UNUSED void float_softmax(const float* x, float* y, int64_t outer, int64_t length, int64_t inner, float* line) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* xl = x + o * length * inner + i;
      float* yl = y + o * length * inner + i;
      if (inner == 1) {
        softmax_row(xl, yl, length);
        continue;
      }
#pragma clang loop vectorize(disable)
      for (int64_t k = 0; k < length; ++k) line[k] = xl[k * inner];
      softmax_row(line, line + length, length);
#pragma clang loop vectorize(disable)
      for (int64_t k = 0; k < length; ++k) yl[k * inner] = line[length + k];
    }
  }
}

}  // namespace

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
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, self, self.dtype));

  return PARE_DISPATCH(softmax_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    const T* x = in.data_as<T>();
    T* y = out->data_as<T>();
    if constexpr (is_same_v<T, float>) {
      float* line = nullptr;  // a strided line's copy and its result
      if (inner != 1) {
        PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(2 * static_cast<size_t>(length) * sizeof(float)));
        line = static_cast<float*>(memory);
      }
      float_softmax(x, y, outer, length, inner, line);
      return Error::Ok;
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
