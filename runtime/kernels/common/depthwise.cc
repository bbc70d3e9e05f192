// The float depthwise fast path (see depthwise.h).

#include "runtime/kernels/common/depthwise.h"

#include "runtime/core/cpu.h"
#include "runtime/registry/dispatch.h"
#include "runtime/kernels/common/simd.h"

// This build's copy of the vector loops (depthwise_kernels.inc).
#include "runtime/kernels/common/depthwise_kernels.inc"

namespace pare {
namespace depthwise {
namespace {

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The zero-bordered plane: at least the padded input, and wide and tall
// enough for every tap of every output vector (tails included). At stride
// 2 each row is stored deinterleaved, its even columns then its odd ones,
// `width / 2` floats each, so that a tap of kLanes outputs is one load
// rather than two and a shuffle (MobileNetV2's stride-2 layers ran at a
// third of stride 1's rate); for the AVX-512 loops, which pick the even
// and odd columns out of two vectors themselves (Loop), as it is.
struct Padded {
  int64_t width;   // >= stride * round_up(out_w, kWidestLanes) + K - 1; even at stride 2
  int64_t height;  // >= (out_h - 1) * stride + K
};

Padded padded_shape(const Geometry& g) {
  const int64_t vec_w = round_up(g.out_w, kWidestLanes);
  int64_t width = g.width + 2 * g.pad_w;
  if (g.stride == 2) {
    int64_t half = (width + 1) / 2;
    if (half < vec_w + (g.kernel - 1) / 2) half = vec_w + (g.kernel - 1) / 2;
    width = 2 * half;
  } else if (width < vec_w + g.kernel - 1) {
    width = vec_w + g.kernel - 1;
  }
  int64_t height = g.height + 2 * g.pad_h;
  if (height < (g.out_h - 1) * g.stride + g.kernel) height = (g.out_h - 1) * g.stride + g.kernel;
  return {width, height};
}

// Input row `src` (width floats) into a padded row (shape.width floats),
// from column pad_w on: as it is (stride 1), or deinterleaved (stride 2; see
// Padded).
void copy_row(const float* PARE_RESTRICT src, int64_t width, int64_t pad_w, int64_t stride, float* PARE_RESTRICT row,
              int64_t padded_w) {
  if (stride == 1) {
    __builtin_memcpy(row + pad_w, src, static_cast<size_t>(width) * sizeof(float));
    return;
  }
  // Column x = ix + pad_w goes to row[(x odd) * half + x / 2]: src's even
  // elements to one half, its odd ones to the other, each from its offset.
  const int64_t half = padded_w / 2;
  float* evens = row + (pad_w & 1) * half + pad_w / 2;             // src[0], src[2], ...
  float* odds = row + ((pad_w + 1) & 1) * half + (pad_w + 1) / 2;  // src[1], src[3], ...
  using simd::kLanes;
  int64_t j = 0;
  for (; 2 * j + 2 * kLanes <= width; j += kLanes) {
    const simd::vec a = simd::loadv(src + 2 * j);
    const simd::vec b = simd::loadv(src + 2 * j + kLanes);
    simd::storev(evens + j, simd::even_lanes(a, b));
    simd::storev(odds + j, simd::odd_lanes(a, b));
  }
  for (; 2 * j < width; ++j) {
    evens[j] = src[2 * j];
    if (2 * j + 1 < width) odds[j] = src[2 * j + 1];
  }
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

// A variant's loop and, at --//runtime:x86_64_isa=auto, how it reads its
// input rows at stride 2: deinterleaved (see Padded), or plain for the
// AVX-512 copy, which picks the even and odd columns out of two vectors
// itself (depthwise_x86_64_v4.cc). One choice for both, so that a cap set
// while a layer runs cannot split them. Elsewhere every copy reads them
// deinterleaved, and a Loop is the loop alone (the code it was before the
// AVX-512 copy).
#if defined(PARE_X86_64_DISPATCH)
struct Loop {
  PlaneFn fn;
  bool plain_rows;
};
PlaneFn loop_fn(const Loop& loop) { return loop.fn; }
#else
using Loop = PlaneFn;
PlaneFn loop_fn(Loop loop) { return loop; }
#endif

// The stride copy_row lays the rows of `shape` out for: 1 for a loop that
// reads plain rows (Loop). The plane's shape is named first so that run_float's
// threads' closure keeps its layout in builds without the AVX-512 copy.
#if defined(PARE_X86_64_DISPATCH)
int64_t row_layout(const Padded&, const Loop& loop, int64_t stride) { return loop.plain_rows ? 1 : stride; }
#else
int64_t row_layout(const Padded&, Loop, int64_t stride) { return stride; }
#endif

// The vector loops of the ISA the kernels run (gemm.cc's tile_kernel()):
// at --//runtime:x86_64_isa=auto the AVX-512 copy on a CPU with AVX-512,
// the x86-64-v3 copy on one with AVX2 and FMA, elsewhere the build's own.
template <int K, int S>
Loop plane_kernel() {
#if defined(PARE_X86_64_DISPATCH)
  const cpu::Isa isa = cpu::kernel_isa();
  if (isa >= cpu::Isa::x86_64_v4) return {x86_64_v4::plane<K, S>, true};
  if (isa >= cpu::Isa::x86_64_v3) return {x86_64_v3::plane<K, S>, false};
  return {PARE_SIMD_ISA::plane<K, S>, false};
#else
  return PARE_SIMD_ISA::plane<K, S>;
#endif
}

// The (K, stride) variant's loop under its tag (the tracing build records
// it here), or null in a runtime that does not select it: a link-time
// constant, so an unselected variant's loops are never referenced and the
// link drops them.
template <typename Tag, int K, int S>
Loop variant(KernelContext& ctx) {
  Loop loop = {};
  if (fast_path_selected<Tag, float>()) {
    (void)run_fast_path<Tag, float>(ctx, [&]() -> Error {
      loop = plane_kernel<K, S>();
      return Error::Ok;
    });
  }
  return loop;
}

// A bit per (K, stride) variant its runtime selects: 3x3 at stride 1, 3x3
// at 2, 5x5 and 7x7 at 1, at 2. Each tag read on its own, with no branch
// between them, so that every read stays a constant the link folds (one
// load of the table at a computed index would keep the whole table).
unsigned selected_variants() {
  return unsigned{fast_path_selected<tags::depthwise_3x3_s1_kernel, float>()} |
         unsigned{fast_path_selected<tags::depthwise_3x3_s2_kernel, float>()} << 1 |
         unsigned{fast_path_selected<tags::depthwise_5x5_7x7_s1_kernel, float>()} << 2 |
         unsigned{fast_path_selected<tags::depthwise_5x5_7x7_s2_kernel, float>()} << 3;
}

unsigned variant_bit(int64_t k, int64_t stride) { return (k == 3 ? 0u : 2u) + (stride == 1 ? 0u : 1u); }

// The loop of a K x K kernel at `stride` (its variant selected).
Loop plane_for(KernelContext& ctx, int64_t k, int64_t stride) {
  switch (variant_bit(k, stride)) {
    case 0: return variant<tags::depthwise_3x3_s1_kernel, 3, 1>(ctx);
    case 1: return variant<tags::depthwise_3x3_s2_kernel, 3, 2>(ctx);
    case 2: return variant<tags::depthwise_5x5_7x7_s1_kernel, 0, 1>(ctx);
    default: return variant<tags::depthwise_5x5_7x7_s2_kernel, 0, 2>(ctx);
  }
}

NhwcRowsFn nhwc_rows_kernel() {
#if defined(PARE_X86_64_DISPATCH)
  if (cpu::kernel_isa() >= cpu::Isa::x86_64_v3) return x86_64_v3::nhwc_rows;
#endif
  return PARE_SIMD_ISA::nhwc_rows;
}

}  // namespace

bool selected(const Geometry& g) {
  if constexpr (fast_path_compiled<tags::depthwise_tiny_kernel, float>()) {
    if (tiny(g) && fast_path_selected<tags::depthwise_tiny_kernel, float>()) return true;
  }
  // Every variant selected (a MobileNetV3 or EfficientNet runtime): true,
  // as a constant the app's link folds into the callers, so their general
  // path for a missing loop is dropped.
  if (selected_variants() == 0xFu) return true;
  return (selected_variants() >> variant_bit(g.kernel, g.stride)) & 1u;
}

Error run_float_nhwc(KernelContext& ctx, const Geometry& g, const float* x, const float* w, const float* bias, float lo,
                     float hi, float* y) {
  const int64_t rows = g.batch * g.out_h;
  const int64_t taps = g.kernel * g.kernel;
  const uint32_t chunks = ctx.chunks_for(rows, 1, rows * g.out_w * g.out_channels * taps);
  ctx.parallel(chunks, rows, 1, [&, rows_fn = nhwc_rows_kernel()](uint32_t, int64_t begin, int64_t end) {
    rows_fn(g, x, w, bias, lo, hi, y, begin, end);
  });
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
  const Loop loop = plane_for(ctx, g.kernel, g.stride);  // not null: the caller checked selected(g)
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
          copy_row(src + iy * g.width, g.width, g.pad_w, row_layout(shape, loop, g.stride),
                   padded + (iy + g.pad_h) * shape.width, shape.width);
        }
      }
      loop_fn(loop)(padded, shape.width, w + oc * taps, g.kernel, bias != nullptr ? bias[oc * bias_stride] : 0.0f, lo,
                    hi, y + plane * plane_out, g.out_h, g.out_w);
    }
  });
  return Error::Ok;
}

}  // namespace depthwise
}  // namespace pare
