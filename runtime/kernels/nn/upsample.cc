// 2-d upsampling of (N, C, H, W) tensors: nearest and bilinear, each in its
// .vec form (output_size or scale_factors, what torch.export emits for
// nn.Upsample / F.interpolate) and its default form (output_size plus
// optional per-dim scales).
//
// Source indices and weights follow PyTorch's CPU formulas exactly
// (aten/src/ATen/native/UpSample.h: nearest_idx, area_pixel_compute_scale,
// compute_source_index_and_lambda), computed once per output column and
// row. Bilinear is separable: each needed input row is interpolated
// horizontally once into an opmath buffer, and each output row blends two
// such buffers with a unit-stride, vectorisable loop. uint8 bilinear uses
// PyTorch's uint8 algorithm (int16 fixed-point weights, a rounded uint8
// horizontal pass, then the vertical pass), so results match bit for bit.

#include "runtime/core/format.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

// Output size per spatial dim, and the optional scale PyTorch passes on to
// the kernel (the user's scale factor; 0 = none).
struct UpsampleShape {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  double scale_h, scale_w;
};

Error check_input(KernelContext& ctx, const Tensor& input, const char* name, UpsampleShape* s) {
  PARE_CHECK_OR_RETURN(ctx, input.dim == 4, Error::InvalidShape, "argument '%s' must be 4-d (N, C, H, W), got sizes %s",
                       name, sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, input.sizes[2] > 0 && input.sizes[3] > 0, Error::InvalidShape,
                       "argument '%s' of sizes %s must have non-empty height and width", name,
                       sizes_to_string(input.size_span()).text);
  s->batch = input.sizes[0];
  s->channels = input.sizes[1];
  s->in_h = input.sizes[2];
  s->in_w = input.sizes[3];
  return Error::Ok;
}

// Largest upsampled height or width accepted.
constexpr int64_t kMaxOutputSize = int64_t{1} << 31;

Error check_output(KernelContext& ctx, const UpsampleShape& s) {
  PARE_CHECK_OR_RETURN(ctx, s.out_h > 0 && s.out_w > 0 && s.out_h <= kMaxOutputSize && s.out_w <= kMaxOutputSize,
                       Error::InvalidArgument, "output size (%lld, %lld) must be positive (and below 2^31)",
                       static_cast<long long>(s.out_h), static_cast<long long>(s.out_w));
  return Error::Ok;
}

// The .vec overloads: `SymInt[]? output_size` at index out_i, `float[]?
// scale_factors` at index scales_i; exactly one must be given.
Error read_vec_args(KernelContext& ctx, KernelArgs& args, size_t out_i, size_t scales_i, UpsampleShape* s) {
  const bool has_size = args.has(out_i);
  const bool has_scales = args.has(scales_i);
  PARE_CHECK_OR_RETURN(ctx, has_size != has_scales, Error::InvalidArgument,
                       "exactly one of 'output_size' and 'scale_factors' must be given, got %s",
                       has_size ? "both" : "neither");
  s->scale_h = 0.0;
  s->scale_w = 0.0;
  if (has_size) {
    const IntArrayRef size = args.int_list(out_i, "output_size");
    PARE_TRY(args.status());
    PARE_CHECK_OR_RETURN(ctx, size.size() == 2, Error::InvalidArgument,
                         "argument 'output_size' must have 2 elements, got %zu", size.size());
    s->out_h = size[0];
    s->out_w = size[1];
    return check_output(ctx, *s);
  }
  double scales[2] = {0.0, 0.0};
  size_t count = 0;
  const Value& v = args.value(scales_i);
  if (v.kind == ValueKind::IntList) {
    // A list of whole numbers may arrive as an int list.
    count = v.int_list.size();
    for (size_t i = 0; i < count && i < 2; ++i) scales[i] = static_cast<double>(v.int_list[i]);
  } else {
    const Span<const double> list = args.double_list(scales_i, "scale_factors");
    PARE_TRY(args.status());
    count = list.size();
    for (size_t i = 0; i < count && i < 2; ++i) scales[i] = list[i];
  }
  PARE_CHECK_OR_RETURN(ctx, count == 2, Error::InvalidArgument,
                       "argument 'scale_factors' must have 2 elements, got %zu", count);
  const double in[2] = {static_cast<double>(s->in_h), static_cast<double>(s->in_w)};
  int64_t out[2] = {0, 0};
  for (size_t i = 0; i < 2; ++i) {
    const double size = in[i] * scales[i];
    PARE_CHECK_OR_RETURN(ctx, size >= 1.0 && size < static_cast<double>(kMaxOutputSize), Error::InvalidArgument,
                         "argument 'scale_factors': scale %s of an input size of %lld gives output size %s; it must "
                         "be at least 1 (and below 2^31)",
                         real_to_string(scales[i]).text, static_cast<long long>(in[i]), real_to_string(size).text);
    out[i] = static_cast<int64_t>(size);
  }
  s->out_h = out[0];
  s->out_w = out[1];
  s->scale_h = scales[0];
  s->scale_w = scales[1];
  return check_output(ctx, *s);
}

