// 2-d pooling: max (with indices), average and adaptive average, over
// 3-d (C, H, W) or 4-d (N, C, H, W) inputs.
//
// The input is made contiguous and processed one H x W plane at a time.
// Each output's window is clamped to the input once (PyTorch's index
// arithmetic, so windows, divisors and tie-breaking match exactly), and the
// loops over the window then run without per-element bounds tests.
//
// Float max and average pooling run simd::kLanes outputs of a row at a time
// wherever their windows lie inside the row (stride 1 or 2 along the row: a
// load, or two loads keeping the even lanes): each lane takes the same taps
// in the same order as the scalar loop, so values, indices, NaN and ties
// come out exactly as in the scalar loop, which runs the columns at the
// row's ends. nn.MaxPool2d(2) splits each row pair's columns into the
// windows' left and right taps instead.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/simd.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

struct Planes {
  int64_t count;  // N * C
  int64_t height, width;
  bool batched;
  int64_t leading[2];  // N, C (or C alone)
};

// Checks a 3-d or 4-d pooling input with non-empty non-batch dims.
Error read_planes(KernelContext& ctx, const Tensor& self, Planes* p) {
  PARE_CHECK_OR_RETURN(ctx, self.dim == 3 || self.dim == 4, Error::InvalidShape,
                       "argument 'self' must be 3-d (C, H, W) or 4-d (N, C, H, W), got sizes %s",
                       sizes_to_string(self.size_span()).text);
  p->batched = self.dim == 4;
  const size_t c = p->batched ? 1 : 0;
  for (size_t d = c; d < self.dim; ++d) {
    PARE_CHECK_OR_RETURN(ctx, self.sizes[d] != 0, Error::InvalidShape,
                         "argument 'self' of sizes %s: only the batch dim may be empty",
                         sizes_to_string(self.size_span()).text);
  }
  p->leading[0] = self.sizes[0];
  p->leading[1] = p->batched ? self.sizes[1] : 0;
  p->count = p->batched ? self.sizes[0] * self.sizes[1] : self.sizes[0];
  p->height = self.sizes[c + 1];
  p->width = self.sizes[c + 2];
  return Error::Ok;
}

Result<Tensor*> allocate_pooled(KernelContext& ctx, Value& out, ScalarType dtype, const Planes& p, int64_t oh,
                                int64_t ow) {
  int64_t sizes[4] = {p.leading[0], p.leading[1], oh, ow};
  if (!p.batched) {
    sizes[1] = oh;
    sizes[2] = ow;
  }
  return ctx.allocate_output(out, dtype, IntArrayRef(sizes, p.batched ? 4 : 3));
}

struct PoolParams {
  int64_t kernel[2];
  int64_t stride[2];
  int64_t padding[2];
  int64_t dilation[2];
  int64_t out[2];
};

