// Tensor dtype conversion (see convert.h).

#include "runtime/kernels/common/convert.h"

#include "runtime/kernels/common/loops.h"

namespace pare {

Error convert_into(KernelContext& ctx, const Tensor& src, const Tensor& dst) {
  if (src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous()) {
    // Same bytes, same order: no per-element work (and no dtype dispatch,
    // so a plain copy never needs copy_kernel in the manifest).
    if (src.numel() > 0) __builtin_memcpy(dst.data(), src.data(), src.nbytes());
    return Error::Ok;
  }
  const Tensor* inputs[] = {&src};
  const loops::LoopGeometry g = loops::make_geometry(dst, inputs, 1);
  return dispatch<tags::copy_kernel>(ctx, src.dtype, [&](auto src_tag) -> Error {
    using From = typename decltype(src_tag)::type;
    return dispatch<tags::copy_kernel>(ctx, dst.dtype, [&](auto dst_tag) -> Error {
      using To = typename decltype(dst_tag)::type;
      const From* in[] = {src.data_as<From>()};
      loops::for_each_element<To, From, 1>(g, dst.data_as<To>(), in, [](From v) { return convert<To, From>(v); });
      return Error::Ok;
    });
  });
}

namespace {

// src's values as `dtype` in scratch, contiguous or channels-last.
PARE_ALWAYS_INLINE Result<Tensor> converted_copy(KernelContext& ctx, const Tensor& src, ScalarType dtype,
                                                 bool channels_last) {
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(src.numel() * element_size(dtype)));
  Tensor dst = make_tensor(memory, dtype, src.size_span());
  if (channels_last) set_channels_last_strides(dst);
  PARE_TRY(convert_into(ctx, src, dst));
  return dst;
}

}  // namespace

Result<Tensor> as_contiguous(KernelContext& ctx, const Tensor& src, ScalarType dtype) {
  if (src.dtype == dtype && src.is_contiguous()) return src;
  return converted_copy(ctx, src, dtype, /*channels_last=*/false);
}

Result<Tensor> as_channels_last(KernelContext& ctx, const Tensor& src, ScalarType dtype) {
  if (src.dtype == dtype && src.is_channels_last()) return src;
  return converted_copy(ctx, src, dtype, /*channels_last=*/true);
}

}  // namespace pare
