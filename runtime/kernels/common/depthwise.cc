// The float depthwise fast path (see depthwise.h).

#include "runtime/kernels/common/depthwise.h"

#include "runtime/registry/dispatch.h"
#include "runtime/kernels/common/simd.h"

namespace pare {
namespace depthwise {
namespace {

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The zero-bordered plane: at least the padded input, and wide and tall
// enough for every tap of every output vector (tails included).
struct Padded {
  int64_t width;   // >= stride * round_up(out_w, kLanes) + K - 1
  int64_t height;  // >= (out_h - 1) * stride + K
};

Padded padded_shape(const Geometry& g) {
  const int64_t vec_w = round_up(g.out_w, simd::kLanes);
  int64_t width = g.width + 2 * g.pad_w;
  if (width < g.stride * vec_w + g.kernel - 1) width = g.stride * vec_w + g.kernel - 1;
  int64_t height = g.height + 2 * g.pad_h;
  if (height < (g.out_h - 1) * g.stride + g.kernel) height = (g.out_h - 1) * g.stride + g.kernel;
  return {width, height};
}

// K > 0: a K x K kernel unrolled at compile time; K == 0: the size `k` read
// at run time.
template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* PARE_RESTRICT wk, int64_t k, float b, float lo, float hi,
           float* out, int64_t out_h, int64_t out_w) {
  using simd::kLanes;
  using simd::vec;
  const int64_t taps = K > 0 ? K : k;
  const vec lov = simd::splat(lo);
  const vec hiv = simd::splat(hi);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* top = padded + oy * S * padded_w;
    float* PARE_RESTRICT o = out + oy * out_w;
    for (int64_t ox = 0; ox < out_w; ox += kLanes) {
      vec acc = simd::splat(b);  // a -0.0 bias stays -0.0, as in the generic loop
      for (int64_t ky = 0; ky < taps; ++ky) {
        const float* r = top + ky * padded_w + ox * S;
        for (int64_t kx = 0; kx < taps; ++kx) {
          if constexpr (S == 1) {
            acc += wk[ky * taps + kx] * simd::loadv(r + kx);
          } else {
            acc += wk[ky * taps + kx] * simd::load_even(r + kx);
          }
        }
      }
      acc = simd::clamp(acc, lov, hiv);
      if (ox + kLanes <= out_w) {
        simd::storev(o + ox, acc);
      } else {
        float tail[kLanes];
        simd::storev(tail, acc);
        for (int64_t i = 0; i < out_w - ox; ++i) o[ox + i] = tail[i];
      }
    }
  }
}

using PlaneFn = void (*)(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);

PlaneFn plane_fn(int64_t k, int64_t stride) {
  if (stride == 1) return k == 3 ? plane<3, 1> : plane<0, 1>;
  return k == 3 ? plane<3, 2> : plane<0, 2>;
}

// Tiny output planes (a network's last stages: 1x1 and 2x2 outputs) leave
// most of a row vector empty, and the per-plane overhead dominates. There
// (a fast path: tag depthwise_tiny_kernel) the vectors run across kLanes
// channels instead (one input channel per output channel): each block's
// input pixels and weights are transposed to [pixel][lane] and [tap][lane]
// in scratch, and every output pixel sums its in-bounds taps in the generic
// loop's order (bias, then ky, kx); padding taps are skipped, as the
// generic loop does.
constexpr int64_t kTinyOutPlane = 4;
constexpr int64_t kTinyInPlane = 64;

PARE_UNUSED bool tiny(const Geometry& g) {
  return g.out_channels == g.in_channels && g.out_h * g.out_w <= kTinyOutPlane && g.height * g.width <= kTinyInPlane;
}

PARE_UNUSED size_t tiny_scratch_floats(const Geometry& g) {
  return static_cast<size_t>((g.height * g.width + g.kernel * g.kernel) * simd::kLanes);
}

// Channels [c0, c0 + lanes) of one image (x and y at the image's start).
PARE_UNUSED void tiny_block(const Geometry& g, const float* x, const float* w, const float* bias, int64_t bias_stride,
                            float lo, float hi, float* y, int64_t c0, int64_t lanes, float* scratch) {
  using simd::kLanes;
  using simd::vec;
  const int64_t plane_in = g.height * g.width;
  const int64_t plane_out = g.out_h * g.out_w;
  const int64_t taps = g.kernel * g.kernel;
  float* in = scratch;                      // [plane_in][kLanes]
  float* wt = scratch + plane_in * kLanes;  // [taps][kLanes]
  float b[kLanes] = {};
  for (int64_t l = 0; l < kLanes; ++l) {
    if (l >= lanes) {  // past the last channel: zeros, never stored
      for (int64_t i = 0; i < plane_in; ++i) in[i * kLanes + l] = 0.0f;
      for (int64_t t = 0; t < taps; ++t) wt[t * kLanes + l] = 0.0f;
      continue;
    }
    const float* src = x + (c0 + l) * plane_in;
    for (int64_t i = 0; i < plane_in; ++i) in[i * kLanes + l] = src[i];
    const float* wk = w + (c0 + l) * taps;
    for (int64_t t = 0; t < taps; ++t) wt[t * kLanes + l] = wk[t];
    if (bias != nullptr) b[l] = bias[(c0 + l) * bias_stride];
  }
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      vec acc = simd::loadv(b);
      for (int64_t ky = 0; ky < g.kernel; ++ky) {
        const int64_t iy = oy * g.stride - g.pad_h + ky;
        if (iy < 0 || iy >= g.height) continue;
        for (int64_t kx = 0; kx < g.kernel; ++kx) {
          const int64_t ix = ox * g.stride - g.pad_w + kx;
          if (ix < 0 || ix >= g.width) continue;
          acc += simd::loadv(wt + (ky * g.kernel + kx) * kLanes) * simd::loadv(in + (iy * g.width + ix) * kLanes);
        }
      }
      float out[kLanes];
      simd::storev(out, simd::clamp(acc, simd::splat(lo), simd::splat(hi)));
      for (int64_t l = 0; l < lanes; ++l) y[(c0 + l) * plane_out + oy * g.out_w + ox] = out[l];
    }
  }
}