// Reads kernel_size, stride (empty = kernel_size), padding and dilation
// (nullable: avg_pool2d has none) and computes the output size.
Error read_pool_params(KernelContext& ctx, KernelArgs& args, const Planes& planes, bool with_dilation,
                       size_t padding_index, bool ceil_mode, PoolParams* p) {
  const IntArrayRef kernel = args.int_list(1, "kernel_size");
  const int64_t one[] = {1};
  const int64_t zero[] = {0};
  const IntArrayRef stride = args.has(2) ? args.int_list(2, "stride") : IntArrayRef();
  const IntArrayRef padding = args.has(padding_index) ? args.int_list(padding_index, "padding") : IntArrayRef(zero, 1);
  const IntArrayRef dilation =
      with_dilation && args.has(padding_index + 1) ? args.int_list(padding_index + 1, "dilation") : IntArrayRef(one, 1);
  PARE_TRY(args.status());
  PARE_TRY(nn::read_spatial(ctx, kernel, 2, "kernel_size", 1, nullptr, p->kernel));
  PARE_TRY(nn::read_spatial(ctx, stride, 2, "stride", 1, p->kernel, p->stride));
  PARE_TRY(nn::read_spatial(ctx, padding, 2, "padding", 0, nullptr, p->padding));
  PARE_TRY(nn::read_spatial(ctx, dilation, 2, "dilation", 1, nullptr, p->dilation));
  const int64_t in[2] = {planes.height, planes.width};
  for (size_t i = 0; i < 2; ++i) {
    PARE_CHECK_OR_RETURN(ctx, p->padding[i] <= p->kernel[i] / 2, Error::InvalidArgument,
                         "argument 'padding' (%lld) must be at most half of kernel_size (%lld)",
                         static_cast<long long>(p->padding[i]), static_cast<long long>(p->kernel[i]));
    PARE_CHECK_OR_RETURN(
        ctx,
        nn::window_output_size(in[i], p->kernel[i], p->stride[i], p->padding[i], p->dilation[i], ceil_mode, &p->out[i]),
        Error::InvalidShape,
        "input of %lld x %lld is too small for kernel_size (%lld, %lld) with padding (%lld, %lld) "
        "and dilation (%lld, %lld): the output would be empty",
        static_cast<long long>(planes.height), static_cast<long long>(planes.width),
        static_cast<long long>(p->kernel[0]), static_cast<long long>(p->kernel[1]),
        static_cast<long long>(p->padding[0]), static_cast<long long>(p->padding[1]),
        static_cast<long long>(p->dilation[0]), static_cast<long long>(p->dilation[1]));
  }
  return Error::Ok;
}

// The smallest value of T's compute type: -inf for floating types.
template <typename Acc>
constexpr Acc lowest_value() {
  if constexpr (is_same_v<Acc, float> || is_same_v<Acc, double>) {
    return -Acc(__builtin_inf());
  } else if constexpr (is_same_v<Acc, uint8_t>) {
    return 0;
  } else {
    // Two's complement minimum of a signed integer type.
    return static_cast<Acc>(-static_cast<Acc>((static_cast<uint64_t>(1) << (sizeof(Acc) * 8 - 1)) - 1) - 1);
  }
}

// First tap >= 0 of a window starting at `start` with step `step`.
PARE_UNUSED PARE_ALWAYS_INLINE int64_t first_inside(int64_t start, int64_t step) {
  return start >= 0 ? start : start + ((-start + step - 1) / step) * step;
}

// The running max of a window, tap by tap in the window's order: NaN wins
// (and the last NaN's index), as in PyTorch. Selects, not a branch: on real
// activations the comparison is a coin flip.
template <typename Acc>
PARE_ALWAYS_INLINE void take_max(Acc v, int64_t index, Acc* max, int64_t* best) {
  const bool take = v > *max || v != v;
  *max = take ? v : *max;
  *best = take ? index : *best;
}

// nn.MaxPool2d(2), the common case (a fast path: tag max_pool2d_2x2_kernel):
// 2x2 windows at stride 2, no padding or dilation, every window inside the
// plane; the same taps in the same order as the general loop, unrolled.
template <typename T>
void max_pool_plane_2x2(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                        const Planes& planes, const PoolParams& p) {
  using Acc = opmath_t<T>;
  const int64_t width = planes.width;
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const int64_t top = 2 * oh * width;
    for (int64_t ow = 0; ow < p.out[1]; ++ow) {
      const int64_t i = top + 2 * ow;
      Acc max = Acc(in[i]);
      int64_t best = i;
      take_max(Acc(in[i + 1]), i + 1, &max, &best);
      take_max(Acc(in[i + width]), i + width, &max, &best);
      take_max(Acc(in[i + width + 1]), i + width + 1, &max, &best);
      out[oh * p.out[1] + ow] = T(max);
      indices[oh * p.out[1] + ow] = best;
    }
  }
}

typedef int32_t index_vec __attribute__((vector_size(simd::kLanes * sizeof(int32_t))));