// The default overloads: `SymInt[2] output_size` then `float? scales_h,
// float? scales_w` at scales_i, scales_i + 1.
Error read_default_args(KernelContext& ctx, KernelArgs& args, size_t scales_i, UpsampleShape* s) {
  const IntArrayRef size = args.int_list(1, "output_size");
  s->scale_h = args.has(scales_i) ? args.real(scales_i, "scales_h") : 0.0;
  s->scale_w = args.has(scales_i + 1) ? args.real(scales_i + 1, "scales_w") : 0.0;
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, size.size() == 2, Error::InvalidArgument,
                       "argument 'output_size' must have 2 elements, got %zu", size.size());
  s->out_h = size[0];
  s->out_w = size[1];
  return check_output(ctx, *s);
}

// compute_scales_value<float>: 1 / scale when one was given, else in / out.
float nearest_scale(double scale, int64_t in, int64_t out) {
  return scale > 0.0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
}

// nearest_idx: PyTorch's (OpenCV's) nearest source index.
int64_t nearest_index(int64_t dst, int64_t in, int64_t out, float scale) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float f = math::floor(static_cast<float>(dst) * scale);
  // Huge or NaN products (absurd scales) clamp to the last index.
  if (!(f < static_cast<float>(in - 1))) return in - 1;
  return static_cast<int64_t>(f);
}

Error upsample_nearest(KernelContext& ctx, const Tensor& input, const UpsampleShape& s, Value& output) {
  const int64_t sizes[] = {s.batch, s.channels, s.out_h, s.out_w};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(output, input.dtype, IntArrayRef(sizes, 4)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(s.out_w) * sizeof(int64_t)));
  int64_t* cols = static_cast<int64_t*>(memory);
  const float scale_w = nearest_scale(s.scale_w, s.in_w, s.out_w);
  const float scale_h = nearest_scale(s.scale_h, s.in_h, s.out_h);
  for (int64_t ow = 0; ow < s.out_w; ++ow) cols[ow] = nearest_index(ow, s.in_w, s.out_w, scale_w);
  const int64_t planes = s.batch * s.channels;
  return PARE_DISPATCH(upsample_nearest2d_kernel, ctx, input.dtype, T, {
    for (int64_t p = 0; p < planes; ++p) {
      const T* in = x.data_as<T>() + p * s.in_h * s.in_w;
      T* o = out->data_as<T>() + p * s.out_h * s.out_w;
      for (int64_t oh = 0; oh < s.out_h; ++oh) {
        const T* PARE_RESTRICT row = in + nearest_index(oh, s.in_h, s.out_h, scale_h) * s.in_w;
        T* PARE_RESTRICT dst = o + oh * s.out_w;
        for (int64_t ow = 0; ow < s.out_w; ++ow) dst[ow] = row[cols[ow]];
      }
    }
    return Error::Ok;
  });
}

// ---------------------------------------------------------------------------
// Bilinear, floating types.

// Source indices and weights of one output position along one dim.
template <typename Acc>
struct LinearTap {
  int64_t i0, i1;
  Acc l0, l1;
};

