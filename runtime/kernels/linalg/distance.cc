// Pairwise p-norm distances: aten::_cdist_forward (torch.cdist) and
// aten::_pdist_forward (F.pdist), computed the way PyTorch's CPU kernels
// compute them (ATen/native/Distance.cpp, cpu/DistanceOpsKernel.cpp), so
// results agree to rounding:
//
// * cdist sums |a - b|^p over a row pair one element at a time in the
//   tensor's dtype (float for Float), the inf norm keeping the larger with
//   `agg < up ? up : agg` (a NaN difference is skipped, as in torch);
// * pdist sums in torch's vector lanes (32 bytes of lanes, folded in halves
//   at the end, as its AVX2 build does), the inf norm propagating NaN;
// * the general norm's root is taken in double, the p-th powers in the dtype;
// * cdist with p = 2 runs torch's matrix-product formula where torch runs it
//   (compute_mode 1, or the default mode with more than 25 rows on either
//   side): sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)). That formula cancels for
//   near points exactly as torch's does; the only difference left is the
//   order of the dot product's sum, which torch leaves to its BLAS. Half
//   and BFloat16, which torch accepts on that path only, round where torch
//   rounds (squares, norms, the product, the root) and accumulate in float.

#include "runtime/core/format.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"

namespace pare {
namespace kernels {

namespace {

// The norm of a difference, in PyTorch's map / red / finish split.
enum class Norm { kZero, kOne, kTwo, kInf, kGeneral };

template <typename T>
Norm norm_of(T p) {
  if (p == T(0)) return Norm::kZero;
  if (p == T(1)) return Norm::kOne;
  if (p == T(2)) return Norm::kTwo;
  if (p == T(math::kInfinity)) return Norm::kInf;
  return Norm::kGeneral;
}

// |a - b| mapped to the term that is summed (the inf norm keeps it as is).
template <Norm N, typename T>
PARE_ALWAYS_INLINE T map_term(T diff, T p) {
  if constexpr (N == Norm::kZero) {
    const T c = math::ceil(diff);
    return T(1) < c ? T(1) : c;  // min(ceil(|d|), 1): 0 or 1, NaN stays NaN
  } else if constexpr (N == Norm::kTwo) {
    return diff * diff;
  } else if constexpr (N == Norm::kGeneral) {
    return math::pow(diff, p);
  } else {
    (void)p;
    return diff;
  }
}

// cdist's inf norm: the scalar max(agg, up) torch calls, which skips a NaN term.
template <Norm N, typename T>
PARE_ALWAYS_INLINE T reduce_scalar(T agg, T up) {
  if constexpr (N == Norm::kInf) {
    return agg < up ? up : agg;
  } else {
    return agg + up;
  }
}

// pdist's inf norm: vec::maximum, which propagates NaN.
template <Norm N, typename T>
PARE_ALWAYS_INLINE T reduce_lane(T agg, T up) {
  if constexpr (N == Norm::kInf) {
    if (math::isnan(agg) || math::isnan(up)) return agg + up;
    return agg < up ? up : agg;
  } else {
    return agg + up;
  }
}

template <Norm N, typename T>
PARE_ALWAYS_INLINE T finish(T agg, T p) {
  if constexpr (N == Norm::kTwo) {
    return math::sqrt(agg);
  } else if constexpr (N == Norm::kGeneral) {
    // torch raises a scalar_t to a double power: the root is taken in double.
    return static_cast<T>(math::pow(static_cast<double>(agg), 1.0 / static_cast<double>(p)));
  } else {
    (void)p;
    return agg;
  }
}

// x1 [B..., r1, c] and x2 [B..., r2, c] contiguous, walked batch by batch
// over the broadcast batch dims: batch_offsets fills each input's element
// offset for every output batch, row-major.
struct Batches {
  size_t dim;  // broadcast batch dims
  int64_t sizes[kMaxDim];
  int64_t count;  // their product
};

// The batch offsets (in elements) of one contiguous input for every output
// batch: stride 0 on the dims the input broadcasts.
void batch_offsets(const Batches& b, const Tensor& t, int64_t* offsets) {
  int64_t strides[kMaxDim] = {};
  const size_t lead = b.dim - (t.dim - 2u);
  int64_t step = t.sizes[t.dim - 2] * t.sizes[t.dim - 1];
  for (size_t d = b.dim; d-- > lead;) {
    const int64_t size = t.sizes[d - lead];
    strides[d] = size == 1 ? 0 : step;
    step *= size;
  }
  int64_t counter[kMaxDim] = {};
  int64_t offset = 0;
  for (int64_t l = 0; l < b.count; ++l) {
    offsets[l] = offset;
    for (size_t d = b.dim; d-- > 0;) {
      offset += strides[d];
      if (++counter[d] < b.sizes[d]) break;
      offset -= strides[d] * b.sizes[d];
      counter[d] = 0;
    }
  }
}

template <Norm N, typename T>
void cdist_rows(const T* x1, const T* x2, int64_t r1, int64_t r2, int64_t c, T p, T* out) {
  for (int64_t i = 0; i < r1; ++i) {
    const T* a = x1 + i * c;
    for (int64_t j = 0; j < r2; ++j) {
      const T* b = x2 + j * c;
      T agg = T(0);
      for (int64_t k = 0; k < c; ++k) agg = reduce_scalar<N>(agg, map_term<N>(math::abs(a[k] - b[k]), p));
      out[i * r2 + j] = finish<N>(agg, p);
    }
  }
}

// torch's _euclidean_dist: [-2a, |a|^2, 1] . [b, 1, |b|^2], clamped at 0,
// square-rooted. `norms` holds r2 elements of scratch.
template <typename T>
void euclidean_rows(const T* x1, const T* x2, int64_t r1, int64_t r2, int64_t c, T* norms, T* out) {
  using Acc = opmath_t<T>;
  auto squared_norm = [c](const T* row) {
    Acc sum = Acc(0);
    for (int64_t k = 0; k < c; ++k) sum += Acc(T(Acc(row[k]) * Acc(row[k])));  // x.pow(2).sum(-1)
    return T(sum);
  };
  for (int64_t j = 0; j < r2; ++j) norms[j] = squared_norm(x2 + j * c);
  for (int64_t i = 0; i < r1; ++i) {
    const T* a = x1 + i * c;
    const Acc norm_a = Acc(squared_norm(a));
    for (int64_t j = 0; j < r2; ++j) {
      const T* b = x2 + j * c;
      Acc dot = Acc(0);
      for (int64_t k = 0; k < c; ++k) dot += Acc(T(Acc(-2) * Acc(a[k]))) * Acc(b[k]);
      const T squared = T(dot + norm_a + Acc(norms[j]));
      const T clamped = squared < T(0) ? T(0) : squared;  // clamp_min(0) keeps NaN
      out[i * r2 + j] = T(math::sqrt(Acc(clamped)));
    }
  }
}

// One pdist distance, summed in vector lanes like torch's map2_reduce_all.
template <Norm N, typename T>
PARE_ALWAYS_INLINE T lanes_distance(const T* a, const T* b, int64_t m, T p) {
  constexpr int64_t kLanes = 32 / static_cast<int64_t>(sizeof(T));
  if (m < kLanes) {
    T agg = map_term<N>(math::abs(a[0] - b[0]), p);
    for (int64_t k = 1; k < m; ++k) agg = reduce_lane<N>(agg, map_term<N>(math::abs(a[k] - b[k]), p));
    return agg;
  }
  T acc[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) acc[l] = map_term<N>(math::abs(a[l] - b[l]), p);
  int64_t d = kLanes;
  for (; d + kLanes <= m; d += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l)
      acc[l] = reduce_lane<N>(acc[l], map_term<N>(math::abs(a[d + l] - b[d + l]), p));
  }
  for (int64_t l = 0; d + l < m; ++l) acc[l] = reduce_lane<N>(acc[l], map_term<N>(math::abs(a[d + l] - b[d + l]), p));
  for (int64_t w = kLanes / 2; w >= 1; w /= 2) {
    for (int64_t l = 0; l < w; ++l) acc[l] = reduce_lane<N>(acc[l], acc[l + w]);
  }
  return acc[0];
}

template <Norm N, typename T>
void pdist_rows(const T* x, int64_t n, int64_t m, T p, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) *out++ = finish<N>(lanes_distance<N>(x + i * m, x + j * m, m, p), p);
  }
}

