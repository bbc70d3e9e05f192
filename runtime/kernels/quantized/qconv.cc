// QConv2dPackedParams::run: pare::qconv2d_prepacked's int8 convolution
// (qpacked_params.h), over the one convolution plan (common/conv_plan.h:
// the geometry, the output-size check, conv::choose_int8).
//
// Padding reads as the input's zero point (the dequantized 0.0), never 0:
// the exporter's correction subtracts zx sum w over every tap, padded ones
// included. Build feature threads: not yet; the split would go over
// (image, group) pairs, or output rows for a single image.

#include "runtime/core/format.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/quantized/qgemm.h"
#include "runtime/kernels/quantized/qpacked_params.h"

namespace pare {
namespace classes {
namespace {

using GemmRequantization = kernels::qgemm::Requantization;

// The requantization of output channels [c0, ...).
GemmRequantization channels_from(const classes::Requantization& rq, int64_t c0, int32_t output_min,
                                 int32_t output_max) {
  return {rq.correction + c0, rq.multiplier + c0, rq.offset + c0, output_min, output_max};
}

// One input channel per group (conv::Int8Algorithm::Depthwise): output
// channel o reads input channel o / og with its own kh x kw filter, one
// plane at a time (qgemm::depthwise_plane). `ranges`: 2 kw int64 of
// scratch; `padded`: qgemm::depthwise_padded_bytes.
void depthwise(const conv::Geometry& g, const int8_t* x, const int8_t* w, const classes::Requantization& rq,
               int32_t zero_point, int32_t output_min, int32_t output_max, int32_t* acc, int64_t* ranges,
               int8_t* padded, int8_t* out) {
  const int64_t taps = g.kh * g.kw;
  for (int64_t kx = 0; kx < g.kw; ++kx) {
    conv::valid_range(kx * g.dw - g.pw, g.sw, g.width, g.out_w, &ranges[kx], &ranges[g.kw + kx]);
  }
  const kernels::qgemm::DepthwisePlane d{g.height, g.width,       g.kh,       g.kw,  g.sh,    g.sw,
                                         g.ph,     g.pw,          g.dh,       g.dw,  g.out_h, g.out_w,
                                         ranges,   ranges + g.kw, zero_point, padded};
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      const int8_t* plane = x + (n * g.in_channels + o / g.og) * g.planes_in();
      kernels::qgemm::depthwise_plane(d, plane, w + o * taps, rq.correction[o], rq.multiplier[o], rq.offset[o],
                                      output_min, output_max, acc, out + (n * g.out_channels + o) * g.planes_out());
    }
  }
}

// d[i] = s[i * stride] for i < n: a copy at stride 1, else a loop the
// compiler vectorises (restrict: the im2col matrix never overlaps the
// image).
PARE_ALWAYS_INLINE void gather(int8_t* PARE_RESTRICT d, const int8_t* PARE_RESTRICT s, int64_t n, int64_t stride) {
  if (n <= 0) return;
  if (stride == 1) {
    __builtin_memcpy(d, s, static_cast<size_t>(n));
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[2 * i];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
  }
}

PARE_ALWAYS_INLINE void fill(int8_t* d, int8_t value, int64_t n) {
  if (n > 0) __builtin_memset(d, value, static_cast<size_t>(n));
}

// The im2col matrix of one (image, group) for output rows [oy0, oy1),
// channel-major: row (c, ky, kx), in the weights' order, holds that tap of
// each of those output pixels ((oy - oy0) out_w + ox), padding as the zero
// point; gemm_columns reads it as it reads a 1x1 layer's image. A row's
// inside is a (strided) copy of an input row.
void im2col_columns(const conv::Geometry& g, const int8_t* image, int8_t zero_point, int64_t oy0, int64_t oy1,
                    int8_t* columns) {
  const int64_t p = (oy1 - oy0) * g.out_w;
  for (int64_t c = 0; c < g.cg; ++c) {
    const int8_t* plane = image + c * g.planes_in();
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int8_t* dst = columns + ((c * g.kh + ky) * g.kw + kx) * p;
        const int64_t offset = kx * g.dw - g.pw;
        int64_t lo = 0;
        int64_t hi = 0;
        conv::valid_range(offset, g.sw, g.width, g.out_w, &lo, &hi);
        for (int64_t oy = oy0; oy < oy1; ++oy) {
          int8_t* d = dst + (oy - oy0) * g.out_w;
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.height || lo >= hi) {
            fill(d, zero_point, g.out_w);
            continue;
          }
          const int8_t* row = plane + iy * g.width + offset;
          fill(d, zero_point, lo);
          gather(d + lo, row + lo * g.sw, hi - lo, g.sw);
          fill(d + hi, zero_point, g.out_w - hi);
        }
      }
    }
  }
}

}  // namespace

