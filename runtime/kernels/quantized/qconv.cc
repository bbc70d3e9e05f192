// QConv2dPackedParams::run: pare::qconv2d_prepacked's int8 convolution
// (qpacked_params.h), over the one convolution plan (common/conv_plan.h:
// the geometry, the output-size check, conv::choose_int8).
//
// Padding reads as the input's zero point (the dequantized 0.0), never 0:
// the exporter's correction subtracts zx sum w over every tap, padded ones
// included.
//
// Build feature threads: the GEMM layers split their output channels at
// whole blocks of the packed weights (qgemm::columns_channel_block), the
// depthwise ones their planes (16-channel blocks across channels); every
// chunk has its own scratch, and a split never changes a bit. The im2col
// matrix, where one is written, is written before the split.

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
// plane i (image i / out_channels, channel o = i % out_channels) reads
// input channel o / og with its own kh x kw filter (qgemm::depthwise_plane),
// for the planes [begin, end) of a chunk. `d`: the layer's plane with its
// ranges and this chunk's `padded` (qgemm::depthwise_padded_bytes); `acc`:
// out_w int32 of this chunk's scratch.
void depthwise(const conv::Geometry& g, const kernels::qgemm::DepthwisePlane& d, const int8_t* x, const int8_t* w,
               const classes::Requantization& rq, int32_t output_min, int32_t output_max, int64_t begin, int64_t end,
               int32_t* acc, int8_t* out) {
  const int64_t taps = g.kh * g.kw;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t n = i / g.out_channels;
    const int64_t o = i % g.out_channels;
    const int8_t* plane = x + (n * g.in_channels + o / g.og) * g.planes_in();
    kernels::qgemm::depthwise_plane(d, plane, w + o * taps, rq.correction[o], rq.multiplier[o], rq.offset[o],
                                    output_min, output_max, acc, out + i * g.planes_out());
  }
}

// Bytes of each chunk's scratch, 64-byte aligned.
size_t chunk_bytes(int64_t bytes) { return align_up(static_cast<size_t>(bytes), 64); }

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
// Small outputs (a network's last stages at a small input: ResNet-50's
// 2x2 at 64x64) plan each tap's source per output pixel once, for every
// channel: the row copies' range arithmetic and calls, per channel, tap
// and row, cost many times their bytes there (a 3x3 layer over 512
// channels at 2x2: 50 us of 87).
constexpr int64_t kGatheredPixels = 64;     // outputs up to 8x8
constexpr int64_t kGatheredEntries = 2048;  // taps x pixels planned at most (8 KB of the stack)

void im2col_columns(const conv::Geometry& g, const int8_t* image, int8_t zero_point, int64_t oy0, int64_t oy1,
                    int8_t* columns) {
  const int64_t p = (oy1 - oy0) * g.out_w;
  const int64_t taps = g.kh * g.kw;
  if (p <= kGatheredPixels && taps * p <= kGatheredEntries) {
    int32_t source[kGatheredEntries];  // [tap][pixel]: the offset in a plane, -1 for the padding
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t i = 0; i < p; ++i) {
        const int64_t iy = (oy0 + i / g.out_w) * g.sh - g.ph + t / g.kw * g.dh;
        const int64_t ix = i % g.out_w * g.sw - g.pw + t % g.kw * g.dw;
        const bool inside = iy >= 0 && iy < g.height && ix >= 0 && ix < g.width;
        source[t * p + i] = inside ? static_cast<int32_t>(iy * g.width + ix) : -1;
      }
    }
    for (int64_t c = 0; c < g.cg; ++c) {
      const int8_t* plane = image + c * g.planes_in();
      int8_t* dst = columns + c * taps * p;
      for (int64_t e = 0; e < taps * p; ++e) dst[e] = source[e] < 0 ? zero_point : plane[source[e]];
    }
    return;
  }
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
  const int64_t taps = g.kh * g.kw;
#if defined(PARE_X86_64_DISPATCH)
  if (algorithm == conv::Int8Algorithm::DepthwiseChannels) {
    kernels::qgemm::DepthwisePlane d{
        g.height, g.width,          g.kh,   g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.out_h, g.out_w, nullptr,
        nullptr,  input_zero_point, nullptr};
    if (kernels::qgemm::depthwise_channels_runs(d)) {
      // Blocks of 16 channels (the kernels' vector) split over the threads.
      const int64_t c = g.out_channels;
      const uint32_t chunks = ctx.chunks_for(c, 16, g.batch * c * g.planes_out() * taps);
      const size_t per_chunk = chunk_bytes(kernels::qgemm::depthwise_channels_bytes(d));
      PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(per_chunk * chunks));
      for (int64_t n = 0; n < g.batch; ++n) {
        ctx.parallel(chunks, c, 16, [&](uint32_t chunk, int64_t c0, int64_t c1) {
          kernels::qgemm::DepthwisePlane part = d;
          part.padded = static_cast<int8_t*>(scratch) + chunk * per_chunk;
          const int64_t plane = n * c + c0;
          const void* filters = depthwise_packed == nullptr
                                    ? nullptr
                                    : static_cast<const uint8_t*>(depthwise_packed) +
                                          c0 / 16 * kernels::qgemm::depthwise_channels_block_bytes(g.kh, g.kw);
          kernels::qgemm::depthwise_channels(part, c1 - c0, image + plane * g.planes_in(), weight + c0 * taps, filters,
                                             channels_from(requantization, 0, output_min, output_max).from(c0),
                                             y + plane * g.planes_out());
        });
      }
      return Error::Ok;
    }
  }
