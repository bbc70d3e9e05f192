// aten::grid_sampler_2d: what F.grid_sample on a 4-d input exports to.
// Samples input (N, C, H, W) at the points of grid (N, Ho, Wo, 2), whose
// last dim holds (x, y) in [-1, 1] (beyond it is padding), into
// (N, C, Ho, Wo): bilinear, nearest or bicubic; zeros, border or
// reflection padding; align_corners either way.
//
// The arithmetic is that of PyTorch's CPU kernel
// (aten/src/ATen/native/cpu/GridSamplerKernel.cpp, which every dtype and
// CPU capability runs), operation for operation, so results match closely
// and nearest picks the same pixel:
// * torch computes in Vectorized<T>, so for Half and BFloat16 every
//   operation rounds to T (Rounded<T> below; for float and double it is
//   plain arithmetic, and never contracted into an FMA);
// * location: unnormalize, then clip or reflect (by truncated division,
//   not fmod) and clip, a NaN clipping to 0; bicubic pads each tap instead;
// * indices: truncation to an integer of T's width, as torch's
//   convert_to_int_of_same_size does; out of range (NaN, infinities, huge
//   values) gives the most negative int32 (int64 for double), which the
//   int16 of Half and BFloat16 keeps the low half of, index 0;
// * with zeros padding a corner outside the image reads 0 and is still
//   multiplied by its weight, so a NaN weight gives NaN, as in torch.
// Deliberate differences: every read is bounds-checked, also under border
// and reflection padding, where torch trusts the clip (a Half size - 1
// that rounds up to size would read past the row); and offsets into the
// input are int64, where torch's Half and BFloat16 gathers use int16
// offsets that wrap on planes past 32767 elements.
//
// Taps are computed for runs of up to 32 output pixels of a row, then each
// channel writes the run contiguously. Dtype dispatch only: the modes are
// branches per pixel (padding, align_corners) or per run (interpolation),
// so a selected dtype costs one copy of the body, not one per mode.

#include "runtime/kernels/common/math.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

enum class Interpolation : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum class Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// A value computed as torch's Vectorized<T> computes it: in opmath, each
// operation's result rounded to T. For float and double the rounding is the
// identity; the operators being functions keeps clang from fusing a
// multiply and an add (torch's scalar loops do not fuse either).
template <typename T>
struct Rounded {
  using Acc = opmath_t<T>;
  Acc v;
  static PARE_ALWAYS_INLINE Rounded of(Acc x) {
    if constexpr (is_reduced_float_v<T>) {
      return {static_cast<Acc>(T(x))};
    } else {
      return {x};
    }
  }
  friend PARE_ALWAYS_INLINE Rounded operator+(Rounded a, Rounded b) { return of(a.v + b.v); }
  friend PARE_ALWAYS_INLINE Rounded operator-(Rounded a, Rounded b) { return of(a.v - b.v); }
  friend PARE_ALWAYS_INLINE Rounded operator*(Rounded a, Rounded b) { return of(a.v * b.v); }
  friend PARE_ALWAYS_INLINE Rounded operator/(Rounded a, Rounded b) { return of(a.v / b.v); }
};

// Floor, trunc, abs and round-half-even of a T are Ts: no rounding needed.
template <typename T>
PARE_ALWAYS_INLINE Rounded<T> floor(Rounded<T> a) {
  return {math::floor(a.v)};
}
template <typename T>
PARE_ALWAYS_INLINE Rounded<T> trunc(Rounded<T> a) {
  return {math::trunc(a.v)};
}

// Vectorized's minimum: NaN if either is.
template <typename T>
PARE_ALWAYS_INLINE Rounded<T> minimum(Rounded<T> a, Rounded<T> b) {
  if (math::isnan(a.v)) return a;
  if (math::isnan(b.v)) return b;
  return a.v < b.v ? a : b;
}

template <typename T>
PARE_ALWAYS_INLINE Rounded<T> constant(double x) {
  return Rounded<T>::of(static_cast<opmath_t<T>>(x));
}

