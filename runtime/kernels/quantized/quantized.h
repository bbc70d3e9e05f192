#pragma once
// What the quantized family's kernels share: the argument checks of
// torch's reference ops (torch/ao/quantization/fx/_decomposed.py: the
// quantized dtype, quant_min and quant_max within it), reading a one-element
// scale or zero-point tensor as the reference's `.item()` does, and the one
// rounding every quantize uses.

#include "runtime/kernels/common/math.h"
#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {
namespace quantized {

// torch.round (half to even, in the default rounding mode) without a libm
// call, so quantize loops vectorise: adding 1.5 * 2^23 (2^52 for double)
// leaves no fraction bits, and the FPU rounds half to even. Values of 2^22
// (2^51) and more are integers already, and NaN stays NaN.
template <typename F>
PARE_ALWAYS_INLINE F round_half_even(F v) {
  constexpr bool kFloat = is_same_v<F, float>;
  const F magic = kFloat ? F(12582912.0f) : F(6755399441055744.0);
  const F exact = kFloat ? F(4194304.0f) : F(2251799813685248.0);
  return math::abs(v) < exact ? (v + magic) - magic : v;
}

// clamp(round(x * inv_scale) + zero_point, quant_min, quant_max).to(Q), in
// F (float, or double where torch promotes to it): the reference's
// operations in its order, each rounded to F. The product must round
// before the addition of the magic constant: the file including this
// header turns floating-point contraction off (no FMA).
template <typename Q, typename F>
PARE_ALWAYS_INLINE Q quantize_value(F x, F inv_scale, F zero_point, F qmin, F qmax, int64_t iqmin, int64_t iqmax) {
  const F product = x * inv_scale;
  F v = round_half_even(product) + zero_point;
  v = v < qmin ? qmin : v;  // torch.clamp: NaN propagates...
  v = v > qmax ? qmax : v;
  if (v != v) return Q(0);  // ...and becomes 0, as torch's conversion of NaN to an integer gives on x86_64 and arm64
  // qmax as a float can round up past an int32 quant_max: clamp exactly too.
  int64_t i = static_cast<int64_t>(v);
  i = i < iqmin ? iqmin : i;
  i = i > iqmax ? iqmax : i;
  return static_cast<Q>(i);
}

// A dynamic activation's per-tensor quantization, as choose_qparams.tensor
// returns it (a float32 scale widened to double, the zero point).
struct TensorQParams {
  double scale;
  int64_t zero_point;
};

// choose_qparams.tensor's scale and zero point for the n > 0 float32 values
// at x (torch.ao.quantization.utils.determine_qparams, per_tensor_affine:
// float32 arithmetic as the reference's tensors do it). The caller checked
// quant_min <= 0 <= quant_max and quant_min < quant_max.
TensorQParams choose_qparams(const float* x, size_t n, int64_t quant_min, int64_t quant_max, double eps);
// The same from the values' extremes (lo, hi) and whether one of them is
// NaN (then lo and hi are not read).
TensorQParams qparams_from_range(float lo, float hi, bool nan, int64_t quant_min, int64_t quant_max, double eps);

// choose_qparams' checks of its range (validate_qmin_qmax).
Error check_choose_qparams_range(KernelContext& ctx, int64_t quant_min, int64_t quant_max);

// The range of a dtype torch's reference ops quantize to. False for the
// others (torch's uint16 and float8 are not Pare dtypes).
bool quantized_dtype_range(ScalarType dtype, int64_t* lo, int64_t* hi);

// The reference's checks of `dtype` and of quant_min / quant_max against
// it (_quant_min_max_bounds_check), plus quant_min <= quant_max (a range
// torch would clamp everything to quant_max with).
Error check_quant_args(KernelContext& ctx, int64_t quant_min, int64_t quant_max, ScalarType dtype);

// Only the dtype: the reference's dequantize_per_tensor ignores quant_min
// and quant_max.
Error check_quant_dtype(KernelContext& ctx, ScalarType dtype);

// The value of a one-element tensor argument (`scale`, `zero_point` of the
// `.tensor` overloads), as `.item()`; `integral` requires an integer dtype.
Result<double> one_element(KernelContext& ctx, const Tensor& t, const char* name, bool integral);

// The dtype argument the reference ops take without a default.
ScalarType quant_dtype_arg(KernelArgs& args, size_t i);

// out_dtype: None or float32 (the reference's other out_dtypes are not
// supported).
Error check_out_dtype(KernelContext& ctx, const Optional<ScalarType>& out_dtype);

}  // namespace quantized
}  // namespace kernels
}  // namespace pare
