// Comparisons (eq, ne, lt, le, gt, ge; Tensor and Scalar overloads),
// logical_and/or/xor, maximum/minimum and bitwise_and/or/xor (Tensor and
// Scalar overloads; the Scalar ones forward to the Tensor ones, as in
// PyTorch's composites).
//
// Comparisons and logical ops compute in the operands' common dtype (a
// Python number is converted to it, wrapping like PyTorch's casts) and
// write Bool. Each op has its own kernel tag, shared by its Tensor and
// Scalar overloads, so a model that only compares floats keeps only the
// float comparison it uses.

#include "runtime/kernels/binary_math/binary_math.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/common/scalar_overload.h"

namespace pare {
namespace kernels {
namespace {

enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

template <Cmp kOp, typename A>
PARE_ALWAYS_INLINE bool compare(A a, A b) {
  if constexpr (kOp == Cmp::kEq) {
    return a == b;
  } else if constexpr (kOp == Cmp::kNe) {
    return a != b;
  } else if constexpr (kOp == Cmp::kLt) {
    return a < b;
  } else if constexpr (kOp == Cmp::kLe) {
    return a <= b;
  } else if constexpr (kOp == Cmp::kGt) {
    return a > b;
  } else {
    return a >= b;
  }
}

template <typename Tag, Cmp kOp>
Error comparison(KernelContext& ctx, const Operand& self, const Operand& other, Value& out) {
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, other);
  PARE_TRY(e.prepare(out, dtype, ScalarType::Bool));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    e.run<bool, T>([](T x, T y) { return compare<kOp>(Acc(x), Acc(y)); });
    return Error::Ok;
  });
}

// <op>.Tensor(Tensor self, Tensor other) -> Tensor
template <typename Tag, Cmp kOp>
Error comparison_tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return with_binary_operands(ctx, inputs, outputs, [&](const Operand& self, const Operand& other, Value& out) {
    return comparison<Tag, kOp>(ctx, self, other, out);
  });
}

// <op>.Scalar(Tensor self, Scalar other) -> Tensor
template <typename Tag, Cmp kOp>
Error comparison_scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Scalar other = args.scalar(1, "other");
  PARE_TRY(args.status());
  return comparison<Tag, kOp>(ctx, Operand::of(self), Operand::of(other), args.output(0));
}

enum class Logic : uint8_t { kAnd, kOr, kXor };

// <op>(Tensor self, Tensor other) -> Tensor, Bool result.
template <typename Tag, Logic kOp>
Error logical(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  Elementwise<2> e(ctx);
  e.read_inputs(args);
  PARE_TRY(args.status());
  const ScalarType dtype = e.result_type();
  PARE_TRY(e.prepare(args.output(0), dtype, ScalarType::Bool));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    // Bitwise operators on bools: branch-free, so the loop vectorises.
    e.run<bool, T>([](T x, T y) -> bool {
      const bool a = binary_math::nonzero(x);
      const bool b = binary_math::nonzero(y);
      if constexpr (kOp == Logic::kAnd) {
        return a & b;
      } else if constexpr (kOp == Logic::kOr) {
        return a | b;
      } else {
        return a ^ b;
      }
    });
    return Error::Ok;
  });
}

// maximum / minimum(Tensor self, Tensor other) -> Tensor. NaN wins, as in
// PyTorch; ties return `other` like PyTorch's vectorised loop.
template <typename Tag, bool kMax>
Error extremum(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  Elementwise<2> e(ctx);
  e.read_inputs(args);
  PARE_TRY(args.status());
  const ScalarType dtype = e.result_type();
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_same_v<T, bool>) {
      e.run<T, T>([](bool x, bool y) -> bool { return kMax ? (x | y) : (x & y); });
    } else if constexpr (is_integral_v<T>) {
      e.run<T, T>([](T x, T y) { return (kMax ? x > y : x < y) ? x : y; });
    } else {
      e.run<T, T>([](T x, T y) {
        const Acc a = Acc(x);
        const Acc b = Acc(y);
        if (a != a) return x;
        if (b != b) return y;
        return (kMax ? a > b : a < b) ? x : y;
      });
    }
    return Error::Ok;
  });
}

enum class Bitwise : uint8_t { kAnd, kOr, kXor };

