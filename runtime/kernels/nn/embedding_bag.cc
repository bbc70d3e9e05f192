// aten::_embedding_bag and aten::_embedding_bag_forward_only (nn.EmbeddingBag;
// which one torch.export records depends on whether the weight requires grad):
// sums, means or maxima of bags of rows of a 2-d weight table.
//
// The bags (output 0) repeat PyTorch's CPU kernel (ATen/native/EmbeddingBag.cpp)
// bit for bit, including where its paths round differently. Float, Half and
// BFloat16 sums accumulate in float in index order; where PyTorch hands the
// bag to FBGEMM (its "fast path": a Float/Half/BFloat16 weight with unit
// column stride, no padding_idx, unit-stride per_sample_weights) a weighted
// term is one fused multiply-add and a BFloat16 result is rounded half away
// from zero in the bits (FBGEMM's conversion), else a weighted term is a
// rounded product then a sum, and BFloat16 rounds to nearest even. Double
// accumulates in double. A mean divides the result, already rounded to the
// weight's dtype, by the bag's size converted to it. The other outputs
// (offset2bag, bag_size, max_indices) are PyTorch's, shapes included, though
// inference graphs never read them.

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {

namespace {

constexpr int64_t kModeSum = 0;
constexpr int64_t kModeMean = 1;
constexpr int64_t kModeMax = 2;

// fmaf(a, b, c), rounded once, without libm: a * b is exact in double, the
// sum is rounded to odd (the sticky bit kept), so rounding it to float is
// the correctly rounded fused result.
inline float fused_multiply_add(float a, float b, float c) {
  const double p = static_cast<double>(a) * static_cast<double>(b);
  const double cd = static_cast<double>(c);
  const double s = p + cd;
  const double back = s - p;
  const double err = (p - (s - back)) + (cd - back);  // p + c - s, exactly (TwoSum)
  uint64_t bits = __builtin_bit_cast(uint64_t, s);
  if (err != 0 && err == err && (bits & 1u) == 0) {
    // Step to the odd neighbour on err's side of s.
    bits += ((err > 0) == (s > 0)) ? 1 : static_cast<uint64_t>(-1);
  }
  return static_cast<float>(__builtin_bit_cast(double, bits));
}

// FBGEMM's float -> bfloat16: round half away from zero in the bits.
inline BFloat16 bfloat16_half_up(float f) {
  return BFloat16::from_bits(static_cast<uint16_t>((__builtin_bit_cast(uint32_t, f) + 0x8000u) >> 16));
}

struct BagPlan {
  const int64_t* indices;
  const int64_t* offsets;
  int64_t num_indices;
  int64_t num_offsets;
  int64_t bags;
  int64_t dim;  // columns of the weight
  int64_t mode;
  int64_t padding_idx;  // negative: none
  bool fast_path;       // PyTorch's FBGEMM path (see the file comment)
  int64_t end(int64_t b) const { return b + 1 < num_offsets ? offsets[b + 1] : num_indices; }
};

// Output 0 for one weight dtype; `counts` gets each bag's size without
// padding entries, `argmax` (max mode, [bags, dim]) the row of each maximum.
template <typename T>
Error reduce_bags(KernelContext& ctx, const BagPlan& plan, const Tensor& weight, const Tensor* per_sample_weights,
                  Tensor* out, int64_t* counts, int64_t* argmax) {
  using Acc = opmath_t<T>;
  const T* w = weight.data_as<T>();
  const int64_t s0 = weight.strides[0];
  const int64_t s1 = weight.strides[1];
  const int64_t dim = plan.dim;
  T* y = out->data_as<T>();
  Acc* acc = nullptr;
  if (plan.mode != kModeMax && dim > 0) {
    PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(static_cast<size_t>(dim) * sizeof(Acc)));
    acc = static_cast<Acc*>(scratch);
  }
  const T* psw = per_sample_weights ? per_sample_weights->data_as<T>() : nullptr;
  const int64_t psw_stride = per_sample_weights ? per_sample_weights->strides[0] : 0;
  for (int64_t b = 0; b < plan.bags; ++b) {
    T* row_out = y + b * dim;
    int64_t count = 0;
    if (plan.mode == kModeMax) {
      for (int64_t d = 0; d < dim; ++d) {
        row_out[d] = T(0.0f);
        argmax[b * dim + d] = 0;
      }
      for (int64_t i = plan.offsets[b]; i < plan.end(b); ++i) {
        const int64_t k = plan.indices[i];
        if (k == plan.padding_idx) continue;
        const T* row = w + k * s0;
        for (int64_t d = 0; d < dim; ++d) {
          // As PyTorch: the first entry, then only a strictly greater one (a NaN stays first-come).
          if (count == 0 || Acc(row[d * s1]) > Acc(row_out[d])) {
            row_out[d] = row[d * s1];
            argmax[b * dim + d] = k;
          }
        }
        ++count;
      }
      counts[b] = count;
      continue;
    }
    for (int64_t d = 0; d < dim; ++d) acc[d] = Acc(0);
    for (int64_t i = plan.offsets[b]; i < plan.end(b); ++i) {
      const int64_t k = plan.indices[i];
      if (k == plan.padding_idx) continue;
      ++count;
      const T* row = w + k * s0;
      if (psw == nullptr) {
        for (int64_t d = 0; d < dim; ++d) acc[d] += Acc(row[d * s1]);
      } else if constexpr (!is_same_v<T, double>) {
        const float scale = float(psw[i * psw_stride]);
        if (plan.fast_path) {
          for (int64_t d = 0; d < dim; ++d) acc[d] = fused_multiply_add(float(row[d * s1]), scale, acc[d]);
        } else {
          for (int64_t d = 0; d < dim; ++d) {
            const float term = float(row[d * s1]) * scale;  // its own statement: never contracted to an FMA
            acc[d] += term;
          }
        }
      } else {
        const double scale = psw[i * psw_stride];
        for (int64_t d = 0; d < dim; ++d) {
          const double term = row[d * s1] * scale;  // its own statement: never contracted to an FMA
          acc[d] += term;
        }
      }
    }
    counts[b] = count;
    for (int64_t d = 0; d < dim; ++d) {
      if constexpr (is_same_v<T, BFloat16>) {
        row_out[d] = plan.fast_path ? bfloat16_half_up(acc[d]) : BFloat16(acc[d]);
      } else {
        row_out[d] = T(acc[d]);
      }
    }
    if (plan.mode == kModeMean) {
      // PyTorch divides the rounded sums by max(bag_size, 1) converted to T.
      const Acc divisor = Acc(T(static_cast<Acc>(count > 1 ? count : 1)));
      for (int64_t d = 0; d < dim; ++d) row_out[d] = T(Acc(row_out[d]) / divisor);
    }
  }
  return Error::Ok;
}

template <typename I>
void store(const Tensor* t, const int64_t* values, size_t n) {
  I* p = t->data_as<I>();
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<I>(values[i]);
}

Error write_index_output(KernelContext& ctx, Value& output, ScalarType dtype, IntArrayRef sizes,
                         const int64_t* values) {
  PARE_TRY_ASSIGN(Tensor * t, ctx.allocate_output(output, dtype, sizes));
  const size_t n = t->numel();
  if (dtype == ScalarType::Long) {
    store<int64_t>(t, values, n);
  } else {
    store<int32_t>(t, values, n);
  }
  return Error::Ok;
}

// Both overloads; they differ only in bag_size's shape in sum mode.
Error embedding_bag(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, bool forward_only) {
  KernelArgs args(ctx, inputs, outputs, 3, 9, 4);
  const Tensor& weight = args.tensor(0, "weight");
  const Tensor& indices = args.tensor(1, "indices");
  const Tensor& offsets = args.tensor(2, "offsets");
  (void)args.boolean_or(3, "scale_grad_by_freq", false);  // gradients only
  const int64_t mode = args.int64_or(4, "mode", kModeSum);
  (void)args.boolean_or(5, "sparse", false);  // gradients only
  const Tensor* per_sample_weights = args.optional_tensor(6, "per_sample_weights");
  const bool include_last_offset = args.boolean_or(7, "include_last_offset", false);
  const int64_t padding_idx = args.int64_or(8, "padding_idx", -1);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, mode == kModeSum || mode == kModeMean || mode == kModeMax, Error::InvalidArgument,
                       "argument 'mode' must be 0 (sum), 1 (mean) or 2 (max), got %lld", static_cast<long long>(mode));
  PARE_CHECK_OR_RETURN(ctx, weight.dim == 2, Error::InvalidShape, "argument 'weight' must be 2-d, got sizes %s",
                       sizes_to_string(weight.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, indices.dtype == ScalarType::Long || indices.dtype == ScalarType::Int,
                       Error::UnsupportedDtype, "argument 'indices' must be Long or Int, got %s",
                       to_string(indices.dtype));
  PARE_CHECK_OR_RETURN(ctx, offsets.dtype == ScalarType::Long || offsets.dtype == ScalarType::Int,
                       Error::UnsupportedDtype, "argument 'offsets' must be Long or Int, got %s",
                       to_string(offsets.dtype));
  PARE_CHECK_OR_RETURN(
      ctx, indices.dim == 1, Error::InvalidShape,
      "argument 'indices' must be 1-d (nn.EmbeddingBag flattens 2-d input before this op), got sizes %s",
      sizes_to_string(indices.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, offsets.dim == 1, Error::InvalidShape, "argument 'offsets' must be 1-d, got sizes %s",
                       sizes_to_string(offsets.size_span()).text);
  const int64_t num_indices = indices.sizes[0];
  if (per_sample_weights != nullptr) {
    PARE_CHECK_OR_RETURN(ctx, mode == kModeSum, Error::InvalidArgument,
                         "argument 'per_sample_weights' is only supported with mode 0 (sum), got mode %lld",
                         static_cast<long long>(mode));
    PARE_CHECK_OR_RETURN(ctx, per_sample_weights->dtype == weight.dtype, Error::UnsupportedDtype,
                         "argument 'per_sample_weights' must have the weight's dtype %s, got %s",
                         to_string(weight.dtype), to_string(per_sample_weights->dtype));
    PARE_CHECK_OR_RETURN(ctx, per_sample_weights->dim == 1 && per_sample_weights->sizes[0] == num_indices,
                         Error::InvalidShape,
                         "argument 'per_sample_weights' must have sizes [%lld] like 'indices', got %s",
                         static_cast<long long>(num_indices), sizes_to_string(per_sample_weights->size_span()).text);
  }
  const int64_t num_offsets = offsets.sizes[0];
  PARE_CHECK_OR_RETURN(ctx, !include_last_offset || num_offsets >= 1, Error::InvalidShape,
                       "argument 'offsets' must hold at least one offset with include_last_offset=True");
  PARE_TRY_ASSIGN(const int64_t* idx, indexing::index_values(ctx, indices, "indices"));
  PARE_TRY_ASSIGN(const int64_t* off, indexing::index_values(ctx, offsets, "offsets"));
  if (num_offsets > 0) {
    PARE_CHECK_OR_RETURN(ctx, off[0] == 0, Error::InvalidArgument,
                         "argument 'offsets': the first offset must be 0, got %lld", static_cast<long long>(off[0]));
    for (int64_t b = 1; b < num_offsets; ++b) {
      PARE_CHECK_OR_RETURN(ctx, off[b] >= off[b - 1], Error::InvalidArgument,
                           "argument 'offsets' must be non-decreasing, got %lld after %lld at position %lld",
                           static_cast<long long>(off[b]), static_cast<long long>(off[b - 1]),
                           static_cast<long long>(b));
    }
    const int64_t last = off[num_offsets - 1];
    PARE_CHECK_OR_RETURN(ctx, last <= num_indices, Error::InvalidArgument,
                         "argument 'offsets': the last offset %lld is beyond the %lld indices",
                         static_cast<long long>(last), static_cast<long long>(num_indices));
    // PyTorch's paths disagree on a shorter last offset (some end the last
    // bag there, some at the end of the indices): refused when there is a bag.
    PARE_CHECK_OR_RETURN(ctx, !include_last_offset || num_offsets == 1 || last == num_indices, Error::InvalidArgument,
                         "argument 'offsets': with include_last_offset=True the last offset must be the number of "
                         "indices %lld, got %lld",
                         static_cast<long long>(num_indices), static_cast<long long>(last));
  }
  const int64_t rows = weight.sizes[0];
  for (int64_t i = 0; i < num_indices; ++i) {
    PARE_CHECK_OR_RETURN(ctx, idx[i] >= 0 && idx[i] < rows, Error::IndexOutOfRange,
                         "argument 'indices': index %lld is out of range for 'weight' with %lld rows",
                         static_cast<long long>(idx[i]), static_cast<long long>(rows));
  }

  BagPlan plan{};
  plan.indices = idx;
  plan.offsets = off;
  plan.num_indices = num_indices;
  plan.num_offsets = num_offsets;
  plan.bags = num_offsets - (include_last_offset ? 1 : 0);
  plan.dim = weight.sizes[1];
  plan.mode = mode;
  plan.padding_idx = padding_idx < 0 ? -1 : padding_idx;
  plan.fast_path =
      (weight.dtype == ScalarType::Float || weight.dtype == ScalarType::Half || weight.dtype == ScalarType::BFloat16) &&
      weight.strides[1] == 1 && padding_idx < 0 &&
      (per_sample_weights == nullptr || per_sample_weights->strides[0] == 1);

  const int64_t out_sizes[2] = {plan.bags, plan.dim};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), weight.dtype, IntArrayRef(out_sizes, 2)));
  const size_t bags = static_cast<size_t>(plan.bags);
  const size_t cells = bags * static_cast<size_t>(plan.dim);  // out's element count: fits
  // counts has room for one more entry: bag_size has one per offset in
  // the forward-only overload's sum mode.
  const size_t scratch_values = bags + 1 + static_cast<size_t>(num_indices) + (mode == kModeMax ? cells : 0);
  PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(scratch_values * sizeof(int64_t)));
  int64_t* counts = static_cast<int64_t*>(scratch);
  int64_t* offset2bag = counts + bags + 1;
  int64_t* argmax = offset2bag + num_indices;

  PARE_TRY(PARE_DISPATCH(embedding_bag_kernel, ctx, weight.dtype, T,
                         { return reduce_bags<T>(ctx, plan, weight, per_sample_weights, out, counts, argmax); }));

  // The auxiliary outputs, in the index dtype PyTorch promotes indices and offsets to.
  const ScalarType index_dtype =
      indices.dtype == ScalarType::Long || offsets.dtype == ScalarType::Long ? ScalarType::Long : ScalarType::Int;
  // offset2bag: each index's bag (PyTorch skips it, leaving it empty, on the sum fast path).
  const int64_t offset2bag_size = mode == kModeSum && plan.fast_path ? 0 : num_indices;
  for (int64_t i = 0, b = 0; i < offset2bag_size; ++i) {
    while (b + 1 < plan.bags && off[b + 1] <= i) ++b;
    offset2bag[i] = plan.bags == 0 ? -1 : b;
  }
  PARE_TRY(write_index_output(ctx, args.output(1), index_dtype, IntArrayRef(&offset2bag_size, 1), offset2bag));
  // bag_size: zeros in sum mode (one per offset in the forward-only overload).
  const int64_t bag_size_size = mode == kModeSum && forward_only ? num_offsets : plan.bags;
  if (mode == kModeSum) {
    for (int64_t i = 0; i < bag_size_size; ++i) counts[i] = 0;
  }
  PARE_TRY(write_index_output(ctx, args.output(2), index_dtype, IntArrayRef(&bag_size_size, 1), counts));
  // max_indices: the rows of the maxima in max mode, else bag_size again.
  if (mode == kModeMax) {
    return write_index_output(ctx, args.output(3), index_dtype, IntArrayRef(out_sizes, 2), argmax);
  }
  return write_index_output(ctx, args.output(3), index_dtype, IntArrayRef(&bag_size_size, 1), counts);
}

}  // namespace

// aten::_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0,
//     bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1)
//     -> (Tensor, Tensor, Tensor, Tensor)
Error aten__embedding_bag(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return embedding_bag(ctx, inputs, outputs, /*forward_only=*/false);
}

// aten::_embedding_bag_forward_only(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False,
//     int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False,
//     int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)
Error aten__embedding_bag_forward_only(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return embedding_bag(ctx, inputs, outputs, /*forward_only=*/true);
}

}  // namespace kernels
}  // namespace pare
