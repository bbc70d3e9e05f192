// pare::qlinear_dynamic: a dynamically quantized linear layer as PT2E writes
// it (PareQuantizer(dynamic=True), XNNPACKQuantizer's dynamic config):
//
//   choose_qparams.tensor(x) -> quantize_per_tensor.tensor -> dequantize_per_tensor.tensor
//   dequantize_per_channel(int8 weight, symmetric) -> linear (+ float bias)
//
// in one op, on int8 values. The input's scale and zero point are chosen at
// run time with choose_qparams' own arithmetic and the input is quantized
// with quantize_per_tensor's rounding (quantized.h), so the int8 values are
// the reference's bit for bit. The products are exact int32 sums (qgemm.h's
// gemm_rows_int32: the build's copy, x86-64-v3's AVX2 copy, arm64's SDOT and
// NEON tiles):
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
// input [..., in_features] float32; weight [out_features, in_features] int8,
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
  PARE_CHECK_OR_RETURN(ctx, input.dtype == ScalarType::Float, Error::UnsupportedDtype,
                       "argument 'input': expected a float32 tensor, got %s; quantize float32 activations",
                       to_string(input.dtype));
  PARE_CHECK_OR_RETURN(ctx, weight.dim == 2, Error::InvalidShape,
                       "argument 'weight' must be 2-D [out_features, in_features], got sizes %s",
                       sizes_to_string(weight.size_span()).text);
  const int64_t out_features = weight.sizes[0];
  const int64_t in_features = weight.sizes[1];
  PARE_CHECK_OR_RETURN(ctx, in_features <= qgemm::kMaxDepth, Error::InvalidShape,
                       "argument 'weight' has %lld input features; int8 layers take at most %lld (leave this layer "
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
    PARE_TRY_ASSIGN(const Tensor w_tensor, as_contiguous(ctx, weight, ScalarType::Char));
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(rows * in_features)));
    int8_t* q = static_cast<int8_t*>(memory);
    const size_t n = static_cast<size_t>(rows * in_features);
    const float* xf = x.data_as<float>();
    // choose_qparams.tensor, then quantize_per_tensor.tensor with its
    // output: 1.0 / scale in double, rounded to float as torch's product does.
    const quantized::TensorQParams qp = quantized::choose_qparams(xf, n, quant_min, quant_max, eps);
    const float inv_scale = static_cast<float>(1.0 / qp.scale);
    const float zp = static_cast<float>(qp.zero_point);
    const float qmin = static_cast<float>(quant_min);
    const float qmax = static_cast<float>(quant_max);
    for (size_t i = 0; i < n; ++i) {
      float v = quantized::round_half_even(xf[i] * inv_scale) + zp;
      v = v < qmin ? qmin : v;
      v = v > qmax ? qmax : v;
      q[i] = static_cast<int8_t>(v != v ? 0 : static_cast<int32_t>(v));
    }
    // dequantize_per_tensor.tensor's float(scale), times each channel's.
    const float scale = static_cast<float>(qp.scale);
    const int32_t zero_point = static_cast<int32_t>(qp.zero_point);
    const int8_t* w = w_tensor.data_as<int8_t>();
    const int32_t* sums = weight_sums.data_as<int32_t>();
    const float* scales = weight_scales.data_as<float>();
    const float* b = bias != nullptr ? bias->data_as<float>() : nullptr;
    float* y = out->data_as<float>();
    PARE_TRY_ASSIGN(void* sums_memory,
                    ctx.allocate_scratch(static_cast<size_t>(rows * out_features) * sizeof(int32_t)));
    int32_t* dots = static_cast<int32_t*>(sums_memory);
    qgemm::gemm_rows_int32(out_features, rows, in_features, w, q, dots);
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* dot = dots + r * out_features;
      float* y_row = y + r * out_features;
      for (int64_t c = 0; c < out_features; ++c) {
        // Wrapping int32 arithmetic: the true value fits (|sum| < 2^31 at k <= kMaxDepth).
        const int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(dot[c]) -
                                                 static_cast<uint32_t>(zero_point) * static_cast<uint32_t>(sums[c]));
        const float v = static_cast<float>(acc) * (scale * scales[c]);
        y_row[c] = b != nullptr ? v + b[c] : v;
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
