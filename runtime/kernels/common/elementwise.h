#pragma once
// Elementwise kernels made easy: operands, PyTorch type promotion,
// broadcasting, conversion of mixed-dtype inputs and output allocation in
// one builder, so an elementwise op is ~20 lines.
//
//   Elementwise<2> e(ctx);
//   e.add_input(self, "self");
//   e.add_input(other, "other");                 // a Tensor or a wrapped Scalar
//   const ScalarType dtype = e.result_type();    // torch.result_type
//   (or the three lines in one: e.add_inputs(self, other))
//   PARE_TRY(e.prepare(out, /*compute=*/dtype, /*output=*/dtype));
//   return PARE_DISPATCH(mul_kernel, ctx, dtype, T, {
//     e.run<T, T>([](T a, T b) { return T(opmath_t<T>(a) * opmath_t<T>(b)); });
//     return Error::Ok;
//   });
//
// prepare() broadcasts the tensor operands (PyTorch rules), converts every
// tensor operand whose dtype differs from the compute dtype into a
// contiguous scratch copy (through copy_kernel), allocates a contiguous
// output of the broadcast shape, and builds the loop geometry. run<Out, In>
// then walks it with loops::for_each_element, passing scalars already
// converted to In.

#include "runtime/registry/dispatch.h"
#include "runtime/kernels/common/loops.h"

namespace pare {

// A Tensor argument, or a Python number passed in its place (a "wrapped
// number" for type promotion).
struct Operand {
  const Tensor* tensor;  // null for a scalar
  Scalar scalar;

  static Operand of(const Tensor& t) { return Operand{&t, Scalar()}; }
  static Operand of(Scalar s) { return Operand{nullptr, s}; }
  bool is_scalar() const { return tensor == nullptr; }
  ScalarType dtype() const { return tensor != nullptr ? tensor->dtype : scalar.wrapped_dtype(); }
};

// Reads input i as a Tensor or a Scalar (aten::add.Tensor(x, 1) is legal in
// exported graphs). Errors through `args`.
Operand tensor_or_scalar(KernelArgs& args, size_t i, const char* name);

// The argument reading of an `op(Tensor self, Tensor other) -> Tensor` entry
// point: calls body(self, other, out), each operand a Tensor or a wrapped
// number.
template <typename Body>
PARE_ALWAYS_INLINE Error with_binary_operands(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Body&& body) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Operand self = tensor_or_scalar(args, 0, "self");
  const Operand other = tensor_or_scalar(args, 1, "other");
  PARE_TRY(args.status());
  return body(self, other, args.output(0));
}

// torch.result_type over the operands: dimensioned tensors win over 0-dim
// tensors, which win over wrapped numbers, unless a lower priority operand
// is of a higher category (bool < integral < floating).
ScalarType result_type(const Operand* operands, size_t n);

// PyTorch's alpha_check for add and sub (aten::add.Tensor's alpha): a bool
// alpha only for Bool results, a floating alpha only for floating results.
inline Error check_alpha(KernelContext& ctx, ScalarType dtype, const Scalar& alpha) {
  PARE_CHECK_OR_RETURN(ctx, !alpha.is_bool() || dtype == ScalarType::Bool, Error::InvalidArgument,
                       "argument 'alpha': a boolean alpha is only supported for Bool results, got %s",
                       to_string(dtype));
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(dtype) || !alpha.is_floating_point(), Error::InvalidArgument,
                       "argument 'alpha': for integral inputs (result dtype %s) alpha must not be a "
                       "floating point number",
                       to_string(dtype));
  return Error::Ok;
}

// Computes the broadcast of `a` and `b` into `out` (PyTorch rules); returns
// false when they are incompatible.
bool broadcast_shapes(IntArrayRef a, IntArrayRef b, int64_t* out, size_t* out_dim);

// Shared, non-template part of Elementwise<N>.
class ElementwiseBase {
 public:
  void add_input(const Operand& operand, const char* name);
  // A binary op's two inputs, `self` and `other_name`; returns their result
  // type.
  ScalarType add_inputs(const Operand& self, const Operand& other, const char* other_name = "other") {
    add_input(self, "self");
    add_input(other, other_name);
    return result_type();
  }
  // The same, read from `args` 0 (`self`) and 1 (`other`), each a Tensor or
  // a wrapped number; the caller checks args.status() before result_type().
  void read_inputs(KernelArgs& args) {
    const Operand self = tensor_or_scalar(args, 0, "self");
    const Operand other = tensor_or_scalar(args, 1, "other");
    add_input(self, "self");
    add_input(other, "other");
  }
  ScalarType result_type() const {
    return pare::result_type(operands_, num_inputs_ < capacity_ ? num_inputs_ : capacity_);
  }
  // Broadcasts, converts inputs to `compute_dtype`, allocates `out` as a
  // contiguous `output_dtype` tensor of the broadcast shape.
  Error prepare(Value& out, ScalarType compute_dtype, ScalarType output_dtype);
  const Tensor& output() const { return *out_; }

 protected:
  explicit ElementwiseBase(KernelContext& ctx, size_t capacity) : ctx_(ctx), capacity_(capacity) {}

  KernelContext& ctx_;
  size_t capacity_;
  size_t num_inputs_ = 0;
  Operand operands_[loops::kMaxInputs] = {};
  const char* names_[loops::kMaxInputs] = {};
  Tensor prepared_[loops::kMaxInputs] = {};
  Tensor* out_ = nullptr;
  loops::LoopGeometry geometry_;
};

// An elementwise operation over N inputs (1 to 3).
template <size_t N>
class Elementwise : public ElementwiseBase {
  static_assert(N >= 1 && N <= loops::kMaxInputs, "1 to 3 inputs");

 public:
  explicit Elementwise(KernelContext& ctx) : ElementwiseBase(ctx, N) {}

  // out = op(in...) elementwise, with In the compute type given to
  // prepare() and Out the output type. Call only after prepare() succeeded.
  template <typename Out, typename In, typename Op>
  void run(Op op) {
    const In* inputs[N];
    In scalars[N];
    for (size_t k = 0; k < N; ++k) {
      if (operands_[k].is_scalar()) {
        scalars[k] = operands_[k].scalar.template to<In>();
        inputs[k] = &scalars[k];
      } else {
        inputs[k] = prepared_[k].template data_as<In>();
      }
    }
    loops::for_each_element<Out, In, N>(geometry_, out_->template data_as<Out>(), inputs, op);
  }
};

}  // namespace pare
