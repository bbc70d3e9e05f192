// max_pool2d_with_indices and max_pool3d_with_indices: the running max of
// each window with its index, NaN winning as in PyTorch (max_pool2d: the
// same without the index, and on int8 the quantize pass's max pooling);
// nn.MaxPool2d(2) has its own loop (tag max_pool2d_2x2_kernel). The shared pieces and the scheme (one body for
// 2-d and 3-d, scalar loops at the rows' ends, vectors in between) are in
// pooling.h.

#include "runtime/core/cpu.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/limits.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/nn/max_pool_int8.h"
#include "runtime/kernels/nn/pooling.h"

namespace pare {
namespace kernels {
namespace {

// The shared pieces (pooling.h).
using namespace pooling;

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

// nn.MaxPool2d(2), the common case (tag max_pool2d_2x2_kernel):
// 2x2 windows at stride 2, no padding or dilation, every window inside the
// plane; the same taps in the same order as the general loop, unrolled.
// Every loop here has kIndices: false for aten::max_pool2d, whose indices
// (null) nobody reads, which leaves their arithmetic dead.
template <bool kIndices, typename T>
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
      if constexpr (kIndices) indices[oh * p.out[kW] + ow] = best;
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
template <bool kIndices, typename T, int kSpatial>
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
  if constexpr (kIndices) *index = best;
}

// One plane (2-d pooling) or volume (3-d) of outputs.
template <bool kIndices, typename T, int kSpatial>
void max_pool_plane(const T* PARE_RESTRICT in, T* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                    const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p) {
  for (int64_t od = 0; od < p.depth(p.out); ++od) {
    for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
      const WindowRows w = max_window_rows(od, oh, planes, p);
      const int64_t at = (od * p.out[kH] + oh) * p.out[kW];
      for (int64_t ow = 0; ow < p.out[kW]; ++ow) {
        max_pool_one<kIndices>(in, w, ow, planes, p, &out[at + ow], kIndices ? &indices[at + ow] : nullptr);
      }
    }
  }
}

// Float planes and volumes (an overload, which calls for float take over
// the template): the scalar loop at a row's ends, kLanes outputs at a time
// in between. Indices are tracked in 32 bits (volumes of fewer than 2^31
// elements; larger ones take the scalar loop) and widened on store.
template <bool kIndices, int kSpatial>
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
      int64_t* o_index = kIndices ? indices + (od * p.out[kH] + oh) * p.out[kW] : nullptr;
      int64_t ow = 0;
      for (; ow < cols.begin; ++ow)
        max_pool_one<kIndices>(in, w, ow, planes, p, &o[ow], kIndices ? &o_index[ow] : nullptr);
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
        if constexpr (kIndices) store_indices(o_index + first, best);
      };
      ow = vector_blocks<simd::kLanes>(ow, cols.end, block);
      for (; ow < p.out[kW]; ++ow)
        max_pool_one<kIndices>(in, w, ow, planes, p, &o[ow], kIndices ? &o_index[ow] : nullptr);
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
template <bool kIndices, typename V>
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
      if constexpr (kIndices) store_indices(indices + oh * p.out[kW] + first, best);
    };
    vector_blocks<kL>(0, p.out[kW], block);  // the caller checked p.out[kW] >= kL
  }
}

// The float overload of max_pool_plane_2x2.
template <bool kIndices>
void max_pool_plane_2x2(const float* PARE_RESTRICT in, float* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                        const Planes<2>& planes, const PoolParams<2>& p) {
  if (planes.height * planes.width <= INT32_MAX) {
    if (p.out[kW] >= simd::kLanes) return max_pool_plane_2x2_vector<kIndices, simd::vec>(in, out, indices, planes, p);
    // 4 to 7 outputs wide on AVX2 (a 14 x 14 plane): half vectors. Only
    // AVX2 builds carry them; 4-lane builds already run 4 at a time.
    if constexpr (simd::kLanes == 8) {
      if (p.out[kW] >= 4) return max_pool_plane_2x2_vector<kIndices, vec4>(in, out, indices, planes, p);
    }
  }
  // The scalar 2x2 loop, not the general one, which a runtime of 2x2 pools
  // alone leaves out.
  max_pool_plane_2x2<kIndices, float>(in, out, indices, planes, p);
}