// Widens kLanes (or 4) 32-bit indices to int64 and stores them.
template <typename I>
PARE_ALWAYS_INLINE void store_indices(int64_t* out, I indices) {
  typedef int64_t Wide __attribute__((vector_size(sizeof(I) * 2)));
  const Wide wide = __builtin_convertvector(indices, Wide);
  __builtin_memcpy(out, &wide, sizeof(wide));
}

PARE_ALWAYS_INLINE index_vec lane_steps(int64_t step) {
  index_vec steps;
  for (int l = 0; l < simd::kLanes; ++l) steps[l] = static_cast<int32_t>(l * step);
  return steps;
}

// One tap of a vector of windows at input indices `at`: take_max per lane.
template <typename V, typename I>
PARE_ALWAYS_INLINE void take_max_lanes(V v, I at, V* max, I* best) {
  const I take = (v > *max) | (v != v);
  *max = take ? v : *max;
  *best = take ? at : *best;
}

PARE_UNUSED bool is_plain_2x2(const Planes& planes, const PoolParams& p) {
  for (int d = 0; d < 2; ++d) {
    if (p.kernel[d] != 2 || p.stride[d] != 2 || p.padding[d] != 0 || p.dilation[d] != 1) return false;
  }
  return 2 * p.out[0] <= planes.height && 2 * p.out[1] <= planes.width;  // ceil_mode may add a partial window
}

// The rows of one output row's windows: [ih0, ih1) in steps of the
// dilation, clamped to the plane.
struct WindowRows {
  int64_t first, end;
};

PARE_ALWAYS_INLINE WindowRows max_window_rows(int64_t oh, const Planes& planes, const PoolParams& p) {
  const int64_t start_h = oh * p.stride[0] - p.padding[0];
  return {first_inside(start_h, p.dilation[0]), min_of(start_h + (p.kernel[0] - 1) * p.dilation[0] + 1, planes.height)};
}

// The output at column ow of a row whose windows span `rows`.
template <typename T>
PARE_ALWAYS_INLINE void max_pool_one(const T* PARE_RESTRICT in, WindowRows rows, int64_t ow, const Planes& planes,
                                     const PoolParams& p, T* PARE_RESTRICT out, int64_t* PARE_RESTRICT index) {
  using Acc = opmath_t<T>;
  const int64_t width = planes.width;
  const int64_t start_w = ow * p.stride[1] - p.padding[1];
  const int64_t iw1 = min_of(start_w + (p.kernel[1] - 1) * p.dilation[1] + 1, width);
  const int64_t iw0 = first_inside(start_w, p.dilation[1]);
  int64_t best = rows.first * width + iw0;
  Acc max = lowest_value<Acc>();
  for (int64_t ih = rows.first; ih < rows.end; ih += p.dilation[0]) {
    const T* row = in + ih * width;
    for (int64_t iw = iw0; iw < iw1; iw += p.dilation[1]) take_max(Acc(row[iw]), ih * width + iw, &max, &best);
  }
  *out = T(max);
  *index = best;
}

template <typename T>
void max_pool_plane(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                    const Planes& planes, const PoolParams& p) {
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const WindowRows rows = max_window_rows(oh, planes, p);
    for (int64_t ow = 0; ow < p.out[1]; ++ow) {
      max_pool_one(in, rows, ow, planes, p, &out[oh * p.out[1] + ow], &indices[oh * p.out[1] + ow]);
    }
  }
}

// Calls block(first) for vectors of kL outputs covering columns [begin,
// end) and returns end, or returns begin when the range is narrower than a
// vector. The last vector overlaps the one before (the same values written
// twice) rather than leave up to kL - 1 columns to the scalar loop.
template <int64_t kL, typename Block>
PARE_ALWAYS_INLINE int64_t vector_blocks(int64_t begin, int64_t end, const Block& block) {
  if (end - begin < kL) return begin;
  int64_t ow = begin;
  for (; ow + kL <= end; ow += kL) block(ow);
  if (ow < end) block(end - kL);
  return end;
}

