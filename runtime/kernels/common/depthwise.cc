// The float depthwise fast path (see depthwise.h).

#include "runtime/kernels/common/depthwise.h"

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
void plane(const float* padded, int64_t padded_w, const float* PARE_RESTRICT wk, int64_t k, float b, float* out,
           int64_t out_h, int64_t out_w) {
  using simd::kLanes;
  using simd::vec;
  const int64_t taps = K > 0 ? K : k;
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* top = padded + oy * S * padded_w;
    float* PARE_RESTRICT o = out + oy * out_w;
    for (int64_t ox = 0; ox < out_w; ox += kLanes) {
      vec acc = b - vec{};  // b in every lane (b - 0 keeps a -0.0 bias, as the generic loop does)
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

using PlaneFn = void (*)(const float*, int64_t, const float*, int64_t, float, float*, int64_t, int64_t);

PlaneFn plane_fn(int64_t k, int64_t stride) {
  if (stride == 1) return k == 3 ? plane<3, 1> : plane<0, 1>;
  return k == 3 ? plane<3, 2> : plane<0, 2>;
}

}  // namespace

Error run_float(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias,
                int64_t bias_stride, float* y) {
  const Padded shape = padded_shape(g);
  const size_t padded_floats = static_cast<size_t>(shape.width * shape.height);
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(padded_floats * sizeof(float)));
  float* padded = static_cast<float*>(memory);
  for (size_t i = 0; i < padded_floats; ++i) padded[i] = 0.0f;  // borders stay zero; interiors are overwritten
  const PlaneFn fn = plane_fn(g.kernel, g.stride);
  const int64_t multiplier = g.out_channels / g.in_channels;
  const int64_t taps = g.kernel * g.kernel;
  const int64_t plane_in = g.height * g.width;
  const int64_t plane_out = g.out_h * g.out_w;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      if (oc % multiplier == 0) {  // a new input channel
        const float* src = x + (n * g.in_channels + oc / multiplier) * plane_in;
        for (int64_t iy = 0; iy < g.height; ++iy) {
          __builtin_memcpy(padded + (iy + g.pad_h) * shape.width + g.pad_w, src + iy * g.width,
                           static_cast<size_t>(g.width) * sizeof(float));
        }
      }
      fn(padded, shape.width, w + oc * taps, g.kernel, bias != nullptr ? bias[oc * bias_stride] : 0.0f,
         y + (n * g.out_channels + oc) * plane_out, g.out_h, g.out_w);
    }
  }
  return Error::Ok;
}

}  // namespace depthwise
}  // namespace pare
