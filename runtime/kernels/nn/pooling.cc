// avg_pool2d, avg_pool3d, _adaptive_avg_pool2d and _adaptive_avg_pool3d:
// window sums in PyTorch's order, divided as PyTorch divides. The shared
// pieces and the scheme (one body for 2-d and 3-d, scalar loops at the
// rows' ends, vectors in between) are in pooling.h; max pooling is in
// max_pool.cc.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/nn/pooling.h"

namespace pare {
namespace kernels {
namespace {

// The shared pieces (pooling.h).
using namespace pooling;

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
