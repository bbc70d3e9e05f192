// pare::linear_prepack / linear_prepacked / conv2d_prepack / conv2d_prepacked.
//
// The pattern for ops over custom classes: each op body runs only when its
// class is selected (selective_class_, a link-time constant), so a build
// without the class keeps the op's name but none of the class's code, and
// reports ClassNotSelected if it is ever reached.

#include "runtime/registry/dispatch.h"
#include "runtime/core/format.h"
#include "runtime/kernels/prepacked/packed_params.h"

namespace pare {
namespace kernels {
namespace {

// Programs written before `before` call the *_prepack ops with fewer
// arguments (`old_min` to `old_max`): before weights were packed ahead of
// time, with the plain weights; before the program said which layout a
// convolution's weights are in, without `layout`.
PARE_UNUSED Error check_packed_schema(KernelContext& ctx, ValueSpan inputs, size_t expected, size_t old_min,
                                      size_t old_max, const char* before) {
  PARE_CHECK_OR_RETURN(ctx, inputs.size() < old_min || inputs.size() > old_max, Error::InvalidArgument,
                       "takes %zu arguments, the weights packed ahead of time, got %zu: a program written before "
                       "%s; re-export it with this version of tools.tracer",
                       expected, inputs.size(), before);
  return Error::Ok;
}
PARE_UNUSED constexpr char kBeforePacking[] = "Pare packed weights in the exporter";

struct NamedActivation {
  char name[12];  // an array, not a pointer: no relocation for the table
  classes::Activation activation;
};
PARE_UNUSED constexpr NamedActivation kActivations[] = {
    {"hardswish", classes::Activation::Hardswish}, {"hardsigmoid", classes::Activation::Hardsigmoid},
    {"sigmoid", classes::Activation::Sigmoid},     {"silu", classes::Activation::Silu},
    {"gelu", classes::Activation::Gelu},           {"gelu_tanh", classes::Activation::GeluTanh}};

// The optional epilogue of the *_prepacked ops (arguments 2 to 5):
// output_min and output_max (both or neither: a fused relu / hardtanh /
// clamp), activation (a fused activation's name, or None) and residual (a
// fused add's other operand, or None).
PARE_UNUSED Error read_epilogue(KernelContext& ctx, KernelArgs& args, size_t count, classes::Epilogue& e) {
  PARE_CHECK_OR_RETURN(ctx, count != 3, Error::InvalidArgument,
                       "takes output_min and output_max together, got only one");
  if (count >= 4) {
    e.clamp.min = static_cast<float>(args.real(2, "output_min"));
    e.clamp.max = static_cast<float>(args.real(3, "output_max"));
  }
  const char* name = count >= 5 ? args.optional_string(4, "activation") : nullptr;
  if (count >= 6) e.residual = args.optional_tensor(5, "residual");
  PARE_TRY(args.status());
  if (name == nullptr) return Error::Ok;
  if (!classes::Epilogue::any_activation()) {
    // No name table either: the message names the activation and the tags'
    // pattern (with some selected, the not-selected error names the tag).
    return PARE_FAIL(ctx, Error::DtypeNotSelected,
                     "fused activation '%s': the manifest selects no fused activation (kernel tags "
                     "prepacked_<activation>_kernel); re-trace the model",
                     name);
  } else {
    for (const auto& a : kActivations) {
      if (string_equal(name, a.name)) {
        e.activation = a.activation;
        return Error::Ok;
      }
    }
    return PARE_FAIL(ctx, Error::InvalidArgument,
                     "argument 'activation' must be hardswish, hardsigmoid, sigmoid, silu, gelu or gelu_tanh, got "
                     "'%s'",
                     name);
  }
}

// What run_prepacked hands an op's `run`.
template <typename Params>
struct RunArgs {
  const Tensor* input;
  const Params* params;
  Value* output;
  const classes::Epilogue* epilogue;
};

// pare::linear_prepacked / conv2d_prepacked(Tensor input, <Params> packed, float output_min=-inf,
//   float output_max=inf, str? activation=None, Tensor? residual=None): ClassNotSelected without
// the class, else its arguments read and checked, then `run` with its
// dtype dispatch (in the op, whose name the size report gives its
// dispatch_case instances by).
template <typename Params, typename Run>
PARE_ALWAYS_INLINE Error run_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs,
                                       const selective_class_<Params>& params_class, const Run& run) {
  if (!params_class.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, params_class.name());
  } else {
    KernelArgs args(ctx, inputs, outputs, 2, 6, 1);
    const Tensor& input = args.tensor(0, "input");
    const Params* params = args.object<Params>(1, "packed");
    classes::Epilogue epilogue;
    PARE_TRY(read_epilogue(ctx, args, inputs.size(), epilogue));
    return run(RunArgs<Params>{&input, params, &args.output(0), &epilogue});
  }
}

}  // namespace