// bitwise_and / bitwise_or / bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
template <typename Tag, Bitwise kOp>
Error bitwise(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  PARE_TRY(args.status());
  Elementwise<2> e(ctx);
  const ScalarType dtype = e.add_inputs(self, other);
  PARE_CHECK_OR_RETURN(ctx, is_integral_type(dtype, /*include_bool=*/true), Error::UnsupportedDtype,
                       "arguments 'self' (%s) and 'other' (%s) must be integral or Bool, their result "
                       "type is %s; convert floating operands to an integer dtype first (x.to(torch.int64))",
                       to_string(self.dtype()), to_string(other.dtype()), to_string(dtype));
  PARE_TRY(e.prepare(args.output(0), dtype, dtype));
  return dispatch<Tag>(ctx, dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    if constexpr (kOp == Bitwise::kAnd) {
      e.run<T, T>([](T x, T y) { return static_cast<T>(x & y); });
    } else if constexpr (kOp == Bitwise::kOr) {
      e.run<T, T>([](T x, T y) { return static_cast<T>(x | y); });
    } else {
      e.run<T, T>([](T x, T y) { return static_cast<T>(x ^ y); });
    }
    return Error::Ok;
  });
}

}  // namespace

// aten::eq.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_eq_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::eq_kernel, Cmp::kEq>(ctx, inputs, outputs);
}
// aten::eq.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_eq_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::eq_kernel, Cmp::kEq>(ctx, inputs, outputs);
}
// aten::ne.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_ne_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::ne_kernel, Cmp::kNe>(ctx, inputs, outputs);
}
// aten::ne.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_ne_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::ne_kernel, Cmp::kNe>(ctx, inputs, outputs);
}
// aten::lt.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_lt_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::lt_kernel, Cmp::kLt>(ctx, inputs, outputs);
}
// aten::lt.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_lt_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::lt_kernel, Cmp::kLt>(ctx, inputs, outputs);
}
// aten::le.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_le_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::le_kernel, Cmp::kLe>(ctx, inputs, outputs);
}
// aten::le.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_le_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::le_kernel, Cmp::kLe>(ctx, inputs, outputs);
}
// aten::gt.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_gt_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::gt_kernel, Cmp::kGt>(ctx, inputs, outputs);
}
// aten::gt.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_gt_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::gt_kernel, Cmp::kGt>(ctx, inputs, outputs);
}
// aten::ge.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_ge_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_tensor<tags::ge_kernel, Cmp::kGe>(ctx, inputs, outputs);
}
// aten::ge.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_ge_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return comparison_scalar<tags::ge_kernel, Cmp::kGe>(ctx, inputs, outputs);
}

// aten::logical_and(Tensor self, Tensor other) -> Tensor
Error aten_logical_and(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return logical<tags::logical_and_kernel, Logic::kAnd>(ctx, inputs, outputs);
}
// aten::logical_or(Tensor self, Tensor other) -> Tensor
Error aten_logical_or(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return logical<tags::logical_or_kernel, Logic::kOr>(ctx, inputs, outputs);
}
// aten::logical_xor(Tensor self, Tensor other) -> Tensor
Error aten_logical_xor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return logical<tags::logical_xor_kernel, Logic::kXor>(ctx, inputs, outputs);
}

// aten::maximum(Tensor self, Tensor other) -> Tensor
Error aten_maximum(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return extremum<tags::maximum_kernel, true>(ctx, inputs, outputs);
}
// aten::minimum(Tensor self, Tensor other) -> Tensor
Error aten_minimum(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return extremum<tags::minimum_kernel, false>(ctx, inputs, outputs);
}

// aten::bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_bitwise_and_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return bitwise<tags::bitwise_and_kernel, Bitwise::kAnd>(ctx, inputs, outputs);
}
// aten::bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_bitwise_or_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return bitwise<tags::bitwise_or_kernel, Bitwise::kOr>(ctx, inputs, outputs);
}
// aten::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
Error aten_bitwise_xor_Tensor(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return bitwise<tags::bitwise_xor_kernel, Bitwise::kXor>(ctx, inputs, outputs);
}

// aten::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor
//
// PyTorch's composite: bitwise_and.Tensor with `other` as a wrapped number,
// so an int tensor keeps its dtype, a Bool tensor with an int gives Long
// and a float operand is rejected there.
Error aten_bitwise_and_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::bitwise_and.Tensor", /*has_alpha=*/false);
}
// aten::bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_bitwise_or_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::bitwise_or.Tensor", /*has_alpha=*/false);
}
// aten::bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor
Error aten_bitwise_xor_Scalar(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return PARE_FORWARD_SCALAR_OVERLOAD(ctx, inputs, outputs, "aten::bitwise_xor.Tensor", /*has_alpha=*/false);
}

}  // namespace kernels
}  // namespace pare
