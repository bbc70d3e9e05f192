// Shared nn helpers (see nn_common.h).

#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace nn {

Error read_spatial(KernelContext& ctx, IntArrayRef list, size_t n, const char* name, int64_t min_value,
                   const int64_t* empty_default, int64_t* out) {
  if (list.size() == 0 && empty_default != nullptr) {
    for (size_t i = 0; i < n; ++i) out[i] = empty_default[i];
    return Error::Ok;
  }
  PARE_CHECK_OR_RETURN(ctx, list.size() == 1 || list.size() == n, Error::InvalidArgument,
                       "argument '%s' must be a single value or a list of %zu values, got %zu values", name, n,
                       list.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t v = list.size() == 1 ? list[0] : list[i];
    PARE_CHECK_OR_RETURN(ctx, v >= min_value && v <= kMaxSpatialParam, Error::InvalidArgument,
                         "argument '%s' must hold values in [%lld, %lld], got %lld", name,
                         static_cast<long long>(min_value), static_cast<long long>(kMaxSpatialParam),
                         static_cast<long long>(v));
    out[i] = v;
  }
  return Error::Ok;
}

bool window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                        int64_t* out) {
  // Callers pass kernel, stride, dilation >= 1 and 0 <= pad <= kMaxSpatialParam.
  int64_t span = 0;
  int64_t padded = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) || __builtin_add_overflow(span, 1, &span) ||
      __builtin_add_overflow(in, 2 * pad, &padded)) {
    return false;
  }
  const int64_t num = padded - span + (ceil_mode ? stride - 1 : 0);
  // Floor division (num may be negative).
  int64_t q = num / stride;
  if (num % stride != 0 && num < 0) --q;
  int64_t size = q + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && size >= 1 && (size - 1) * stride >= in + pad) --size;
  if (size < 1) return false;
  *out = size;
  return true;
}

Error check_norm_dtypes(KernelContext& ctx, const Tensor& input, const Tensor* const* params, const char* const* names,
                        size_t n, ScalarType* stats_dtype) {
  *stats_dtype = input.dtype;
  // Non-floating inputs are rejected by the op's dtype dispatch.
  if (!is_floating_type(input.dtype)) return Error::Ok;
  bool all_same = true;
  bool all_float = true;
  for (size_t i = 0; i < n; ++i) {
    if (params[i] == nullptr) continue;
    all_same = all_same && params[i]->dtype == input.dtype;
    all_float = all_float && params[i]->dtype == ScalarType::Float;
  }
  if (all_same) return Error::Ok;
  if (all_float && (input.dtype == ScalarType::Half || input.dtype == ScalarType::BFloat16)) {
    *stats_dtype = ScalarType::Float;
    return Error::Ok;
  }
  for (size_t i = 0; i < n; ++i) {
    if (params[i] == nullptr || params[i]->dtype == input.dtype) continue;
    return PARE_FAIL(ctx, Error::InvalidArgument,
                     "argument '%s' has dtype %s but 'input' is %s: parameters must match the input's dtype "
                     "(or all be Float for a Half or BFloat16 input)",
                     names[i], to_string(params[i]->dtype), to_string(input.dtype));
  }
  return Error::Ok;
}

Error check_channel_params(KernelContext& ctx, const Tensor& input, const Tensor* const* params,
                           const char* const* names, size_t n, int64_t channels, ScalarType* stats_dtype) {
  PARE_TRY(check_norm_dtypes(ctx, input, params, names, n, stats_dtype));
  for (size_t i = 0; i < n; ++i) {
    const Tensor* param = params[i];
    if (param == nullptr) continue;
    PARE_CHECK_OR_RETURN(ctx, param->dim == 1 && param->sizes[0] == channels, Error::InvalidShape,
                         "argument '%s' must be a 1-d tensor of %lld elements, got sizes %s", names[i],
                         static_cast<long long>(channels), sizes_to_string(param->size_span()).text);
  }
  return Error::Ok;
}

}  // namespace nn
}  // namespace kernels
}  // namespace pare
