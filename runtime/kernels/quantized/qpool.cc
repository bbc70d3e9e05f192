// pare::qmax_pool2d: 2-d max pooling of int8 values without indices, what
// the quantize pass writes for a max_pool2d_with_indices whose indices no
// one reads (ResNet's stem pool) between a dequantize and a quantize with
// one scale and zero point. Quantization is monotonic, so the int8 max is
// the reference's float max quantized: exact.
//
// Windows, output sizes and argument checks are max_pool2d_with_indices'
// (nn/pooling.h). Each output row runs 16 outputs at a time wherever every
// tap of the block lies inside the row (stride 1 or 2: a 16-byte load, or
// every other byte of 32), the scalar loop at the row's ends.
// Without indices to track, the order of the taps does not matter: a
// maximum of int8 values is the same whatever the ISA or the order, so every
// build gives the same bits.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/nn/pooling.h"

namespace pare {
namespace kernels {
namespace {

using namespace pooling;

typedef int8_t bytes16 __attribute__((vector_size(16)));
typedef int8_t bytes32 __attribute__((vector_size(32)));
constexpr int64_t kBytes = 16;

PARE_ALWAYS_INLINE bytes16 max16(bytes16 a, bytes16 b) { return a > b ? a : b; }

// The 16 bytes at p, 0 <= p - row < width - 15 (stride 1); or (stride 2)
// every other one of the 31 from p: the even bytes of the 32 at p for a
// window's first column, else the odd bytes of the 32 at p - 1, so that no
// load reads past the last tap (the plane's last byte, at its end).
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

// The taps [first, end) of window `o` along dim d (stride and dilation as
// p's), clamped to an input of `in`.
PARE_ALWAYS_INLINE Taps window_taps(int64_t o, int d, int64_t in, const PoolParams<2>& p) {
  const int64_t start = o * p.stride[d] - p.padding[d];
  const int64_t step = p.dilation[d];
  const int64_t first = start >= 0 ? start : start + ((-start + step - 1) / step) * step;
  return {first, min_of(start + (p.kernel[d] - 1) * step + 1, in)};
}

// One H x W plane. A window with no tap inside the input (ceil_mode's last
// one can have none) gives -128, as max_pool2d_with_indices on int8 does.
void qmax_pool_plane(const int8_t* PARE_RESTRICT in, int8_t* PARE_RESTRICT out, const Planes<2>& planes,
                     const PoolParams<2>& p) {
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
  for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
    const Taps rows = window_taps(oh, kH, planes.height, p);
    int8_t* o = out + oh * p.out[kW];
    const auto one = [&](int64_t ow) {
      const Taps c = window_taps(ow, kW, width, p);
      int8_t max = -128;
      for (int64_t ih = rows.first; ih < rows.end; ih += p.dilation[kH]) {
        const int8_t* row = in + ih * width;
        for (int64_t iw = c.first; iw < c.end; iw += dw) max = row[iw] > max ? row[iw] : max;
      }
      o[ow] = max;
    };
    int64_t ow = 0;
    for (; ow < begin; ++ow) one(ow);
    const auto block = [&](int64_t first) {
      bytes16 max = bytes16{} + int8_t{-128};
      const int8_t* start = in + first * s - p.padding[kW];
      for (int64_t ih = rows.first; ih < rows.end; ih += p.dilation[kH]) {
        const int8_t* row = start + ih * width;
        for (int64_t kw = 0; kw < p.kernel[kW]; ++kw) max = max16(max, load_taps(row + kw * dw, s, kw == 0));
      }
      __builtin_memcpy(o + first, &max, sizeof(max));
    };
    ow = vector_blocks<kBytes>(ow, end, block);
    for (; ow < p.out[kW]; ++ow) one(ow);
  }
}

}  // namespace

// pare::qmax_pool2d(Tensor input, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation,
//   bool ceil_mode) -> Tensor
// max_pool2d_with_indices' values on an int8 (C, H, W) or (N, C, H, W) input.
Error pare_qmax_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& input = args.tensor(0, "input");
  const bool ceil_mode = args.boolean(5, "ceil_mode");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, input.dtype == ScalarType::Char, Error::UnsupportedDtype,
                       "argument 'input' must be an int8 (Char) tensor, got %s: it takes the output of a "
                       "quantize_per_tensor to int8",
                       to_string(input.dtype));
  Planes<2> planes{};
  PARE_TRY(read_planes(ctx, input, &planes));
  PoolParams<2> p;
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/true, 3, ceil_mode, &p));
  return PARE_DISPATCH(qmax_pool2d_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, int8_t>, "int8 ops take int8 inputs");
    PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), ScalarType::Char, planes, p.out));
    if (out->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Char));
    const int8_t* in = x.data_as<int8_t>();
    int8_t* o = out->data_as<int8_t>();
    const int64_t in_plane = planes.volume();
    const int64_t out_plane = p.out_volume();
    // Planes split over the method's threads (work: one max per tap).
    const uint32_t chunks = ctx.chunks_for(planes.count, 1, planes.count * out_plane * p.kernel[kH] * p.kernel[kW]);
    ctx.parallel(chunks, planes.count, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) qmax_pool_plane(in + i * in_plane, o + i * out_plane, planes, p);
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
