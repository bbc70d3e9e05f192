#pragma once
// 2-d and 3-d pooling, what max pooling (max_pool.cc) and average pooling
// (pooling.cc) share: the input read as planes, the window arguments and
// output size, and the float helpers of their vector loops. Inputs are
// (C, H, W) or (N, C, H, W), and (C, D, H, W) or (N, C, D, H, W). One body
// serves both: 2-d pooling is 3-d pooling over a depth of one plane with a
// one-plane window.
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

#include "runtime/kernels/common/simd.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace pooling {

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

// The taps of a window along one dim: [first, end) in steps of the
// dilation, clamped to the input.
struct Taps {
  int64_t first, end;
};

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

// Average pooling (pooling.cc, and the int8 pare::qavg_pool2d of
// quantized/qelementwise.cc): the taps of a window along one dim: `pool` of them
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

// kLanes consecutive input columns starting at `p`, or every other one.
PARE_ALWAYS_INLINE simd::vec load_columns(const float* p, int64_t stride) {
  return stride == 1 ? simd::loadv(p) : simd::load_even(p);
}

}  // namespace pooling
}  // namespace kernels
}  // namespace pare
