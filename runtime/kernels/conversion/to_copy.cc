// aten::_to_copy: dtype conversion (and the copy torch.export emits for
// .to(), .float(), .type_as(), ...).

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {

// aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None,
//   Device? device=None, bool? pin_memory=None, bool non_blocking=False,
//   MemoryFormat? memory_format=None) -> Tensor
//
// Layout must be None or strided (0); device None or "cpu"; pin_memory
// None or false. The result is always contiguous: values are identical to
// PyTorch's, strides may differ for memory_format=preserve/channels_last.
Error aten__to_copy(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 7, 1);
  const Tensor& self = args.tensor(0, "self");
  const Optional<ScalarType> dtype = args.optional_dtype(1, "dtype");
  PARE_TRY(indexing::check_tensor_options(args, 2, 3, 4));
  (void)args.boolean_or(5, "non_blocking", false);
  (void)args.optional_int64(6, "memory_format");
  PARE_TRY(args.status());
  const ScalarType out_dtype = dtype.has_value ? dtype.value : self.dtype;
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, self.size_span()));
  return convert_into(ctx, self, *out);
}

}  // namespace kernels
}  // namespace pare
