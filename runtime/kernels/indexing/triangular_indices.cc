// aten::triu_indices: the coordinates of a matrix's upper triangle, as
// torch.triu_indices (a DLRM's pairwise interaction picks its feature
// pairs with it; torch.export keeps the factory in the graph). A factory
// like those of creation.cc, with no tensor inputs.

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {

namespace {

// The number of (r, c) with 0 <= r < row, 0 <= c < col and c - r >= offset,
// or false if it overflows int64.
bool upper_triangle_count(int64_t row, int64_t col, int64_t offset, int64_t* count) {
  // Rows with any element: r + offset < col, i.e. r < col - offset.
  int64_t limit = 0;
  if (__builtin_sub_overflow(col, offset, &limit)) limit = row;  // only when offset < 0: every row
  const int64_t rows = limit < 0 ? 0 : (limit < row ? limit : row);
  // Rows r <= -offset start at column 0 and hold `col` elements.
  int64_t full = rows;
  if (offset > 0) {
    full = 0;
  } else if (offset > INT64_MIN && -offset < rows) {
    full = -offset + 1;
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(full, col, &total)) return false;
  // The others hold col - offset - r: an arithmetic series from `first` down to `last`.
  const int64_t partial = rows - full;
  if (partial > 0) {
    const int64_t first = col - offset - full;  // <= col: these rows have r + offset >= 1
    const int64_t last = col - offset - (rows - 1);
    int64_t ends = 0;
    int64_t twice = 0;
    if (__builtin_add_overflow(first, last, &ends) || __builtin_mul_overflow(partial, ends, &twice)) return false;
    if (__builtin_add_overflow(total, twice / 2, &total)) return false;
  }
  *count = total;
  return true;
}

}  // namespace

// aten::triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None,
//     Device? device=None, bool? pin_memory=None) -> Tensor
Error aten_triu_indices(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 7, 1);
  const int64_t row = args.int64(0, "row");
  const int64_t col = args.int64(1, "col");
  const int64_t offset = args.int64_or(2, "offset", 0);
  const Optional<ScalarType> dtype = args.optional_dtype(3, "dtype");
  PARE_TRY(args.status());
  PARE_TRY(indexing::check_tensor_options(args, 4, 5, 6));
  PARE_CHECK_OR_RETURN(ctx, row >= 0, Error::InvalidArgument, "argument 'row' must be non-negative, got %lld",
                       static_cast<long long>(row));
  PARE_CHECK_OR_RETURN(ctx, col >= 0, Error::InvalidArgument, "argument 'col' must be non-negative, got %lld",
                       static_cast<long long>(col));
  int64_t count = 0;
  PARE_CHECK_OR_RETURN(ctx, upper_triangle_count(row, col, offset, &count), Error::LimitExceeded,
                       "the upper triangle of a %lld x %lld matrix has too many elements to index",
                       static_cast<long long>(row), static_cast<long long>(col));
  const ScalarType out_dtype = dtype.has_value ? dtype.value : ScalarType::Long;
  const int64_t sizes[2] = {2, count};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), out_dtype, IntArrayRef(sizes, 2)));
  return PARE_DISPATCH(triu_indices_kernel, ctx, out_dtype, T, {
    T* rows_out = out->data_as<T>();
    T* cols_out = rows_out + count;
    int64_t n = 0;
    // Row-major order, as torch; the count bounds the loop.
    for (int64_t r = 0; n < count; ++r) {
      for (int64_t c = r + offset > 0 ? r + offset : 0; c < col; ++c, ++n) {
        rows_out[n] = static_cast<T>(r);
        cols_out[n] = static_cast<T>(c);
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