// Output rows [begin, end) of run_float_nhwc (a row: one image's output
// row, batch * out_h of them).
void nhwc_rows(const Geometry& g, const float* x, const float* PARE_RESTRICT w, const float* bias, float lo, float hi,
               float* y, int64_t begin, int64_t end) {
  using simd::kLanes;
  using simd::vec;
  const int64_t c = g.in_channels;
  const int64_t k = g.kernel;
  const vec lov = simd::splat(lo);
  const vec hiv = simd::splat(hi);
  for (int64_t row = begin; row < end; ++row) {
    const int64_t n = row / g.out_h;
    const int64_t oy = row % g.out_h;
    const float* image = x + n * g.height * g.width * c;
    // The taps that fall inside the image (padding taps are skipped).
    const int64_t top = oy * g.stride - g.pad_h;
    const int64_t ky0 = top < 0 ? -top : 0;
    const int64_t ky1 = g.height - top < k ? g.height - top : k;
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      const int64_t left = ox * g.stride - g.pad_w;
      const int64_t kx0 = left < 0 ? -left : 0;
      const int64_t kx1 = g.width - left < k ? g.width - left : k;
      const int64_t origin = (top * g.width + left) * c;  // tap (0, 0)'s offset, maybe outside the image
      float* PARE_RESTRICT out = y + (row * g.out_w + ox) * c;
      int64_t ch = 0;
      for (; ch + kLanes <= c; ch += kLanes) {
        vec acc = bias != nullptr ? simd::loadv(bias + ch) : vec{};
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            acc +=
                simd::loadv(w + (ky * k + kx) * c + ch) * simd::loadv(image + (origin + (ky * g.width + kx) * c + ch));
          }
        }
        simd::storev(out + ch, simd::clamp(acc, lov, hiv));
      }
      for (; ch < c; ++ch) {  // the channels past the last whole vector
        float acc = bias != nullptr ? bias[ch] : 0.0f;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          for (int64_t kx = kx0; kx < kx1; ++kx)
            acc += w[(ky * k + kx) * c + ch] * image[origin + (ky * g.width + kx) * c + ch];
        }
        out[ch] = simd::clamp(acc, lo, hi);
      }
    }
  }
}

}  // namespace

