// aten::convolution: 1-d, 2-d and 3-d, any stride, padding, dilation and
// groups, optional bias; transposed convolution too (1-d and 2-d).
//
// Every case is viewed as 2-d (a 1-d convolution is a 2-d one with height
// 1) over contiguous NCHW data, and takes one of three paths:
//
// * depthwise (one input channel per group, e.g. MobileNet's depthwise
//   layers): float 3x3, 5x5 and 7x7 kernels at stride 1 or 2 run a
//   vectorised direct kernel over a zero-bordered copy of each plane (in a
//   runtime that selects that kernel size and stride); other cases a
//   direct loop per output row whose inner loop runs along the row with
//   unit stride, and whose bounds are computed per kernel tap instead of
//   testing padding per element;
// * float: the blocked SIMD GEMM (common/gemm.h) with the weights packed
//   once per call and the im2col matrix packed straight from the image into
//   GEMM panels (never materialised); 1x1 stride-1 convolutions use the
//   image itself as the GEMM's B;
// * other dtypes: im2col into a bounded scratch block of columns, then the
//   reference GEMM, accumulating in opmath_t<T> with wrapping integers.
//
// Transposed convolution scatters each input pixel's contribution into an
// opmath accumulator plane (float: GEMM into a column block, then col2im).
//
// 3-d convolution (convolution3d.cc) folds the temporal kernel taps into
// channels and runs the 2-d paths over one slab per (batch, output frame);
// it has its own dtype tag (convolution3d_kernel), so runtimes that never
// select it carry none of its code.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/nn/convolution.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

// Columns of the im2col matrix processed per reference-GEMM call (bounds
// the scratch to k * kColumnBlock elements).
constexpr int64_t kColumnBlock = 256;

using conv::Geometry;
using conv::valid_range;

// Group grp's output rows c [og, out_h * out_w] start as their channels' bias.
template <typename T>
void fill_with_bias(T* c, const Geometry& g, int64_t grp, const Tensor& bias) {
  const int64_t p = g.planes_out();
  for (int64_t i = 0; i < g.og; ++i) {
    const T b = bias.data_as<T>()[(grp * g.og + i) * bias.strides[0]];
    T* row = c + i * p;
    for (int64_t j = 0; j < p; ++j) row[j] = b;
  }
}

template <typename T>
PARE_ALWAYS_INLINE opmath_t<T> bias_at(const Tensor* bias, int64_t i) {
  if (bias == nullptr) return opmath_t<T>(0);
  return opmath_t<T>(bias->data_as<T>()[i * bias->strides[0]]);
}

// ---------------------------------------------------------------------------
// Depthwise: cg == 1. Output channel oc reads input channel oc / og.

template <typename T>
Error depthwise(KernelContext& ctx, const Geometry& g, const T* x, const T* w, const Tensor* bias, T* y) {
  if constexpr (is_same_v<T, float>) {
    // A runtime without the layer's vector loop (its tag, depthwise.h) runs
    // the loop below.
    if (depthwise::has_fast_path(g.kh, g.kw, g.sh, g.sw, g.dh, g.dw) && depthwise::selected(g.depthwise())) {
      return depthwise::run_float(ctx, g.depthwise(), x, w, bias != nullptr ? bias->data_as<float>() : nullptr,
                                  bias != nullptr ? bias->strides[0] : 0, -__builtin_inff(), __builtin_inff(), y);
    }
  }
  using Acc = opmath_t<T>;
  Acc* acc_row = nullptr;
  if constexpr (!is_same_v<Acc, T>) {
    PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(static_cast<size_t>(g.out_w) * sizeof(Acc)));
    acc_row = static_cast<Acc*>(scratch);
  }
  const int64_t taps = g.kh * g.kw;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      const T* plane = x + (n * g.in_channels + oc / g.og) * g.planes_in();
      T* out_plane = y + (n * g.out_channels + oc) * g.planes_out();
      const T* wk = w + oc * taps;
      const Acc b = bias_at<T>(bias, oc);
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        Acc* PARE_RESTRICT acc;
        if constexpr (is_same_v<Acc, T>) {
          acc = out_plane + oy * g.out_w;
        } else {
          acc = acc_row;
        }
        for (int64_t ox = 0; ox < g.out_w; ++ox) acc[ox] = b;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.height) continue;
          const T* PARE_RESTRICT row = plane + iy * g.width;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const Acc wv = Acc(wk[ky * g.kw + kx]);
            const int64_t offset = kx * g.dw - g.pw;
            int64_t lo = 0;
            int64_t hi = 0;
            valid_range(offset, g.sw, g.width, g.out_w, &lo, &hi);
            if (g.sw == 1) {
              const T* PARE_RESTRICT src = row + offset;
              for (int64_t ox = lo; ox < hi; ++ox) acc[ox] = arith::mul_add<Acc>(acc[ox], wv, Acc(src[ox]));
            } else {
              for (int64_t ox = lo; ox < hi; ++ox) {
                acc[ox] = arith::mul_add<Acc>(acc[ox], wv, Acc(row[ox * g.sw + offset]));
              }
            }
          }
        }
        if constexpr (!is_same_v<Acc, T>) {
          T* out_row = out_plane + oy * g.out_w;
          for (int64_t ox = 0; ox < g.out_w; ++ox) out_row[ox] = T(acc[ox]);
        }
      }
    }
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------
// Float: packed GEMM with im2col fused into B's packing.