Error QConv2dPackedParams::run(KernelContext& ctx, const Tensor& input, Value& out, int32_t output_min,
                               int32_t output_max) const {
  PARE_CHECK_OR_RETURN(ctx, input.dim == 4 || input.dim == 3, Error::InvalidShape,
                       "argument 'input' must be 3-D or 4-D, got sizes %s", sizes_to_string(input.size_span()).text);
  const bool batched = input.dim == 4;
  const int64_t channels = input.sizes[batched ? 1 : 0];
  PARE_CHECK_OR_RETURN(ctx, channels == in_channels, Error::InvalidShape,
                       "argument 'input' has %lld channels; the int8 weights expect %lld",
                       static_cast<long long>(channels), static_cast<long long>(in_channels));
  conv::Geometry g = geometry(batched ? input.sizes[0] : 1, input.sizes[batched ? 2 : 1], input.sizes[batched ? 3 : 2]);
  PARE_TRY(conv::plan_output(ctx, &g, input.size_span(), /*weight_dim=*/4));
  int64_t sizes[4] = {g.batch, out_channels, g.out_h, g.out_w};
  PARE_TRY_ASSIGN(Tensor * result, ctx.allocate_output(out, ScalarType::Char,
                                                       batched ? IntArrayRef(sizes, 4) : IntArrayRef(sizes + 1, 3)));
  if (result->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Char));
  const int8_t* image = x.data_as<int8_t>();
  int8_t* y = result->data_as<int8_t>();

  const conv::Int8Algorithm algorithm = conv::choose_int8(g);
#if defined(PARE_X86_64_DISPATCH)
  if (algorithm == conv::Int8Algorithm::DepthwiseChannels) {
    kernels::qgemm::DepthwisePlane d{
        g.height, g.width,          g.kh,   g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.out_h, g.out_w, nullptr,
        nullptr,  input_zero_point, nullptr};
    if (kernels::qgemm::depthwise_channels_runs(d)) {
      PARE_TRY_ASSIGN(void* scratch,
                      ctx.allocate_scratch(static_cast<size_t>(kernels::qgemm::depthwise_channels_bytes(d))));
      d.padded = static_cast<int8_t*>(scratch);
      const GemmRequantization rq = channels_from(requantization, 0, output_min, output_max);
      for (int64_t n = 0; n < g.batch; ++n) {
        kernels::qgemm::depthwise_channels(d, g.out_channels, image + n * g.in_channels * g.planes_in(), weight, rq,
                                           y + n * g.out_channels * g.planes_out());
      }
      return Error::Ok;
    }
  }
#endif
  if (algorithm == conv::Int8Algorithm::Depthwise || algorithm == conv::Int8Algorithm::DepthwiseChannels) {
    PARE_TRY_ASSIGN(void* acc, ctx.allocate_scratch(static_cast<size_t>(g.out_w) * sizeof(int32_t)));
    PARE_TRY_ASSIGN(void* ranges, ctx.allocate_scratch(static_cast<size_t>(2 * g.kw) * sizeof(int64_t)));
    PARE_TRY_ASSIGN(void* padded, ctx.allocate_scratch(static_cast<size_t>(
                                      kernels::qgemm::depthwise_padded_bytes(g.height, g.width, g.ph, g.pw))));
    depthwise(g, image, weight, requantization, input_zero_point, output_min, output_max, static_cast<int32_t*>(acc),
              static_cast<int64_t*>(ranges), static_cast<int8_t*>(padded), y);
    return Error::Ok;
  }
  const int64_t k = g.k();
  const int64_t p = g.planes_out();
  const bool pointwise = algorithm == conv::Int8Algorithm::PointwiseGemm;
  const uint8_t* layer_packed = packing == kernels::qgemm::columns_packing() ? packed : nullptr;
  PARE_TRY_ASSIGN(void* gemm_scratch,
                  ctx.allocate_scratch(static_cast<size_t>(kernels::qgemm::columns_scratch_bytes(g.og, k))));
