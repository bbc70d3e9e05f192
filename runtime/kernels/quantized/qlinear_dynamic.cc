// pare::qlinear_dynamic: a dynamically quantized linear layer as PT2E writes
// it (PareQuantizer(dynamic=True), XNNPACKQuantizer's dynamic config):
//
//   choose_qparams.tensor(x) -> quantize_per_tensor.tensor -> dequantize_per_tensor.tensor
//   dequantize_per_channel(int8 weight, symmetric) -> linear (+ float bias)
//
// in one op, on int8 values. The input's scale and zero point are chosen at
// run time with choose_qparams' own arithmetic and the input is quantized
// with quantize_per_tensor's rounding, so the int8 values are the
// reference's bit for bit (qgemm.h's dynamic_range and quantize_dynamic:
// the build's copy, AVX2's, AVX-512's). The products are exact int32 sums
// on the weight packed at export (qgemm.h's gemm_dynamic: the build's
// copy, x86-64-v3's AVX2 vpmaddwd, AVX-512 VNNI's vpdpbusd on the input +
// 128 with the weights' sums taking the 128 back out):
//
//   acc[r, c] = sum_k q[r, k] w[c, k] - zero_point * weight_sums[c]
//   out[r, c] = float(acc) * (float(scale) * weight_scales[c]) + bias[c]
//
// where the reference sums float32 products: the two differ by float32
// rounding only (the reference's), never by a quantization step. Exact
// integer sums, then float operations in a fixed order with no
// contraction: every ISA gives the same bits.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/linear.h"
#include "runtime/kernels/quantized/qgemm.h"
#include "runtime/kernels/quantized/quantized.h"

#pragma clang fp contract(off)