PARE_UNUSED Error conv_float(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const Tensor* bias,
                             float* y) {
  const int64_t k = g.k();
  const int64_t p = g.planes_out();
  // The bias as contiguous floats (null without one).
  const float* b = nullptr;
  if (bias != nullptr) {
    PARE_TRY_ASSIGN(const Tensor contiguous, as_contiguous(ctx, *bias, ScalarType::Float));
    b = contiguous.data_as<float>();
  }
  // Runs product(image, c, grp, group_bias) per (image, group): C [og, p] =
  // W X + group_bias, which the product adds (the GEMM as it stores C).
  auto each_group = [&](auto&& product) {
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        product(x + g.group_input(n, grp), y + g.group_output(n, grp), grp, b == nullptr ? nullptr : b + grp * g.og);
      }
    }
  };
  const conv::Algorithm algorithm = conv::choose(g);
  if constexpr (fast_path_compiled<tags::pixel_rows_kernel, float>()) {
    if (algorithm == conv::Algorithm::PixelRows) {  // 1x1, 5 to 12 pixels (gemm.h)
      return run_fast_path<tags::pixel_rows_kernel, float>(ctx, [&]() -> Error {
        PARE_TRY_ASSIGN(const gemm::PixelRows rows, gemm::pixel_rows_scratch(ctx, p, g.og, k, /*pack_b=*/true));
        each_group([&](const float* image, float* c, int64_t grp, const float* group_bias) {
          // W^T [k, og] read from the group's weights [og, k] as they are.
          const gemm::StridedB w_t{{w + grp * g.og * k, k, g.og, 1, k}};
          gemm::pixel_rows(ctx, rows, p, g.og, k, image, w_t, c, group_bias, -__builtin_inff(), __builtin_inff());
        });
        return Error::Ok;
      });
    }
  }
  const size_t group_floats = gemm::packed_a_size(g.og, k);
  PARE_TRY_ASSIGN(void* packed_memory,
                  ctx.allocate_scratch((group_floats * static_cast<size_t>(g.groups) + 1) * sizeof(float)));
  float* packed = static_cast<float*>(packed_memory);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    gemm::prepack_a({w + grp * g.og * k, g.og, k, k, 1}, packed + grp * group_floats);
  }
  if constexpr (fast_path_compiled<tags::gemm_narrow_kernel, float>()) {
    if (algorithm == conv::Algorithm::NarrowGemm) {  // 1x1, 1 to 4 pixels (gemm.h)
      return run_fast_path<tags::gemm_narrow_kernel, float>(ctx, [&]() -> Error {
        PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(gemm::narrow_scratch_floats(p, k) * sizeof(float)));
        each_group([&](const float* image, float* c, int64_t grp, const float* group_bias) {
          gemm::sgemm_narrow(g.og, p, k, packed + grp * group_floats, {image, k, p, p, 1}, c, p,
                             gemm::Output{1.0f, /*accumulate=*/false, group_bias}, static_cast<float*>(scratch));
        });
        return Error::Ok;
      });
    }
  }
  PARE_TRY_ASSIGN(const gemm::Split split, gemm::split_for(ctx, g.og, p, k, /*pack_a=*/false, /*pack_b=*/true));
  each_group([&](const float* image, float* c, int64_t grp, const float* group_bias) {
    const gemm::PrepackedA a{packed + grp * group_floats, g.og};
    const gemm::Output out{1.0f, /*accumulate=*/false, /*row_bias=*/group_bias};
    if (g.pointwise()) {
      gemm::sgemm(ctx, split, g.og, p, k, a, gemm::StridedB{{image, k, p, p, 1}}, c, p, out);
    } else {
      gemm::sgemm(ctx, split, g.og, p, k, a, gemm::Im2ColPanels{image, g.im2col()}, c, p, out);
    }
  });
  return Error::Ok;
}