// convert_to_int_of_same_size: truncation to int32 (int64 for double), the
// most negative value when out of range or NaN (x86's cvtt result, which
// torch's loops get on every CPU capability here); Half and BFloat16 keep
// the low 16 bits of the int32 (their int_same_size_t is int16).
template <typename T>
PARE_ALWAYS_INLINE int64_t to_index(opmath_t<T> v) {
  if constexpr (is_same_v<T, double>) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return static_cast<int64_t>(v);
  } else {
    const float f = static_cast<float>(v);
    const int64_t i = (f >= -2147483648.0f && f < 2147483648.0f) ? static_cast<int64_t>(f) : INT32_MIN;
    if constexpr (is_reduced_float_v<T>) {
      return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(i) & 0xFFFFu));
    } else {
      return i;
    }
  }
}

// index + 1 in T's integer width (int16 wraps for Half and BFloat16).
template <typename T>
PARE_ALWAYS_INLINE int64_t next_index(int64_t i) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint64_t>(i + 1) & 0xFFFFu));
  } else {
    return i + 1;
  }
}

// ComputeLocation of one spatial dim: grid value -> input coordinate.
template <typename T>
struct Axis {
  using R = Rounded<T>;
  Padding padding;
  bool align_corners;
  R max_val, scale, low, twice_span;
  bool empty;  // reflection over a single pixel with align_corners: always 0

  Axis(int64_t n, Padding p, bool align) : padding(p), align_corners(align) {
    using Acc = opmath_t<T>;
    const R two = constant<T>(2.0);
    max_val = R::of(static_cast<Acc>(n - 1));
    scale = (align ? R::of(static_cast<Acc>(n - 1)) : R::of(static_cast<Acc>(n))) / two;
    low = constant<T>(align ? 0.0 : -0.5);
    twice_span = (align ? R::of(static_cast<Acc>(n - 1)) : R::of(static_cast<Acc>(n))) * two;
    empty = align && n <= 1;
  }

  PARE_ALWAYS_INLINE R unnormalize(R g) const {
    const R scaled = (g + constant<T>(1.0)) * scale;
    return align_corners ? scaled : scaled - constant<T>(0.5);
  }
  // clamp_max(max_val, clamp_min(0, x)): a NaN becomes 0.
  PARE_ALWAYS_INLINE R clip(R x) const {
    const R lo = x.v > 0 ? x : R{0};
    return lo.v < max_val.v ? lo : max_val;
  }
  PARE_ALWAYS_INLINE R reflect(R x) const {
    if (empty) return R{0};
    const R shifted = align_corners ? x : x - low;
    const R a{math::abs(shifted.v)};
    const R flips = trunc(a / twice_span);
    const R extra = a - flips * twice_span;
    const R folded = minimum(extra, twice_span - extra);
    return align_corners ? folded : folded + low;
  }
  // compute_coordinates: the padding mode's mapping into the image.
  PARE_ALWAYS_INLINE R pad(R x) const {
    if (padding == Padding::kBorder) return clip(x);
    if (padding == Padding::kReflection) return clip(reflect(x));
    return x;
  }
};

// get_cubic_coefficients: the cubic convolution weights (A = -0.75) of the
// four taps at distances t + 1, t, 1 - t, 2 - t.
template <typename T>
PARE_ALWAYS_INLINE void cubic_coefficients(Rounded<T> t, Rounded<T>* w) {
  using R = Rounded<T>;
  const R a = constant<T>(-0.75);
  const R one = constant<T>(1.0);
  const auto outer = [&](R x) {
    return ((a * x - constant<T>(5.0) * a) * x + constant<T>(8.0) * a) * x - constant<T>(4.0) * a;
  };
  const auto inner = [&](R x) { return ((a + constant<T>(2.0)) * x - (a + constant<T>(3.0))) * x * x + one; };
  w[0] = outer(t + one);
  w[1] = inner(t);
  w[2] = inner(one - t);
  w[3] = outer(constant<T>(2.0) - t);
}

