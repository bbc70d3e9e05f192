// 2-d and 3-d pooling: max (with indices), average and adaptive average,
// over (C, H, W) or (N, C, H, W) inputs, and (C, D, H, W) or
// (N, C, D, H, W) ones. One body serves both: 2-d pooling is 3-d pooling
// over a depth of one plane with a one-plane window.
//
// The input is made contiguous and processed one H x W plane (D x H x W
// volume) at a time. Each output's window is clamped to the input once
// (PyTorch's index arithmetic, so windows, divisors and tie-breaking match
// exactly), and the loops over the window then run without per-element
// bounds tests, plane by plane, row by row, in PyTorch's order.
//
// Float max and average pooling run simd::kLanes outputs of a row at a time
// wherever their windows lie inside the row (stride 1 or 2 along the row: a
// load, or two loads keeping the even lanes): each lane takes the same taps
// in the same order as the scalar loop, so values, indices, NaN and ties
// come out exactly as in the scalar loop, which runs the columns at the
// row's ends. nn.MaxPool2d(2) splits each row pair's columns into the
// windows' left and right taps instead.
//
// Every piece is a template over kSpatial, the number of spatial dims. In
// the 2-d instantiation the depth (one plane) and the window's depth (one
// plane) are compile-time constants, so the loops and arithmetic over
// planes fold away, and the 3-d messages are never instantiated: 2-d
// pooling compiles to the code, and the inner loops, that a 2-d-only body
// would, so selective runtimes with only 2-d pooling do not pay for 3-d.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/simd.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

// Spatial dims in PoolParams' arrays. 2-d pooling is 3-d pooling over a
// depth of one plane, with a window of one plane (kernel, stride and
// dilation 1, no padding, one output plane); it never stores or reads its
// kD entries: depth() and depth_of() give those constants instead.
constexpr int kD = 0, kH = 1, kW = 2;

// An input of (C, [D,] H, W) or (N, C, [D,] H, W), kSpatial (2 or 3)
// spatial dims: `count` volumes of depth() x height x width.
template <int kSpatial>
struct Planes {
  int64_t count;  // N * C
  int64_t height, width;
  int64_t depth_3d;  // 3-d only: read through depth()
  bool batched;
  int64_t leading[2];  // N, C (or C alone)

  // One plane for 2-d pooling, a constant: no loops over planes there.
  int64_t depth() const { return kSpatial == 3 ? depth_3d : 1; }
  int64_t volume() const { return depth() * height * width; }
};

// Checks a pooling input of kSpatial spatial dims, with or without a batch
// dim, whose non-batch dims are non-empty.
template <int kSpatial>
Error read_planes(KernelContext& ctx, const Tensor& self, Planes<kSpatial>* p) {
  constexpr size_t kDims = kSpatial;
  PARE_CHECK_OR_RETURN(ctx, self.dim == kDims + 1 || self.dim == kDims + 2, Error::InvalidShape,
                       "argument 'self' must be %s, got sizes %s",
                       kSpatial == 2 ? "3-d (C, H, W) or 4-d (N, C, H, W)" : "4-d (C, D, H, W) or 5-d (N, C, D, H, W)",
                       sizes_to_string(self.size_span()).text);
  p->batched = self.dim == kDims + 2;
  const size_t c = p->batched ? 1 : 0;
  for (size_t d = c; d < self.dim; ++d) {
    PARE_CHECK_OR_RETURN(ctx, self.sizes[d] != 0, Error::InvalidShape,
                         "argument 'self' of sizes %s: only the batch dim may be empty",
                         sizes_to_string(self.size_span()).text);
  }
  p->leading[0] = self.sizes[0];
  p->leading[1] = p->batched ? self.sizes[1] : 0;
  p->count = p->batched ? self.sizes[0] * self.sizes[1] : self.sizes[0];
  if constexpr (kSpatial == 3) p->depth_3d = self.sizes[self.dim - 3];
  p->height = self.sizes[self.dim - 2];
  p->width = self.sizes[self.dim - 1];
  return Error::Ok;
}

