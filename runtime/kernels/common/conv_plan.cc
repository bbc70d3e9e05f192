// The convolution plan's output-size error (see conv_plan.h).

#include "runtime/kernels/common/conv_plan.h"

namespace pare {
namespace conv {

Error output_too_small(KernelContext& ctx, const Geometry& g, IntArrayRef input_sizes, size_t weight_dim) {
  const bool one_d = weight_dim == 3;  // [O, C, K]
  const int64_t weight[4] = {g.out_channels, g.cg, one_d ? g.kw : g.kh, g.kw};
  const IntArrayRef weight_sizes(weight, one_d ? 3 : 4);
  return PARE_FAIL(ctx, Error::InvalidShape,
                   "'input' of sizes %s with padding (%lld, %lld) is smaller than the dilated kernel of 'weight' %s: "
                   "the padded input must not be smaller than the kernel",
                   sizes_to_string(input_sizes).text, static_cast<long long>(g.ph), static_cast<long long>(g.pw),
                   sizes_to_string(weight_sizes).text);
}

}  // namespace conv
}  // namespace pare