#if defined(PARE_X86_64_DISPATCH)
  if (!pointwise) {
    PARE_TRY_ASSIGN(void* ranges, ctx.allocate_scratch(static_cast<size_t>(2 * g.kw) * sizeof(int64_t)));
    int64_t* lo = static_cast<int64_t*>(ranges);
    for (int64_t kx = 0; kx < g.kw; ++kx)
      conv::valid_range(kx * g.dw - g.pw, g.sw, g.width, g.out_w, &lo[kx], &lo[g.kw + kx]);
    kernels::qgemm::ImageColumns cols{nullptr, g.height, g.width, g.kh,      g.kw,
                                      g.sh,    g.sw,     g.ph,    g.pw,      g.dh,
                                      g.dw,    g.out_w,  lo,      lo + g.kw, static_cast<int8_t>(input_zero_point)};
    // The VNNI copy packs its tiles of the im2col matrix from the image:
    // the matrix is never written. Where the output is 16 or more wide, it
    // packs them from a copy of the image laid out with its padding
    // (image_padded_bytes): no per-tap plans (the 32x32 block's 3x3 layers
    // 83 -> 59 us, its RGB stem 17.4 -> 12.4 us). On narrower outputs it
    // plans each tap's masked loads per tile, which for fewer than 4 input
    // channels (an RGB stem) serve too few rows: writing the matrix is
    // faster there (MobileNetV3-Small's 3x3 stride-2 stem at 224x224 84 ->
    // 51 us before the padded copy).
    const int64_t padded_bytes = kernels::qgemm::image_padded_bytes(cols, k);
    if ((g.cg >= 4 || padded_bytes > 0) && kernels::qgemm::image_gemm_runs(cols)) {
      if (padded_bytes > 0) {
        PARE_TRY_ASSIGN(void* padded, ctx.allocate_scratch(static_cast<size_t>(padded_bytes)));
        cols.padded = static_cast<int8_t*>(padded);
      }
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t grp = 0; grp < groups; ++grp) {
          cols.image = image + g.group_input(n, grp);
          const GemmRequantization rq = channels_from(requantization, grp * g.og, output_min, output_max);
          const kernels::qgemm::Output dst{y + g.group_output(n, grp), /*channel_stride=*/p, /*pixel_stride=*/1};
          const void* group_packed = layer_packed == nullptr ? nullptr : layer_packed + grp * packed_group_bytes;
          kernels::qgemm::gemm_image(g.og, p, k, weight + grp * g.og * k, group_packed, cols, rq, dst, gemm_scratch);
        }
      }
      return Error::Ok;
    }
  }
#endif
  // Output rows per im2col matrix: all of them, but a layer of fewer than
  // 4 input channels (whose matrix is many times its image: an RGB stem's
  // 27 or 147 rows per pixel) writes at most about 64 KB at a time.
  int64_t chunk_rows = g.out_h;
  if (!pointwise && g.cg < 4) {
    const int64_t rows = (int64_t{64} << 10) / (k * g.out_w);
    chunk_rows = rows < 1 ? 1 : rows < g.out_h ? rows : g.out_h;
  }
  int8_t* columns = nullptr;
  if (!pointwise) {
    int64_t bytes = 0;
    PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(k, chunk_rows * g.out_w, &bytes) && bytes <= (int64_t{1} << 40),
                         Error::InvalidShape, "the input is too large for this layer's im2col matrix (%lld x %lld)",
                         static_cast<long long>(k), static_cast<long long>(p));
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(bytes)));
    columns = static_cast<int8_t*>(memory);
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      const int8_t* group_image = image + g.group_input(n, grp);
      const int8_t* group_weight = weight + grp * g.og * k;
      const GemmRequantization rq = channels_from(requantization, grp * g.og, output_min, output_max);
      const kernels::qgemm::Output dst{y + g.group_output(n, grp), /*channel_stride=*/p, /*pixel_stride=*/1};
      const void* group_packed = layer_packed == nullptr ? nullptr : layer_packed + grp * packed_group_bytes;
      if (pointwise) {
        kernels::qgemm::gemm_columns(g.og, p, k, group_weight, group_packed, group_image, rq, dst, gemm_scratch);
        continue;
      }
      for (int64_t oy0 = 0; oy0 < g.out_h; oy0 += chunk_rows) {
        const int64_t oy1 = g.out_h - oy0 < chunk_rows ? g.out_h : oy0 + chunk_rows;
        im2col_columns(g, group_image, static_cast<int8_t>(input_zero_point), oy0, oy1, columns);
        const kernels::qgemm::Output rows{dst.data + oy0 * g.out_w, dst.channel_stride, dst.pixel_stride};
        kernels::qgemm::gemm_columns(g.og, (oy1 - oy0) * g.out_w, k, group_weight, group_packed, columns, rq, rows,
                                     gemm_scratch);
      }
    }
  }
  return Error::Ok;
}

}  // namespace classes
}  // namespace pare