namespace pare {
namespace kernels {
namespace {

Error check_vector(KernelContext& ctx, const Tensor& t, ScalarType dtype, int64_t n, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, t.dtype == dtype && t.dim == 1 && t.sizes[0] == n, Error::InvalidArgument,
                       "argument '%s' must be a 1-D %s tensor of the weight's %lld output channels, got %s sizes %s: "
                       "the exporter writes it",
                       name, to_string(dtype), static_cast<long long>(n), to_string(t.dtype),
                       sizes_to_string(t.size_span()).text);
  return Error::Ok;
}

}  // namespace

// pare::qlinear_dynamic(Tensor input, Tensor weight, Tensor weight_sums, Tensor weight_scales, Tensor? bias,
//   int quant_min, int quant_max, float eps) -> Tensor
// input [..., in_features] float32; weight the int8 [out_features,
// in_features] packed by pare/quantized_packing.py's pack_dynamic_weight
// ([ceil(out / 16), ceil(in / 4), 16, 4]: qgemm.h, gemm_dynamic);
// weight_sums (int32) its rows' sums, weight_scales (float32) its
// per-channel scales; bias float32 or None; quant_min, quant_max and eps
// choose_qparams.tensor's, within int8.
Error pare_qlinear_dynamic(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 8, 8, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& weight = args.tensor(1, "weight");
  const Tensor& weight_sums = args.tensor(2, "weight_sums");
  const Tensor& weight_scales = args.tensor(3, "weight_scales");
  const Tensor* bias = args.optional_tensor(4, "bias");
  const int64_t quant_min = args.int64(5, "quant_min");
  const int64_t quant_max = args.int64(6, "quant_max");
  const double eps = args.real(7, "eps");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, input.dtype == ScalarType::Float && input.dim >= 1, Error::UnsupportedDtype,
                       "argument 'input': expected a float32 tensor of 1 or more dims, got %s; quantize float32 "
                       "activations",
                       to_string(input.dtype));
  PARE_CHECK_OR_RETURN(ctx, weight_sums.dim == 1, Error::InvalidShape,
                       "argument 'weight_sums' must be 1-D [out_features], got sizes %s: the exporter writes it",
                       sizes_to_string(weight_sums.size_span()).text);
  const int64_t out_features = weight_sums.sizes[0];
  const int64_t in_features = input.sizes[input.dim - 1];
  const int64_t blocks = (out_features + qgemm::kDynamicBlock - 1) / qgemm::kDynamicBlock;
  PARE_CHECK_OR_RETURN(ctx,
                       weight.dim == 4 && weight.sizes[0] == blocks && weight.sizes[1] == (in_features + 3) / 4 &&
                           weight.sizes[2] == qgemm::kDynamicBlock && weight.sizes[3] == 4,
                       Error::InvalidShape,
                       "argument 'weight' must be the packed [%lld, %lld, 16, 4] int8 weight of %lld outputs and "
                       "%lld input features, got sizes %s: export the model again",
                       static_cast<long long>(blocks), static_cast<long long>((in_features + 3) / 4),
                       static_cast<long long>(out_features), static_cast<long long>(in_features),
                       sizes_to_string(weight.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, in_features <= qgemm::kMaxDepth, Error::InvalidShape,
                       "argument 'input' has %lld input features; int8 layers take at most %lld (leave this layer "
                       "float)",
                       static_cast<long long>(in_features), static_cast<long long>(qgemm::kMaxDepth));
  PARE_TRY(check_vector(ctx, weight_sums, ScalarType::Int, out_features, "weight_sums"));
  PARE_TRY(check_vector(ctx, weight_scales, ScalarType::Float, out_features, "weight_scales"));
  if (bias != nullptr) PARE_TRY(check_vector(ctx, *bias, ScalarType::Float, out_features, "bias"));
  PARE_TRY(quantized::check_choose_qparams_range(ctx, quant_min, quant_max));
  PARE_CHECK_OR_RETURN(ctx, quant_min >= -128 && quant_max <= 127, Error::InvalidArgument,
                       "arguments 'quant_min' and 'quant_max': [%lld, %lld] must lie within int8's -128..127",
                       static_cast<long long>(quant_min), static_cast<long long>(quant_max));
  return PARE_DISPATCH(qlinear_dynamic_kernel, ctx, weight.dtype, T, {
    static_assert(is_same_v<T, int8_t>, "int8 weights");
    PARE_TRY_ASSIGN(Tensor * out,
                    linear::allocate_output(ctx, input, in_features, out_features, ScalarType::Float, args.output(0)));
    if (out->numel() == 0) return Error::Ok;
    const int64_t rows = static_cast<int64_t>(out->numel()) / out_features;
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Float));
    const int64_t row_bytes = qgemm::dynamic_row_bytes(in_features);
    const int64_t input_bytes = (rows * row_bytes + 63) & ~int64_t{63};
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(input_bytes) +
                                                       static_cast<size_t>(out_features) * sizeof(float)));
    uint8_t* u = static_cast<uint8_t*>(memory);
    float* multiplier = reinterpret_cast<float*>(u + input_bytes);
    const float* xf = x.data_as<float>();
    // choose_qparams.tensor (qparams_from_range: its float32 arithmetic on
    // the range), then quantize_per_tensor.tensor with its output: 1.0 /
    // scale in double, rounded to float as torch's product does.
    const qgemm::Range range = qgemm::dynamic_range(xf, rows * in_features);
    const quantized::TensorQParams qp =
        quantized::qparams_from_range(range.lo, range.hi, range.nan, quant_min, quant_max, eps);
    qgemm::quantize_dynamic(xf, rows, in_features, static_cast<float>(1.0 / qp.scale),
                            static_cast<float>(qp.zero_point), static_cast<float>(quant_min),
                            static_cast<float>(quant_max), u);
    // dequantize_per_tensor.tensor's float(scale), times each channel's.
    const float scale = static_cast<float>(qp.scale);
    const float* scales = weight_scales.data_as<float>();
    for (int64_t c = 0; c < out_features; ++c) multiplier[c] = scale * scales[c];
    const qgemm::DynamicEpilogue e{weight_sums.data_as<int32_t>(), multiplier,
                                   bias != nullptr ? bias->data_as<float>() : nullptr,
                                   static_cast<int32_t>(qp.zero_point)};
    // Build feature threads: the rows split over the threads (4 at a time,
    // arm64's SDOT block); every output is one row's, the same bits.
    const int8_t* w = weight.data_as<int8_t>();
    float* y = out->data_as<float>();
    const uint32_t chunks = ctx.chunks_for(rows, 4, rows * out_features * in_features);
    ctx.parallel(chunks, rows, 4, [&](uint32_t, int64_t begin, int64_t end) {
      qgemm::gemm_dynamic(end - begin, out_features, in_features, u + begin * row_bytes, w, e,
                          y + begin * out_features);
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