// Output sizes `out_size` (depth, height, width; the depth ignored for
// 2-d). Written after N, C and moved over C's slot when there is no batch
// dim: smaller code than appending at a running index.
template <int kSpatial>
Result<Tensor*> allocate_pooled(KernelContext& ctx, Value& out, ScalarType dtype, const Planes<kSpatial>& p,
                                const int64_t* out_size) {
  const int64_t* spatial = out_size + 3 - kSpatial;
  int64_t sizes[kSpatial + 2] = {p.leading[0], p.leading[1]};
  for (int d = 0; d < kSpatial; ++d) sizes[d + 2] = spatial[d];
  if (!p.batched) {
    for (int d = 0; d < kSpatial; ++d) sizes[d + 1] = spatial[d];
  }
  return ctx.allocate_output(out, dtype, IntArrayRef(sizes, p.batched ? kSpatial + 2 : kSpatial + 1));
}

// Entry kD of a (depth, height, width) array: 1 for 2-d pooling, a
// constant (its window is one plane deep, its output one plane).
template <int kSpatial>
PARE_ALWAYS_INLINE int64_t depth_of(const int64_t* v) {
  return kSpatial == 3 ? v[kD] : 1;
}

// Set by read_pool_params, which writes every entry the ops read (hence
// no zeroing: 2-d code never touches the kD entries).
template <int kSpatial>
struct PoolParams {
  int64_t kernel[3];  // kD, kH, kW; the kD entries are 3-d only: read through depth()
  int64_t stride[3];
  int64_t padding[3];
  int64_t dilation[3];
  int64_t out[3];

  // The depth entry of kernel, stride, dilation or out (not padding).
  int64_t depth(const int64_t (&v)[3]) const { return depth_of<kSpatial>(v); }
  int64_t out_volume() const { return depth(out) * out[kH] * out[kW]; }
};