// The columns [begin, end) of an output row that run in vectors: every tap
// of every lane inside the row, including the odd lane a stride-2 load
// reads past the last even one. `span` is the window's width in input
// columns ((kernel - 1) * dilation + 1).
struct VectorColumns {
  int64_t begin, end;
};

PARE_ALWAYS_INLINE VectorColumns vector_columns(const Planes& planes, const PoolParams& p, int64_t span) {
  const int64_t s = p.stride[1];
  VectorColumns c{0, 0};
  if (s != 1 && s != 2) return c;
  c.begin = min_of((p.padding[1] + s - 1) / s, p.out[1]);  // first window starting at column >= 0
  // Last column ow with ow * s - padding + span - 1 + (s - 1) <= width - 1.
  const int64_t room = planes.width - span - (s - 1) + p.padding[1];
  c.end = room < 0 ? 0 : min_of(room / s + 1, p.out[1]);
  if (c.end < c.begin) c.end = c.begin;
  return c;
}

// kLanes consecutive input columns starting at `p`, or every other one.
PARE_ALWAYS_INLINE simd::vec load_columns(const float* p, int64_t stride) {
  return stride == 1 ? simd::loadv(p) : simd::load_even(p);
}

// Float planes (an overload, which calls for float take over the
// template): the scalar loop at a row's ends, kLanes outputs at a time in
// between. Indices are tracked in 32 bits (planes of fewer than 2^31
// elements; larger ones take the scalar loop) and widened on store.
PARE_UNUSED void max_pool_plane(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                                const Planes& planes, const PoolParams& p) {
  const int64_t width = planes.width;
  VectorColumns cols = vector_columns(planes, p, (p.kernel[1] - 1) * p.dilation[1] + 1);
  if (planes.height * width > INT32_MAX) cols = {0, 0};
  const index_vec lane_columns = lane_steps(p.stride[1]);
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const WindowRows rows = max_window_rows(oh, planes, p);
    float* o = out + oh * p.out[1];
    int64_t* o_index = indices + oh * p.out[1];
    int64_t ow = 0;
    for (; ow < cols.begin; ++ow) max_pool_one(in, rows, ow, planes, p, &o[ow], &o_index[ow]);
    const auto block = [&](int64_t first) {
      const int64_t start_w = first * p.stride[1] - p.padding[1];
      simd::vec max = simd::splat(-__builtin_inff());
      index_vec best = static_cast<int32_t>(rows.first * width + start_w) + lane_columns;
      for (int64_t ih = rows.first; ih < rows.end; ih += p.dilation[0]) {
        for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
          const int64_t at = ih * width + start_w + kw * p.dilation[1];
          take_max_lanes(load_columns(in + at, p.stride[1]), static_cast<int32_t>(at) + lane_columns, &max, &best);
        }
      }
      simd::storev(o + first, max);
      store_indices(o_index + first, best);
    };
    ow = vector_blocks<simd::kLanes>(ow, cols.end, block);
    for (; ow < p.out[1]; ++ow) max_pool_one(in, rows, ow, planes, p, &o[ow], &o_index[ow]);
  }
}

// Float vectors of 4 or 8 lanes (simd::vec, or half an AVX2 vector) and
// their comparison masks, which also hold 32-bit indices.
typedef float vec4 __attribute__((vector_size(4 * sizeof(float))));
template <typename V>
constexpr int lanes_of = sizeof(V) / sizeof(float);
template <typename V>
using mask_of = decltype(V{} > V{});

// Lanes kFirst, kFirst + 2, ... of the 2 * lanes floats at p.
template <typename V, int kFirst>
PARE_ALWAYS_INLINE V load_alternate(const float* p) {
  V lo, hi;
  __builtin_memcpy(&lo, p, sizeof(V));
  __builtin_memcpy(&hi, p + lanes_of<V>, sizeof(V));
  if constexpr (lanes_of<V> == 8) {
    return __builtin_shufflevector(lo, hi, kFirst, kFirst + 2, kFirst + 4, kFirst + 6, kFirst + 8, kFirst + 10,
                                   kFirst + 12, kFirst + 14);
  } else {
    return __builtin_shufflevector(lo, hi, kFirst, kFirst + 2, kFirst + 4, kFirst + 6);
  }
}

