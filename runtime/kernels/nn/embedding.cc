// aten::embedding: rows of a 2-d weight table gathered by Int or Long
// indices. A row is copied as bytes, so one code path serves every weight
// dtype (no dtype dispatch: there is no per-dtype arithmetic to select).

#include "runtime/kernels/common/convert.h"

namespace pare {
namespace kernels {

// aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False,
//     bool sparse=False) -> Tensor
Error aten_embedding(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 5, 1);
  const Tensor& weight = args.tensor(0, "weight");
  const Tensor& indices = args.tensor(1, "indices");
  // padding_idx, scale_grad_by_freq and sparse only affect gradients.
  (void)args.int64_or(2, "padding_idx", -1);
  (void)args.boolean_or(3, "scale_grad_by_freq", false);
  (void)args.boolean_or(4, "sparse", false);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, weight.dim == 2, Error::InvalidShape, "argument 'weight' must be 2-d, got sizes %s",
                       sizes_to_string(weight.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, indices.dtype == ScalarType::Long || indices.dtype == ScalarType::Int,
                       Error::UnsupportedDtype, "argument 'indices' must be Long or Int, got %s",
                       to_string(indices.dtype));
  PARE_CHECK_OR_RETURN(ctx, indices.dim < kMaxDim, Error::LimitExceeded,
                       "argument 'indices' has rank %d; the result would exceed the maximum rank %zu", int{indices.dim},
                       kMaxDim);
  int64_t sizes[kMaxDim];
  for (size_t d = 0; d < indices.dim; ++d) sizes[d] = indices.sizes[d];
  sizes[indices.dim] = weight.sizes[1];
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), weight.dtype, IntArrayRef(sizes, indices.dim + 1u)));
  const size_t count = indices.numel();
  if (count == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor idx, as_contiguous(ctx, indices, indices.dtype));
  // Bytes per row: the (non-empty) output holds `count` such rows, so the
  // allocation already proved this fits.
  const int64_t rows = weight.sizes[0];
  const size_t row_bytes = static_cast<size_t>(weight.sizes[1]) * weight.element_size();
  Tensor w = weight;
  if (row_bytes > 0) {
    PARE_TRY_ASSIGN(w, as_contiguous(ctx, weight, weight.dtype));
  }
  const char* table = static_cast<const char*>(w.data());
  char* dst = static_cast<char*>(out->data());
  const bool is_long = idx.dtype == ScalarType::Long;
  for (size_t i = 0; i < count; ++i) {
    const int64_t k = is_long ? idx.data_as<int64_t>()[i] : idx.data_as<int32_t>()[i];
    PARE_CHECK_OR_RETURN(ctx, k >= 0 && k < rows, Error::IndexOutOfRange,
                         "argument 'indices': index %lld is out of range for 'weight' with %lld rows",
                         static_cast<long long>(k), static_cast<long long>(rows));
    if (row_bytes > 0) __builtin_memcpy(dst + i * row_bytes, table + static_cast<size_t>(k) * row_bytes, row_bytes);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace pare