// ---------------------------------------------------------------------------
// Other dtypes: im2col blocks + reference GEMM.

// Writes columns [j0, j0+nc) of one group's im2col matrix as a row-major
// [k, nc] block.
template <typename T>
void im2col_block(const T* image, const Geometry& g, int64_t j0, int64_t nc, T* dst) {
  const int64_t taps = g.kh * g.kw;
  for (int64_t kk = 0; kk < g.k(); ++kk) {
    const int64_t channel = kk / taps;
    const int64_t ky = (kk % taps) / g.kw;
    const int64_t kx = (kk % taps) % g.kw;
    const T* plane = image + channel * g.planes_in();
    T* out = dst + kk * nc;
    int64_t j = j0;
    while (j < j0 + nc) {
      const int64_t oy = j / g.out_w;
      const int64_t ox_begin = j % g.out_w;
      const int64_t ox_end = min_of(g.out_w, ox_begin + (j0 + nc - j));
      T* seg = out + (j - j0) - ox_begin;  // seg[ox] is column (oy, ox)
      const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
      if (iy < 0 || iy >= g.height) {
        for (int64_t ox = ox_begin; ox < ox_end; ++ox) seg[ox] = T(0);
      } else {
        const T* row = plane + iy * g.width;
        const int64_t offset = kx * g.dw - g.pw;
        int64_t lo = 0;
        int64_t hi = 0;
        valid_range(offset, g.sw, g.width, g.out_w, &lo, &hi);
        for (int64_t ox = ox_begin; ox < ox_end; ++ox) {
          seg[ox] = (ox >= lo && ox < hi) ? row[ox * g.sw + offset] : T(0);
        }
      }
      j += ox_end - ox_begin;
    }
  }
}

template <typename T>
Error conv_generic(KernelContext& ctx, const Geometry& g, const T* x, const T* w, const Tensor* bias, T* y) {
  using Acc = opmath_t<T>;
  const int64_t k = g.k();
  const int64_t p = g.planes_out();
  const bool pointwise = g.pointwise();
  const int64_t block = p < kColumnBlock ? p : kColumnBlock;
  T* cols = nullptr;
  if (!pointwise) {
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(k * block + 1) * sizeof(T)));
    cols = static_cast<T*>(memory);
  }
  PARE_TRY_ASSIGN(void* acc_memory, ctx.allocate_scratch(static_cast<size_t>(block) * sizeof(Acc)));
  Acc* acc_row = static_cast<Acc*>(acc_memory);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* image = x + (n * g.in_channels + grp * g.cg) * g.planes_in();
      T* c = y + (n * g.out_channels + grp * g.og) * p;
      if (bias != nullptr) fill_with_bias(c, g, grp, *bias);
      const gemm::MatrixView<T> a{w + grp * g.og * k, g.og, k, k, 1};
      for (int64_t j0 = 0; j0 < p; j0 += block) {
        const int64_t nc = p - j0 < block ? p - j0 : block;
        gemm::MatrixView<T> b{nullptr, k, nc, nc, 1};
        if (pointwise) {
          b = {image + j0, k, nc, p, 1};
        } else {
          im2col_block<T>(image, g, j0, nc, cols);
          b.data = cols;
        }
        gemm::gemm_reference<T>(g.og, nc, k, Acc(1), a, b, c + j0, p, bias != nullptr, acc_row);
      }
    }
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------
// Transposed convolution. Weight [C_in, og, kh, kw]; input pixel (iy, ix)
// of channel ic contributes w[ic, oc, ky, kx] * x to output
// (iy * sh - ph + ky * dh, ix * sw - pw + kx * dw).

