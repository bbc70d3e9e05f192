// QLinearPackedParams::run: pare::qlinear_prepacked's int8 linear layer
// (qpacked_params.h), the int8 GEMM with the input's rows as its pixels.
// Build feature threads: not yet; the split would go over the rows.

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
  kernels::qgemm::gemm_rows(out_features, rows, in_features, weight, x.data_as<int8_t>(), rq,
                            {result->data_as<int8_t>(), /*channel_stride=*/1, /*pixel_stride=*/out_features});
  return Error::Ok;
}

}  // namespace classes
}  // namespace pare
