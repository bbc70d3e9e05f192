// aten::col2im: what nn.Fold exports to. Sums sliding blocks back into an
// image: input (N, C * kh * kw, L) or unbatched (C * kh * kw, L), where L
// is the number of kh x kw blocks that fit output_size under the padding,
// dilation and stride, into (N, C, H, W) or (C, H, W).
//
// col2im is the adjoint of the im2col matrix a convolution multiplies
// (common/im2col.h), so it shares its geometry (gemm::Im2ColGeometry) and
// the sliding-window count (nn::window_output_size). The checks are
// PyTorch's (col2im_shape_check), in one-line messages.
//
// Values are added as PyTorch's CPU loop adds them (aten/src/ATen/native/
// im2col.h: col2im): for each column row (channel, ky, kx) in order, into
// an image zeroed first, each addition rounded to the dtype (Half and
// BFloat16 too) and Bool summed as logical or. Every pixel receives at most
// one value per (ky, kx), so the order of additions to a pixel, and thus
// the result, is torch's. Output planes are independent: the threads split
// them.

#include "runtime/kernels/common/im2col.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

// One `int[2]` argument of col2im: exactly two values (PyTorch does not
// expand a single one here), each in [min_value, nn::kMaxSpatialParam].
Error read_pair(KernelContext& ctx, IntArrayRef list, const char* name, int64_t min_value, int64_t* out) {
  PARE_CHECK_OR_RETURN(ctx, list.size() == 2, Error::InvalidArgument,
                       "argument '%s' must have 2 values (height, width), got %zu", name, list.size());
  return nn::read_spatial(ctx, list, 2, name, min_value, nullptr, out);
}

template <typename T>
PARE_ALWAYS_INLINE T accumulate(T sum, T x) {
  if constexpr (is_same_v<T, bool>) {
    return sum || x;
  } else if constexpr (is_reduced_float_v<T>) {
    return T(static_cast<float>(sum) + static_cast<float>(x));
  } else {
    return sum + x;
  }
}

// Output plane `plane` (= n * channels + c): its column rows are
// c * kh * kw + (ky * kw + kx) of batch n.
template <typename T>
void fold_plane(const gemm::Im2ColGeometry& g, int64_t channels, int64_t blocks_h, const T* cols,
                const int64_t* strides, int64_t plane, T* out) {
  const int64_t n = plane / channels;
  const int64_t c = plane % channels;
  const int64_t plane_size = g.height * g.width;
  T* image = out + plane * plane_size;
  for (int64_t i = 0; i < plane_size; ++i) image[i] = T(0);
  const T* batch = cols + n * strides[0];
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const T* row = batch + ((c * g.kh + ky) * g.kw + kx) * strides[1];
      // The block columns bx whose pixel bx * sw - pw + kx * dw is inside
      // the image: [bx_lo, bx_hi).
      const int64_t x0 = kx * g.dw - g.pw;
      const int64_t bx_lo = x0 >= 0 ? 0 : (-x0 + g.sw - 1) / g.sw;
      const int64_t room = g.width - x0;  // pixels from x0 to the right edge
      int64_t bx_hi = room <= 0 ? 0 : (room + g.sw - 1) / g.sw;
      bx_hi = bx_hi < g.out_w ? bx_hi : g.out_w;
      for (int64_t by = 0; by < blocks_h; ++by) {
        const int64_t y = by * g.sh - g.ph + ky * g.dh;
        if (y < 0 || y >= g.height) continue;
        const T* src = row + by * g.out_w * strides[2];
        T* dst = image + y * g.width;
        for (int64_t bx = bx_lo; bx < bx_hi; ++bx) {
          T& pixel = dst[x0 + bx * g.sw];
          pixel = accumulate<T>(pixel, src[bx * strides[2]]);
        }
      }
    }
  }
}

}  // namespace

// aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding,
//     int[2] stride) -> Tensor
Error aten_col2im(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef output_size = args.int_list(1, "output_size");
  const IntArrayRef kernel_size = args.int_list(2, "kernel_size");
  const IntArrayRef dilation = args.int_list(3, "dilation");
  const IntArrayRef padding = args.int_list(4, "padding");
  const IntArrayRef stride = args.int_list(5, "stride");
  PARE_TRY(args.status());
  int64_t size[2], kernel[2], dil[2], pad[2], str[2];
  PARE_TRY(read_pair(ctx, output_size, "output_size", 1, size));
  PARE_TRY(read_pair(ctx, kernel_size, "kernel_size", 1, kernel));
  PARE_TRY(read_pair(ctx, dilation, "dilation", 1, dil));
  PARE_TRY(read_pair(ctx, padding, "padding", 0, pad));
  PARE_TRY(read_pair(ctx, stride, "stride", 1, str));

  const bool batched = self.dim == 3;
  const int first = batched ? 1 : 0;  // the (C * kh * kw, L) dims
  PARE_CHECK_OR_RETURN(ctx, (self.dim == 2 || batched) && self.sizes[first] != 0 && self.sizes[first + 1] != 0,
                       Error::InvalidShape,
                       "argument 'self' must be 2-d (C * kh * kw, L) or 3-d (N, C * kh * kw, L) with only the batch "
                       "dim empty, got sizes %s",
                       sizes_to_string(self.size_span()).text);
  const int64_t taps = kernel[0] * kernel[1];  // both at most 2^30: no overflow
  const int64_t column_rows = self.sizes[first];
  PARE_CHECK_OR_RETURN(ctx, column_rows % taps == 0, Error::InvalidShape,
                       "argument 'self' of sizes %s: dim %d (%lld) must be a multiple of kernel_size %lld x %lld",
                       sizes_to_string(self.size_span()).text, first, static_cast<long long>(column_rows),
                       static_cast<long long>(kernel[0]), static_cast<long long>(kernel[1]));
  int64_t blocks[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    PARE_CHECK_OR_RETURN(
        ctx, nn::window_output_size(size[i], kernel[i], str[i], pad[i], dil[i], false, &blocks[i]), Error::InvalidShape,
        "no sliding block fits: output_size %lld x %lld with padding %lld x %lld is smaller than "
        "the dilated kernel_size %lld x %lld (dilation %lld x %lld)",
        static_cast<long long>(size[0]), static_cast<long long>(size[1]), static_cast<long long>(pad[0]),
        static_cast<long long>(pad[1]), static_cast<long long>(kernel[0]), static_cast<long long>(kernel[1]),
        static_cast<long long>(dil[0]), static_cast<long long>(dil[1]));
  }
  int64_t block_count = 0;
  const bool fits = !__builtin_mul_overflow(blocks[0], blocks[1], &block_count);
  PARE_CHECK_OR_RETURN(
      ctx, fits && block_count == self.sizes[first + 1], Error::InvalidShape,
      "argument 'self' of sizes %s: dim %d must be the number of sliding blocks, %lld x %lld for "
      "output_size %lld x %lld, kernel_size %lld x %lld, dilation %lld x %lld, padding %lld x %lld "
      "and stride %lld x %lld, got %lld",
      sizes_to_string(self.size_span()).text, first + 1, static_cast<long long>(blocks[0]),
      static_cast<long long>(blocks[1]), static_cast<long long>(size[0]), static_cast<long long>(size[1]),
      static_cast<long long>(kernel[0]), static_cast<long long>(kernel[1]), static_cast<long long>(dil[0]),
      static_cast<long long>(dil[1]), static_cast<long long>(pad[0]), static_cast<long long>(pad[1]),
      static_cast<long long>(str[0]), static_cast<long long>(str[1]), static_cast<long long>(self.sizes[first + 1]));

  const int64_t batch = batched ? self.sizes[0] : 1;
  const int64_t channels = column_rows / taps;
  const int64_t out_sizes[] = {batch, channels, size[0], size[1]};
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), self.dtype,
                                      batched ? IntArrayRef(out_sizes, 4) : IntArrayRef(out_sizes + 1, 3)));
  const gemm::Im2ColGeometry g{size[0], size[1], blocks[1], kernel[0], kernel[1], str[0],
                               str[1],  pad[0],  pad[1],    dil[0],    dil[1]};
  // Strides of (n, column row, block), the batch stride unused unbatched.
  const int64_t strides[3] = {batched ? self.strides[0] : 0, self.strides[first], self.strides[first + 1]};
  return PARE_DISPATCH(col2im_kernel, ctx, self.dtype, T, {
    if (out->numel() == 0) return Error::Ok;
    const int64_t planes = batch * channels;
    const uint32_t chunks = ctx.chunks_for(planes, 1, planes * taps * block_count);
    const T* cols = self.data_as<T>();
    T* o = out->data_as<T>();
    ctx.parallel(chunks, planes, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) fold_plane<T>(g, channels, blocks[0], cols, strides, plane, o);
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