// area_pixel_compute_scale<Acc>.
template <typename Acc>
Acc linear_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? static_cast<Acc>(in - 1) / static_cast<Acc>(out - 1) : Acc(0);
  return scale > 0.0 ? static_cast<Acc>(1.0 / scale) : static_cast<Acc>(in) / static_cast<Acc>(out);
}

// compute_source_index_and_lambda.
template <typename Acc>
LinearTap<Acc> linear_tap(int64_t dst, int64_t in, int64_t out, bool align_corners, Acc ratio) {
  if (in == out) return {dst, dst, Acc(1), Acc(0)};
  Acc real = align_corners ? ratio * Acc(dst) : ratio * (Acc(dst) + Acc(0.5)) - Acc(0.5);
  if (!align_corners && real < Acc(0)) real = Acc(0);
  const Acc f = math::floor(real);
  int64_t i0 = in - 1;
  if (f < static_cast<Acc>(in - 1)) i0 = static_cast<int64_t>(f);  // also catches NaN -> in - 1
  Acc l1 = real - Acc(i0);
  l1 = l1 < Acc(0) ? Acc(0) : (l1 > Acc(1) ? Acc(1) : l1);
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), Acc(1) - l1, l1};
}

template <typename T>
Error bilinear_float(KernelContext& ctx, const Tensor& x, const UpsampleShape& s, bool align_corners, Tensor& out) {
  using Acc = opmath_t<T>;
  const size_t ow_n = static_cast<size_t>(s.out_w);
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(ow_n * (sizeof(LinearTap<Acc>) + 2 * sizeof(Acc))));
  LinearTap<Acc>* cols = static_cast<LinearTap<Acc>*>(memory);
  Acc* rows[2] = {reinterpret_cast<Acc*>(cols + ow_n), reinterpret_cast<Acc*>(cols + ow_n) + ow_n};
  const Acc ratio_w = linear_scale<Acc>(s.in_w, s.out_w, align_corners, s.scale_w);
  const Acc ratio_h = linear_scale<Acc>(s.in_h, s.out_h, align_corners, s.scale_h);
  for (int64_t ow = 0; ow < s.out_w; ++ow) cols[ow] = linear_tap<Acc>(ow, s.in_w, s.out_w, align_corners, ratio_w);

  const int64_t planes = s.batch * s.channels;
  for (int64_t p = 0; p < planes; ++p) {
    const T* in = x.data_as<T>() + p * s.in_h * s.in_w;
    T* o = out.data_as<T>() + p * s.out_h * s.out_w;
    // Which input row each buffer holds, horizontally interpolated.
    int64_t held[2] = {-1, -1};
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const LinearTap<Acc> t = linear_tap<Acc>(oh, s.in_h, s.out_h, align_corners, ratio_h);
      const int64_t want[2] = {t.i0, t.i1};
      // Keep a buffer that already holds a wanted row in its slot.
      if (held[1] == want[0] || held[0] == want[1]) {
        Acc* r = rows[0];
        rows[0] = rows[1];
        rows[1] = r;
        const int64_t h = held[0];
        held[0] = held[1];
        held[1] = h;
      }
      for (int k = 0; k < 2; ++k) {
        if (held[k] == want[k]) continue;
        const T* PARE_RESTRICT src = in + want[k] * s.in_w;
        Acc* PARE_RESTRICT dst = rows[k];
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const LinearTap<Acc>& c = cols[ow];
          dst[ow] = c.l0 * Acc(src[c.i0]) + c.l1 * Acc(src[c.i1]);
        }
        held[k] = want[k];
      }
      const Acc* PARE_RESTRICT r0 = rows[0];
      const Acc* PARE_RESTRICT r1 = rows[1];
      T* PARE_RESTRICT dst = o + oh * s.out_w;
      for (int64_t ow = 0; ow < s.out_w; ++ow) dst[ow] = T(t.l0 * r0[ow] + t.l1 * r1[ow]);
    }
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------
// Bilinear, uint8: PyTorch's fixed-point separable algorithm.

// Per output position: first source index and two int16 weights (the
// second is 0 when only one source pixel contributes).
struct FixedTap {
  int64_t first;
  int64_t count;
  int32_t w[2];
};

