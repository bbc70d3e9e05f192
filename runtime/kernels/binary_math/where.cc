// aten::where.self: a select over three broadcast operands.
//
// Unlike other elementwise ops the operands have different element types
// (a Bool condition, values of the result dtype), so instead of
// Elementwise<N> (one input type) this kernel promotes `self` and `other`
// itself and walks the loop geometry with its own inner loops: a branch-free
// select over contiguous rows, with either value operand possibly a single
// broadcast element (where(mask, x, 0.0)), which the compiler vectorises;
// any other stride pattern takes a strided loop.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/elementwise.h"

namespace pare {
namespace kernels {
namespace {

// kA / kB: the value operand advances with the row (true) or is one
// repeated element (false). Condition and output are contiguous.
template <bool kA, bool kB, typename T>
PARE_ALWAYS_INLINE void select_row(int64_t n, T* PARE_RESTRICT out, const uint8_t* PARE_RESTRICT cond,
                                   const T* PARE_RESTRICT a, const T* PARE_RESTRICT b) {
  const T a0 = a[0];
  const T b0 = b[0];
  for (int64_t i = 0; i < n; ++i) {
    // Load both sides unconditionally: a select of two loaded values is
    // if-converted (a blend), a conditional load is a branch.
    const T x = kA ? a[i] : a0;
    const T y = kB ? b[i] : b0;
    out[i] = cond[i] != 0 ? x : y;
  }
}

// out = cond ? a : b over the geometry (operand 0 the condition, read as
// bytes: Bool, or the deprecated Byte mask PyTorch still accepts).
template <typename T>
void select(const loops::LoopGeometry& g, T* out, const uint8_t* cond, const T* a, const T* b) {
  if (g.numel == 0) return;
  if (g.dim == 0) {
    *out = cond[0] != 0 ? a[0] : b[0];
    return;
  }
  const size_t inner = g.dim - 1;
  const int64_t n = g.sizes[inner];
  const int64_t so = g.out_strides[inner];
  const int64_t sc = g.in_strides[0][inner];
  const int64_t sa = g.in_strides[1][inner];
  const int64_t sb = g.in_strides[2][inner];
  const bool rows = so == 1 && sc == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1);
  int64_t counter[kMaxDim] = {};
  const int64_t outer = g.numel / n;
  for (int64_t it = 0; it < outer; ++it) {
    if (rows) {
      if (sa == 1 && sb == 1)
        select_row<true, true>(n, out, cond, a, b);
      else if (sa == 1)
        select_row<true, false>(n, out, cond, a, b);
      else if (sb == 1)
        select_row<false, true>(n, out, cond, a, b);
      else
        select_row<false, false>(n, out, cond, a, b);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i * so] = cond[i * sc] != 0 ? a[i * sa] : b[i * sb];
    }
    // Odometer over the outer dims.
    for (size_t d = inner; d-- > 0;) {
      out += g.out_strides[d];
      cond += g.in_strides[0][d];
      a += g.in_strides[1][d];
      b += g.in_strides[2][d];
      if (++counter[d] < g.sizes[d]) break;
      out -= g.out_strides[d] * g.sizes[d];
      cond -= g.in_strides[0][d] * g.sizes[d];
      a -= g.in_strides[1][d] * g.sizes[d];
      b -= g.in_strides[2][d] * g.sizes[d];
      counter[d] = 0;
    }
  }
}

}  // namespace

// aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
//
// `self` and `other` may also be Python numbers (wrapped numbers in type
// promotion, like torch.where(c, x, 0.0)).
Error aten_where_self(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& condition = args.tensor(0, "condition");
  const Operand values[2] = {tensor_or_scalar(args, 1, "self"), tensor_or_scalar(args, 2, "other")};
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, condition.dtype == ScalarType::Bool || condition.dtype == ScalarType::Byte,
                       Error::UnsupportedDtype, "argument 'condition' must be a Bool tensor, got %s",
                       to_string(condition.dtype));
  const char* const names[2] = {"self", "other"};
  const ScalarType dtype = result_type(values, 2);

  int64_t shape[kMaxDim];
  size_t dim = condition.dim;
  for (size_t i = 0; i < dim; ++i) shape[i] = condition.sizes[i];
  for (size_t k = 0; k < 2; ++k) {
    if (values[k].is_scalar()) continue;
    const Tensor& t = *values[k].tensor;
    int64_t next[kMaxDim];
    size_t next_dim = 0;
    if (!broadcast_shapes(IntArrayRef(shape, dim), t.size_span(), next, &next_dim)) {
      return PARE_FAIL(ctx, Error::InvalidShape, "argument '%s' with sizes %s cannot be broadcast with sizes %s",
                       names[k], sizes_to_string(t.size_span()).text, sizes_to_string(IntArrayRef(shape, dim)).text);
    }
    for (size_t i = 0; i < next_dim; ++i) shape[i] = next[i];
    dim = next_dim;
  }

  // Values of another dtype are converted once, up front (copy_kernel).
  Tensor prepared[2] = {};
  const Tensor* operands[3] = {&condition, nullptr, nullptr};
  for (size_t k = 0; k < 2; ++k) {
    if (values[k].is_scalar()) continue;
    if (values[k].tensor->dtype == dtype) {
      prepared[k] = *values[k].tensor;
    } else {
      PARE_TRY_ASSIGN(prepared[k], as_contiguous(ctx, *values[k].tensor, dtype));
    }
    operands[k + 1] = &prepared[k];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), dtype, IntArrayRef(shape, dim)));
  const loops::LoopGeometry geometry = loops::make_geometry(*out, operands, 3);

  return PARE_DISPATCH(where_kernel, ctx, dtype, T, {
    T scalars[2];
    const T* data[2];
    for (size_t k = 0; k < 2; ++k) {
      if (values[k].is_scalar()) {
        scalars[k] = values[k].scalar.to<T>();
        data[k] = &scalars[k];
      } else {
        data[k] = prepared[k].data_as<T>();
      }
    }
    select<T>(geometry, out->data_as<T>(), condition.data_as<uint8_t>(), data[0], data[1]);
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