#endif
  if (algorithm == conv::Int8Algorithm::Depthwise || algorithm == conv::Int8Algorithm::DepthwiseChannels) {
    // Output planes split over the threads, each chunk its accumulators
    // and padded plane.
    const int64_t planes = g.batch * g.out_channels;
    const uint32_t chunks = ctx.chunks_for(planes, 1, planes * g.planes_out() * taps);
    const size_t acc_bytes = chunk_bytes(g.out_w * static_cast<int64_t>(sizeof(int32_t)));
    const size_t per_chunk =
        acc_bytes + chunk_bytes(kernels::qgemm::depthwise_padded_bytes(g.height, g.width, g.ph, g.pw));
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(per_chunk * chunks));
    PARE_TRY_ASSIGN(void* ranges, ctx.allocate_scratch(static_cast<size_t>(2 * g.kw) * sizeof(int64_t)));
    int64_t* lo = static_cast<int64_t*>(ranges);
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      conv::valid_range(kx * g.dw - g.pw, g.sw, g.width, g.out_w, &lo[kx], &lo[g.kw + kx]);
    }
    const kernels::qgemm::DepthwisePlane d{
        g.height,  g.width,          g.kh,   g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.out_h, g.out_w, lo,
        lo + g.kw, input_zero_point, nullptr};
    ctx.parallel(chunks, planes, 1, [&](uint32_t chunk, int64_t begin, int64_t end) {
      uint8_t* mine = static_cast<uint8_t*>(memory) + chunk * per_chunk;
      kernels::qgemm::DepthwisePlane part = d;
      part.padded = reinterpret_cast<int8_t*>(mine + acc_bytes);
      depthwise(g, part, image, weight, requantization, output_min, output_max, begin, end,
                reinterpret_cast<int32_t*>(mine), y);
    });
    return Error::Ok;
  }
  const int64_t k = g.k();
  const int64_t p = g.planes_out();
  const bool pointwise = algorithm == conv::Int8Algorithm::PointwiseGemm;
  const uint8_t* layer_packed = packing == kernels::qgemm::columns_packing() ? packed : nullptr;
  const int64_t work = g.og * k * p;
#if defined(PARE_X86_64_DISPATCH)
  // The VNNI copy packs its tiles of the im2col matrix from the image:
  // the matrix is never written. Where the output is 16 or more wide, it
  // packs them from a copy of the image laid out with its padding
  // (image_padded_bytes): no per-tap plans (the 32x32 block's 3x3 layers
  // 83 -> 59 us, its RGB stem 17.4 -> 12.4 us). On narrower outputs it
  // plans each tap's masked loads per tile, which for fewer than 4 input
  // channels (an RGB stem) serve too few rows: writing the matrix is
  // faster there (MobileNetV3-Small's 3x3 stride-2 stem at 224x224 84 ->
  // 51 us before the padded copy).
  kernels::qgemm::ImageColumns cols{nullptr, g.height, g.width, g.kh,    g.kw,
                                    g.sh,    g.sw,     g.ph,    g.pw,    g.dh,
                                    g.dw,    g.out_w,  nullptr, nullptr, static_cast<int8_t>(input_zero_point)};
  const int64_t padded_bytes = pointwise ? 0 : kernels::qgemm::image_padded_bytes(cols, k);
  const bool from_image = !pointwise && (g.cg >= 4 || padded_bytes > 0) && kernels::qgemm::image_gemm_runs(cols);
#else
  constexpr bool from_image = false;