// Adds one [og * kh * kw, nc] column block (columns = input pixels
// [j0, j0 + nc)) into the group's output accumulator planes.
template <typename Acc>
void col2im_block(const Acc* cols, const Geometry& g, int64_t j0, int64_t nc, Acc* out) {
  const int64_t taps = g.kh * g.kw;
  for (int64_t r = 0; r < g.og * taps; ++r) {
    const int64_t oc = r / taps;
    const int64_t ky = (r % taps) / g.kw;
    const int64_t kx = (r % taps) % g.kw;
    Acc* plane = out + oc * g.planes_out();
    const Acc* src = cols + r * nc;
    int64_t j = j0;
    while (j < j0 + nc) {
      const int64_t iy = j / g.width;
      const int64_t ix_begin = j % g.width;
      const int64_t ix_end = min_of(g.width, ix_begin + (j0 + nc - j));
      const Acc* seg = src + (j - j0) - ix_begin;
      const int64_t oy = iy * g.sh - g.ph + ky * g.dh;
      if (oy >= 0 && oy < g.out_h) {
        Acc* row = plane + oy * g.out_w;
        const int64_t offset = kx * g.dw - g.pw;
        int64_t lo = 0;
        int64_t hi = 0;
        valid_range(offset, g.sw, g.out_w, g.width, &lo, &hi);
        lo = max_of(lo, ix_begin);
        hi = min_of(hi, ix_end);
        for (int64_t ix = lo; ix < hi; ++ix)
          row[ix * g.sw + offset] = arith::add<Acc>(row[ix * g.sw + offset], seg[ix]);
      }
      j += ix_end - ix_begin;
    }
  }
}

// For a given group, the direct scatter for non-float dtypes: accumulates
// into `acc` ([og, out_h, out_w] opmath values).
template <typename T>
void transposed_scatter(const T* image, const T* w, const Geometry& g, opmath_t<T>* acc) {
  using Acc = opmath_t<T>;
  const int64_t taps = g.kh * g.kw;
  for (int64_t ic = 0; ic < g.cg; ++ic) {
    const T* plane = image + ic * g.planes_in();
    for (int64_t oc = 0; oc < g.og; ++oc) {
      const T* wk = w + (ic * g.og + oc) * taps;
      Acc* out_plane = acc + oc * g.planes_out();
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const Acc wv = Acc(wk[ky * g.kw + kx]);
          const int64_t offset = kx * g.dw - g.pw;
          int64_t lo = 0;
          int64_t hi = 0;
          valid_range(offset, g.sw, g.out_w, g.width, &lo, &hi);
          for (int64_t iy = 0; iy < g.height; ++iy) {
            const int64_t oy = iy * g.sh - g.ph + ky * g.dh;
            if (oy < 0 || oy >= g.out_h) continue;
            const T* PARE_RESTRICT src = plane + iy * g.width;
            Acc* PARE_RESTRICT row = out_plane + oy * g.out_w + offset;
            if (g.sw == 1) {
              for (int64_t ix = lo; ix < hi; ++ix) row[ix] = arith::mul_add<Acc>(row[ix], wv, Acc(src[ix]));
            } else {
              for (int64_t ix = lo; ix < hi; ++ix) {
                row[ix * g.sw] = arith::mul_add<Acc>(row[ix * g.sw], wv, Acc(src[ix]));
              }
            }
          }
        }
      }
    }
  }
}