struct Plan {
  Interpolation interpolation;
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  // Input strides; grid strides (n, h, w, coordinate).
  int64_t is_n, is_c, is_h, is_w;
  int64_t gs_n, gs_h, gs_w, gs_xy;
};

// Output pixels whose taps are computed before the loop over channels, so
// that each channel writes them as one contiguous run.
constexpr int64_t kBlock = 32;

// A run of up to kBlock pixels of one output row: the grid points, the
// input image of their batch and where their channel-0 outputs go.
template <typename T>
struct Run {
  const T* grid;   // grid[n, oh, ow0]
  const T* image;  // input[n]
  T* out;          // output[n, 0, oh, ow0]
  int64_t count;
};

template <typename T>
PARE_ALWAYS_INLINE void grid_point(const Plan& p, const Run<T>& r, int64_t i, Rounded<T>* gx, Rounded<T>* gy) {
  const T* g = r.grid + i * p.gs_w;
  *gx = {static_cast<opmath_t<T>>(g[0])};
  *gy = {static_cast<opmath_t<T>>(g[p.gs_xy])};
}

template <typename T>
void nearest_run(const Plan& p, const Axis<T>& ax, const Axis<T>& ay, const Run<T>& r) {
  int64_t offset[kBlock];  // -1: outside the image
  for (int64_t i = 0; i < r.count; ++i) {
    Rounded<T> gx, gy;
    grid_point(p, r, i, &gx, &gy);
    const int64_t ix = to_index<T>(math::nearbyint(ax.pad(ax.unnormalize(gx)).v));
    const int64_t iy = to_index<T>(math::nearbyint(ay.pad(ay.unnormalize(gy)).v));
    const bool inside = ix >= 0 && ix < p.in_w && iy >= 0 && iy < p.in_h;
    offset[i] = inside ? iy * p.is_h + ix * p.is_w : -1;
  }
  const int64_t plane = p.out_h * p.out_w;
  for (int64_t c = 0; c < p.channels; ++c) {
    const T* src = r.image + c * p.is_c;
    T* dst = r.out + c * plane;
    for (int64_t i = 0; i < r.count; ++i) dst[i] = offset[i] >= 0 ? src[offset[i]] : T(0.0f);
  }
}

template <typename T>
void bilinear_run(const Plan& p, const Axis<T>& ax, const Axis<T>& ay, const Run<T>& r) {
  using Acc = opmath_t<T>;
  using R = Rounded<T>;
  int64_t offset[kBlock][4];  // nw, ne, sw, se; -1: outside the image
  R weight[kBlock][4];
  const R one = constant<T>(1.0);
  for (int64_t i = 0; i < r.count; ++i) {
    R gx, gy;
    grid_point(p, r, i, &gx, &gy);
    const R x = ax.pad(ax.unnormalize(gx));
    const R y = ay.pad(ay.unnormalize(gy));
    const R x_w = floor(x);
    const R y_n = floor(y);
    const R w = x - x_w;  // distance to the west column
    const R e = one - w;
    const R north = y - y_n;  // distance to the north row
    const R s = one - north;
    weight[i][0] = s * e;
    weight[i][1] = s * w;
    weight[i][2] = north * e;
    weight[i][3] = north * w;
    const int64_t x0 = to_index<T>(x_w.v);
    const int64_t y0 = to_index<T>(y_n.v);
    const int64_t cols[2] = {x0, next_index<T>(x0)};
    const int64_t rows[2] = {y0, next_index<T>(y0)};
    for (int k = 0; k < 4; ++k) {
      const int64_t cx = cols[k & 1];
      const int64_t cy = rows[k >> 1];
      const bool inside = cx >= 0 && cx < p.in_w && cy >= 0 && cy < p.in_h;
      offset[i][k] = inside ? cy * p.is_h + cx * p.is_w : -1;
    }
  }
  const int64_t plane = p.out_h * p.out_w;
  for (int64_t c = 0; c < p.channels; ++c) {
    const T* src = r.image + c * p.is_c;
    T* dst = r.out + c * plane;
    for (int64_t i = 0; i < r.count; ++i) {
      // A corner outside reads 0, still weighted: a NaN weight gives NaN.
      R v[4];
      for (int k = 0; k < 4; ++k) v[k] = R{offset[i][k] >= 0 ? static_cast<Acc>(src[offset[i][k]]) : Acc(0)};
      const R sum = v[0] * weight[i][0] + v[1] * weight[i][1] + v[2] * weight[i][2] + v[3] * weight[i][3];
      dst[i] = T(sum.v);
    }
  }
}

