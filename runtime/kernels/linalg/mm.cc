// aten::mm and aten::addmm over the blocked GEMM (common/gemm.h).
//
// float takes the packed SIMD path; other dtypes the reference loop with
// opmath accumulation. Both dispatch through kernel tag mm_kernel.

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace kernels {
namespace {

// PARE_UNUSED: only the float case calls it, and selective builds may drop
// that case (see runtime/kernels/README.md, "Helpers and selective builds").
PARE_UNUSED gemm::MatrixView<float> float_view(const Tensor& t) {
  return {t.data_as<float>(), t.sizes[0], t.sizes[1], t.strides[0], t.strides[1]};
}

// out[m x n] = alpha * mat1 mat2 (+ out when accumulate). `out` is
// contiguous and, when accumulating, already holds beta * self.
Error matmul_into(KernelContext& ctx, const Tensor& mat1, const Tensor& mat2, const Scalar& alpha, Tensor& out,
                  bool accumulate) {
  const int64_t m = mat1.sizes[0];
  const int64_t k = mat1.sizes[1];
  const int64_t n = mat2.sizes[1];
  if (out.numel() == 0) return Error::Ok;
  return dispatch<tags::mm_kernel>(ctx, out.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    if constexpr (is_same_v<T, float>) {
      PARE_TRY_ASSIGN(const gemm::Split split, gemm::split_for(ctx, m, n, k, /*pack_a=*/true, /*pack_b=*/true));
      gemm::sgemm(ctx, split, m, n, k, gemm::StridedA{float_view(mat1)}, gemm::StridedB{float_view(mat2)},
                  out.data_as<float>(), n, gemm::Output{alpha.to<float>(), accumulate});
    } else {
      // The reference loop wants unit-stride rows of mat2.
      PARE_TRY_ASSIGN(const Tensor b, as_contiguous(ctx, mat2, mat2.dtype));
      PARE_TRY_ASSIGN(void* acc_row, ctx.allocate_scratch(static_cast<size_t>(n) * sizeof(Acc)));
      const gemm::MatrixView<T> a_view{mat1.data_as<T>(), m, k, mat1.strides[0], mat1.strides[1]};
      const gemm::MatrixView<T> b_view{b.data_as<T>(), k, n, n, 1};
      gemm::gemm_reference<T>(m, n, k, alpha.to<Acc>(), a_view, b_view, out.data_as<T>(), n, accumulate,
                              static_cast<Acc*>(acc_row));
    }
    return Error::Ok;
  });
}

Error check_matrices(KernelContext& ctx, const Tensor& a, const char* a_name, const Tensor& b, const char* b_name) {
  PARE_CHECK_OR_RETURN(ctx, a.dim == 2, Error::InvalidShape, "argument '%s' must be a matrix, got sizes %s", a_name,
                       sizes_to_string(a.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, b.dim == 2, Error::InvalidShape, "argument '%s' must be a matrix, got sizes %s", b_name,
                       sizes_to_string(b.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, a.sizes[1] == b.sizes[0], Error::InvalidShape,
                       "'%s' and '%s' shapes cannot be multiplied (%lldx%lld and %lldx%lld)", a_name, b_name,
                       static_cast<long long>(a.sizes[0]), static_cast<long long>(a.sizes[1]),
                       static_cast<long long>(b.sizes[0]), static_cast<long long>(b.sizes[1]));
  PARE_CHECK_OR_RETURN(ctx, a.dtype == b.dtype, Error::InvalidArgument,
                       "expected '%s' and '%s' to have the same dtype, but got %s != %s", a_name, b_name,
                       to_string(a.dtype), to_string(b.dtype));
  return Error::Ok;
}

}  // namespace

// aten::mm(Tensor self, Tensor mat2) -> Tensor
Error aten_mm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& mat2 = args.tensor(1, "mat2");
  PARE_TRY(args.status());
  PARE_TRY(check_matrices(ctx, self, "self", mat2, "mat2"));
  const int64_t sizes[] = {self.sizes[0], mat2.sizes[1]};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, 2)));
  return matmul_into(ctx, self, mat2, Scalar::from_int(1), *out, /*accumulate=*/false);
}

// aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
Error aten_addmm(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 5, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& mat1 = args.tensor(1, "mat1");
  const Tensor& mat2 = args.tensor(2, "mat2");
  const Scalar beta = args.scalar_or(3, "beta", Scalar::from_int(1));
  const Scalar alpha = args.scalar_or(4, "alpha", Scalar::from_int(1));
  PARE_TRY(args.status());
  PARE_TRY(check_matrices(ctx, mat1, "mat1", mat2, "mat2"));
  PARE_CHECK_OR_RETURN(ctx, self.dtype == mat1.dtype, Error::InvalidArgument,
                       "expected 'self' and 'mat1' to have the same dtype, but got %s != %s", to_string(self.dtype),
                       to_string(mat1.dtype));
  const int64_t sizes[] = {mat1.sizes[0], mat2.sizes[1]};
  int64_t broadcast[kMaxDim];
  size_t broadcast_dim = 0;
  PARE_CHECK_OR_RETURN(ctx,
                       self.dim <= 2 &&
                           broadcast_shapes(self.size_span(), IntArrayRef(sizes, 2), broadcast, &broadcast_dim) &&
                           broadcast[0] == sizes[0] && broadcast[1] == sizes[1],
                       Error::InvalidShape, "argument 'self' with sizes %s cannot be broadcast to %s",
                       sizes_to_string(self.size_span()).text, sizes_to_string(IntArrayRef(sizes, 2)).text);

  if (beta.as_double() == 0.0) {
    // beta == 0: self is ignored entirely (NaN/inf in it do not propagate).
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), mat1.dtype, IntArrayRef(sizes, 2)));
    return matmul_into(ctx, mat1, mat2, alpha, *out, /*accumulate=*/false);
  }
  // out = beta * self (broadcast), then out += alpha * mat1 mat2.
  // Expand self to [m, n] with zero strides so prepare() allocates the
  // output at the product's shape.
  Tensor expanded = self;
  expanded.dim = 2;
  for (int d = 1; d >= 0; --d) {
    const int64_t sd = static_cast<int64_t>(self.dim) - 2 + d;
    expanded.sizes[d] = sizes[d];
    expanded.strides[d] = (sd >= 0 && self.sizes[sd] != 1) ? self.strides[sd] : 0;
  }
  Elementwise<1> scale(ctx);
  scale.add_input(Operand::of(expanded), "self");
  PARE_TRY(scale.prepare(args.output(0), mat1.dtype, mat1.dtype));
  Tensor out = scale.output();
  PARE_TRY(dispatch<tags::mm_kernel>(ctx, out.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    using Acc = opmath_t<T>;
    const Acc b = beta.to<Acc>();
    scale.run<T, T>([b](T x) { return arith::mul<Acc>(b, Acc(x)); });
    return Error::Ok;
  }));
  return matmul_into(ctx, mat1, mat2, alpha, out, /*accumulate=*/true);
}

}  // namespace kernels
}  // namespace pare