// Int8 planes without indices (aten::max_pool2d on the quantize pass's
// int8 values, docs/quantization.md: quantization is monotonic, so the
// int8 max is the reference's float max quantized, exactly). Each output
// row runs 16 outputs at a time wherever every tap of the block lies
// inside the row (stride 1 or 2: a 16-byte load, or every other byte of
// 32), the scalar loop at the row's ends; on an x86-64-v4 CPU the whole
// row 32 at a time (max_pool_int8.h). A maximum of int8 values is the
// same in any order, so every ISA gives the same bits.
typedef int8_t bytes16 __attribute__((vector_size(16)));
typedef int8_t bytes32 __attribute__((vector_size(32)));

PARE_ALWAYS_INLINE bytes16 max16(bytes16 a, bytes16 b) { return a > b ? a : b; }

// The 16 bytes at p (stride 1); or (stride 2) every other one of the 31
// from p: the even bytes of the 32 at p for a window's first column, else
// the odd bytes of the 32 at p - 1, so that no load reads past the last
// tap (the plane's last byte, at its end).
PARE_ALWAYS_INLINE bytes16 load_taps(const int8_t* p, int64_t stride, bool first_column) {
  if (stride == 1) {
    bytes16 v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
  }
  bytes32 w;
  if (first_column) {
    __builtin_memcpy(&w, p, sizeof(w));
    return __builtin_shufflevector(w, w, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  }
  __builtin_memcpy(&w, p - 1, sizeof(w));
  return __builtin_shufflevector(w, w, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

void max_pool_plane_int8(const int8_t* PARE_RESTRICT in, int8_t* PARE_RESTRICT out, const Planes<2>& planes,
                         const PoolParams<2>& p) {
  constexpr int64_t kBytes = 16;
  const int64_t width = planes.width;
  const int64_t s = p.stride[kW];
  const int64_t dw = p.dilation[kW];
  // The outputs whose taps all lie inside the row: [begin, end).
  const int64_t span = (p.kernel[kW] - 1) * dw + 1;
  const int64_t begin = min_of((p.padding[kW] + s - 1) / s, p.out[kW]);
  const int64_t room = width - span + p.padding[kW];
  // (Stride 2 reads a window's first column and the byte after it: a span of at least 2.)
  const bool vectors = s == 1 || (s == 2 && span >= 2);
  const int64_t end = !vectors || room < 0 ? begin : max_of(begin, min_of(room / s + 1, p.out[kW]));
#if defined(PARE_X86_64_DISPATCH)
  const bool v4 = cpu::kernel_isa() >= cpu::Isa::x86_64_v4;
#endif
  for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
    const WindowRows w = max_window_rows(0, oh, planes, p);
    int8_t* o = out + oh * p.out[kW];
#if defined(PARE_X86_64_DISPATCH)
    // The whole row 32 at a time on an x86-64-v4 CPU (max_pool_int8.h),
    // the same bits.
    if (v4 && (s == 1 || s == 2)) {
      const int64_t rows = (w.rows.end - w.rows.first + p.dilation[kH] - 1) / p.dilation[kH];
      max_pool_int8::x86_64_v4::row(in + w.rows.first * width, p.dilation[kH] * width, rows > 0 ? rows : 0, width,
                                    p.kernel[kW], dw, s, p.padding[kW], p.out[kW], o);
      continue;
    }
#endif
    int64_t ow = 0;
    for (; ow < begin; ++ow) max_pool_one<false>(in, w, ow, planes, p, &o[ow], nullptr);
    const auto block = [&](int64_t first) {
      bytes16 max = bytes16{} + int8_t{-128};
      const int8_t* start = in + first * s - p.padding[kW];
      for (int64_t ih = w.rows.first; ih < w.rows.end; ih += p.dilation[kH]) {
        const int8_t* row = start + ih * width;
        for (int64_t kw = 0; kw < p.kernel[kW]; ++kw) max = max16(max, load_taps(row + kw * dw, s, kw == 0));
      }
      __builtin_memcpy(o + first, &max, sizeof(max));
    };
    ow = vector_blocks<kBytes>(ow, end, block);
    for (; ow < p.out[kW]; ++ow) max_pool_one<false>(in, w, ow, planes, p, &o[ow], nullptr);
  }
}

// The int8 overloads of max_pool_plane and max_pool_plane_2x2: the loop
// above without indices, the scalar loops with them.
template <bool kIndices, int kSpatial>
void max_pool_plane(const int8_t* PARE_RESTRICT in, int8_t* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                    const Planes<kSpatial>& planes, const PoolParams<kSpatial>& p) {
  if constexpr (!kIndices && kSpatial == 2) {
    max_pool_plane_int8(in, out, planes, p);
  } else {
    max_pool_plane<kIndices, int8_t, kSpatial>(in, out, indices, planes, p);
  }
}

template <bool kIndices>
void max_pool_plane_2x2(const int8_t* PARE_RESTRICT in, int8_t* PARE_RESTRICT out, int64_t* PARE_RESTRICT indices,
                        const Planes<2>& planes, const PoolParams<2>& p) {
  if constexpr (kIndices) {
    max_pool_plane_2x2<kIndices, int8_t>(in, out, indices, planes, p);
  } else {
    max_pool_plane_int8(in, out, planes, p);
  }
}

// max_pool{2,3}d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False),
// and without kIndices max_pool2d, its values alone.
template <int kSpatial, typename Tag, bool kIndices = true>
Error max_pool(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 6, kIndices ? 2 : 1);
  const Tensor& self = args.tensor(0, "self");
  const bool ceil_mode = args.boolean_or(5, "ceil_mode", false);
  PARE_TRY(args.status());
  Planes<kSpatial> planes{};
  PARE_TRY(read_planes(ctx, self, &planes));
  PoolParams<kSpatial> p;
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/true, 3, ceil_mode, &p));
  PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), self.dtype, planes, p.out));
  Tensor* indices = nullptr;
  if constexpr (kIndices) {
    PARE_TRY_ASSIGN(indices, allocate_pooled(ctx, args.output(1), ScalarType::Long, planes, p.out));
  }
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
  const int64_t in_plane = planes.volume();
  const int64_t out_plane = p.out_volume();
  // Planes split over the method's threads (work: one compare per tap).
  const uint32_t chunks =
      ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.depth(p.kernel) * p.kernel[kH] * p.kernel[kW]);
  if constexpr (kSpatial == 2) {
    // nn.MaxPool2d(2)'s loop, where the app selects it, in place of the
    // general one: a dispatch of its own rather than a fast path inside the
    // general one, so that a model whose pools all take it traces its tag
    // alone and its runtime carries no general loop (docs/size.md). Without
    // ceil_mode it takes every input size; with it an odd size needs the
    // general loop, which the trace then records too.
    if (is_plain_2x2(planes, p) && kernel_dtype_selected(tags::max_pool2d_2x2_kernel::id, self.dtype)) {
      if (ceil_mode) ctx.record_kernel_dtype(Tag::id, self.dtype);
      return dispatch<tags::max_pool2d_2x2_kernel>(ctx, self.dtype, [&](auto type) -> Error {
        using T = typename decltype(type)::type;
        const T* in = x.data_as<T>();
        T* o = out->data_as<T>();
        int64_t* index = kIndices ? indices->data_as<int64_t>() : nullptr;
        ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            max_pool_plane_2x2<kIndices>(in + i * in_plane, o + i * out_plane,
                                         kIndices ? index + i * out_plane : nullptr, planes, p);
          }
        });
        return Error::Ok;
      });
    }
  }
  return dispatch<Tag>(ctx, self.dtype, [&](auto type) -> Error {
    using T = typename decltype(type)::type;
    // max_pool_plane and max_pool_plane_2x2 have float overloads (vectors).
    const T* in = x.data_as<T>();
    T* o = out->data_as<T>();
    int64_t* index = kIndices ? indices->data_as<int64_t>() : nullptr;
    ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        max_pool_plane<kIndices>(in + i * in_plane, o + i * out_plane, kIndices ? index + i * out_plane : nullptr,
                                 planes, p);
      }
    });
    return Error::Ok;
  });
}

}  // namespace

// aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
Error aten_max_pool2d_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_pool<2, tags::max_pool2d_kernel>(ctx, inputs, outputs);
}

// aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1,
//     bool ceil_mode=False) -> Tensor
//
// What the tracer lowers max_pool2d_with_indices to when the graph reads
// only its values: no indices to compute, store or plan memory for.
Error aten_max_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_pool<2, tags::max_pool2d_kernel, /*kIndices=*/false>(ctx, inputs, outputs);
}

// aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
//     int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
Error aten_max_pool3d_with_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return max_pool<3, tags::max_pool3d_kernel>(ctx, inputs, outputs);
}

}  // namespace kernels
}  // namespace pare