// Bicubic: taps at floor - 1 .. floor + 2 of the unpadded location, each
// padded on its own.
template <typename T>
void bicubic_run(const Plan& p, const Axis<T>& ax, const Axis<T>& ay, const Run<T>& r) {
  using Acc = opmath_t<T>;
  using R = Rounded<T>;
  int64_t col[kBlock][4];  // column offsets; -1: outside the image
  int64_t row[kBlock][4];  // row offsets; -1: outside the image
  R cx[kBlock][4];
  R cy[kBlock][4];
  for (int64_t i = 0; i < r.count; ++i) {
    R gx, gy;
    grid_point(p, r, i, &gx, &gy);
    const R x = ax.unnormalize(gx);
    const R y = ay.unnormalize(gy);
    const R fx = floor(x);
    const R fy = floor(y);
    cubic_coefficients(x - fx, cx[i]);
    cubic_coefficients(y - fy, cy[i]);
    for (int k = 0; k < 4; ++k) {
      const R d = constant<T>(static_cast<double>(k - 1));
      const int64_t ix = to_index<T>(ax.pad(fx + d).v);
      const int64_t iy = to_index<T>(ay.pad(fy + d).v);
      col[i][k] = ix >= 0 && ix < p.in_w ? ix * p.is_w : -1;
      row[i][k] = iy >= 0 && iy < p.in_h ? iy * p.is_h : -1;
    }
  }
  const int64_t plane = p.out_h * p.out_w;
  for (int64_t c = 0; c < p.channels; ++c) {
    const T* src = r.image + c * p.is_c;
    T* dst = r.out + c * plane;
    for (int64_t i = 0; i < r.count; ++i) {
      R across[4];
      for (int k = 0; k < 4; ++k) {
        R v[4];
        for (int j = 0; j < 4; ++j) {
          const bool inside = row[i][k] >= 0 && col[i][j] >= 0;
          v[j] = R{inside ? static_cast<Acc>(src[row[i][k] + col[i][j]]) : Acc(0)};
        }
        across[k] = cx[i][0] * v[0] + cx[i][1] * v[1] + cx[i][2] * v[2] + cx[i][3] * v[3];
      }
      const R sum = cy[i][0] * across[0] + cy[i][1] * across[1] + cy[i][2] * across[2] + cy[i][3] * across[3];
      dst[i] = T(sum.v);
    }
  }
}

// Output rows [begin, end) of the N * Ho rows, in runs of kBlock pixels.
template <typename T>
void sample_rows(const Plan& p, const Axis<T>& ax, const Axis<T>& ay, const T* input, const T* grid, T* out,
                 int64_t begin, int64_t end) {
  const int64_t plane = p.out_h * p.out_w;
  for (int64_t index = begin; index < end; ++index) {
    const int64_t n = index / p.out_h;
    const int64_t oh = index % p.out_h;
    for (int64_t ow = 0; ow < p.out_w; ow += kBlock) {
      const Run<T> r{grid + n * p.gs_n + oh * p.gs_h + ow * p.gs_w, input + n * p.is_n,
                     out + n * p.channels * plane + oh * p.out_w + ow, p.out_w - ow < kBlock ? p.out_w - ow : kBlock};
      if (p.interpolation == Interpolation::kNearest) {
        nearest_run(p, ax, ay, r);
      } else if (p.interpolation == Interpolation::kBilinear) {
        bilinear_run(p, ax, ay, r);
      } else {
        bicubic_run(p, ax, ay, r);
      }
    }
  }
}

