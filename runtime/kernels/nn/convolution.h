#pragma once
// What aten::convolution's two sources share: the 2-d paths
// (convolution.cc), which the 3-d folding (convolution3d.cc) runs over its
// slabs, and the 3-d entry point, which aten::convolution calls for a 5-d
// weight when the app selects a dtype of convolution3d_kernel.

#include "runtime/kernels/common/conv_plan.h"

namespace pare {
namespace kernels {
namespace convolution {

// A non-transposed 2-d convolution of contiguous NCHW x by weights w (and
// the optional 1-d bias) into y, by the path g takes: depthwise when each
// group has one input channel, else the float GEMM or, for other dtypes,
// im2col and the reference GEMM. Defined in convolution.cc for every dtype
// of convolution3d_kernel.
template <typename T>
Error run_2d(KernelContext& ctx, const conv::Geometry& g, const T* x, const T* w, const Tensor* bias, T* y);

// aten::convolution with a 5-d weight (ranks, dtypes and groups checked):
// checks the rest, allocates `output` and dispatches through
// convolution3d_kernel.
Error convolution3d(KernelContext& ctx, Value& output, const Tensor& input, const Tensor& weight, const Tensor* bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, int64_t groups);

}  // namespace convolution
}  // namespace kernels
}  // namespace pare