// nn.MaxPool2d(2) on float planes at least lanes_of<V> outputs wide: that
// many windows at a time, each row's 2 * lanes columns split into the
// windows' left and right taps, taps in the scalar loop's order.
template <typename V>
void max_pool_plane_2x2_vector(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                               const Planes& planes, const PoolParams& p) {
  using I = mask_of<V>;
  constexpr int kL = lanes_of<V>;
  const int64_t width = planes.width;
  I evens;
  for (int l = 0; l < kL; ++l) evens[l] = 2 * l;
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const auto block = [&](int64_t first) {
      const int64_t i = 2 * oh * width + 2 * first;
      const I at = static_cast<int32_t>(i) + evens;
      V max = load_alternate<V, 0>(in + i);
      I best = at;
      take_max_lanes(load_alternate<V, 1>(in + i), at + 1, &max, &best);
      take_max_lanes(load_alternate<V, 0>(in + i + width), at + static_cast<int32_t>(width), &max, &best);
      take_max_lanes(load_alternate<V, 1>(in + i + width), at + static_cast<int32_t>(width + 1), &max, &best);
      __builtin_memcpy(out + oh * p.out[1] + first, &max, sizeof(max));
      store_indices(indices + oh * p.out[1] + first, best);
    };
    vector_blocks<kL>(0, p.out[1], block);  // the caller checked p.out[1] >= kL
  }
}

// The float overload of max_pool_plane_2x2.
PARE_UNUSED void max_pool_plane_2x2(const float* PARE_RESTRICT in, float* PARE_RESTRICT out,
                                    int64_t* PARE_RESTRICT indices, const Planes& planes, const PoolParams& p) {
  if (planes.height * planes.width <= INT32_MAX) {
    if (p.out[1] >= simd::kLanes) return max_pool_plane_2x2_vector<simd::vec>(in, out, indices, planes, p);
    // 4 to 7 outputs wide on AVX2 (a 14 x 14 plane): half vectors. Only
    // AVX2 builds carry them; 4-lane builds already run 4 at a time.
    if constexpr (simd::kLanes == 8) {
      if (p.out[1] >= 4) return max_pool_plane_2x2_vector<vec4>(in, out, indices, planes, p);
    }
  }
  max_pool_plane(in, out, indices, planes, p);  // the general loop: no scalar 2x2 copy for float
}

// One output row's window rows for average pooling: the rows the window
// covers, padding included (for count_include_pad), and clamped to the
// plane.
struct AvgRows {
  int64_t pool_h;
  int64_t first, end;
};

PARE_ALWAYS_INLINE AvgRows avg_window_rows(int64_t oh, const Planes& planes, const PoolParams& p) {
  const int64_t ih0 = oh * p.stride[0] - p.padding[0];
  const int64_t ih1 = min_of(ih0 + p.kernel[0], planes.height + p.padding[0]);
  return {ih1 - ih0, max_of(ih0, int64_t{0}), min_of(ih1, planes.height)};
}

struct AvgOptions {
  bool count_include_pad;
  Optional<int64_t> divisor_override;

  int64_t divisor(int64_t pool_h, int64_t pool_w, int64_t rows, int64_t cols) const {
    return divisor_override.has_value ? divisor_override.value : count_include_pad ? pool_h * pool_w : rows * cols;
  }
};