// pare::linear_prepack(Tensor packed_weight, Tensor? bias, int in_features, int out_features)
//   -> LinearPackedParams
Error pare_linear_prepack(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  if (!kLinearPackedParamsClass.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kLinearPackedParamsClass.name());
  } else {
    PARE_TRY(check_packed_schema(ctx, inputs, 4, 1, 2, kBeforePacking));
    KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
    const Tensor& weight = args.tensor(0, "packed_weight");
    const Tensor* bias = args.optional_tensor(1, "bias");
    const int64_t in_features = args.int64(2, "in_features");
    const int64_t out_features = args.int64(3, "out_features");
    PARE_TRY(args.status());
    PARE_TRY_ASSIGN(classes::LinearPackedParams * params,
                    ctx.create_object<classes::LinearPackedParams>(args.output(0)));
    return params->init(ctx, weight, bias, in_features, out_features);
  }
}

// pare::linear_prepacked(Tensor input, LinearPackedParams packed, float output_min=-inf,
//   float output_max=inf, str? activation=None, Tensor? residual=None) -> Tensor
Error pare_linear_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return run_prepacked(ctx, inputs, outputs, kLinearPackedParamsClass, [&](const auto& a) {
    return PARE_DISPATCH(prepacked_kernel, ctx, a.input->dtype, T, {
      static_assert(is_same_v<T, float>, "prepacked kernels are float-only");
      return a.params->run(ctx, *a.input, *a.output, *a.epilogue);
    });
  });
}

// pare::conv2d_prepack(Tensor weight, Tensor? bias, int[2] stride, int[2] padding,
//   int[2] dilation, int groups, int[4] weight_sizes, int layout) -> Conv2dPackedParams
Error pare_conv2d_prepack(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  if (!kConv2dPackedParamsClass.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kConv2dPackedParamsClass.name());
  } else {
    PARE_TRY(check_packed_schema(ctx, inputs, 8, 6, 6, kBeforePacking));
    PARE_TRY(check_packed_schema(ctx, inputs, 8, 7, 7, "the program said which layout a convolution's weights are in"));
    KernelArgs args(ctx, inputs, outputs, 8, 8, 1);
    const Tensor& weight = args.tensor(0, "weight");
    const Tensor* bias = args.optional_tensor(1, "bias");
    const IntArrayRef stride = args.int_list(2, "stride");
    const IntArrayRef padding = args.int_list(3, "padding");
    const IntArrayRef dilation = args.int_list(4, "dilation");
    const int64_t groups = args.int64(5, "groups");
    const IntArrayRef weight_sizes = args.int_list(6, "weight_sizes");
    const int64_t layout = args.int64(7, "layout");
    PARE_TRY(args.status());
    PARE_TRY_ASSIGN(classes::Conv2dPackedParams * params,
                    ctx.create_object<classes::Conv2dPackedParams>(args.output(0)));
    return params->init(ctx, weight, bias, stride, padding, dilation, groups, weight_sizes, layout);
  }
}

// pare::conv2d_prepacked(Tensor input, Conv2dPackedParams packed, float output_min=-inf,
//   float output_max=inf, str? activation=None, Tensor? residual=None) -> Tensor
Error pare_conv2d_prepacked(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return run_prepacked(ctx, inputs, outputs, kConv2dPackedParamsClass, [&](const auto& a) {
    return PARE_DISPATCH(prepacked_kernel, ctx, a.input->dtype, T, {
      static_assert(is_same_v<T, float>, "prepacked kernels are float-only");
      return a.params->run(ctx, *a.input, *a.output, *a.epilogue);
    });
  });
}

}  // namespace kernels
}  // namespace pare