// HelperInterpLinear::compute_index_ranges_int16_weights (antialias off).
// Returns the weights' precision in bits.
PARE_UNUSED unsigned fixed_taps(int64_t in, int64_t out, bool align_corners, double opt_scale, FixedTap* taps,
                                double* weights) {
  const double scale = linear_scale<double>(in, out, align_corners, opt_scale);
  const double support = 1.0;  // bilinear: interp_size 2 * 0.5
  double wt_max = 0.0;
  for (int64_t i = 0; i < out; ++i) {
    const double center = align_corners ? scale * static_cast<double>(i) : scale * (static_cast<double>(i) + 0.5) - 0.5;
    double lo = math::floor(center - support + 1.0);
    double hi = math::floor(center + support + 1.0);
    lo = lo < 0.0 ? 0.0 : (lo > static_cast<double>(in) ? static_cast<double>(in) : lo);
    hi = hi < 0.0 ? 0.0 : (hi > static_cast<double>(in) ? static_cast<double>(in) : hi);
    const int64_t first = static_cast<int64_t>(lo);
    int64_t count = static_cast<int64_t>(hi) - first;
    count = count < 0 ? 0 : (count > 2 ? 2 : count);
    double* w = weights + 2 * i;
    double total = 0.0;
    for (int64_t j = 0; j < 2; ++j) {
      double v = 0.0;
      if (j < count) {
        const double d = math::abs(static_cast<double>(j + first) - center);
        v = d < 1.0 ? 1.0 - d : 0.0;
      }
      w[j] = v;
      total += v;
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < count; ++j) {
        w[j] /= total;
        wt_max = w[j] > wt_max ? w[j] : wt_max;
      }
    }
    taps[i].first = first;
    taps[i].count = count;
  }
  unsigned precision = 0;
  for (; precision < 22; ++precision) {
    const int next = static_cast<int>(0.5 + wt_max * static_cast<double>(1 << (precision + 1)));
    if (next >= (1 << 15)) break;
  }
  if (precision == 0) precision = 1;  // unreachable for real weights; keeps the rounding shift defined
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      const double v = weights[2 * i + j] * static_cast<double>(1 << precision);
      taps[i].w[j] = static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
    }
  }
  return precision;
}

PARE_UNUSED PARE_ALWAYS_INLINE uint8_t clamp_u8(int32_t v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

PARE_UNUSED Error bilinear_u8(KernelContext& ctx, const Tensor& x, const UpsampleShape& s, bool align_corners,
                              Tensor& out) {
  const bool horizontal = s.out_w != s.in_w;
  const bool vertical = s.out_h != s.in_h;
  const int64_t planes = s.batch * s.channels;
  if (!horizontal && !vertical) {
    __builtin_memcpy(out.data(), x.data(), out.nbytes());
    return Error::Ok;
  }
  const int64_t n_taps = (horizontal ? s.out_w : 0) + (vertical ? s.out_h : 0);
  // The horizontal pass's output when a vertical pass follows: [in_h, out_w].
  int64_t staged = 0;
  PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(s.in_h, s.out_w, &staged), Error::InvalidArgument,
                       "output width %lld is too large for an input height of %lld", static_cast<long long>(s.out_w),
                       static_cast<long long>(s.in_h));
  PARE_TRY_ASSIGN(void* memory,
                  ctx.allocate_scratch(static_cast<size_t>(n_taps) * (sizeof(FixedTap) + 2 * sizeof(double)) +
                                       (horizontal && vertical ? static_cast<size_t>(staged) : 0) + 1));
  FixedTap* col_taps = static_cast<FixedTap*>(memory);
  FixedTap* row_taps = col_taps + (horizontal ? s.out_w : 0);
  double* weights = reinterpret_cast<double*>(col_taps + n_taps);
  uint8_t* buffer = reinterpret_cast<uint8_t*>(weights + 2 * n_taps);
  unsigned col_precision = 0;
  unsigned row_precision = 0;
  if (horizontal) col_precision = fixed_taps(s.in_w, s.out_w, align_corners, s.scale_w, col_taps, weights);
  if (vertical) row_precision = fixed_taps(s.in_h, s.out_h, align_corners, s.scale_h, row_taps, weights);

  for (int64_t p = 0; p < planes; ++p) {
    const uint8_t* in = x.data_as<uint8_t>() + p * s.in_h * s.in_w;
    uint8_t* o = out.data_as<uint8_t>() + p * s.out_h * s.out_w;
    const uint8_t* stage = in;  // [in_h, width of stage]
    if (horizontal) {
      uint8_t* dst_plane = vertical ? buffer : o;
      const int32_t initial = 1 << (col_precision - 1);
      for (int64_t y = 0; y < s.in_h; ++y) {
        const uint8_t* src = in + y * s.in_w;
        uint8_t* dst = dst_plane + y * s.out_w;
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const FixedTap& t = col_taps[ow];
          int32_t acc = initial;
          for (int64_t j = 0; j < t.count; ++j) acc += static_cast<int32_t>(src[t.first + j]) * t.w[j];
          dst[ow] = clamp_u8(acc >> col_precision);
        }
      }
      stage = dst_plane;
    }
    if (vertical) {
      const int32_t initial = 1 << (row_precision - 1);
      for (int64_t oh = 0; oh < s.out_h; ++oh) {
        const FixedTap& t = row_taps[oh];
        const uint8_t* PARE_RESTRICT r0 = stage + t.first * s.out_w;
        const uint8_t* PARE_RESTRICT r1 = t.count > 1 ? r0 + s.out_w : r0;
        const int32_t w0 = t.count > 0 ? t.w[0] : 0;
        const int32_t w1 = t.count > 1 ? t.w[1] : 0;
        uint8_t* PARE_RESTRICT dst = o + oh * s.out_w;
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          dst[ow] = clamp_u8((initial + static_cast<int32_t>(r0[ow]) * w0 + static_cast<int32_t>(r1[ow]) * w1) >>
                             row_precision);
        }
      }
    }
  }
  return Error::Ok;
}

