// aten::convolution with a 5-d weight (convolution.cc runs the other
// ranks): input [N, C, T, H, W], weight [O, C / groups, KT, KH, KW].
//
// For each batch n and output frame t, slab (n, t) is [C * KT, H, W] with
// channel c * KT + k = x[n, c, t * st - pt + k * dt] (zeros outside the
// input's frames). The weight viewed as [O, (C / groups) * KT, KH, KW] is
// already in the slabs' channel order (each group's channels stay
// contiguous), so a 2-d convolution over the N * T_out slabs gives
// y[n, :, t]. Everything here is reached only from the convolution3d_kernel
// dispatch, which aten::convolution calls only when the app selects a dtype
// of that tag.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/nn/convolution.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

using conv::Geometry;
using convolution::run_2d;

struct Conv3dGeometry {
  Geometry slabs;  // the 2-d convolution: batch N * T_out, C * KT input channels
  int64_t batch;
  int64_t channels;
  int64_t frames, out_frames;
  int64_t kt, st, pt, dt;
  size_t slab_elements;  // N * T_out * C * KT * H * W
};

// Checks the arguments of a non-transposed 3-d convolution (ranks, dtypes
// and groups are already checked), allocates the output and fills
// `*geometry`.
Error conv3d_prepare(KernelContext& ctx, Value& output, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     IntArrayRef stride_arg, IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups,
                     Conv3dGeometry* geometry, Tensor** out) {
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  PARE_TRY(nn::read_spatial(ctx, stride_arg, 3, "stride", 1, nullptr, stride));
  PARE_TRY(nn::read_spatial(ctx, padding_arg, 3, "padding", 0, nullptr, padding));
  PARE_TRY(nn::read_spatial(ctx, dilation_arg, 3, "dilation", 1, nullptr, dilation));

  Conv3dGeometry g3{};
  Geometry& g = g3.slabs;
  g3.batch = input.sizes[0];
  g3.channels = input.sizes[1];
  g3.frames = input.sizes[2];
  g.height = input.sizes[3];
  g.width = input.sizes[4];
  g3.kt = weight.sizes[2];
  g3.st = stride[0];
  g3.pt = padding[0];
  g3.dt = dilation[0];
  g.set_window(weight.sizes[3], weight.sizes[4], stride + 1, padding + 1, dilation + 1);
  PARE_CHECK_OR_RETURN(ctx, g3.frames >= 1 && g.height >= 1 && g.width >= 1, Error::InvalidShape,
                       "'input' of sizes %s: only the batch and channel dims may be empty",
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, g3.kt >= 1 && g.kh >= 1 && g.kw >= 1, Error::InvalidShape,
                       "argument 'weight' of sizes %s has an empty kernel", sizes_to_string(weight.size_span()).text);
  g.out_channels = weight.sizes[0];
  PARE_CHECK_OR_RETURN(ctx, g.out_channels >= 1 && g.out_channels % groups == 0, Error::InvalidShape,
                       "argument 'weight' of sizes %s: out_channels must be a positive multiple of groups = %lld",
                       sizes_to_string(weight.size_span()).text, static_cast<long long>(groups));
  // groups <= out_channels here, so cg * groups <= weight.numel() cannot overflow.
  const int64_t cg = weight.sizes[1];
  PARE_CHECK_OR_RETURN(ctx, g3.channels == cg * groups, Error::InvalidShape,
                       "given groups=%lld and 'weight' of sizes %s, expected 'input' of sizes %s to have %lld "
                       "channels, but it has %lld",
                       static_cast<long long>(groups), sizes_to_string(weight.size_span()).text,
                       sizes_to_string(input.size_span()).text, static_cast<long long>(cg * groups),
                       static_cast<long long>(g3.channels));
  PARE_CHECK_OR_RETURN(ctx,
                       conv::output_extent(g3.frames, g3.kt, g3.st, g3.pt, g3.dt, &g3.out_frames) &&
                           conv::output_extent(g.height, g.kh, g.sh, g.ph, g.dh, &g.out_h) &&
                           conv::output_extent(g.width, g.kw, g.sw, g.pw, g.dw, &g.out_w),
                       Error::InvalidShape,
                       "'input' of sizes %s with padding (%lld, %lld, %lld) is smaller than the dilated kernel of "
                       "'weight' %s",
                       sizes_to_string(input.size_span()).text, static_cast<long long>(g3.pt),
                       static_cast<long long>(g.ph), static_cast<long long>(g.pw),
                       sizes_to_string(weight.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, bias == nullptr || (bias->dim == 1 && bias->sizes[0] == g.out_channels),
                       Error::InvalidShape, "argument 'bias' must be 1-d with %lld elements, got sizes %s",
                       static_cast<long long>(g.out_channels),
                       sizes_to_string(bias != nullptr ? bias->size_span() : IntArrayRef()).text);

  const int64_t sizes[5] = {g3.batch, g.out_channels, g3.out_frames, g.out_h, g.out_w};
  PARE_TRY_ASSIGN(*out, ctx.allocate_output(output, input.dtype, IntArrayRef(sizes, 5)));
  if ((*out)->numel() == 0) {
    *geometry = g3;
    return Error::Ok;
  }
  // The slabs: N * T_out images of C * KT channels. Their sizes are not
  // bounded by the input's (KT copies of each frame), so check them.
  const int64_t slab_sizes[5] = {g3.batch, g3.out_frames, g3.channels, g3.kt, g.planes_in()};
  const bool slabs_fit = checked_numel(IntArrayRef(slab_sizes, 5), &g3.slab_elements) &&
                         !__builtin_mul_overflow(g3.channels, g3.kt, &g.in_channels) &&
                         !__builtin_mul_overflow(g3.batch, g3.out_frames, &g.batch);
  size_t slab_bytes = 0;
  PARE_CHECK_OR_RETURN(
      ctx, slabs_fit && !__builtin_mul_overflow(g3.slab_elements, element_size(input.dtype), &slab_bytes),
      Error::InvalidShape,
      "'input' of sizes %s with 'weight' %s: the %lld temporal taps per output frame overflow the "
      "size of the unfolded input",
      sizes_to_string(input.size_span()).text, sizes_to_string(weight.size_span()).text, static_cast<long long>(g3.kt));
  g.groups = groups;
  g.cg = cg * g3.kt;  // <= weight.numel(): no overflow
  g.og = g.out_channels / groups;
  *geometry = g3;
  return Error::Ok;
}

template <typename T>
Error conv3d(KernelContext& ctx, const Conv3dGeometry& g3, const T* x, const T* w, const Tensor* bias, T* y) {
  const Geometry& g = g3.slabs;
  const int64_t plane = g.planes_in();
  const size_t plane_bytes = static_cast<size_t>(plane) * sizeof(T);
  PARE_TRY_ASSIGN(void* slab_memory, ctx.allocate_scratch(g3.slab_elements * sizeof(T)));
  T* slabs = static_cast<T*>(slab_memory);
  T* dst = slabs;
  for (int64_t n = 0; n < g3.batch; ++n) {
    for (int64_t t = 0; t < g3.out_frames; ++t) {
      for (int64_t c = 0; c < g3.channels; ++c) {
        const T* frames = x + (n * g3.channels + c) * g3.frames * plane;
        for (int64_t k = 0; k < g3.kt; ++k, dst += plane) {
          const int64_t frame = t * g3.st - g3.pt + k * g3.dt;
          if (frame < 0 || frame >= g3.frames) {
            __builtin_memset(dst, 0, plane_bytes);
          } else {
            __builtin_memcpy(dst, frames + frame * plane, plane_bytes);
          }
        }
      }
    }
  }
  // The 2-d convolution writes [N * T_out, O, H', W']: y itself when there
  // is one output frame, else scratch transposed into y[n, o, t] below.
  const int64_t out_plane = g.planes_out();
  T* images = y;
  if (g3.out_frames > 1) {
    PARE_TRY_ASSIGN(void* memory,
                    ctx.allocate_scratch(static_cast<size_t>(g.batch * g.out_channels * out_plane) * sizeof(T)));
    images = static_cast<T*>(memory);
  }
  PARE_TRY(run_2d<T>(ctx, g, slabs, w, bias, images));
  if (images == y) return Error::Ok;
  const size_t out_bytes = static_cast<size_t>(out_plane) * sizeof(T);
  const T* src = images;
  for (int64_t n = 0; n < g3.batch; ++n) {
    for (int64_t t = 0; t < g3.out_frames; ++t) {
      for (int64_t o = 0; o < g.out_channels; ++o, src += out_plane) {
        __builtin_memcpy(y + ((n * g.out_channels + o) * g3.out_frames + t) * out_plane, src, out_bytes);
      }
    }
  }
  return Error::Ok;
}

// The non-transposed 5-d case of aten::convolution, for one dtype.
template <typename T>
Error convolution3d_for(KernelContext& ctx, Value& output, const Tensor& input, const Tensor& weight,
                        const Tensor* bias, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                        int64_t groups) {
  Conv3dGeometry g{};
  Tensor* out = nullptr;
  PARE_TRY(conv3d_prepare(ctx, output, input, weight, bias, stride, padding, dilation, groups, &g, &out));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  PARE_TRY_ASSIGN(const Tensor w, as_contiguous(ctx, weight, weight.dtype));
  return conv3d<T>(ctx, g, x.data_as<T>(), w.data_as<T>(), bias, out->data_as<T>());
}

}  // namespace

namespace convolution {

Error convolution3d(KernelContext& ctx, Value& output, const Tensor& input, const Tensor& weight, const Tensor* bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, int64_t groups) {
  PARE_CHECK_OR_RETURN(ctx, !transposed, Error::NotImplemented,
                       "argument 'transposed': transposed 3-d convolution ('weight' of sizes %s) is not supported",
                       sizes_to_string(weight.size_span()).text);
  return PARE_DISPATCH(convolution3d_kernel, ctx, input.dtype, T, {
    return convolution3d_for<T>(ctx, output, input, weight, bias, stride, padding, dilation, groups);
  });
}

}  // namespace convolution
}  // namespace kernels
}  // namespace pare