Error run_float_nhwc(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias, float lo,
                     float hi, float* y) {
  const int64_t rows = g.batch * g.out_h;
  const int64_t taps = g.kernel * g.kernel;
  const uint32_t chunks = ctx.chunks_for(rows, 1, rows * g.out_w * g.out_channels * taps);
  ctx.parallel(chunks, rows, 1,
               [&](uint32_t, int64_t begin, int64_t end) { nhwc_rows(g, x, w, bias, lo, hi, y, begin, end); });
  return Error::Ok;
}

Error run_float(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias,
                int64_t bias_stride, float lo, float hi, float* y) {
  if constexpr (fast_path_compiled<tags::depthwise_tiny_kernel, float>()) {
    if (tiny(g) && fast_path_selected<tags::depthwise_tiny_kernel, float>()) {
      return run_fast_path<tags::depthwise_tiny_kernel, float>(ctx, [&]() -> Error {
        PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(tiny_scratch_floats(g) * sizeof(float)));
        for (int64_t n = 0; n < g.batch; ++n) {
          const float* image = x + n * g.in_channels * g.height * g.width;
          float* out = y + n * g.out_channels * g.out_h * g.out_w;
          for (int64_t c0 = 0; c0 < g.out_channels; c0 += simd::kLanes) {
            const int64_t lanes = g.out_channels - c0 < simd::kLanes ? g.out_channels - c0 : simd::kLanes;
            tiny_block(g, image, w, bias, bias_stride, lo, hi, out, c0, lanes, static_cast<float*>(memory));
          }
        }
        return Error::Ok;
      });
    }
  }
  const Padded shape = padded_shape(g);
  // One padded plane per chunk (64-byte aligned each).
  const size_t padded_floats = static_cast<size_t>((shape.width * shape.height + 15) / 16 * 16);
  const PlaneFn fn = plane_fn(g.kernel, g.stride);
  const int64_t multiplier = g.out_channels / g.in_channels;
  const int64_t taps = g.kernel * g.kernel;
  const int64_t plane_in = g.height * g.width;
  const int64_t plane_out = g.out_h * g.out_w;
  // Output planes split over the method's threads, each chunk starting at
  // a new input channel (whole multiplier groups).
  const int64_t planes = g.batch * g.out_channels;
  const uint32_t chunks = ctx.chunks_for(planes, multiplier, planes * plane_out * taps);
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(padded_floats * chunks * sizeof(float)));
  float* scratch = static_cast<float*>(memory);
  for (size_t i = 0; i < padded_floats * chunks; ++i) scratch[i] = 0.0f;  // borders stay zero
  ctx.parallel(chunks, planes, multiplier, [&](uint32_t chunk, int64_t begin, int64_t end) {
    float* padded = scratch + chunk * padded_floats;
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / g.out_channels;
      const int64_t oc = plane % g.out_channels;
      if (oc % multiplier == 0) {  // a new input channel
        const float* src = x + (n * g.in_channels + oc / multiplier) * plane_in;
        for (int64_t iy = 0; iy < g.height; ++iy) {
          __builtin_memcpy(padded + (iy + g.pad_h) * shape.width + g.pad_w, src + iy * g.width,
                           static_cast<size_t>(g.width) * sizeof(float));
        }
      }
      fn(padded, shape.width, w + oc * taps, g.kernel, bias != nullptr ? bias[oc * bias_stride] : 0.0f, lo, hi,
         y + plane * plane_out, g.out_h, g.out_w);
    }
  });
  return Error::Ok;
}

}  // namespace depthwise
}  // namespace pare