Error upsample_bilinear(KernelContext& ctx, const Tensor& input, const UpsampleShape& s, bool align_corners,
                        Value& output) {
  const int64_t sizes[] = {s.batch, s.channels, s.out_h, s.out_w};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(output, input.dtype, IntArrayRef(sizes, 4)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  return PARE_DISPATCH(upsample_bilinear2d_kernel, ctx, input.dtype, T, {
    if constexpr (is_same_v<T, uint8_t>) {
      return bilinear_u8(ctx, x, s, align_corners, *out);
    } else {
      return bilinear_float<T>(ctx, x, s, align_corners, *out);
    }
  });
}

}  // namespace

// aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor
Error aten_upsample_nearest2d_vec(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& input = args.tensor(0, "input");
  PARE_TRY(args.status());
  UpsampleShape s{};
  PARE_TRY(check_input(ctx, input, "input", &s));
  PARE_TRY(read_vec_args(ctx, args, 1, 2, &s));
  return upsample_nearest(ctx, input, s, args.output(0));
}

// aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor
Error aten_upsample_nearest2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  PARE_TRY(args.status());
  UpsampleShape s{};
  PARE_TRY(check_input(ctx, self, "self", &s));
  PARE_TRY(read_default_args(ctx, args, 2, &s));
  return upsample_nearest(ctx, self, s, args.output(0));
}

// aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors)
//     -> Tensor
Error aten_upsample_bilinear2d_vec(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& input = args.tensor(0, "input");
  const bool align_corners = args.boolean(2, "align_corners");
  PARE_TRY(args.status());
  UpsampleShape s{};
  PARE_TRY(check_input(ctx, input, "input", &s));
  PARE_TRY(read_vec_args(ctx, args, 1, 3, &s));
  return upsample_bilinear(ctx, input, s, align_corners, args.output(0));
}

// aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None,
//     float? scales_w=None) -> Tensor
Error aten_upsample_bilinear2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 5, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool align_corners = args.boolean(2, "align_corners");
  PARE_TRY(args.status());
  UpsampleShape s{};
  PARE_TRY(check_input(ctx, self, "self", &s));
  PARE_TRY(read_default_args(ctx, args, 3, &s));
  return upsample_bilinear(ctx, self, s, align_corners, args.output(0));
}

}  // namespace kernels
}  // namespace pare
