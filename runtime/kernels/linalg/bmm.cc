// aten::bmm: a batch of matrix products over the blocked GEMM
// (common/gemm.h). float packs each operand straight from its strides (no
// copies for transposed or sliced inputs); other dtypes use the reference
// loop with opmath accumulation and wrapping integers. A float batch of
// single rows (attention over a KV cache while decoding: one query against
// every cached key, then the weights against every cached value) is a
// matrix-vector product per batch, run without packing (row_times_matrix).

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/gemm.h"
#include "runtime/kernels/common/rows.h"
#include "runtime/kernels/common/simd.h"

namespace pare {
namespace kernels {
namespace {

// Whether row_times_matrix takes a row of stride a_stride times B: B's rows
// or its columns contiguous, the row contiguous.
bool row_times_matrix_fits(int64_t a_stride, int64_t k, int64_t row_stride, int64_t col_stride) {
  return (a_stride == 1 || k <= 1) && (col_stride == 1 || row_stride == 1);
}

// c[0, n) = a[0, k) B, B's element (p, j) at b[p * row_stride + j *
// col_stride], where row_times_matrix_fits. Packing B for the GEMM's register tile
// reads and writes all of B to use one row of the tile: a decode step's
// q K^T and weights V over a 256-position cache ran 2-3x slower than
// torch's. Contiguous rows (V): c accumulates a[p] * row p, vectors along
// j, in order of p. Contiguous columns (K^T, a transposed cache): c[j] is
// a dot product of a and column j, vectors along p.
void row_times_matrix(const float* a, int64_t k, const float* b, int64_t row_stride, int64_t col_stride, int64_t n,
                      float* c) {
  using simd::kLanes;
  using simd::loadv;
  using simd::storev;
  using simd::vec;
  if (col_stride == 1) {
    for (int64_t j = 0; j < n; ++j) c[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      const float ap = a[p];
      const vec av = simd::splat(ap);
      const float* row = b + p * row_stride;
      int64_t j = 0;
      for (; j + kLanes <= n; j += kLanes) storev(c + j, loadv(c + j) + av * loadv(row + j));
      for (; j < n; ++j) c[j] += ap * row[j];
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) c[j] = rows::dot(a, b + j * col_stride, k);
}

}  // namespace

// aten::bmm(Tensor self, Tensor mat2) -> Tensor
Error aten_bmm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& mat2 = args.tensor(1, "mat2");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim == 3, Error::InvalidShape, "argument 'self' must be 3-d, got sizes %s",
                       sizes_to_string(self.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, mat2.dim == 3, Error::InvalidShape, "argument 'mat2' must be 3-d, got sizes %s",
                       sizes_to_string(mat2.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, mat2.sizes[0] == self.sizes[0] && mat2.sizes[1] == self.sizes[2], Error::InvalidShape,
                       "'self' of sizes %s and 'mat2' of sizes %s cannot be batch-multiplied: expected 'mat2' to "
                       "start with [%lld, %lld]",
                       sizes_to_string(self.size_span()).text, sizes_to_string(mat2.size_span()).text,
                       static_cast<long long>(self.sizes[0]), static_cast<long long>(self.sizes[2]));
  PARE_CHECK_OR_RETURN(ctx, self.dtype == mat2.dtype, Error::InvalidArgument,
                       "expected 'self' and 'mat2' to have the same dtype, but got %s != %s", to_string(self.dtype),
                       to_string(mat2.dtype));
  const int64_t batch = self.sizes[0];
  const int64_t m = self.sizes[1];
  const int64_t k = self.sizes[2];
  const int64_t n = mat2.sizes[2];
  const int64_t sizes[] = {batch, m, n};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, 3)));
  if (out->numel() == 0) return Error::Ok;

  return PARE_DISPATCH(bmm_kernel, ctx, self.dtype, T, {
    using Acc = opmath_t<T>;
    T* c = out->data_as<T>();
    if constexpr (is_same_v<T, float>) {
      if (m == 1 && row_times_matrix_fits(self.strides[2], k, mat2.strides[1], mat2.strides[2])) {
        for (int64_t b = 0; b < batch; ++b) {
          row_times_matrix(self.data_as<float>() + b * self.strides[0], k, mat2.data_as<float>() + b * mat2.strides[0],
                           mat2.strides[1], mat2.strides[2], n, c + b * n);
        }
        return Error::Ok;
      }
      PARE_TRY_ASSIGN(const gemm::Split split, gemm::split_for(ctx, m, n, k, /*pack_a=*/true, /*pack_b=*/true));
      for (int64_t b = 0; b < batch; ++b) {
        const gemm::MatrixView<float> a{self.data_as<float>() + b * self.strides[0], m, k, self.strides[1],
                                        self.strides[2]};
        const gemm::MatrixView<float> bv{mat2.data_as<float>() + b * mat2.strides[0], k, n, mat2.strides[1],
                                         mat2.strides[2]};
        gemm::sgemm(ctx, split, m, n, k, gemm::StridedA{a}, gemm::StridedB{bv}, c + b * m * n, n, gemm::Output{});
      }
    } else {
      // The reference loop wants unit-stride rows of mat2.
      PARE_TRY_ASSIGN(const Tensor rhs, as_contiguous(ctx, mat2, mat2.dtype));
      PARE_TRY_ASSIGN(void* acc_row, ctx.allocate_scratch(static_cast<size_t>(n) * sizeof(Acc)));
      for (int64_t b = 0; b < batch; ++b) {
        const gemm::MatrixView<T> a{self.data_as<T>() + b * self.strides[0], m, k, self.strides[1], self.strides[2]};
        const gemm::MatrixView<T> bv{rhs.data_as<T>() + b * k * n, k, n, n, 1};
        gemm::gemm_reference<T>(m, n, k, Acc(1), a, bv, c + b * m * n, n, false, static_cast<Acc*>(acc_row));
      }
    }
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