Error read_mode(KernelContext& ctx, int64_t value, const char* name, const char* choices) {
  PARE_CHECK_OR_RETURN(ctx, value >= 0 && value <= 2, Error::InvalidArgument, "argument '%s' must be %s, got %lld",
                       name, choices, static_cast<long long>(value));
  return Error::Ok;
}

}  // namespace

// aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)
//     -> Tensor
Error aten_grid_sampler_2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 5, 5, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& grid = args.tensor(1, "grid");
  const int64_t interpolation = args.int64(2, "interpolation_mode");
  const int64_t padding = args.int64(3, "padding_mode");
  const bool align_corners = args.boolean(4, "align_corners");
  PARE_TRY(args.status());
  PARE_TRY(read_mode(ctx, interpolation, "interpolation_mode", "0 (bilinear), 1 (nearest) or 2 (bicubic)"));
  PARE_TRY(read_mode(ctx, padding, "padding_mode", "0 (zeros), 1 (border) or 2 (reflection)"));
  PARE_CHECK_OR_RETURN(ctx, input.dim == 4 && grid.dim == 4, Error::InvalidShape,
                       "expected 4-d 'input' (N, C, H, W) and 4-d 'grid' (N, H_out, W_out, 2), got sizes %s and %s",
                       sizes_to_string(input.size_span()).text, sizes_to_string(grid.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, input.sizes[0] == grid.sizes[0], Error::InvalidShape,
                       "argument 'grid' of sizes %s must have the batch size of 'input' of sizes %s",
                       sizes_to_string(grid.size_span()).text, sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, grid.sizes[3] == 2, Error::InvalidShape,
                       "argument 'grid' of sizes %s must have size 2 (x, y) in its last dim",
                       sizes_to_string(grid.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, input.sizes[2] > 0 && input.sizes[3] > 0, Error::InvalidShape,
                       "argument 'input' of sizes %s must have non-empty height and width",
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, grid.dtype == input.dtype, Error::UnsupportedDtype,
                       "argument 'grid' has dtype %s but 'input' is %s; they must match", to_string(grid.dtype),
                       to_string(input.dtype));
  const Plan plan{static_cast<Interpolation>(interpolation),
                  input.sizes[0],
                  input.sizes[1],
                  input.sizes[2],
                  input.sizes[3],
                  grid.sizes[1],
                  grid.sizes[2],
                  input.strides[0],
                  input.strides[1],
                  input.strides[2],
                  input.strides[3],
                  grid.strides[0],
                  grid.strides[1],
                  grid.strides[2],
                  grid.strides[3]};
  const int64_t sizes[] = {plan.batch, plan.channels, plan.out_h, plan.out_w};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, IntArrayRef(sizes, 4)));
  const Padding pad = static_cast<Padding>(padding);
  return PARE_DISPATCH(grid_sampler_2d_kernel, ctx, input.dtype, T, {
    if (out->numel() == 0) return Error::Ok;
    const Axis<T> ax(plan.in_w, pad, align_corners);
    const Axis<T> ay(plan.in_h, pad, align_corners);
    const int64_t rows = plan.batch * plan.out_h;
    const int64_t taps = plan.interpolation == Interpolation::kBicubic ? 16 : 4;
    const uint32_t chunks = ctx.chunks_for(rows, 1, static_cast<int64_t>(out->numel()) * taps);
    const T* in = input.data_as<T>();
    const T* g = grid.data_as<T>();
    T* o = out->data_as<T>();
    ctx.parallel(chunks, rows, 1,
                 [&](uint32_t, int64_t begin, int64_t end) { sample_rows<T>(plan, ax, ay, in, g, o, begin, end); });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
