// pare::rms_norm: RMSNorm over the last dim in one pass a row, what the
// tracer's fuse_norms pass writes for eager PyTorch's
// `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight` (pow,
// mean, add, rsqrt and two muls; docs/llm.md, "Fused norms and rotary
// embeddings"). Each row is read twice (its sum of squares, then the scaled
// output) instead of once per op, and no [rows, 1] or [rows, D]
// intermediate is written. The products keep torch's order, (x * r) * w;
// the mean is a float sum of squares over D, in a different order than
// torch's reduction (within float32 rounding of it). Build feature
// threads: the rows are split (disjoint outputs: the same bits for any
// split).

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"

namespace pare {
namespace kernels {

// pare::rms_norm(Tensor input, Tensor? weight, float eps) -> Tensor
Error pare_rms_norm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor* weight = args.optional_tensor(1, "weight");
  const double eps = args.real(2, "eps");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, input.dim >= 1, Error::InvalidShape,
                       "argument 'input' must have at least one dim (normalized over its last), got a 0-d tensor");
  const int64_t d = input.sizes[input.dim - 1];
  PARE_CHECK_OR_RETURN(
      ctx, weight == nullptr || (weight->dtype == input.dtype && weight->dim == 1 && weight->sizes[0] == d),
      Error::InvalidShape, "argument 'weight' must be %s [%lld] (one gain per element of the last dim), got %s %s",
      to_string(input.dtype), static_cast<long long>(d), weight ? to_string(weight->dtype) : "",
      weight ? sizes_to_string(weight->size_span()).text : "");
  return PARE_DISPATCH(rms_norm_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, float>, "the fused RMSNorm takes float32");
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, input.size_span()));
    if (out->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Float));
    const float* w = nullptr;
    if (weight != nullptr) {
      PARE_TRY_ASSIGN(const Tensor wt, as_contiguous(ctx, *weight, ScalarType::Float));
      w = wt.data_as<float>();
    }
    const float* xs = x.data_as<float>();
    float* ys = out->data_as<float>();
    const int64_t rows = d == 0 ? 0 : out->numel() / d;
    const float e = static_cast<float>(eps);
    const float n = static_cast<float>(d);
    const uint32_t chunks = ctx.chunks_for(rows, 1, rows * d * 3);
    ctx.parallel(chunks, rows, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* row = xs + r * d;
        float* y = ys + r * d;
        // mean(x^2) as torch's mean: the sum, then divided by D.
        const float mean = rows::dot(row, row, d) / n;
        const float scale = 1.0f / math::sqrt(mean + e);
        if (w != nullptr) {
          for (int64_t c = 0; c < d; ++c) y[c] = (row[c] * scale) * w[c];
        } else {
          for (int64_t c = 0; c < d; ++c) y[c] = row[c] * scale;
        }
      }
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