// Calls fn(NormTag<N>{}) for the norm p selects, so each runs its own loop.
template <Norm N>
struct NormTag {
  static constexpr Norm value = N;
};

template <typename T, typename Fn>
PARE_ALWAYS_INLINE void with_norm(T p, Fn fn) {
  switch (norm_of(p)) {
    case Norm::kZero: return fn(NormTag<Norm::kZero>{});
    case Norm::kOne: return fn(NormTag<Norm::kOne>{});
    case Norm::kTwo: return fn(NormTag<Norm::kTwo>{});
    case Norm::kInf: return fn(NormTag<Norm::kInf>{});
    case Norm::kGeneral: return fn(NormTag<Norm::kGeneral>{});
  }
}

Error zero_fill(Tensor* out) {
  if (out->nbytes() > 0) __builtin_memset(out->data(), 0, out->nbytes());
  return Error::Ok;
}

}  // namespace

// aten::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor
//
// Takes any strides (torch's kernel copies to contiguous too). x1 and x2
// must share a dtype; torch checks that only when it computes (an empty
// result of mixed dtypes is an error here).
Error aten__cdist_forward(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 4, 1);
  const Tensor& x1 = args.tensor(0, "x1");
  const Tensor& x2 = args.tensor(1, "x2");
  const double p = args.real(2, "p");
  const Optional<int64_t> compute_mode = args.optional_int64(3, "compute_mode");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, x1.dim >= 2, Error::InvalidShape,
                       "argument 'x1' must have at least 2 dims ([..., rows, columns]), got sizes %s",
                       sizes_to_string(x1.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, x2.dim >= 2, Error::InvalidShape,
                       "argument 'x2' must have at least 2 dims ([..., rows, columns]), got sizes %s",
                       sizes_to_string(x2.size_span()).text);
  const int64_t c = x1.sizes[x1.dim - 1];
  PARE_CHECK_OR_RETURN(ctx, x2.sizes[x2.dim - 1] == c, Error::InvalidShape,
                       "'x1' of sizes %s and 'x2' of sizes %s must have the same number of columns (last dim)",
                       sizes_to_string(x1.size_span()).text, sizes_to_string(x2.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(x1.dtype) && is_floating_type(x2.dtype), Error::UnsupportedDtype,
                       "cdist needs floating-point 'x1' and 'x2', got %s and %s; convert them to float first",
                       to_string(x1.dtype), to_string(x2.dtype));
  PARE_CHECK_OR_RETURN(ctx, x1.dtype == x2.dtype, Error::InvalidArgument,
                       "'x1' and 'x2' must have the same dtype, got %s and %s", to_string(x1.dtype),
                       to_string(x2.dtype));
  PARE_CHECK_OR_RETURN(ctx, p >= 0, Error::InvalidArgument, "argument 'p' must be non-negative, got %s",
                       real_to_string(p).text);
  const int64_t mode = compute_mode.has_value ? compute_mode.value : 0;
  PARE_CHECK_OR_RETURN(ctx, mode >= 0 && mode <= 2, Error::InvalidArgument,
                       "argument 'compute_mode' must be 0 (default), 1 (use the matrix product for p=2) or 2 (never "
                       "use it), got %lld",
                       static_cast<long long>(mode));

  // The batch dims broadcast against each other, right-aligned.
  Batches batches{};
  batches.dim = (x1.dim > x2.dim ? x1.dim : x2.dim) - 2u;
  batches.count = 1;
  for (size_t d = 0; d < batches.dim; ++d) {
    const int64_t d1 = static_cast<int64_t>(d) - static_cast<int64_t>(batches.dim - (x1.dim - 2u));
    const int64_t d2 = static_cast<int64_t>(d) - static_cast<int64_t>(batches.dim - (x2.dim - 2u));
    const int64_t s1 = d1 >= 0 ? x1.sizes[d1] : 1;
    const int64_t s2 = d2 >= 0 ? x2.sizes[d2] : 1;
    PARE_CHECK_OR_RETURN(ctx, s1 == s2 || s1 == 1 || s2 == 1, Error::InvalidShape,
                         "the batch dims of 'x1' (sizes %s) and 'x2' (sizes %s) do not broadcast: batch dim %zu has "
                         "sizes %lld and %lld",
                         sizes_to_string(x1.size_span()).text, sizes_to_string(x2.size_span()).text, d,
                         static_cast<long long>(s1), static_cast<long long>(s2));
    batches.sizes[d] = s1 == 1 ? s2 : s1;
    PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(batches.count, batches.sizes[d], &batches.count),
                         Error::InvalidShape, "the broadcast batch dims of 'x1' and 'x2' have too many elements");
  }
  const int64_t r1 = x1.sizes[x1.dim - 2];
  const int64_t r2 = x2.sizes[x2.dim - 2];
  int64_t sizes[kMaxDim];
  for (size_t d = 0; d < batches.dim; ++d) sizes[d] = batches.sizes[d];
  sizes[batches.dim] = r1;
  sizes[batches.dim + 1] = r2;
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), x1.dtype, IntArrayRef(sizes, batches.dim + 2)));
  if (out->numel() == 0) return Error::Ok;
  if (c == 0) return zero_fill(out);

  PARE_TRY_ASSIGN(const Tensor a, as_contiguous(ctx, x1, x1.dtype));
  PARE_TRY_ASSIGN(const Tensor b, as_contiguous(ctx, x2, x2.dtype));
  PARE_TRY_ASSIGN(void* offsets, ctx.allocate_scratch(2 * static_cast<size_t>(batches.count) * sizeof(int64_t)));
  int64_t* offsets1 = static_cast<int64_t*>(offsets);
  int64_t* offsets2 = offsets1 + batches.count;
  batch_offsets(batches, a, offsets1);
  batch_offsets(batches, b, offsets2);

  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)))) {
    return PARE_DISPATCH(cdist_mm_kernel, ctx, x1.dtype, T, {
      PARE_TRY_ASSIGN(void* norms, ctx.allocate_scratch(static_cast<size_t>(r2) * sizeof(T)));
      for (int64_t l = 0; l < batches.count; ++l) {
        euclidean_rows<T>(a.data_as<T>() + offsets1[l], b.data_as<T>() + offsets2[l], r1, r2, c, static_cast<T*>(norms),
                          out->data_as<T>() + l * r1 * r2);
      }
      return Error::Ok;
    });
  }
  return PARE_DISPATCH(cdist_kernel, ctx, x1.dtype, T, {
    const T pt = static_cast<T>(p);  // torch's kernel takes p as scalar_t
    with_norm(pt, [&](auto norm) {
      for (int64_t l = 0; l < batches.count; ++l) {
        cdist_rows<decltype(norm)::value, T>(a.data_as<T>() + offsets1[l], b.data_as<T>() + offsets2[l], r1, r2, c, pt,
                                             out->data_as<T>() + l * r1 * r2);
      }
    });
    return Error::Ok;
  });
}

