// pare::delegate_call and the shared part of every pare::delegate_init.<name>
// (delegate.h).

#include "runtime/kernels/delegate/delegate.h"

namespace pare {
namespace kernels {

Error delegate_init(KernelContext& ctx, const Backend& backend, ValueSpan inputs, ValueSpan outputs) {
  if (!kDelegateClass.selected()) {
    (void)backend;
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kDelegateClass.name());
  } else {
    PARE_CHECK_OR_RETURN(ctx, inputs.size() % 2 == 1, Error::InvalidArgument,
                         "expects the blob and then key, value string pairs, got %zu inputs; re-export the program",
                         inputs.size());
    KernelArgs args(ctx, inputs, outputs, 1, inputs.size(), 1);
    const Tensor& blob = args.tensor(0, "blob");
    PARE_TRY(args.status());
    PARE_CHECK_OR_RETURN(ctx, blob.dtype == ScalarType::Byte && blob.dim == 1 && blob.is_contiguous(),
                         Error::InvalidArgument, "argument 'blob' must be a contiguous 1-D Byte tensor, got %s %s",
                         to_string(blob.dtype), sizes_to_string(blob.size_span()).text);
    const size_t num_specs = inputs.size() / 2;
    CompileSpec* specs = nullptr;
    if (num_specs > 0) {
      PARE_TRY_ASSIGN(void* memory, ctx.allocate_persistent(num_specs * sizeof(CompileSpec), alignof(CompileSpec)));
      specs = static_cast<CompileSpec*>(memory);
    }
    for (size_t i = 0; i < num_specs; ++i) {
      specs[i].key = args.optional_string(1 + 2 * i, "key");
      specs[i].value = args.optional_string(2 + 2 * i, "value");
      PARE_TRY(args.status());
      PARE_CHECK_OR_RETURN(ctx, specs[i].key != nullptr && specs[i].value != nullptr, Error::InvalidArgument,
                           "compile spec %zu is None; re-export the program", i);
    }
    PARE_TRY_ASSIGN(classes::Delegate * delegate, ctx.create_object<classes::Delegate>(args.output(0)));
    const BackendBlob view{blob.data_as<uint8_t>(), static_cast<size_t>(blob.sizes[0]),
                           Span<const CompileSpec>(specs, num_specs)};
    return delegate->init(ctx, backend, view);
  }
}

}  // namespace kernels

Error classes::Delegate::init(KernelContext& ctx, const Backend& with, const BackendBlob& blob) {
  const char* reason = "";
  PARE_CHECK_OR_RETURN(ctx, with.is_available(&reason), Error::BackendUnavailable,
                       "backend '%s' is not available on this device (%s): install its driver, or re-export "
                       "the model with --delegate-fallback (or without --delegate %s)",
                       with.name, reason, with.name);
  backend = &with;
  return with.init(ctx, blob, &handle);
}

// pare::delegate_call(Delegate delegate, Tensor[] inputs) -> Tensor[]
Error kernels::pare_delegate_call(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  if (!kDelegateClass.selected()) {
    (void)inputs;
    (void)outputs;
    return class_not_selected(ctx, kDelegateClass.name());
  } else {
    KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
    classes::Delegate* delegate = args.object<classes::Delegate>(0, "delegate");
    const TensorList parts = args.tensor_list(1, "inputs");
    const TensorList results = args.output_list(0);
    PARE_TRY(args.status());
    return delegate->backend->execute(ctx, delegate->handle, parts, results);
  }
}

}  // namespace pare