// Reads kernel_size, stride (empty = kernel_size), padding and dilation
// (nullable: average pooling has none) for the input's spatial dims and
// computes the output size.
template <int kSpatial>
Error read_pool_params(KernelContext& ctx, KernelArgs& args, const Planes<kSpatial>& planes, bool with_dilation,
                       size_t padding_index, bool ceil_mode, PoolParams<kSpatial>* p) {
  const IntArrayRef kernel = args.int_list(1, "kernel_size");
  const int64_t one[] = {1};
  const int64_t zero[] = {0};
  const IntArrayRef stride = args.has(2) ? args.int_list(2, "stride") : IntArrayRef();
  const IntArrayRef padding = args.has(padding_index) ? args.int_list(padding_index, "padding") : IntArrayRef(zero, 1);
  const IntArrayRef dilation =
      with_dilation && args.has(padding_index + 1) ? args.int_list(padding_index + 1, "dilation") : IntArrayRef(one, 1);
  PARE_TRY(args.status());
  constexpr size_t kFirst = 3 - kSpatial;  // 2-d: no depth entries (see PoolParams::depth)
  PARE_TRY(nn::read_spatial(ctx, kernel, kSpatial, "kernel_size", 1, nullptr, p->kernel + kFirst));
  PARE_TRY(nn::read_spatial(ctx, stride, kSpatial, "stride", 1, p->kernel + kFirst, p->stride + kFirst));
  PARE_TRY(nn::read_spatial(ctx, padding, kSpatial, "padding", 0, nullptr, p->padding + kFirst));
  PARE_TRY(nn::read_spatial(ctx, dilation, kSpatial, "dilation", 1, nullptr, p->dilation + kFirst));
  const int64_t in[3] = {planes.depth(), planes.height, planes.width};
  const int64_t* k = p->kernel;
  const int64_t* pad = p->padding;
  const int64_t* dil = p->dilation;
  for (size_t i = kFirst; i < 3; ++i) {
    PARE_CHECK_OR_RETURN(ctx, pad[i] <= k[i] / 2, Error::InvalidArgument,
                         "argument 'padding' (%lld) must be at most half of kernel_size (%lld)",
                         static_cast<long long>(pad[i]), static_cast<long long>(k[i]));
    const bool fits = nn::window_output_size(in[i], k[i], p->stride[i], pad[i], dil[i], ceil_mode, &p->out[i]);
    // One message per rank, each a literal: the 3-d one stays out of 2-d code.
    if constexpr (kSpatial == 2) {
      PARE_CHECK_OR_RETURN(ctx, fits, Error::InvalidShape,
                           "input of %lld x %lld is too small for kernel_size (%lld, %lld) with padding (%lld, %lld) "
                           "and dilation (%lld, %lld): the output would be empty",
                           static_cast<long long>(in[kH]), static_cast<long long>(in[kW]),
                           static_cast<long long>(k[kH]), static_cast<long long>(k[kW]),
                           static_cast<long long>(pad[kH]), static_cast<long long>(pad[kW]),
                           static_cast<long long>(dil[kH]), static_cast<long long>(dil[kW]));
    } else {
      PARE_CHECK_OR_RETURN(
          ctx, fits, Error::InvalidShape,
          "input of %lld x %lld x %lld is too small for kernel_size (%lld, %lld, %lld) with padding (%lld, %lld, %lld) "
          "and dilation (%lld, %lld, %lld): the output would be empty",
          static_cast<long long>(in[kD]), static_cast<long long>(in[kH]), static_cast<long long>(in[kW]),
          static_cast<long long>(k[kD]), static_cast<long long>(k[kH]), static_cast<long long>(k[kW]),
          static_cast<long long>(pad[kD]), static_cast<long long>(pad[kH]), static_cast<long long>(pad[kW]),
          static_cast<long long>(dil[kD]), static_cast<long long>(dil[kH]), static_cast<long long>(dil[kW]));
    }
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
                        const Planes<2>& planes, const PoolParams<2>& p) {
  using Acc = opmath_t<T>;
  const int64_t width = planes.width;
  for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
    const int64_t top = 2 * oh * width;
    for (int64_t ow = 0; ow < p.out[kW]; ++ow) {
      const int64_t i = top + 2 * ow;
      Acc max = Acc(in[i]);
      int64_t best = i;
      take_max(Acc(in[i + 1]), i + 1, &max, &best);
      take_max(Acc(in[i + width]), i + width, &max, &best);
      take_max(Acc(in[i + width + 1]), i + width + 1, &max, &best);
      out[oh * p.out[kW] + ow] = T(max);
      indices[oh * p.out[kW] + ow] = best;
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

// Whether nn.MaxPool2d(2)'s fast path applies (a template only so that
// the 3-d op may name it in its discarded branch).
template <int kSpatial>
bool is_plain_2x2(const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p) {
  for (int d = kH; d <= kW; ++d) {
    if (p.kernel[d] != 2 || p.stride[d] != 2 || p.padding[d] != 0 || p.dilation[d] != 1) return false;
  }
  return 2 * p.out[kH] <= planes.height && 2 * p.out[kW] <= planes.width;  // ceil_mode may add a partial window
}

// The taps of a window along one dim: [first, end) in steps of the
// dilation, clamped to the input.
struct Taps {
  int64_t first, end;
};

template <int kSpatial>
PARE_ALWAYS_INLINE Taps max_taps(int64_t o, int d, int64_t in, const PoolParams<kSpatial>& p) {
  const int64_t start = o * p.stride[d] - p.padding[d];
  return {first_inside(start, p.dilation[d]), min_of(start + (p.kernel[d] - 1) * p.dilation[d] + 1, in)};
}

// The planes and rows of one output row's windows.
struct WindowRows {
  Taps planes, rows;
};

// The one plane of a 2-d window is a constant.
template <int kSpatial>
PARE_ALWAYS_INLINE WindowRows max_window_rows(int64_t od, int64_t oh, const Planes<kSpatial>& planes,
                                              const PoolParams<kSpatial>& p) {
  return {kSpatial == 3 ? max_taps(od, kD, planes.depth(), p) : Taps{0, 1}, max_taps(oh, kH, planes.height, p)};
}

// Input index of the first tap of a window at column iw0 of a row whose
// windows span `w`: the index a window without a tap inside the input
// reports, as in PyTorch.
template <int kSpatial>
PARE_ALWAYS_INLINE int64_t first_tap(WindowRows w, int64_t iw0, const Planes<kSpatial>& planes) {
  return (w.planes.first * planes.height + w.rows.first) * planes.width + iw0;
}

// The output at column ow of a row whose windows span `w`: taps plane by
// plane, row by row, as PyTorch takes them.
template <typename T, int kSpatial>
PARE_ALWAYS_INLINE void max_pool_one(const T* PARE_RESTRICT in, WindowRows w, int64_t ow,
                                     const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p,
                                     T* PARE_RESTRICT out, int64_t* PARE_RESTRICT index) {
  using Acc = opmath_t<T>;
  const int64_t width = planes.width;
  const int64_t start_w = ow * p.stride[kW] - p.padding[kW];
  const int64_t iw1 = min_of(start_w + (p.kernel[kW] - 1) * p.dilation[kW] + 1, width);
  const int64_t iw0 = first_inside(start_w, p.dilation[kW]);
  int64_t best = first_tap(w, iw0, planes);
  Acc max = lowest_value<Acc>();
  for (int64_t id = w.planes.first; id < w.planes.end; id += p.depth(p.dilation)) {
    for (int64_t ih = w.rows.first; ih < w.rows.end; ih += p.dilation[kH]) {
      const int64_t row_at = (id * planes.height + ih) * width;
      const T* row = in + row_at;
      for (int64_t iw = iw0; iw < iw1; iw += p.dilation[kW]) take_max(Acc(row[iw]), row_at + iw, &max, &best);
    }
  }
  *out = T(max);
  *index = best;
}

// One plane (2-d pooling) or volume (3-d) of outputs.
template <typename T, int kSpatial>
void max_pool_plane(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                    const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p) {
  for (int64_t od = 0; od < p.depth(p.out); ++od) {
    for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
      const WindowRows w = max_window_rows(od, oh, planes, p);
      const int64_t at = (od * p.out[kH] + oh) * p.out[kW];
      for (int64_t ow = 0; ow < p.out[kW]; ++ow) max_pool_one(in, w, ow, planes, p, &out[at + ow], &indices[at + ow]);
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

template <int kSpatial>
PARE_ALWAYS_INLINE VectorColumns vector_columns(const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p,
                                                int64_t span) {
  const int64_t s = p.stride[kW];
  VectorColumns c{0, 0};
  if (s != 1 && s != 2) return c;
  c.begin = min_of((p.padding[kW] + s - 1) / s, p.out[kW]);  // first window starting at column >= 0
  // Last column ow with ow * s - padding + span - 1 + (s - 1) <= width - 1.
  const int64_t room = planes.width - span - (s - 1) + p.padding[kW];
  c.end = room < 0 ? 0 : min_of(room / s + 1, p.out[kW]);
  if (c.end < c.begin) c.end = c.begin;
  return c;
}

// kLanes consecutive input columns starting at `p`, or every other one.
PARE_ALWAYS_INLINE simd::vec load_columns(const float* p, int64_t stride) {
  return stride == 1 ? simd::loadv(p) : simd::load_even(p);
}

// Float planes and volumes (an overload, which calls for float take over
// the template): the scalar loop at a row's ends, kLanes outputs at a time
// in between. Indices are tracked in 32 bits (volumes of fewer than 2^31
// elements; larger ones take the scalar loop) and widened on store.
template <int kSpatial>
void max_pool_plane(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                    const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p) {
  const int64_t width = planes.width;
  VectorColumns cols = vector_columns(planes, p, (p.kernel[kW] - 1) * p.dilation[kW] + 1);
  if (planes.volume() > INT32_MAX) cols = {0, 0};
  const index_vec lane_columns = lane_steps(p.stride[kW]);
  for (int64_t od = 0; od < p.depth(p.out); ++od) {
    for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
      const WindowRows w = max_window_rows(od, oh, planes, p);
      float* o = out + (od * p.out[kH] + oh) * p.out[kW];
      int64_t* o_index = indices + (od * p.out[kH] + oh) * p.out[kW];
      int64_t ow = 0;
      for (; ow < cols.begin; ++ow) max_pool_one(in, w, ow, planes, p, &o[ow], &o_index[ow]);
      const auto block = [&](int64_t first) {
        const int64_t start_w = first * p.stride[kW] - p.padding[kW];
        simd::vec max = simd::splat(-__builtin_inff());
        index_vec best = static_cast<int32_t>(first_tap(w, start_w, planes)) + lane_columns;
        for (int64_t id = w.planes.first; id < w.planes.end; id += p.depth(p.dilation)) {
          for (int64_t ih = w.rows.first; ih < w.rows.end; ih += p.dilation[kH]) {
            const int64_t row_at = (id * planes.height + ih) * width + start_w;
            for (int64_t kw = 0; kw < p.kernel[kW]; ++kw) {
              const int64_t at = row_at + kw * p.dilation[kW];
              take_max_lanes(load_columns(in + at, p.stride[kW]), static_cast<int32_t>(at) + lane_columns, &max, &best);
            }
          }
        }
        simd::storev(o + first, max);
        store_indices(o_index + first, best);
      };
      ow = vector_blocks<simd::kLanes>(ow, cols.end, block);
      for (; ow < p.out[kW]; ++ow) max_pool_one(in, w, ow, planes, p, &o[ow], &o_index[ow]);
    }
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
                               const Planes<2>& planes, const PoolParams<2>& p) {
  using I = mask_of<V>;
  constexpr int kL = lanes_of<V>;
  const int64_t width = planes.width;
  I evens;
  for (int l = 0; l < kL; ++l) evens[l] = 2 * l;
  for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
    const auto block = [&](int64_t first) {
      const int64_t i = 2 * oh * width + 2 * first;
      const I at = static_cast<int32_t>(i) + evens;
      V max = load_alternate<V, 0>(in + i);
      I best = at;
      take_max_lanes(load_alternate<V, 1>(in + i), at + 1, &max, &best);
      take_max_lanes(load_alternate<V, 0>(in + i + width), at + static_cast<int32_t>(width), &max, &best);
      take_max_lanes(load_alternate<V, 1>(in + i + width), at + static_cast<int32_t>(width + 1), &max, &best);
      __builtin_memcpy(out + oh * p.out[kW] + first, &max, sizeof(max));
      store_indices(indices + oh * p.out[kW] + first, best);
    };
    vector_blocks<kL>(0, p.out[kW], block);  // the caller checked p.out[kW] >= kL
  }
}

// The float overload of max_pool_plane_2x2.
PARE_UNUSED void max_pool_plane_2x2(const float* PARE_RESTRICT in, float* PARE_RESTRICT out,
                                    int64_t* PARE_RESTRICT indices, const Planes<2>& planes, const PoolParams<2>& p) {
  if (planes.height * planes.width <= INT32_MAX) {
    if (p.out[kW] >= simd::kLanes) return max_pool_plane_2x2_vector<simd::vec>(in, out, indices, planes, p);
    // 4 to 7 outputs wide on AVX2 (a 14 x 14 plane): half vectors. Only
    // AVX2 builds carry them; 4-lane builds already run 4 at a time.
    if constexpr (simd::kLanes == 8) {
      if (p.out[kW] >= 4) return max_pool_plane_2x2_vector<vec4>(in, out, indices, planes, p);
    }
  }
  max_pool_plane(in, out, indices, planes, p);  // the general loop: no scalar 2x2 copy for float
}

// The taps of an average pooling window along one dim: `pool` of them
// with the padding (for count_include_pad), [first, end) clamped to the
// input.
struct AvgTaps {
  int64_t pool;
  int64_t first, end;

  int64_t count() const { return end - first; }
};

template <int kSpatial>
PARE_ALWAYS_INLINE AvgTaps avg_taps(int64_t o, int d, int64_t in, const PoolParams<kSpatial>& p) {
  const int64_t i0 = o * p.stride[d] - p.padding[d];
  const int64_t i1 = min_of(i0 + p.kernel[d], in + p.padding[d]);
  return {i1 - i0, max_of(i0, int64_t{0}), min_of(i1, in)};
}

// The planes and rows of one output row's windows.
struct AvgRows {
  AvgTaps planes, rows;

  bool empty() const { return planes.first >= planes.end || rows.first >= rows.end; }
};

// The one plane of a 2-d window is a constant.
template <int kSpatial>
PARE_ALWAYS_INLINE AvgRows avg_window_rows(int64_t od, int64_t oh, const Planes<kSpatial>& planes,
                                           const PoolParams<kSpatial>& p) {
  return {kSpatial == 3 ? avg_taps(od, kD, planes.depth(), p) : AvgTaps{1, 0, 1}, avg_taps(oh, kH, planes.height, p)};
}

struct AvgOptions {
  bool count_include_pad;
  Optional<int64_t> divisor_override;

  // A window of `pool_w` columns with the padding, `cols` inside the
  // input, over w's planes and rows (products taken only when needed).
  int64_t divisor(AvgRows w, int64_t pool_w, int64_t cols) const {
    return divisor_override.has_value ? divisor_override.value
           : count_include_pad        ? w.planes.pool * w.rows.pool * pool_w
                                      : w.planes.count() * w.rows.count() * cols;
  }
};

// One sum over the window, plane by plane, row by row, as PyTorch adds.
template <typename T, int kSpatial>
PARE_ALWAYS_INLINE void avg_pool_one(const T* PARE_RESTRICT in, AvgRows w, int64_t ow, const Planes<kSpatial>& planes,
                                     const PoolParams<kSpatial>& p, const AvgOptions& options, T* PARE_RESTRICT out) {
  using Acc = opmath_t<T>;
  int64_t iw0 = ow * p.stride[kW] - p.padding[kW];
  int64_t iw1 = min_of(iw0 + p.kernel[kW], planes.width + p.padding[kW]);
  const int64_t pool_w = iw1 - iw0;
  iw0 = max_of(iw0, int64_t{0});
  iw1 = min_of(iw1, planes.width);
  if (w.empty() || iw0 >= iw1) {
    *out = T(0);
    return;
  }
  Acc sum = Acc(0);
  for (int64_t id = w.planes.first; id < w.planes.end; ++id) {
    for (int64_t ih = w.rows.first; ih < w.rows.end; ++ih) {
      const T* row = in + (id * planes.height + ih) * planes.width;
      for (int64_t iw = iw0; iw < iw1; ++iw) sum = arith::add<Acc>(sum, Acc(row[iw]));
    }
  }
  const int64_t divisor = options.divisor(w, pool_w, iw1 - iw0);
  if constexpr (is_integral_v<Acc>) {
    // Integer division truncating toward zero, as PyTorch (the one
    // overflowing quotient, INT64_MIN / -1, wraps).
    *out = (divisor == -1) ? T(arith::sub<Acc>(Acc(0), sum)) : T(sum / divisor);
  } else {
    *out = T(sum / Acc(divisor));
  }
}

// One plane (2-d pooling) or volume (3-d) of outputs.
template <typename T, int kSpatial>
void avg_pool_plane(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, const Planes<kSpatial>& planes,
                    const PoolParams<kSpatial>& p, const AvgOptions& options) {
  for (int64_t od = 0; od < p.depth(p.out); ++od) {
    for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
      const AvgRows w = avg_window_rows(od, oh, planes, p);
      const int64_t at = (od * p.out[kH] + oh) * p.out[kW];
      for (int64_t ow = 0; ow < p.out[kW]; ++ow) avg_pool_one(in, w, ow, planes, p, options, &out[at + ow]);
    }
  }
}

// The float overload: the scalar loop at a row's ends, kLanes outputs at a
// time in between, where every window spans kernel[kW] columns of the row.
template <int kSpatial>
void avg_pool_plane(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, const Planes<kSpatial>& planes,
                    const PoolParams<kSpatial>& p, const AvgOptions& options) {
  const VectorColumns cols = vector_columns(planes, p, p.kernel[kW]);
  for (int64_t od = 0; od < p.depth(p.out); ++od) {
    for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
      const AvgRows w = avg_window_rows(od, oh, planes, p);
      float* o = out + (od * p.out[kH] + oh) * p.out[kW];
      int64_t ow = 0;
      if (!w.empty()) {
        for (; ow < cols.begin; ++ow) avg_pool_one(in, w, ow, planes, p, options, &o[ow]);
        const float divisor = static_cast<float>(options.divisor(w, p.kernel[kW], p.kernel[kW]));
        const auto block = [&](int64_t first) {
          const float* start = in + first * p.stride[kW] - p.padding[kW];
          simd::vec sum = simd::vec{};
          for (int64_t id = w.planes.first; id < w.planes.end; ++id) {
            for (int64_t ih = w.rows.first; ih < w.rows.end; ++ih) {
              const float* row = start + (id * planes.height + ih) * planes.width;
              for (int64_t kw = 0; kw < p.kernel[kW]; ++kw) sum += load_columns(row + kw, p.stride[kW]);
            }
          }
          simd::storev(o + first, sum / divisor);
        };
        ow = vector_blocks<simd::kLanes>(ow, cols.end, block);
      }
      for (; ow < p.out[kW]; ++ow) avg_pool_one(in, w, ow, planes, p, options, &o[ow]);
    }
  }
}

// PyTorch's adaptive pooling window along one dim (start_index,
// end_index, as PyTorch writes them, which also compiles smaller than the
// equivalent (o * in) / out): output o of `out` covers [first, end) of
// `in`.
PARE_ALWAYS_INLINE Taps adaptive_taps(int64_t o, int64_t out, int64_t in) {
  return {(o / out) * in + ((o % out) * in) / out, 1 + ((o + 1) * in - 1) / out};
}

// The bodies of the 2-d and 3-d ops, over kSpatial dims; each op
// dispatches through its own tag.

// max_pool{2,3}d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
template <int kSpatial, typename Tag>
Error max_pool_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 6, 2);
  const Tensor& self = args.tensor(0, "self");
  const bool ceil_mode = args.boolean_or(5, "ceil_mode", false);
  PARE_TRY(args.status());
  Planes<kSpatial> planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  PoolParams<kSpatial> p;
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/true, 3, ceil_mode, &p));
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, p.out));
  PARE_TRY_ASSIGN(Tensor * indices, allocate_pooled(ctx, args.output(1), ScalarType::Long, planes, p.out));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t in_plane = planes.volume();
  const int64_t out_plane = p.out_volume();
  return dispatch<Tag>(ctx, self.dtype, [&](auto type) -> Error {
    using T = typename decltype(type)::type;
    // max_pool_plane and max_pool_plane_2x2 have float overloads (vectors).
    const T* in = x.data_as<T>();
    T* o = out->data_as<T>();
    int64_t* index = indices->data_as<int64_t>();
    // Planes split over the method's threads (work: one compare per tap).
    const uint32_t chunks =
        ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.depth(p.kernel) * p.kernel[kH] * p.kernel[kW]);
    if constexpr (kSpatial == 2 && fast_path_compiled<tags::max_pool2d_2x2_kernel, T>()) {
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

// avg_pool{2,3}d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True,
//     divisor_override=None)
template <int kSpatial, typename Tag>
Error avg_pool(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 7, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool ceil_mode = args.boolean_or(4, "ceil_mode", false);
  const bool count_include_pad = args.boolean_or(5, "count_include_pad", true);
  const Optional<int64_t> divisor_override = args.optional_int64(6, "divisor_override");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, !divisor_override.has_value || divisor_override.value != 0, Error::InvalidArgument,
                       "argument 'divisor_override' must not be zero");
  Planes<kSpatial> planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  PoolParams<kSpatial> p;
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/false, 3, ceil_mode, &p));
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, p.out));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t in_plane = planes.volume();
  const int64_t out_plane = p.out_volume();
  const AvgOptions options{count_include_pad, divisor_override};
  const uint32_t chunks =
      ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.depth(p.kernel) * p.kernel[kH] * p.kernel[kW]);
  return dispatch<Tag>(ctx, self.dtype, [&](auto type) -> Error {
    using T = typename decltype(type)::type;
    ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        avg_pool_plane(x.data_as<T>() + i * in_plane, out->data_as<T>() + i * out_plane, planes, p, options);
      }
    });
    return Error::Ok;
  });
}