// aten::_pdist_forward(Tensor self, float p=2) -> Tensor
//
// The distances between rows i < j of a 2-d self, in the order (0, 1),
// (0, 2), ..., (n - 2, n - 1). Takes any strides (torch's kernel requires
// a contiguous self; F.pdist makes it one).
Error aten__pdist_forward(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const double p = args.has(1) ? args.real(1, "p") : 2.0;
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dim == 2, Error::InvalidShape,
                       "argument 'self' must be 2-d ([rows, columns]), got sizes %s",
                       sizes_to_string(self.size_span()).text);
  PARE_CHECK_OR_RETURN(ctx, is_floating_type(self.dtype), Error::UnsupportedDtype,
                       "pdist needs a floating-point 'self', got %s; convert it to float first", to_string(self.dtype));
  PARE_CHECK_OR_RETURN(ctx, p >= 0, Error::InvalidArgument, "argument 'p' must be non-negative, got %s",
                       real_to_string(p).text);
  const int64_t n = self.sizes[0];
  const int64_t m = self.sizes[1];
  int64_t pairs = 0;
  PARE_CHECK_OR_RETURN(ctx, n <= 1 || !__builtin_mul_overflow(n, n - 1, &pairs), Error::InvalidShape,
                       "argument 'self' has too many rows (%lld) for the pairwise distances to fit",
                       static_cast<long long>(n));
  const int64_t sizes[] = {n <= 1 ? 0 : pairs / 2};
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, 1)));
  if (out->numel() == 0) return Error::Ok;
  if (m == 0) return zero_fill(out);
  return PARE_DISPATCH(pdist_kernel, ctx, self.dtype, T, {
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
    const T pt = static_cast<T>(p);
    with_norm(pt,
              [&](auto norm) { pdist_rows<decltype(norm)::value, T>(x.data_as<T>(), n, m, pt, out->data_as<T>()); });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
