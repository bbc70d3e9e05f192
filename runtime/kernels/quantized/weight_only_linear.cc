// pare::weight_only_linear: a linear layer on float32 inputs with int8 or
// int4 weights and float32 scales per group of inputs (docs/llm.md,
// "Quantized weights"; the tracer's weight_only pass writes it from a
// dequantize of a constant int8 weight feeding a linear). The weights stay
// int8 / packed int4 in the program's constants and are dequantized in
// registers (weight_only_kernels.inc), so a decode step, a matrix-vector
// product per layer, reads 1 or 1/2 byte a weight instead of float32's 4.
// An input of several rows (a prefill) decodes each pair of weight rows to
// floats once and runs every input row against them. Build feature threads: the output rows
// are split (disjoint outputs: the same bits for any split).

#include "runtime/core/cpu.h"
#include "runtime/core/format.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/quantized/quantized.h"
#include "runtime/kernels/quantized/weight_only.h"

// This build's copy of the row kernel (ISA PARE_SIMD_ISA).
#include "runtime/kernels/quantized/weight_only_kernels.inc"

namespace pare {
namespace kernels {
namespace {

using RowsFn = void (*)(const weight_only::Weights&, const float*, int64_t, int64_t, float*);
using ManyRowsFn = void (*)(const weight_only::Weights&, const float*, int64_t, int64_t, int64_t, float*, float*);

// The row kernels of one copy: at --//runtime:x86_64_isa=auto (x86_64) the
// best this CPU runs, elsewhere the build's own.
struct RowKernels {
  RowsFn rows;
  ManyRowsFn many_rows;
};
RowKernels row_kernels() {
#if defined(PARE_X86_64_DISPATCH)
  switch (cpu::kernel_isa()) {
    case cpu::Isa::x86_64_v4: return {weight_only::x86_64_v4::rows, weight_only::x86_64_v4::many_rows};
    case cpu::Isa::x86_64_v3: return {weight_only::x86_64_v3::rows, weight_only::x86_64_v3::many_rows};
    default: break;
  }
#endif
  return {weight_only::PARE_SIMD_ISA::rows, weight_only::PARE_SIMD_ISA::many_rows};
}

Error check_weights(KernelContext& ctx, const Tensor& weight, const Tensor& scales, const Tensor* bias, int64_t bits,
                    int64_t group, int64_t in) {
  PARE_CHECK_OR_RETURN(ctx, bits == 8 || bits == 4, Error::InvalidArgument,
                       "argument 'bits' must be 8 or 4, got %lld: the exporter's weight_only pass writes one of them",
                       static_cast<long long>(bits));
  const ScalarType want = bits == 8 ? ScalarType::Char : ScalarType::Byte;
  PARE_CHECK_OR_RETURN(ctx, weight.dtype == want && weight.dim == 2 && weight.is_contiguous(), Error::InvalidArgument,
                       "argument 'weight' must be a contiguous 2-d %s tensor for %lld-bit weights, got %s %s",
                       to_string(want), static_cast<long long>(bits), to_string(weight.dtype),
                       sizes_to_string(weight.size_span()).text);
  const int64_t out = weight.sizes[0];
  const int64_t row_bytes = bits == 8 ? in : in / 2;
  PARE_CHECK_OR_RETURN(
      ctx, group > 0 && group % weight_only::step(static_cast<int>(bits)) == 0 && in % group == 0,
      Error::InvalidArgument,
      "argument 'group_size' %lld must divide the input's %lld features and be a multiple of %lld for %lld-bit weights",
      static_cast<long long>(group), static_cast<long long>(in),
      static_cast<long long>(weight_only::step(static_cast<int>(bits))), static_cast<long long>(bits));
  PARE_CHECK_OR_RETURN(ctx, weight.sizes[1] == row_bytes, Error::InvalidArgument,
                       "argument 'weight' has %lld bytes a row; %lld input features take %lld at %lld bits",
                       static_cast<long long>(weight.sizes[1]), static_cast<long long>(in),
                       static_cast<long long>(row_bytes), static_cast<long long>(bits));
  PARE_CHECK_OR_RETURN(ctx,
                       scales.dtype == ScalarType::Float && scales.is_contiguous() &&
                           scales.numel() == static_cast<size_t>(out * (in / group)),
                       Error::InvalidArgument, "argument 'scales' must be %lld contiguous float32 values, got %s %s",
                       static_cast<long long>(out * (in / group)), to_string(scales.dtype),
                       sizes_to_string(scales.size_span()).text);
  if (bias != nullptr) {
    PARE_CHECK_OR_RETURN(
        ctx, bias->dtype == ScalarType::Float && bias->is_contiguous() && bias->numel() == static_cast<size_t>(out),
        Error::InvalidArgument, "argument 'bias' must be %lld contiguous float32 values, got %s %s",
        static_cast<long long>(out), to_string(bias->dtype), sizes_to_string(bias->size_span()).text);
  }
  return Error::Ok;
}

}  // namespace

// pare::weight_only_linear(Tensor input, Tensor weight, Tensor scales, Tensor? bias, int bits, int group_size) ->
// Tensor
Error pare_weight_only_linear(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& weight = args.tensor(1, "weight");
  const Tensor& scales = args.tensor(2, "scales");
  const Tensor* bias = args.optional_tensor(3, "bias");
  const int64_t bits = args.int64(4, "bits");
  const int64_t group = args.int64(5, "group_size");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, input.dim >= 1, Error::InvalidArgument,
                       "argument 'input' must have at least 1 dim (the features), got a 0-dim tensor");
  const int64_t in = input.sizes[input.dim - 1];
  PARE_TRY(check_weights(ctx, weight, scales, bias, bits, group, in));
  return PARE_DISPATCH(weight_only_linear_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, float>, "weight-only layers take float32 inputs");
    const int64_t out = weight.sizes[0];
    int64_t sizes[kMaxDim];
    for (size_t d = 0; d + 1 < input.dim; ++d) sizes[d] = input.sizes[d];
    sizes[input.dim - 1] = out;
    PARE_TRY_ASSIGN(Tensor * y, ctx.allocate_output(args.output(0), ScalarType::Float, IntArrayRef(sizes, input.dim)));
    if (y->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Float));
    const int64_t m = static_cast<int64_t>(x.numel()) / in;
    const weight_only::Weights w{
        weight.data_as<uint8_t>(), scales.data_as<float>(), bias ? bias->data_as<float>() : nullptr, out, in, group,
        static_cast<int>(bits)};
    const float* xs = x.data_as<float>();
    float* ys = y->data_as<float>();
    const uint32_t chunks = ctx.chunks_for(out, 2, m * out * in);
    if (m == 1) {
      const RowsFn rows = row_kernels().rows;
      ctx.parallel(chunks, out, 2, [&](uint32_t, int64_t begin, int64_t end) { rows(w, xs, begin, end, ys); });
    } else {
      // Each chunk decodes two weight rows at a time into its own scratch.
      const size_t per_chunk = static_cast<size_t>(2 * in);
      PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(per_chunk * chunks * sizeof(float)));
      float* scratch = static_cast<float*>(memory);
      const ManyRowsFn many_rows = row_kernels().many_rows;
      ctx.parallel(chunks, out, 2, [&](uint32_t c, int64_t begin, int64_t end) {
        many_rows(w, xs, m, begin, end, ys, scratch + c * per_chunk);
      });
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
