// QLinearPackedParams::run: pare::qlinear_prepacked's int8 linear layer
// (qpacked_params.h), the int8 GEMM with the input's rows as its pixels.
// Build feature threads: the input's rows split over the threads (8 at a
// time), or, under 16 rows (a classifier's one), the output channels (16
// at a time); every output is one dot product, so the bits do not depend
// on the split.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/linear.h"
#include "runtime/kernels/quantized/qgemm.h"
#include "runtime/kernels/quantized/qpacked_params.h"

namespace pare {
namespace classes {

Error QLinearPackedParams::run(KernelContext& ctx, const Tensor& input, Value& out, int32_t output_min,
                               int32_t output_max) const {
  PARE_TRY_ASSIGN(Tensor * result,
                  linear::allocate_output(ctx, input, in_features, out_features, ScalarType::Char, out));
  if (result->numel() == 0) return Error::Ok;
  const int64_t rows = static_cast<int64_t>(result->numel()) / out_features;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Char));
  const kernels::qgemm::Requantization rq{requantization.correction, requantization.multiplier, requantization.offset,
                                          output_min, output_max};
  const int8_t* xs = x.data_as<int8_t>();
  int8_t* ys = result->data_as<int8_t>();
  const int64_t work = rows * out_features * in_features;
  if (rows < 16) {
    const uint32_t chunks = ctx.chunks_for(out_features, 16, work);
    ctx.parallel(chunks, out_features, 16, [&](uint32_t, int64_t c0, int64_t c1) {
      kernels::qgemm::gemm_rows(c1 - c0, rows, in_features, weight + c0 * in_features, xs, rq.from(c0),
                                {ys + c0, /*channel_stride=*/1, /*pixel_stride=*/out_features});
    });
    return Error::Ok;
  }
  const uint32_t chunks = ctx.chunks_for(rows, 8, work);
  ctx.parallel(chunks, rows, 8, [&](uint32_t, int64_t begin, int64_t end) {
    kernels::qgemm::gemm_rows(out_features, end - begin, in_features, weight, xs + begin * in_features, rq,
                              {ys + begin * out_features, /*channel_stride=*/1, /*pixel_stride=*/out_features});
  });
  return Error::Ok;
}

}  // namespace classes
}  // namespace pare
