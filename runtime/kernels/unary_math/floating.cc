// Floating unary ops: aten::sqrt, rsqrt, exp, log, reciprocal, sigmoid,
// tanh, sin, cos, erf.
//
// All share unary_math::float_unary: integral and Bool inputs promote to
// Float, Half/BFloat16 compute in float and round once, and each op has
// its own kernel tag (Half, BFloat16, Float, Double) so a manifest keeps
// exactly the (op, dtype) pairs a model uses. The formulas are PyTorch's
// CPU ones (e.g. sigmoid = 1 / (1 + exp(-x))), so special values (0, -0,
// negative, inf, NaN) give the same results.

#include "runtime/kernels/common/activation.h"
#include "runtime/kernels/unary_math/unary_math.h"

namespace pare {
namespace kernels {
namespace {

struct Sqrt {
  template <typename A>
  A operator()(A x) const {
    return math::sqrt(x);
  }
};
struct Rsqrt {
  template <typename A>
  A operator()(A x) const {
    return A(1) / math::sqrt(x);
  }
};
struct Exp {
  template <typename A>
  A operator()(A x) const {
    return math::exp(x);
  }
};
struct Log {
  template <typename A>
  A operator()(A x) const {
    return math::log(x);
  }
};
struct Reciprocal {
  template <typename A>
  A operator()(A x) const {
    return A(1) / x;
  }
};
struct Sigmoid {
  template <typename A>
  A operator()(A x) const {
    return activation::sigmoid(x);
  }
};
struct Tanh {
  template <typename A>
  A operator()(A x) const {
    return math::tanh(x);
  }
};
struct Sin {
  template <typename A>
  A operator()(A x) const {
    return math::sin(x);
  }
};
struct Cos {
  template <typename A>
  A operator()(A x) const {
    return math::cos(x);
  }
};
struct Erf {
  template <typename A>
  A operator()(A x) const {
    return math::erf(x);
  }
};

}  // namespace

using unary_math::float_unary;

// aten::sqrt(Tensor self) -> Tensor
Error aten_sqrt(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sqrt_kernel>(ctx, inputs, outputs, Sqrt{});
}

// aten::rsqrt(Tensor self) -> Tensor
Error aten_rsqrt(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::rsqrt_kernel>(ctx, inputs, outputs, Rsqrt{});
}

// aten::exp(Tensor self) -> Tensor
Error aten_exp(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::exp_kernel>(ctx, inputs, outputs, Exp{});
}

// aten::log(Tensor self) -> Tensor
Error aten_log(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::log_kernel>(ctx, inputs, outputs, Log{});
}

// aten::reciprocal(Tensor self) -> Tensor
Error aten_reciprocal(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::reciprocal_kernel>(ctx, inputs, outputs, Reciprocal{});
}

// aten::sigmoid(Tensor self) -> Tensor
Error aten_sigmoid(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sigmoid_kernel>(ctx, inputs, outputs, Sigmoid{});
}

// aten::tanh(Tensor self) -> Tensor
Error aten_tanh(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::tanh_kernel>(ctx, inputs, outputs, Tanh{});
}

// aten::sin(Tensor self) -> Tensor
Error aten_sin(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::sin_kernel>(ctx, inputs, outputs, Sin{});
}

// aten::cos(Tensor self) -> Tensor
Error aten_cos(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::cos_kernel>(ctx, inputs, outputs, Cos{});
}

// aten::erf(Tensor self) -> Tensor
Error aten_erf(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return float_unary<tags::erf_kernel>(ctx, inputs, outputs, Erf{});
}

}  // namespace kernels
}  // namespace pare
