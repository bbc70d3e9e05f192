// Inference-time normalisation: batch norm with running statistics, batch
// norm over the input's own statistics (the form instance norm exports to),
// layer norm and group norm.
//
// All three reduce to "y = x * scale + shift" over contiguous runs of the
// (contiguous) input, with per-channel or per-row scale and shift computed
// in opmath_t<T> (float for Half/BFloat16), so the inner loops vectorise.
// Mean and variance are two-pass (mean, then squared deviations) with
// several accumulators: stable and vectorisable. Parameters may be the
// input's dtype or, for Half/BFloat16 inputs, Float (PyTorch's
// mixed-precision rule); the mean/rstd outputs then are Float too.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"
#include "runtime/kernels/nn/nn_common.h"

namespace pare {
namespace kernels {
namespace {

// y[i] = x[i] * scale + shift over n contiguous elements.
template <typename T, typename Acc>
PARE_ALWAYS_INLINE void affine_row(const T* PARE_RESTRICT x, T* PARE_RESTRICT y, int64_t n, Acc scale, Acc shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = T(Acc(x[i]) * scale + shift);
}

// Writes a mean/rstd statistic, in the stats dtype (T or Float).
template <typename T, typename Acc>
PARE_ALWAYS_INLINE void store_stat(const Tensor& t, int64_t i, Acc v) {
  if constexpr (!is_same_v<T, float>) {
    if (t.dtype == ScalarType::Float) {
      t.data_as<float>()[i] = float(v);
      return;
    }
  }
  t.data_as<T>()[i] = T(v);
}

// A statistic as PyTorch's batch norm computes it in training mode: rounded
// to the statistics' dtype when that is the input's Half or BFloat16 (mixed
// precision keeps Float statistics), and used rounded from then on.
template <typename T, typename Acc>
PARE_ALWAYS_INLINE Acc round_stat(ScalarType stats_dtype, Acc v) {
  if constexpr (is_reduced_float_v<T>) {
    if (stats_dtype != ScalarType::Float) return Acc(T(v));
  }
  return v;
}

// Mean and 1/sqrt(var + eps) of n contiguous values (mean 0 and rstd NaN
// when n is 0, as PyTorch).
template <typename T, typename Acc>
PARE_ALWAYS_INLINE void moments(const T* x, int64_t n, Acc eps, Acc* mean, Acc* rstd) {
  if (n == 0) {
    *mean = Acc(0);
    *rstd = Acc(0) / Acc(0);
    return;
  }
  const Acc m = rows::sum<Acc>(x, n) / Acc(n);
  Acc var = rows::sum_sq_dev<Acc>(x, n, m) / Acc(n);
  if (var < Acc(0)) var = Acc(0);
  *mean = m;
  *rstd = Acc(1) / math::sqrt(var + eps);
}

}  // namespace

// aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean,
//     Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)
Error aten__native_batch_norm_legit_no_training(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 7, 7, 3);
  const Tensor& input = args.tensor(0, "input");
  const Tensor* weight = args.optional_tensor(1, "weight");
  const Tensor* bias = args.optional_tensor(2, "bias");
  const Tensor& running_mean = args.tensor(3, "running_mean");
  const Tensor& running_var = args.tensor(4, "running_var");
  (void)args.real(5, "momentum");  // unused at inference
  const double eps = args.real(6, "eps");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, input.dim >= 2, Error::InvalidShape,
                       "argument 'input' must have at least 2 dims (N, C, ...), got sizes %s",
                       sizes_to_string(input.size_span()).text);
  const int64_t channels = input.sizes[1];
  const Tensor* params[] = {weight, bias, &running_mean, &running_var};
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  ScalarType stats_dtype = input.dtype;
  PARE_TRY(nn::check_channel_params(ctx, input, params, names, 4, channels, &stats_dtype));

  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, input.size_span()));
  const int64_t empty[] = {0};
  PARE_TRY(ctx.allocate_output(args.output(1), stats_dtype, IntArrayRef(empty, 1)));
  PARE_TRY(ctx.allocate_output(args.output(2), stats_dtype, IntArrayRef(empty, 1)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  int64_t inner = 1;
  for (size_t d = 2; d < input.dim; ++d) inner *= input.sizes[d];
  const int64_t batch = input.sizes[0];

  return PARE_DISPATCH(batch_norm_kernel, ctx, input.dtype, T, {
    using Acc = opmath_t<T>;
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(2 * static_cast<size_t>(channels) * sizeof(Acc)));
    Acc* scale = static_cast<Acc*>(memory);
    Acc* shift = scale + channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Acc invstd = Acc(1) / math::sqrt(nn::param_at<Acc, T>(running_var, c) + Acc(eps));
      const Acc w = weight != nullptr ? nn::param_at<Acc, T>(*weight, c) : Acc(1);
      const Acc b = bias != nullptr ? nn::param_at<Acc, T>(*bias, c) : Acc(0);
      scale[c] = invstd * w;
      shift[c] = b - nn::param_at<Acc, T>(running_mean, c) * scale[c];
    }
    const T* xd = x.data_as<T>();
    T* yd = out->data_as<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t offset = (n * channels + c) * inner;
        affine_row<T, Acc>(xd + offset, yd + offset, inner, scale[c], shift[c]);
      }
    }
    return Error::Ok;
  });
}

// aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training,
//     float momentum, float eps) -> (Tensor, Tensor, Tensor)
//
// Batch norm over the input's own per-channel statistics (over the batch
// and every spatial position), as training mode computes them: what
// nn.InstanceNorm*d (and a BatchNorm without running statistics) exports
// to, on the input viewed as [1, N * C, ...]. The second and third outputs
// are the per-channel mean and 1 / sqrt(biased variance + eps), rounded
// where PyTorch rounds them (round_stat). PyTorch fails, and so does this,
// on an empty input (no statistics) and on training=false (without running
// statistics there is nothing to normalise with but the batch's).
Error aten__native_batch_norm_legit_no_stats(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 3);
  const Tensor& input = args.tensor(0, "input");
  const Tensor* weight = args.optional_tensor(1, "weight");
  const Tensor* bias = args.optional_tensor(2, "bias");
  const bool training = args.boolean(3, "training");
  (void)args.real(4, "momentum");  // no running statistics to update
  const double eps = args.real(5, "eps");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, training, Error::InvalidArgument,
                       "argument 'training' must be true: without running statistics batch norm normalises with "
                       "the input's own, which is training mode");
  PARE_CHECK_OR_RETURN(ctx, input.dim >= 2, Error::InvalidShape,
                       "argument 'input' must have at least 2 dims (N, C, ...), got sizes %s",
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, input.numel() > 0, Error::InvalidShape,
                       "argument 'input' of sizes %s is empty: its statistics are undefined",
                       sizes_to_string(input.size_span()).text);
  const int64_t channels = input.sizes[1];
  const Tensor* params[] = {weight, bias};
  const char* names[] = {"weight", "bias"};
  ScalarType stats_dtype = input.dtype;
  PARE_TRY(nn::check_channel_params(ctx, input, params, names, 2, channels, &stats_dtype));

  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, input.size_span()));
  const int64_t stat_sizes[] = {channels};
  PARE_TRY_ASSIGN(Tensor * mean_out, ctx.allocate_output(args.output(1), stats_dtype, IntArrayRef(stat_sizes, 1)));
  PARE_TRY_ASSIGN(Tensor * invstd_out, ctx.allocate_output(args.output(2), stats_dtype, IntArrayRef(stat_sizes, 1)));
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  int64_t inner = 1;
  for (size_t d = 2; d < input.dim; ++d) inner *= input.sizes[d];
  const int64_t batch = input.sizes[0];
  const int64_t count = batch * inner;  // values per channel, at least 1

  return PARE_DISPATCH(batch_norm_kernel, ctx, input.dtype, T, {
    using Acc = opmath_t<T>;
    const T* xd = x.data_as<T>();
    T* yd = out->data_as<T>();
    for (int64_t c = 0; c < channels; ++c) {
      // Two passes, as moments() over one run: the mean, then the squared
      // deviations from it, each summed over the channel's batch rows.
      Acc sum = Acc(0);
      for (int64_t n = 0; n < batch; ++n) sum += rows::sum<Acc>(xd + (n * channels + c) * inner, inner);
      const Acc mean = round_stat<T, Acc>(stats_dtype, sum / Acc(count));
      Acc dev = Acc(0);
      for (int64_t n = 0; n < batch; ++n) dev += rows::sum_sq_dev<Acc>(xd + (n * channels + c) * inner, inner, mean);
      const Acc var = dev > Acc(0) ? dev / Acc(count) : Acc(0);
      const Acc invstd = round_stat<T, Acc>(stats_dtype, Acc(1) / math::sqrt(var + Acc(eps)));
      const Acc w = weight != nullptr ? nn::param_at<Acc, T>(*weight, c) : Acc(1);
      const Acc b = bias != nullptr ? nn::param_at<Acc, T>(*bias, c) : Acc(0);
      const Acc scale = invstd * w;
      const Acc shift = b - mean * scale;
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t offset = (n * channels + c) * inner;
        affine_row<T, Acc>(xd + offset, yd + offset, inner, scale, shift);
      }
      store_stat<T, Acc>(*mean_out, c, mean);
      store_stat<T, Acc>(*invstd_out, c, invstd);
    }
    return Error::Ok;
  });
}

// aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps)
//     -> (Tensor, Tensor, Tensor)
Error aten_native_layer_norm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 5, 5, 3);
  const Tensor& input = args.tensor(0, "input");
  const IntArrayRef normalized_shape = args.int_list(1, "normalized_shape");
  const Tensor* weight = args.optional_tensor(2, "weight");
  const Tensor* bias = args.optional_tensor(3, "bias");
  const double eps = args.real(4, "eps");
  PARE_TRY(args.status());
  const size_t nd = normalized_shape.size();
  bool shape_ok = nd >= 1 && nd <= input.dim;
  for (size_t i = 0; shape_ok && i < nd; ++i) shape_ok = input.sizes[input.dim - nd + i] == normalized_shape[i];
  PARE_CHECK_OR_RETURN(ctx, shape_ok, Error::InvalidShape,
                       "argument 'normalized_shape' %s must be non-empty and match the trailing sizes of 'input' %s",
                       sizes_to_string(normalized_shape).text, sizes_to_string(input.size_span()).text);
  const Tensor* params[] = {weight, bias};
  const char* names[] = {"weight", "bias"};
  for (size_t i = 0; i < 2; ++i) {
    if (params[i] == nullptr) continue;
    bool same = params[i]->dim == nd;
    for (size_t k = 0; same && k < nd; ++k) same = params[i]->sizes[k] == normalized_shape[k];
    PARE_CHECK_OR_RETURN(ctx, same, Error::InvalidShape, "argument '%s' of sizes %s must have sizes %s", names[i],
                         sizes_to_string(params[i]->size_span()).text, sizes_to_string(normalized_shape).text);
  }
  ScalarType stats_dtype = input.dtype;
  PARE_TRY(nn::check_norm_dtypes(ctx, input, params, names, 2, &stats_dtype));

  int64_t rows = 1;
  int64_t cols = 1;
  int64_t stat_sizes[kMaxDim];
  for (size_t d = 0; d < input.dim; ++d) {
    const bool normalized = d >= input.dim - nd;
    (normalized ? cols : rows) *= input.sizes[d];
    stat_sizes[d] = normalized ? 1 : input.sizes[d];
  }
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, input.size_span()));
  PARE_TRY_ASSIGN(Tensor * mean_out,
                  ctx.allocate_output(args.output(1), stats_dtype, IntArrayRef(stat_sizes, input.dim)));
  PARE_TRY_ASSIGN(Tensor * rstd_out,
                  ctx.allocate_output(args.output(2), stats_dtype, IntArrayRef(stat_sizes, input.dim)));
  if (rows == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  Tensor gamma{};
  Tensor beta{};
  if (weight != nullptr) {
    PARE_TRY_ASSIGN(gamma, as_contiguous(ctx, *weight, weight->dtype));
  }
  if (bias != nullptr) {
    PARE_TRY_ASSIGN(beta, as_contiguous(ctx, *bias, bias->dtype));
  }
  // As flat 1-d parameters.
  gamma.dim = beta.dim = 1;
  gamma.strides[0] = beta.strides[0] = 1;

  return PARE_DISPATCH(layer_norm_kernel, ctx, input.dtype, T, {
    using Acc = opmath_t<T>;
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(2 * static_cast<size_t>(cols) * sizeof(Acc) + 1));
    Acc* g = static_cast<Acc*>(memory);
    Acc* b = g + cols;
    for (int64_t j = 0; j < cols; ++j) {
      g[j] = weight != nullptr ? nn::param_at<Acc, T>(gamma, j) : Acc(1);
      b[j] = bias != nullptr ? nn::param_at<Acc, T>(beta, j) : Acc(0);
    }
    const T* xd = x.data_as<T>();
    T* yd = out->data_as<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* PARE_RESTRICT xr = xd + r * cols;
      T* PARE_RESTRICT yr = yd + r * cols;
      Acc mean = 0;
      Acc rstd = 0;
      moments<T, Acc>(xr, cols, Acc(eps), &mean, &rstd);
      const Acc shift = -rstd * mean;
      for (int64_t j = 0; j < cols; ++j) yr[j] = T((Acc(xr[j]) * rstd + shift) * g[j] + b[j]);
      store_stat<T, Acc>(*mean_out, r, mean);
      store_stat<T, Acc>(*rstd_out, r, rstd);
    }
    return Error::Ok;
  });
}

// aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW,
//     int group, float eps) -> (Tensor, Tensor, Tensor)
Error aten_native_group_norm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 8, 8, 3);
  const Tensor& input = args.tensor(0, "input");
  const Tensor* weight = args.optional_tensor(1, "weight");
  const Tensor* bias = args.optional_tensor(2, "bias");
  const int64_t batch = args.int64(3, "N");
  const int64_t channels = args.int64(4, "C");
  const int64_t hxw = args.int64(5, "HxW");
  const int64_t groups = args.int64(6, "group");
  const double eps = args.real(7, "eps");
  PARE_TRY(args.status());
  int64_t expected_numel = -1;
  if (__builtin_mul_overflow(batch, channels, &expected_numel) ||
      __builtin_mul_overflow(expected_numel, hxw, &expected_numel)) {
    expected_numel = -1;
  }
  PARE_CHECK_OR_RETURN(ctx,
                       input.dim >= 2 && input.sizes[0] == batch && input.sizes[1] == channels && hxw >= 0 &&
                           static_cast<int64_t>(input.numel()) == expected_numel,
                       Error::InvalidShape, "arguments N=%lld, C=%lld, HxW=%lld do not describe 'input' of sizes %s",
                       static_cast<long long>(batch), static_cast<long long>(channels), static_cast<long long>(hxw),
                       sizes_to_string(input.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, groups >= 1 && channels % groups == 0, Error::InvalidArgument,
                       "argument 'group' = %lld must be positive and divide the %lld channels of 'input'",
                       static_cast<long long>(groups), static_cast<long long>(channels));
  const Tensor* params[] = {weight, bias};
  const char* names[] = {"weight", "bias"};
  ScalarType stats_dtype = input.dtype;
  PARE_TRY(nn::check_channel_params(ctx, input, params, names, 2, channels, &stats_dtype));

  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), input.dtype, input.size_span()));
  const int64_t stat_sizes[] = {batch, groups};
  PARE_TRY_ASSIGN(Tensor * mean_out, ctx.allocate_output(args.output(1), stats_dtype, IntArrayRef(stat_sizes, 2)));
  PARE_TRY_ASSIGN(Tensor * rstd_out, ctx.allocate_output(args.output(2), stats_dtype, IntArrayRef(stat_sizes, 2)));
  if (batch == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, input.dtype));
  const int64_t per_group = channels / groups;

  return PARE_DISPATCH(group_norm_kernel, ctx, input.dtype, T, {
    using Acc = opmath_t<T>;
    const T* xd = x.data_as<T>();
    T* yd = out->data_as<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t grp = 0; grp < groups; ++grp) {
        const int64_t base = (n * channels + grp * per_group) * hxw;
        Acc mean = 0;
        Acc rstd = 0;
        moments<T, Acc>(xd + base, per_group * hxw, Acc(eps), &mean, &rstd);
        for (int64_t c = 0; c < per_group; ++c) {
          const int64_t channel = grp * per_group + c;
          const Acc w = weight != nullptr ? nn::param_at<Acc, T>(*weight, channel) : Acc(1);
          const Acc b = bias != nullptr ? nn::param_at<Acc, T>(*bias, channel) : Acc(0);
          const Acc scale = rstd * w;
          const Acc shift = b - scale * mean;
          affine_row<T, Acc>(xd + base + c * hxw, yd + base + c * hxw, hxw, scale, shift);
        }
        store_stat<T, Acc>(*mean_out, n * groups + grp, mean);
        store_stat<T, Acc>(*rstd_out, n * groups + grp, rstd);
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
