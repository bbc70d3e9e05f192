// Factory operators: aten::full, aten::full_like, aten::scalar_tensor,
// aten::empty.memory_format, aten::arange.start_step, and the metadata
// check aten::_assert_tensor_metadata.
//
// torch.zeros / ones / new_zeros / zeros_like export as full / full_like.
// Fill values are checked like PyTorch's Scalar conversion ("value cannot
// be converted to type uint8_t without overflow").

#include "runtime/kernels/indexing/indexing.h"

#include "runtime/core/format.h"
#include "runtime/kernels/common/arith.h"

namespace pare {
namespace kernels {

namespace {

// Fills `out` with `value` converted to its dtype (dispatch on full_kernel);
// an overflow fails naming argument `name`.
Error fill(KernelContext& ctx, Tensor* out, const Scalar& value, const char* name = "fill_value") {
  const size_t numel = out->numel();
  return PARE_DISPATCH(full_kernel, ctx, out->dtype, T, {
    // PyTorch skips the overflow check when it fills a single Half or
    // BFloat16 element (scalar_fill), so torch.full([1], 1e6,
    // dtype=torch.half) is inf but torch.full([2], 1e6, ...) is an error.
    if (!(is_reduced_float_v<T> && numel == 1)) {
      PARE_CHECK_OR_RETURN(ctx, indexing::fits<T>(value), Error::InvalidArgument,
                           "argument '%s': the value cannot be converted to %s without overflow", name,
                           to_string(scalar_type_of<T>));
    }
    using U = indexing::Bits<T>;
    const U bits = __builtin_bit_cast(U, value.to<T>());
    U* PARE_RESTRICT p = out->data_as<U>();
    for (size_t i = 0; i < numel; ++i) p[i] = bits;
    return Error::Ok;
  });
}

// The dtype of torch.full's result when dtype=None: from the fill value.
ScalarType dtype_of(const Scalar& s) { return s.wrapped_dtype(); }

}  // namespace

// aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None,
//   Device? device=None, bool? pin_memory=None) -> Tensor
Error aten_full(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 6, 1);
  const IntArrayRef size = args.int_list(0, "size");
  const Scalar fill_value = args.scalar(1, "fill_value");
  const Optional<ScalarType> dtype = args.optional_dtype(2, "dtype");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 3, 4, 5));
  PARE_TRY(indexing::check_sizes(ctx, size, "size"));
  const ScalarType out_dtype = dtype.has_value ? dtype.value : dtype_of(fill_value);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, size));
  return fill(ctx, out, fill_value);
}

// aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None,
//   Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
Error aten_full_like(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 7, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar fill_value = args.scalar(1, "fill_value");
  const Optional<ScalarType> dtype = args.optional_dtype(2, "dtype");
  (void)args.optional_int64(6, "memory_format");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 3, 4, 5));
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), dtype.has_value ? dtype.value : self.dtype, self.size_span()));
  return fill(ctx, out, fill_value);
}

// aten::fill.Scalar(Tensor self, Scalar value) -> Tensor
//
// The functional form of `x.fill_(v)`: a tensor of self's sizes and dtype
// holding `value`, converted with PyTorch's overflow check.
Error aten_fill_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar value = args.scalar(1, "value");
  PARE_TRY(args.status());
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  return fill(ctx, out, value, "value");
}

// aten::fill.Tensor(Tensor self, Tensor value) -> Tensor
//
// self's sizes and dtype, every element the 0-dim `value` converted as a
// copy converts (PyTorch casts here, with no overflow check: 300 fills an
// int8 tensor with 44), so it is a broadcast copy through copy_kernel.
Error aten_fill_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& value = args.tensor(1, "value");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, value.dim == 0, Error::InvalidShape,
                       "argument 'value' must be a 0-dim tensor, got sizes %s",
                       sizes_to_string(value.size_span()).text);
  Tensor from = value;  // broadcast: stride 0 along every dim of self
  from.dim = self.dim;
  for (size_t d = 0; d < self.dim; ++d) {
    from.sizes[d] = self.sizes[d];
    from.strides[d] = 0;
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  return convert_into(ctx, from, *out);
}

// aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,
//   bool? pin_memory=None) -> Tensor
//
// dtype=None gives the default dtype (Float), whatever the scalar's kind.
Error aten_scalar_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 5, 1);
  const Scalar s = args.scalar(0, "s");
  const Optional<ScalarType> dtype = args.optional_dtype(1, "dtype");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 2, 3, 4));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), dtype.has_value ? dtype.value : ScalarType::Float,
                                                    IntArrayRef()));
  return fill(ctx, out, s);
}

// aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None,
//   Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
//
// Zero-filled, so results never depend on stale arena contents.
Error aten_empty_memory_format(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 6, 1);
  const IntArrayRef size = args.int_list(0, "size");
  const Optional<ScalarType> dtype = args.optional_dtype(1, "dtype");
  (void)args.optional_int64(5, "memory_format");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 2, 3, 4));
  PARE_TRY(indexing::check_sizes(ctx, size, "size"));
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), dtype.has_value ? dtype.value : ScalarType::Float, size));
  if (out->nbytes() > 0) __builtin_memset(out->data(), 0, out->nbytes());
  return Error::Ok;
}

// aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None,
//   Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
//
// Length and values as PyTorch's CPU kernel: Long ranges are sized in
// integer arithmetic, others as ceil((end - start) / step) in double;
// element i is start + i * step in the accumulation type (double for
// float, float for Half/BFloat16, int64 for integers).
Error aten_arange_start_step(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 7, 1);
  const Scalar start = args.scalar(0, "start");
  const Scalar end = args.scalar(1, "end");
  const Scalar step = args.scalar_or(2, "step", Scalar::from_int(1));
  const Optional<ScalarType> dtype = args.optional_dtype(3, "dtype");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 4, 5, 6));
  const bool any_float = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  const ScalarType out_dtype = dtype.has_value ? dtype.value : (any_float ? ScalarType::Float : ScalarType::Long);
  PARE_CHECK_OR_RETURN(ctx, out_dtype != ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'dtype': arange does not support Bool (as in PyTorch)");

  int64_t length = 0;
  if (out_dtype == ScalarType::Long) {
    const int64_t s = start.to<int64_t>();
    const int64_t e = end.to<int64_t>();
    const int64_t d = step.to<int64_t>();
    PARE_CHECK_OR_RETURN(ctx, d != 0, Error::InvalidArgument, "argument 'step' must be nonzero");
    PARE_CHECK_OR_RETURN(ctx, (d > 0 && e >= s) || (d < 0 && e <= s), Error::InvalidArgument,
                         "arguments 'start' (%lld), 'end' (%lld) and 'step' (%lld): the bounds are inconsistent "
                         "with the step's sign",
                         static_cast<long long>(s), static_cast<long long>(e), static_cast<long long>(d));
    // ceil((e - s) / d) for same-signed operands: (e - s + d - sgn(d)) / d.
    const int64_t sign = d > 0 ? 1 : -1;
    int64_t span = 0;
    PARE_CHECK_OR_RETURN(ctx, !__builtin_sub_overflow(e, s, &span) && !__builtin_add_overflow(span, d - sign, &span),
                         Error::InvalidArgument, "the range [%lld, %lld) with step %lld overflows",
                         static_cast<long long>(s), static_cast<long long>(e), static_cast<long long>(d));
    length = span / d;
  } else {
    const double s = start.as_double();
    const double e = end.as_double();
    const double d = step.as_double();
    PARE_CHECK_OR_RETURN(ctx, d > 0 || d < 0, Error::InvalidArgument, "argument 'step' must be nonzero");
    PARE_CHECK_OR_RETURN(ctx, s - s == 0 && e - e == 0, Error::InvalidArgument,
                         "arguments 'start' and 'end' must be finite");
    PARE_CHECK_OR_RETURN(ctx, (d > 0 && e >= s) || (d < 0 && e <= s), Error::InvalidArgument,
                         "arguments 'start', 'end' and 'step': the bounds are inconsistent with the step's sign");
    double size = (e - s) / d;
    const double truncated = static_cast<double>(static_cast<int64_t>(size < 9.2e18 ? size : 0.0));
    size = truncated < size ? truncated + 1 : truncated;  // ceil without libm
    PARE_CHECK_OR_RETURN(ctx, size >= 0 && size < 9.2e18, Error::InvalidArgument,
                         "the range is too large (%s elements)", real_to_string(size).text);
    length = static_cast<int64_t>(size);
  }
  const int64_t sizes[] = {length};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, IntArrayRef(sizes, 1)));
  return PARE_DISPATCH(arange_kernel, ctx, out_dtype, T, {
    using Acc = acc_type_t<T>;
    const Acc s = start.to<Acc>();
    const Acc d = step.to<Acc>();
    T* PARE_RESTRICT y = out->data_as<T>();
    for (int64_t i = 0; i < length; ++i) {
      y[i] = convert<T>(arith::add<Acc>(s, arith::mul<Acc>(d, static_cast<Acc>(i))));
    }
    return Error::Ok;
  });
}

// aten::_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None,
//   ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()
//
// Checks sizes and dtype. Strides are not compared: Pare's kernels may
// produce contiguous results where PyTorch keeps an input's layout, and no
// kernel depends on a particular layout.
Error aten__assert_tensor_metadata(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 6, 0);
  const Tensor& a = args.tensor(0, "a");
  const Optional<IntArrayRef> size = args.optional_int_list(1, "size");
  (void)args.optional_int_list(2, "stride");
  const Optional<ScalarType> dtype = args.optional_dtype(3, "dtype");
  const char* device = args.optional_string(4, "device");
  const Optional<int64_t> layout = args.optional_int64(5, "layout");
  PARE_TRY(args.status());
  if (size.has_value) {
    bool same = size.value.size() == a.dim;
    for (size_t d = 0; same && d < a.dim; ++d) same = size.value[d] == a.sizes[d];
    PARE_CHECK_OR_RETURN(ctx, same, Error::InvalidShape,
                         "tensor metadata mismatch: argument 'size' is %s but the tensor has sizes %s",
                         sizes_to_string(size.value).text, sizes_to_string(a.size_span()).text);
  }
  PARE_CHECK_OR_RETURN(ctx, !dtype.has_value || dtype.value == a.dtype, Error::UnsupportedDtype,
                       "tensor metadata mismatch: argument 'dtype' is %s but the tensor is %s", to_string(dtype.value),
                       to_string(a.dtype));
  PARE_CHECK_OR_RETURN(ctx, device == nullptr || string_equal(device, "cpu"), Error::NotImplemented,
                       "argument 'device': only 'cpu' is supported, got '%s'", device);
  PARE_CHECK_OR_RETURN(ctx, !layout.has_value || layout.value == 0, Error::NotImplemented,
                       "argument 'layout': only torch.strided (0) is supported, got %lld",
                       static_cast<long long>(layout.value));
  return Error::Ok;
}

}  // namespace kernels
}  // namespace pare
