// aten::var.correction: sum((x - mean)^2) / max(0, N - correction), in two
// passes with double accumulation for every floating dtype (at least as
// accurate as PyTorch's Welford in double), rounded once.

#include "runtime/kernels/reduction/reduce.h"

namespace pare {
namespace kernels {

namespace {

template <typename T>
Error variance_lines(KernelContext& ctx, const reduction::Plan& p, double correction, T* PARE_RESTRICT y) {
  const T* x = p.input.data_as<T>();
  const int64_t length = p.length;
  const int64_t inner = p.inner;
  if (p.outer == 0 || inner == 0) return Error::Ok;
  const double n = static_cast<double>(length);
  const double divisor = n - correction > 0 ? n - correction : 0.0;  // 0: inf or NaN, as in torch
  if (inner == 1) {
    for (int64_t o = 0; o < p.outer; ++o) {
      const T* PARE_RESTRICT row = x + o * length;
      const double mean = reduction::reduce_row<T, reduction::SumOp<double>>(row, length) / n;
      double lanes[reduction::kLanes] = {};
      int64_t k = 0;
      for (; k + reduction::kLanes <= length; k += reduction::kLanes) {
        for (int64_t l = 0; l < reduction::kLanes; ++l) {
          const double d = static_cast<double>(convert<double>(row[k + l])) - mean;
          lanes[l] += d * d;
        }
      }
      double m2 = 0;
      for (; k < length; ++k) {
        const double d = convert<double>(row[k]) - mean;
        m2 += d * d;
      }
      for (int64_t l = 0; l < reduction::kLanes; ++l) m2 += lanes[l];
      y[o] = convert<T>(m2 / divisor);
    }
    return Error::Ok;
  }
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(2 * static_cast<size_t>(inner) * sizeof(double)));
  double* PARE_RESTRICT mean = static_cast<double*>(memory);
  double* PARE_RESTRICT m2 = mean + inner;
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* base = x + o * length * inner;
    for (int64_t i = 0; i < inner; ++i) mean[i] = m2[i] = 0;
    for (int64_t k = 0; k < length; ++k) {
      const T* PARE_RESTRICT row = base + k * inner;
      for (int64_t i = 0; i < inner; ++i) mean[i] += convert<double>(row[i]);
    }
    for (int64_t i = 0; i < inner; ++i) mean[i] /= n;
    for (int64_t k = 0; k < length; ++k) {
      const T* PARE_RESTRICT row = base + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const double d = convert<double>(row[i]) - mean[i];
        m2[i] += d * d;
      }
    }
    for (int64_t i = 0; i < inner; ++i) y[o * inner + i] = convert<T>(m2[i] / divisor);
  }
  return Error::Ok;
}

}  // namespace

// aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
Error aten_var_correction(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar correction = args.scalar_or(2, "correction", Scalar::from_int(1));
  const bool keepdim = args.boolean_or(3, "keepdim", false);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(self.dtype), Error::UnsupportedDtype,
                       "argument 'self': var needs a floating point tensor, got %s", to_string(self.dtype));
  reduction::DimMask mask{};
  PARE_TRY(reduction::read_dims(args, 1, "dim", self, /*empty_means_all=*/true, &mask));
  const reduction::OutputShape shape = reduction::reduced_shape(self, mask, keepdim);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, shape.span()));
  PARE_TRY_ASSIGN(const reduction::Plan p, reduction::plan(ctx, self, mask, self.dtype));
  const double c = correction.as_double();
  return PARE_DISPATCH(var_kernel, ctx, self.dtype, T, { return variance_lines<T>(ctx, p, c, out->data_as<T>()); });
}

}  // namespace kernels
}  // namespace pare
