// aten::constant_pad_nd: pads (or, with negative pads, crops) the trailing
// dims of a tensor of any dtype with a constant.
//
// The output is written once, row by row along its last dim: a row outside
// the input's image is filled, a row inside is fill + copied input row +
// fill. Each row costs O(rank) index work, so any input strides work
// without a separate fill-then-copy pass.

#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {
namespace {

// c10::overflows<T>(v): whether the fill value is out of T's range
// (PyTorch refuses those instead of wrapping). Bool scalars and bool
// tensors never overflow; uint8 accepts negative ints down to -255, which
// wrap (PyTorch's two's-complement exception).
template <typename T>
bool fill_value_overflows(const Scalar& value) {
  if (value.is_bool() || is_same_v<T, bool>) return false;
  if constexpr (is_floating_point_v<T>) {
    if (value.kind() != Scalar::Kind::Double) {
      const double v = static_cast<double>(value.as_int());
      if constexpr (is_same_v<T, Half>) return v < -65504.0 || v > 65504.0;
      return false;
    }
    const double v = value.as_double();
    if (v != v || v == __builtin_inf() || v == -__builtin_inf()) return false;
    double max = 1.7976931348623157e308;
    if constexpr (is_same_v<T, Half>) max = 65504.0;
    if constexpr (is_same_v<T, BFloat16>) max = 3.3895313892515355e38;
    if constexpr (is_same_v<T, float>) max = 3.4028234663852886e38;
    return v < -max || v > max;
  } else {
    // Integral T (bool handled above).
    constexpr bool is_signed = !is_same_v<T, uint8_t>;
    constexpr int bits = static_cast<int>(sizeof(T) * 8);
    // 2^(bits-1) (signed) or 2^bits - 1 (uint8) as the range bound.
    constexpr double upper = is_signed ? static_cast<double>(static_cast<uint64_t>(1) << (bits - 1)) : 255.0;
    if (value.kind() == Scalar::Kind::Double) {
      const double v = value.as_double();
      if (v != v) return true;
      // Signed: [-2^(b-1), 2^(b-1)); uint8: [0, 255].
      return is_signed ? (v < -upper || v >= upper) : (v < 0.0 || v > upper);
    }
    const int64_t v = value.as_int();
    if constexpr (is_same_v<T, int64_t>) {
      return false;
    } else if constexpr (is_signed) {
      const int64_t bound = int64_t{1} << (bits - 1);
      return v < -bound || v >= bound;
    } else {
      return v > 255 || v < -255;
    }
  }
}

template <typename T>
PARE_ALWAYS_INLINE void fill(T* PARE_RESTRICT dst, int64_t n, T v) {
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

}  // namespace

// aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
Error aten_constant_pad_nd(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef pad = args.int_list(1, "pad");
  const Scalar value = args.scalar_or(2, "value", Scalar::from_int(0));
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, pad.size() % 2 == 0, Error::InvalidArgument,
                       "argument 'pad' must have an even length, got %zu", pad.size());
  PARE_CHECK_OR_RETURN(ctx, pad.size() <= 2u * self.dim, Error::InvalidArgument,
                       "argument 'pad' has %zu elements; at most twice the rank of 'self' (%d) are allowed", pad.size(),
                       int{self.dim});

  const size_t rank = self.dim;
  int64_t sizes[kMaxDim];
  int64_t in_start[kMaxDim];   // first input index copied, per dim
  int64_t out_start[kMaxDim];  // where it lands in the output
  int64_t count[kMaxDim];      // how many are copied (0: none)
  bool any_empty = false;
  for (size_t d = 0; d < rank; ++d) {
    const size_t from_end = rank - 1 - d;
    const int64_t lo = 2 * from_end < pad.size() ? pad[2 * from_end] : 0;
    const int64_t hi = 2 * from_end + 1 < pad.size() ? pad[2 * from_end + 1] : 0;
    int64_t size = 0;
    const bool ok = !__builtin_add_overflow(self.sizes[d], lo, &size) && !__builtin_add_overflow(size, hi, &size);
    PARE_CHECK_OR_RETURN(ctx, ok && size >= 0, Error::InvalidArgument,
                         "argument 'pad': dim %zu of size %lld padded by (%lld, %lld) gives a negative size", d,
                         static_cast<long long>(self.sizes[d]), static_cast<long long>(lo), static_cast<long long>(hi));
    sizes[d] = size;
    in_start[d] = lo < 0 ? -lo : 0;
    out_start[d] = lo > 0 ? lo : 0;
    const int64_t available = self.sizes[d] - in_start[d];
    const int64_t room = size - out_start[d];
    count[d] = available < room ? available : room;
    if (count[d] <= 0) {
      count[d] = 0;
      any_empty = true;
    }
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, rank)));
  const size_t numel = out->numel();
  if (numel == 0) return Error::Ok;

  return PARE_DISPATCH(constant_pad_nd_kernel, ctx, self.dtype, T, {
    PARE_CHECK_OR_RETURN(ctx, !fill_value_overflows<T>(value), Error::InvalidArgument,
                         "argument 'value' cannot be converted to %s without overflow", to_string(self.dtype));
    const T v = value.to<T>();
    T* o = out->data_as<T>();
    if (rank == 0) {
      o[0] = self.data_as<T>()[0];
      return Error::Ok;
    }
    if (any_empty) {
      fill<T>(o, static_cast<int64_t>(numel), v);
      return Error::Ok;
    }
    const size_t last = rank - 1;
    const int64_t row = sizes[last];
    const int64_t rows = static_cast<int64_t>(numel) / row;
    const int64_t src_stride = self.strides[last];
    const int64_t head = out_start[last];
    const int64_t body = count[last];
    int64_t index[kMaxDim] = {};
    for (int64_t r = 0; r < rows; ++r) {
      T* PARE_RESTRICT dst = o + r * row;
      const T* src = self.data_as<T>() + in_start[last] * src_stride;
      bool inside = true;
      for (size_t d = 0; d < last; ++d) {
        const int64_t i = index[d] - out_start[d];
        if (i < 0 || i >= count[d]) {
          inside = false;
          break;
        }
        src += (i + in_start[d]) * self.strides[d];
      }
      if (!inside) {
        fill<T>(dst, row, v);
      } else {
        fill<T>(dst, head, v);
        if (src_stride == 1) {
          const T* PARE_RESTRICT s = src;
          for (int64_t j = 0; j < body; ++j) dst[head + j] = s[j];
        } else {
          for (int64_t j = 0; j < body; ++j) dst[head + j] = src[j * src_stride];
        }
        fill<T>(dst + head + body, row - head - body, v);
      }
      for (size_t d = last; d-- > 0;) {
        if (++index[d] < sizes[d]) break;
        index[d] = 0;
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