// _adaptive_avg_pool{2,3}d(self, output_size)
template <int kSpatial, typename Tag>
Error adaptive_avg_pool(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef output_size = args.int_list(1, "output_size");
  PARE_TRY(args.status());
  Planes<kSpatial> planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  constexpr size_t kFirst = 3 - kSpatial;
  int64_t out_size[3] = {1, 1, 1};
  PARE_TRY(nn::read_spatial(ctx, output_size, kSpatial, "output_size", 0, nullptr, out_size + kFirst));
  const int64_t in_size[3] = {planes.depth(), planes.height, planes.width};
  int64_t product = 0;
  for (size_t d = kFirst; d < 3; ++d) {
    PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(out_size[d] + 1, in_size[d], &product), Error::InvalidArgument,
                         "argument 'output_size' is too large for 'self' of sizes %s",
                         sizes_to_string(self.size_span()).text);
  }
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, out_size));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  return dispatch<Tag>(ctx, self.dtype, [&](auto type) -> Error {
    using T = typename decltype(type)::type;
    using Acc = opmath_t<T>;
    const int64_t out_depth = depth_of<kSpatial>(out_size);
    T* o = out->data_as<T>();
    for (int64_t i = 0; i < planes.count; ++i) {
      const T* in = x.data_as<T>() + i * planes.volume();
      for (int64_t od = 0; od < out_depth; ++od) {
        const Taps planes_taps = adaptive_taps(od, out_depth, planes.depth());
        for (int64_t oh = 0; oh < out_size[kH]; ++oh) {
          const Taps rows = adaptive_taps(oh, out_size[kH], planes.height);
          for (int64_t ow = 0; ow < out_size[kW]; ++ow) {
            const Taps cols = adaptive_taps(ow, out_size[kW], planes.width);
            Acc sum = Acc(0);
            for (int64_t id = planes_taps.first; id < planes_taps.end; ++id) {
              for (int64_t ih = rows.first; ih < rows.end; ++ih) {
                const T* row = in + (id * planes.height + ih) * planes.width;
                for (int64_t iw = cols.first; iw < cols.end; ++iw) sum += Acc(row[iw]);
              }
            }
            // PyTorch divides by each extent in turn (a 2-d window's one plane divides by nothing).
            if constexpr (kSpatial == 3) sum /= Acc(planes_taps.end - planes_taps.first);
            *o++ = T(sum / Acc(rows.end - rows.first) / Acc(cols.end - cols.first));
          }
        }
      }
    }
    return Error::Ok;
  });
}

}  // namespace

// aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
Error aten_max_pool2d_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_pool_with_indices<2, tags::max_pool2d_kernel>(ctx, inputs, outputs);
}

// aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
//     int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
Error aten_max_pool3d_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_pool_with_indices<3, tags::max_pool3d_kernel>(ctx, inputs, outputs);
}

// aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False,
//     bool count_include_pad=True, int? divisor_override=None) -> Tensor
Error aten_avg_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return avg_pool<2, tags::avg_pool2d_kernel>(ctx, inputs, outputs);
}

// aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False,
//     bool count_include_pad=True, int? divisor_override=None) -> Tensor
Error aten_avg_pool3d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return avg_pool<3, tags::avg_pool3d_kernel>(ctx, inputs, outputs);
}

// aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
Error aten__adaptive_avg_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return adaptive_avg_pool<2, tags::adaptive_avg_pool2d_kernel>(ctx, inputs, outputs);
}

// aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
Error aten__adaptive_avg_pool3d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return adaptive_avg_pool<3, tags::adaptive_avg_pool3d_kernel>(ctx, inputs, outputs);
}

}  // namespace kernels
}  // namespace pare
