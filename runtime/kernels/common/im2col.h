#pragma once
// im2col fused into the float GEMM's B packing, shared by aten::convolution
// (runtime/kernels/nn/convolution.cc) and pare::conv2d_prepacked
// (runtime/kernels/prepacked/): the GEMM's B is one group's im2col matrix
// [cg * kh * kw, out_h * out_w], packed straight from the image into
// gemm::kPanelCols-column panels and never materialised.
//
// A panel's columns are consecutive output pixels, usually on one output
// row: then each depth (channel, ky, kx) reads one input row at a fixed
// stride, copied without per-element bounds tests when the whole panel is
// inside the image (stride 1 has its own, vectorised loop), and zeros when
// the row is in the vertical padding. Panels that wrap onto the next output
// row test each element.

#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace gemm {

// Also the geometry of aten::col2im (nn/col2im.cc), im2col's adjoint, with
// (height, width) its output_size and out_w its blocks per row.
struct Im2ColGeometry {
  int64_t height, width;  // input plane
  int64_t out_w;          // output row length (the output height is implied by the columns asked for)
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// A B packer (gemm::sgemm's PackB) over one group's image [cg, H, W],
// contiguous.
struct Im2ColPanels {
  const float* image;
  Im2ColGeometry g;
  // Packs depths [p0, p0+kc) x columns [j0, j0+nc) into dst; returns dst.
  const float* operator()(int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) const;
};

// One group's whole im2col matrix, materialised: x [channels * kh * kw, p]
// (row stride p) for the p output pixels (whole rows of g.out_w) of an
// image [channels, H, W], contiguous; padding taps are zeros. For a convolution over a few
// pixels run as pixel rows (gemm.h), whose A is this matrix transposed:
// p x k floats, small next to the weights the product streams.
void im2col_matrix(const float* image, const Im2ColGeometry& g, int64_t channels, int64_t p, float* x);

}  // namespace gemm
}  // namespace pare