template <typename T>
Error conv_transposed(KernelContext& ctx, const Geometry& g, const T* x, const T* w, const Tensor* bias, T* y) {
  using Acc = opmath_t<T>;
  const int64_t taps = g.kh * g.kw;
  const int64_t group_out = g.og * g.planes_out();
  Acc* acc = nullptr;
  if constexpr (!is_same_v<Acc, T>) {
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(group_out) * sizeof(Acc)));
    acc = static_cast<Acc*>(memory);
  }
  float* cols = nullptr;
  float* a_scratch = nullptr;
  float* b_scratch = nullptr;
  const int64_t pixels = g.planes_in();
  const int64_t block = pixels < gemm::kNC ? pixels : gemm::kNC;
  const int64_t rows = g.og * taps;
  if constexpr (is_same_v<T, float>) {
    PARE_TRY_ASSIGN(void* c_mem, ctx.allocate_scratch(static_cast<size_t>(rows * block + 1) * sizeof(float)));
    PARE_TRY_ASSIGN(void* a_mem, ctx.allocate_scratch((gemm::a_scratch_floats(rows, g.cg) + 1) * sizeof(float)));
    PARE_TRY_ASSIGN(void* b_mem, ctx.allocate_scratch((gemm::b_scratch_floats(block, g.cg) + 1) * sizeof(float)));
    cols = static_cast<float*>(c_mem);
    a_scratch = static_cast<float*>(a_mem);
    b_scratch = static_cast<float*>(b_mem);
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* image = x + (n * g.in_channels + grp * g.cg) * pixels;
      const T* wg = w + grp * g.cg * g.og * taps;
      T* out = y + (n * g.out_channels + grp * g.og) * g.planes_out();
      Acc* target;
      if constexpr (is_same_v<Acc, T>) {
        target = out;
      } else {
        target = acc;
      }
      for (int64_t oc = 0; oc < g.og; ++oc) {
        const Acc b = bias_at<T>(bias, grp * g.og + oc);
        Acc* plane = target + oc * g.planes_out();
        for (int64_t i = 0; i < g.planes_out(); ++i) plane[i] = b;
      }
      if constexpr (is_same_v<T, float>) {
        // cols [og * taps, pixels] = W_g^T [og * taps, cg] x X_g [cg, pixels], by column blocks.
        const gemm::MatrixView<float> a_view{wg, rows, g.cg, 1, rows};
        for (int64_t j0 = 0; j0 < pixels; j0 += block) {
          const int64_t nc = pixels - j0 < block ? pixels - j0 : block;
          gemm::sgemm(rows, nc, g.cg, gemm::StridedA{a_view}, gemm::StridedB{{image + j0, g.cg, nc, pixels, 1}}, cols,
                      nc, gemm::Output{}, a_scratch, b_scratch);
          col2im_block<float>(cols, g, j0, nc, target);
        }
      } else {
        transposed_scatter<T>(image, wg, g, target);
      }
      if constexpr (!is_same_v<Acc, T>) {
        for (int64_t i = 0; i < group_out; ++i) out[i] = T(acc[i]);
      }
    }
  }
  (void)cols;
  (void)a_scratch;
  (void)b_scratch;
  return Error::Ok;
}

// Whether the app selects any dtype of convolution3d_kernel. When it selects
// none, aten::convolution keeps no 3-d code at all, not even the dispatch: a
// 2-d-only runtime gains only the tag's inventory entry. (A link-time
// constant, selection.h: the loop unrolls over the tag's dtypes.)
bool convolution3d_selected() {
  bool any = false;
  for (ScalarType t : tags::convolution3d_kernel::dtypes)
    any = any || kernel_dtype_selected(TagId::convolution3d_kernel, t);
  return any;
}

}  // namespace

namespace convolution {

// For convolution3d.cc's slabs; aten::convolution's own dispatch runs the
// same ladder inline (one call less per convolution).
template <typename T>
Error run_2d(KernelContext& ctx, const Geometry& g, const T* x, const T* w, const Tensor* bias, T* y) {
  if (g.cg == 1) return depthwise<T>(ctx, g, x, w, bias, y);
  if constexpr (is_same_v<T, float>) {
    return conv_float(ctx, g, x, w, bias, y);
  } else {
    return conv_generic<T>(ctx, g, x, w, bias, y);
  }
}

// Every dtype of convolution3d_kernel (a missing one fails the link).
#define PARE_CONV_RUN_2D(T) \
  template Error run_2d<T>(KernelContext&, const Geometry&, const T*, const T*, const Tensor*, T*);
PARE_CONV_RUN_2D(uint8_t)
PARE_CONV_RUN_2D(int8_t)
PARE_CONV_RUN_2D(int16_t)
PARE_CONV_RUN_2D(int32_t)
PARE_CONV_RUN_2D(int64_t)
PARE_CONV_RUN_2D(Half)
PARE_CONV_RUN_2D(BFloat16)
PARE_CONV_RUN_2D(float)
PARE_CONV_RUN_2D(double)
#undef PARE_CONV_RUN_2D

}  // namespace convolution

// aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
//                   SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor
Error aten_convolution(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 9, 9, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& weight = args.tensor(1, "weight");
  const Tensor* bias = args.optional_tensor(2, "bias");
  const IntArrayRef stride_arg = args.int_list(3, "stride");
  const IntArrayRef padding_arg = args.int_list(4, "padding");
  const IntArrayRef dilation_arg = args.int_list(5, "dilation");
  const bool transposed = args.boolean(6, "transposed");
  const IntArrayRef output_padding_arg = args.int_list(7, "output_padding");
  const int64_t groups = args.int64(8, "groups");
  PARE_TRY(args.status());

  PARE_CHECK_OR_RETURN(ctx, weight.dim >= 3 && weight.dim <= 5, Error::NotImplemented,
                       "argument 'weight' must be 3-d (conv1d), 4-d (conv2d) or 5-d (conv3d), got sizes %s",
                       sizes_to_string(weight.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, input.dim == weight.dim, Error::InvalidShape,
                       "expected %d-d 'input' for %d-d 'weight' %s, got 'input' of sizes %s", int{weight.dim},
                       int{weight.dim}, sizes_to_string(weight.size_span()).text,
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, weight.dtype == input.dtype, Error::InvalidArgument,
                       "argument 'weight' has dtype %s but 'input' is %s; they must match", to_string(weight.dtype),
                       to_string(input.dtype));
  PARE_CHECK_OR_RETURN(ctx, bias == nullptr || bias->dtype == input.dtype, Error::InvalidArgument,
                       "argument 'bias' has dtype %s but 'input' is %s; they must match",
                       to_string(bias != nullptr ? bias->dtype : input.dtype), to_string(input.dtype));
  PARE_CHECK_OR_RETURN(ctx, groups >= 1, Error::InvalidArgument, "argument 'groups' must be positive, got %lld",
                       static_cast<long long>(groups));

  if (weight.dim == 5) {
    if (convolution3d_selected()) {
      return convolution::convolution3d(ctx, args.output(0), input, weight, bias, stride_arg, padding_arg, dilation_arg,
                                        transposed, groups);
    } else {
      // What the dispatch would report, without its code.
      return detail::dtype_not_selected(ctx, tags::convolution3d_kernel::name, input.dtype);
    }
  }

  const size_t spatial = weight.dim - 2u;
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t output_padding[2] = {0, 0};
  // 1-d convolutions fill the width entries; height stays 1 / 0 / 1.
  int64_t* const s = stride + (2 - spatial);
  int64_t* const p = padding + (2 - spatial);
  int64_t* const d = dilation + (2 - spatial);
  int64_t* const op = output_padding + (2 - spatial);
  PARE_TRY(nn::read_spatial(ctx, stride_arg, spatial, "stride", 1, nullptr, s));
  PARE_TRY(nn::read_spatial(ctx, padding_arg, spatial, "padding", 0, nullptr, p));
  PARE_TRY(nn::read_spatial(ctx, dilation_arg, spatial, "dilation", 1, nullptr, d));
  if (transposed) PARE_TRY(nn::read_spatial(ctx, output_padding_arg, spatial, "output_padding", 0, nullptr, op));

  Geometry g{};
  g.batch = input.sizes[0];
  g.in_channels = input.sizes[1];
  g.groups = groups;
  g.height = spatial == 2 ? input.sizes[2] : 1;
  g.width = input.sizes[input.dim - 1];
  g.set_window(spatial == 2 ? weight.sizes[2] : 1, weight.sizes[weight.dim - 1], stride, padding, dilation);
  PARE_CHECK_OR_RETURN(ctx, g.height >= 1 && g.width >= 1, Error::InvalidShape,
                       "'input' of sizes %s: only the batch and channel dims may be empty",
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, g.kh >= 1 && g.kw >= 1, Error::InvalidShape,
                       "argument 'weight' of sizes %s has an empty kernel", sizes_to_string(weight.size_span()).text);

  if (!transposed) {
    g.out_channels = weight.sizes[0];
    g.cg = weight.sizes[1];
    PARE_CHECK_OR_RETURN(ctx, g.out_channels >= 1 && g.out_channels % groups == 0, Error::InvalidShape,
                         "argument 'weight' of sizes %s: out_channels must be a positive multiple of groups = %lld",
                         sizes_to_string(weight.size_span()).text, static_cast<long long>(groups));
    PARE_CHECK_OR_RETURN(ctx, g.in_channels == g.cg * groups, Error::InvalidShape,
                         "given groups=%lld and 'weight' of sizes %s, expected 'input' of sizes %s to have %lld "
                         "channels, but it has %lld",
                         static_cast<long long>(groups), sizes_to_string(weight.size_span()).text,
                         sizes_to_string(input.size_span()).text, static_cast<long long>(g.cg * groups),
                         static_cast<long long>(g.in_channels));
    g.og = g.out_channels / groups;
    PARE_TRY(conv::plan_output(ctx, &g, input.size_span(), weight.dim));
  } else {
    PARE_CHECK_OR_RETURN(ctx, weight.sizes[0] == g.in_channels && g.in_channels % groups == 0, Error::InvalidShape,
                         "transposed convolution with groups=%lld: 'weight' of sizes %s expects 'input' of sizes %s to "
                         "have %lld channels, divisible by groups",
                         static_cast<long long>(groups), sizes_to_string(weight.size_span()).text,
                         sizes_to_string(input.size_span()).text, static_cast<long long>(weight.sizes[0]));
    g.cg = g.in_channels / groups;
    g.og = weight.sizes[1];
    g.out_channels = g.og * groups;
    for (size_t i = 0; i < 2; ++i) {
      PARE_CHECK_OR_RETURN(ctx, output_padding[i] < stride[i] || output_padding[i] < dilation[i],
                           Error::InvalidArgument,
                           "argument 'output_padding' (%lld) must be smaller than either stride (%lld) or dilation "
                           "(%lld)",
                           static_cast<long long>(output_padding[i]), static_cast<long long>(stride[i]),
                           static_cast<long long>(dilation[i]));
    }
    // (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1
    const int64_t ins[2] = {g.height, g.width};
    const int64_t ks[2] = {g.kh, g.kw};
    int64_t outs[2] = {0, 0};
    for (size_t i = 0; i < 2; ++i) {
      int64_t a = 0;
      int64_t b = 0;
      const bool ok = !__builtin_mul_overflow(ins[i] - 1, stride[i], &a) &&
                      !__builtin_mul_overflow(dilation[i], ks[i] - 1, &b) && !__builtin_add_overflow(a, b, &a) &&
                      !__builtin_add_overflow(a, output_padding[i] + 1 - 2 * padding[i], &a);
      PARE_CHECK_OR_RETURN(ctx, ok && a >= 1 && ins[i] >= 1, Error::InvalidShape,
                           "transposed convolution of 'input' of sizes %s with 'weight' %s gives an empty or invalid "
                           "output size",
                           sizes_to_string(input.size_span()).text, sizes_to_string(weight.size_span()).text);
      outs[i] = a;
    }
    g.out_h = outs[0];
    g.out_w = outs[1];
  }
  PARE_CHECK_OR_RETURN(ctx, bias == nullptr || (bias->dim == 1 && bias->sizes[0] == g.out_channels),
                       Error::InvalidShape, "argument 'bias' must be 1-d with %lld elements, got sizes %s",
                       static_cast<long long>(g.out_channels),
                       sizes_to_string(bias != nullptr ? bias->size_span() : IntArrayRef()).text);

  int64_t sizes[4] = {g.batch, g.out_channels, g.out_h, g.out_w};
  if (spatial == 1) sizes[2] = g.out_w;
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, IntArrayRef(sizes, input.dim)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  PARE_TRY_ASSIGN(const Tensor w, as_contiguous(ctx, weight, weight.dtype));

  return PARE_DISPATCH(convolution_kernel, ctx, input.dtype, T, {
    const T* xd = x.data_as<T>();
    const T* wd = w.data_as<T>();
    T* yd = out->data_as<T>();
    if (transposed) return conv_transposed<T>(ctx, g, xd, wd, bias, yd);
    if (g.cg == 1) return depthwise<T>(ctx, g, xd, wd, bias, yd);
    if constexpr (is_same_v<T, float>) {
      return conv_float(ctx, g, xd, wd, bias, yd);
    } else {
      return conv_generic<T>(ctx, g, xd, wd, bias, yd);
    }
  });
}

}  // namespace kernels
}  // namespace pare