#endif
  // The threads split a group's output channels at whole blocks of the
  // packed weights; the image GEMM on planes of 16 tiles or more splits
  // its pixels at whole tiles instead, so no chunk packs the image's tiles
  // again (ResNet-18's 56x56 layers: 1.37x on 2 threads split by channels).
  // Each chunk has its own GEMM scratch; the padded image, where there is
  // one, is made once and shared.
  const bool by_pixels = from_image && p >= 16 * kernels::qgemm::kImageTilePixels;
  const int64_t block = kernels::qgemm::columns_channel_block();
  const uint32_t chunks =
      by_pixels ? ctx.chunks_for(p, kernels::qgemm::kImageTilePixels, work) : ctx.chunks_for(g.og, block, work);
  // A chunk's scratch covers its own channels only (its weights packed
  // there should the ISA cap have changed since init, kMR x k bytes a
  // block): the arena stays about one thread's.
  const int64_t chunk_channels = by_pixels ? g.og : KernelContext::chunk_size(g.og, block, chunks);
  const size_t gemm_bytes = chunk_bytes(kernels::qgemm::columns_scratch_bytes(chunk_channels, k));
  PARE_TRY_ASSIGN(void* gemm_scratch, ctx.allocate_scratch(gemm_bytes * chunks));
  // Runs gemm(chunk, channels, w, packed, rq, out, first_pixel, pixels,
  // scratch) on each chunk of group grp of image n: its channels' weights,
  // packed weights (or nullptr), requantization and output from their
  // first channel and pixel (all p pixels where the split is by channels).
  const auto split = [&](int64_t n, int64_t grp, const auto& gemm) {
    const int8_t* group_weight = weight + grp * g.og * k;
    const uint8_t* group_packed = layer_packed == nullptr ? nullptr : layer_packed + grp * packed_group_bytes;
    int8_t* dst = y + g.group_output(n, grp);
    uint8_t* scratch = static_cast<uint8_t*>(gemm_scratch);
    if (by_pixels) {
      const GemmRequantization rq = channels_from(requantization, grp * g.og, output_min, output_max);
      ctx.parallel(chunks, p, kernels::qgemm::kImageTilePixels, [&](uint32_t chunk, int64_t p0, int64_t p1) {
        gemm(chunk, g.og, group_weight, group_packed, rq,
             kernels::qgemm::Output{dst + p0, /*channel_stride=*/p, /*pixel_stride=*/1}, p0, p1 - p0,
             scratch + chunk * gemm_bytes);
      });
      return;
    }
    ctx.parallel(chunks, g.og, block, [&](uint32_t chunk, int64_t c0, int64_t c1) {
      const void* part = group_packed == nullptr ? nullptr : group_packed + kernels::qgemm::columns_packed_bytes(c0, k);
      gemm(chunk, c1 - c0, group_weight + c0 * k, part,
           channels_from(requantization, grp * g.og, output_min, output_max).from(c0),
           kernels::qgemm::Output{dst + c0 * p, /*channel_stride=*/p, /*pixel_stride=*/1}, int64_t{0}, p,
           scratch + chunk * gemm_bytes);
    });
  };
#if defined(PARE_X86_64_DISPATCH)
  if (from_image) {
    PARE_TRY_ASSIGN(void* ranges, ctx.allocate_scratch(static_cast<size_t>(2 * g.kw) * sizeof(int64_t)));
    int64_t* lo = static_cast<int64_t*>(ranges);
    for (int64_t kx = 0; kx < g.kw; ++kx)
      conv::valid_range(kx * g.dw - g.pw, g.sw, g.width, g.out_w, &lo[kx], &lo[g.kw + kx]);
    cols.lo = lo;
    cols.hi = lo + g.kw;
    if (padded_bytes > 0) {
      PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(padded_bytes)));
      cols.padded = static_cast<int8_t*>(memory);  // laid out once per group below, every chunk reads it
    }
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < groups; ++grp) {
        cols.image = image + g.group_input(n, grp);
        if (cols.padded != nullptr) kernels::qgemm::pad_image(cols, k);
        split(n, grp,
              [&](uint32_t, int64_t channels, const int8_t* w, const void* part, const GemmRequantization& rq,
                  const kernels::qgemm::Output& dst, int64_t first_pixel, int64_t pixels, void* scratch) {
                kernels::qgemm::ImageColumns mine = cols;
                mine.first_pixel = first_pixel;
                kernels::qgemm::gemm_image(channels, pixels, k, w, part, mine, rq, dst, scratch);
              });
      }
    }
    return Error::Ok;
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
      if (pointwise) {
        split(n, grp,
              [&](uint32_t, int64_t channels, const int8_t* w, const void* part, const GemmRequantization& rq,
                  const kernels::qgemm::Output& dst, int64_t, int64_t, void* scratch) {
                kernels::qgemm::gemm_columns(channels, p, k, w, part, group_image, rq, dst, scratch);
              });
        continue;
      }
      for (int64_t oy0 = 0; oy0 < g.out_h; oy0 += chunk_rows) {
        const int64_t oy1 = g.out_h - oy0 < chunk_rows ? g.out_h : oy0 + chunk_rows;
        const int64_t pixels = (oy1 - oy0) * g.out_w;
        im2col_columns(g, group_image, static_cast<int8_t>(input_zero_point), oy0, oy1, columns);
        split(n, grp,
              [&](uint32_t, int64_t channels, const int8_t* w, const void* part, const GemmRequantization& rq,
                  const kernels::qgemm::Output& dst, int64_t, int64_t, void* scratch) {
                const kernels::qgemm::Output rows{dst.data + oy0 * g.out_w, dst.channel_stride, dst.pixel_stride};
                kernels::qgemm::gemm_columns(channels, pixels, k, w, part, columns, rq, rows, scratch);
              });
      }
    }
  }
  return Error::Ok;
}

}  // namespace classes
}  // namespace pare