template <typename T>
PARE_ALWAYS_INLINE void avg_pool_one(const T* PARE_RESTRICT in, AvgRows rows, int64_t ow, const Planes& planes,
                                     const PoolParams& p, const AvgOptions& options, T* PARE_RESTRICT out) {
  using Acc = opmath_t<T>;
  int64_t iw0 = ow * p.stride[1] - p.padding[1];
  int64_t iw1 = min_of(iw0 + p.kernel[1], planes.width + p.padding[1]);
  const int64_t pool_w = iw1 - iw0;
  iw0 = max_of(iw0, int64_t{0});
  iw1 = min_of(iw1, planes.width);
  if (rows.first >= rows.end || iw0 >= iw1) {
    *out = T(0);
    return;
  }
  Acc sum = Acc(0);
  for (int64_t ih = rows.first; ih < rows.end; ++ih) {
    const T* row = in + ih * planes.width;
    for (int64_t iw = iw0; iw < iw1; ++iw) sum = arith::add<Acc>(sum, Acc(row[iw]));
  }
  const int64_t divisor = options.divisor(rows.pool_h, pool_w, rows.end - rows.first, iw1 - iw0);
  if constexpr (is_integral_v<Acc>) {
    // Integer division truncating toward zero, as PyTorch (the one
    // overflowing quotient, INT64_MIN / -1, wraps).
    *out = (divisor == -1) ? T(arith::sub<Acc>(Acc(0), sum)) : T(sum / divisor);
  } else {
    *out = T(sum / Acc(divisor));
  }
}

template <typename T>
void avg_pool_plane(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, const Planes& planes, const PoolParams& p,
                    const AvgOptions& options) {
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const AvgRows rows = avg_window_rows(oh, planes, p);
    for (int64_t ow = 0; ow < p.out[1]; ++ow) avg_pool_one(in, rows, ow, planes, p, options, &out[oh * p.out[1] + ow]);
  }
}

// The float overload: the scalar loop at a row's ends, kLanes outputs at a
// time in between, where every window spans kernel[1] columns of the row.
PARE_UNUSED void avg_pool_plane(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, const Planes& planes,
                                const PoolParams& p, const AvgOptions& options) {
  const VectorColumns cols = vector_columns(planes, p, p.kernel[1]);
  for (int64_t oh = 0; oh < p.out[0]; ++oh) {
    const AvgRows rows = avg_window_rows(oh, planes, p);
    float* o = out + oh * p.out[1];
    int64_t ow = 0;
    if (rows.first < rows.end) {
      for (; ow < cols.begin; ++ow) avg_pool_one(in, rows, ow, planes, p, options, &o[ow]);
      const float divisor =
          static_cast<float>(options.divisor(rows.pool_h, p.kernel[1], rows.end - rows.first, p.kernel[1]));
      const auto block = [&](int64_t first) {
        const float* start = in + first * p.stride[1] - p.padding[1];
        simd::vec sum = simd::vec{};
        for (int64_t ih = rows.first; ih < rows.end; ++ih) {
          for (int64_t kw = 0; kw < p.kernel[1]; ++kw) sum += load_columns(start + ih * planes.width + kw, p.stride[1]);
        }
        simd::storev(o + first, sum / divisor);
      };
      ow = vector_blocks<simd::kLanes>(ow, cols.end, block);
    }
    for (; ow < p.out[1]; ++ow) avg_pool_one(in, rows, ow, planes, p, options, &o[ow]);
  }
}

}  // namespace

// aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
Error aten_max_pool2d_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 6, 2);
  const Tensor& self = args.tensor(0, "self");
  const bool ceil_mode = args.boolean_or(5, "ceil_mode", false);
  PARE_TRY(args.status());
  Planes planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  PoolParams p{};
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/true, 3, ceil_mode, &p));
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, p.out[0], p.out[1]));
  PARE_TRY_ASSIGN(Tensor * indices, allocate_pooled(ctx, args.output(1), ScalarType::Long, planes, p.out[0], p.out[1]));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t in_plane = planes.height * planes.width;
  const int64_t out_plane = p.out[0] * p.out[1];
  return PARE_DISPATCH(max_pool2d_kernel, ctx, self.dtype, T, {
    // max_pool_plane and max_pool_plane_2x2 have float overloads (vectors).
    const T* in = x.data_as<T>();
    T* o = out->data_as<T>();
    int64_t* index = indices->data_as<int64_t>();
    // Planes split over the method's threads (work: one compare per tap).
    const uint32_t chunks = ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.kernel[0] * p.kernel[1]);
    if constexpr (fast_path_compiled<tags::max_pool2d_2x2_kernel, T>()) {
      if (is_plain_2x2(planes, p) && fast_path_selected<tags::max_pool2d_2x2_kernel, T>()) {
        return run_fast_path<tags::max_pool2d_2x2_kernel, T>(ctx, [&]() -> Error {
          ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
              max_pool_plane_2x2(in + i * in_plane, o + i * out_plane, index + i * out_plane, planes, p);
            }
          });
          return Error::Ok;
        });
      }
    }
    ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        max_pool_plane(in + i * in_plane, o + i * out_plane, index + i * out_plane, planes, p);
      }
    });
    return Error::Ok;
  });
}

// aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False,
//     bool count_include_pad=True, int? divisor_override=None) -> Tensor
Error aten_avg_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 7, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool ceil_mode = args.boolean_or(4, "ceil_mode", false);
  const bool count_include_pad = args.boolean_or(5, "count_include_pad", true);
  const Optional<int64_t> divisor_override = args.optional_int64(6, "divisor_override");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, !divisor_override.has_value || divisor_override.value != 0, Error::InvalidArgument,
                       "argument 'divisor_override' must not be zero");
  Planes planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  PoolParams p{};
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/false, 3, ceil_mode, &p));
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, p.out[0], p.out[1]));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t in_plane = planes.height * planes.width;
  const int64_t out_plane = p.out[0] * p.out[1];
  const AvgOptions options{count_include_pad, divisor_override};
  const uint32_t chunks = ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.kernel[0] * p.kernel[1]);
  return PARE_DISPATCH(avg_pool2d_kernel, ctx, self.dtype, T, {
    ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        avg_pool_plane(x.data_as<T>() + i * in_plane, out->data_as<T>() + i * out_plane, planes, p, options);
      }
    });
    return Error::Ok;
  });
}

// aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
Error aten__adaptive_avg_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef output_size = args.int_list(1, "output_size");
  PARE_TRY(args.status());
  Planes planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  int64_t out_size[2] = {0, 0};
  PARE_TRY(nn::read_spatial(ctx, output_size, 2, "output_size", 0, nullptr, out_size));
  int64_t product = 0;
  PARE_CHECK_OR_RETURN(ctx,
                       !__builtin_mul_overflow(out_size[0] + 1, planes.height, &product) &&
                           !__builtin_mul_overflow(out_size[1] + 1, planes.width, &product),
                       Error::InvalidArgument, "argument 'output_size' is too large for 'self' of sizes %s",
                       sizes_to_string(self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, out_size[0], out_size[1]));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t oh_n = out_size[0];
  const int64_t ow_n = out_size[1];
  const int64_t height = planes.height;
  const int64_t width = planes.width;
  return PARE_DISPATCH(adaptive_avg_pool2d_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    for (int64_t i = 0; i < planes.count; ++i) {
      const T* in = x.data_as<T>() + i * height * width;
      T* o = out->data_as<T>() + i * oh_n * ow_n;
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        // PyTorch's start_index / end_index.
        const int64_t ih0 = (oh / oh_n) * height + ((oh % oh_n) * height) / oh_n;
        const int64_t ih1 = 1 + ((oh + 1) * height - 1) / oh_n;
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          const int64_t iw0 = (ow / ow_n) * width + ((ow % ow_n) * width) / ow_n;
          const int64_t iw1 = 1 + ((ow + 1) * width - 1) / ow_n;
          Acc sum = Acc(0);
          for (int64_t ih = ih0; ih < ih1; ++ih) {
            const T* row = in + ih * width;
            for (int64_t iw = iw0; iw < iw1; ++iw) sum += Acc(row[iw]);
          }
          o[oh * ow_n + ow] = T(sum / Acc(ih1 - ih0) / Acc(iw1 - iw0));
        }
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
