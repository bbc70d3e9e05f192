// Writes through advanced indexing: aten::index_put (x[idx] = v, x[mask] = v,
// x[:, idx] += v, x.index_put_(..., accumulate=True), as torch.export
// lowers them) and aten::masked_scatter.
//
// index_put: out = a copy of self; the indexed positions (laid out as
// index.Tensor lays them out: indexing::AdvancedIndex) take `values`,
// broadcast to the indexed shape, or add it (accumulate). Duplicate
// positions are visited in the order PyTorch's CPU kernel visits them (its
// TensorIterator's dimension order, below), so the last write wins and the
// additions round as in torch: in T itself, Half and BFloat16 included
// (torch's index_put adds `*dst += *src` per element, unlike scatter_add).
// Every index is range-checked before any element moves. Each position of
// the index shape copies or adds whole rows of the trailing dims, so
// cache[:, :, pos] = k moves contiguous rows.
//
// masked_scatter: out = self and mask broadcast together; the positions
// where mask is true take source's elements in row-major order.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/indexing/indexing.h"

namespace pare {
namespace kernels {
namespace {

using indexing::Bits;

// The order TensorIterator walks `ndim` dims of sizes `sizes` for operands
// with the given element strides (0 = broadcast): its reorder_dimensions
// (ATen/TensorIterator.cpp), an insertion sort that stops at the first
// operand ordering two dims and passes over ambiguous pairs. perm[0] is the
// fastest dim. With one operand it is also infer_dense_strides' order.
void iterator_order(size_t ndim, const int64_t* sizes, size_t num_operands, const int64_t (*strides)[kMaxDim],
                    size_t* perm) {
  for (size_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) {
    for (size_t a = 0; a < num_operands; ++a) {
      const int64_t s0 = strides[a][d0];
      const int64_t s1 = strides[a][d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (sizes[d0] > sizes[d1]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < ndim; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        const size_t t = perm[d0];
        perm[d0] = perm[d1];
        perm[d1] = t;
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
}

// The strides torch gives a same-sized dense copy of `t` (empty_like with
// preserve_format, as clone and .to(dtype) make it): t's own when it is
// non-overlapping and dense, else dense strides in t's dimension order.
void preserved_strides(const Tensor& t, int64_t* strides) {
  if (t.is_non_overlapping_and_dense()) {
    for (size_t d = 0; d < t.dim; ++d) strides[d] = t.strides[d];
    return;
  }
  int64_t one[1][kMaxDim];
  for (size_t d = 0; d < t.dim; ++d) one[0][d] = t.strides[d];
  size_t perm[kMaxDim];
  iterator_order(t.dim, t.sizes, 1, one, perm);
  int64_t stride = 1;
  for (size_t i = 0; i < t.dim; ++i) {
    strides[perm[i]] = stride;
    stride *= t.sizes[perm[i]] > 1 ? t.sizes[perm[i]] : 1;
  }
}

// A group of dims walked together, with out's and values' strides.
struct Dims {
  size_t n = 0;
  int64_t sizes[kMaxDim];
  int64_t out[kMaxDim];
  int64_t value[kMaxDim];
  int64_t position[kMaxDim];  // row-major strides of the index shape (B only)
  void add(int64_t size, int64_t o, int64_t v, int64_t p = 0) {
    sizes[n] = size;
    out[n] = o;
    value[n] = v;
    position[n] = p;
    ++n;
  }
};

// The whole plan of one index_put: where each position of the indexed
// shape (before dims, index shape B, after dims) lives in out and values.
struct IndexPutPlan {
  Dims before;
  Dims index;  // B's dims, slowest first in torch's order
  Dims after;  // all but the innermost after dim
  int64_t inner = 1;
  int64_t inner_out = 0;
  int64_t inner_value = 0;
  const int64_t* offsets;  // per position of B, row-major: out's element offset
};

template <typename T, bool kAccumulate>
void index_put_elements(const IndexPutPlan& p, const T* values, T* out) {
  const int64_t zeros[kMaxDim] = {};
  indexing::walk(p.before.n, p.before.sizes, p.before.out, p.before.value, zeros, [&](int64_t ob, int64_t vb, int64_t) {
    indexing::walk(
        p.index.n, p.index.sizes, zeros, p.index.value, p.index.position, [&](int64_t, int64_t vq, int64_t q) {
          const int64_t o0 = ob + p.offsets[q];
          const int64_t v0 = vb + vq;
          indexing::walk(p.after.n, p.after.sizes, p.after.out, p.after.value, zeros,
                         [&](int64_t oa, int64_t va, int64_t) {
                           T* PARE_RESTRICT o = out + o0 + oa;
                           const T* v = values + v0 + va;
                           const int64_t so = p.inner_out;
                           const int64_t sv = p.inner_value;
                           if constexpr (kAccumulate) {
                             using Acc = opmath_t<T>;  // one rounding per addition, as torch's `*dst += *src`
                             for (int64_t i = 0; i < p.inner; ++i)
                               o[i * so] = T(arith::add<Acc>(Acc(o[i * so]), Acc(v[i * sv])));
                           } else if (so == 1 && sv == 1) {
                             for (int64_t i = 0; i < p.inner; ++i) o[i] = v[i];  // whole rows: a vectorised copy
                           } else {
                             for (int64_t i = 0; i < p.inner; ++i) o[i * so] = v[i * sv];
                           }
                         });
        });
  });
}

// Torch's shortcut: index_put without accumulate, one value and one mask
// as the only index tensor becomes masked_fill_(mask, value.item()), which
// converts the value (checked for overflow) instead of requiring self's
// dtype or shape, and refuses Byte masks. Sets *fill to value.item() and
// *where to the mask over self's dims (None dims before it and the
// trailing dims broadcast).
Error plan_masked_fill(KernelContext& ctx, const Tensor& self, size_t lead, const Tensor& mask, const Tensor& value,
                       Scalar* fill, Tensor* where) {
  PARE_CHECK_OR_RETURN(ctx, lead + mask.dim <= self.dim, Error::IndexOutOfRange,
                       "argument 'indices': too many indices for a tensor of %u dims", static_cast<unsigned>(self.dim));
  for (size_t d = 0; d < mask.dim; ++d) {
    PARE_CHECK_OR_RETURN(ctx, mask.sizes[d] == self.sizes[lead + d], Error::InvalidShape,
                         "argument 'indices': mask with sizes %s does not match 'self' (sizes %s) from dim %zu",
                         sizes_to_string(mask.size_span()).text, sizes_to_string(self.size_span()).text, lead);
  }
  PARE_CHECK_OR_RETURN(ctx, mask.dtype == ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'indices': a Byte mask with a single value is refused as torch's masked_fill_ "
                       "refuses it; use a Bool mask");
  // value.item(): an int, float or bool Scalar by value's dtype.
  const ScalarType kind = value.dtype == ScalarType::Bool ? ScalarType::Bool
                          : is_floating_type(value.dtype) ? ScalarType::Double
                                                          : ScalarType::Long;
  PARE_TRY_ASSIGN(const Tensor item, as_contiguous(ctx, value, kind));
  *fill = kind == ScalarType::Bool     ? Scalar::from_bool(*item.data_as<bool>())
          : kind == ScalarType::Double ? Scalar::from_double(*item.data_as<double>())
                                       : Scalar::from_int(*item.data_as<int64_t>());
  *where = mask;
  where->dim = self.dim;
  for (size_t d = 0; d < self.dim; ++d) {
    const bool in_mask = d >= lead && d < lead + mask.dim;
    where->sizes[d] = self.sizes[d];
    where->strides[d] = in_mask ? mask.strides[d - lead] : 0;
  }
  return Error::Ok;
}

template <typename T>
void fill_where(const Tensor& where, T fill, const Tensor& out) {
  const int64_t zeros[kMaxDim] = {};
  int64_t out_strides[kMaxDim];
  for (size_t d = 0; d < out.dim; ++d) out_strides[d] = out.strides[d];
  const uint8_t* flags = where.data_as<uint8_t>();
  T* o = out.data_as<T>();
  indexing::walk(where.dim, where.sizes, out_strides, where.strides, zeros, [&](int64_t oi, int64_t mi, int64_t) {
    if (flags[mi] != 0) o[oi] = fill;
  });
}

// Fills `plan` for writing `values` into out (contiguous, self's sizes)
// through `index`, in torch's order.
Error plan_index_put(KernelContext& ctx, const Tensor& self, const Tensor& values, const indexing::AdvancedIndex& index,
                     const Tensor& out, const int64_t* offsets, IndexPutPlan* plan) {
  const size_t rank = index.result_dim;
  const int64_t* sizes = index.result_sizes;
  // Values broadcast to the indexed shape (right-aligned, stride 0 where it repeats).
  PARE_CHECK_OR_RETURN(ctx, values.dim <= rank, Error::InvalidShape,
                       "argument 'values' with sizes %s cannot be broadcast to the indexed shape %s",
                       sizes_to_string(values.size_span()).text, sizes_to_string(IntArrayRef(sizes, rank)).text);
  int64_t value_strides[kMaxDim];
  for (size_t d = 0; d < rank; ++d) {
    const int64_t vd = static_cast<int64_t>(d) - static_cast<int64_t>(rank - values.dim);
    const int64_t n = vd >= 0 ? values.sizes[vd] : 1;
    PARE_CHECK_OR_RETURN(ctx, n == sizes[d] || n == 1, Error::InvalidShape,
                         "argument 'values' with sizes %s cannot be broadcast to the indexed shape %s",
                         sizes_to_string(values.size_span()).text, sizes_to_string(IntArrayRef(sizes, rank)).text);
    value_strides[d] = vd >= 0 && n == sizes[d] && n != 1 ? values.strides[vd] : 0;
  }
  // TensorIterator's operands, over the indexed shape: torch's output (self
  // cloned with preserve_format, restrided: 0 over B), values, each index
  // tensor (over B; an Int one converted to Long first, which makes a
  // broadcast one dense). Dims of size 1 are left out: their strides are
  // layout accidents that may differ between torch and here.
  const size_t nb = index.num_before;
  const size_t nB = index.index_dim;
  const size_t k = index.num_indices;
  int64_t torch_out[kMaxDim];
  preserved_strides(self, torch_out);
  const size_t num_operands = 2 + k;
  int64_t operand[2 + kMaxDim][kMaxDim];
  for (size_t d = 0; d < rank; ++d) {
    const bool in_b = d >= nb && d < nb + nB;
    const size_t self_dim = d < nb ? index.dims[d] : in_b ? 0 : index.dims[d - nB + k];
    operand[0][d] = in_b ? 0 : torch_out[self_dim];
    operand[1][d] = value_strides[d];
  }
  for (size_t j = 0; j < k; ++j) {
    const Tensor& t = index.indices[j];
    Tensor expanded = t;  // broadcast to B, as torch's expand_outplace leaves it
    expanded.dim = static_cast<uint8_t>(nB);
    for (size_t d = 0; d < nB; ++d) {
      const int64_t td = static_cast<int64_t>(d) - static_cast<int64_t>(nB - t.dim);
      expanded.sizes[d] = index.index_sizes[d];
      expanded.strides[d] = td >= 0 && t.sizes[td] == index.index_sizes[d] ? t.strides[td] : 0;
    }
    int64_t strides[kMaxDim];
    if (t.dtype == ScalarType::Int) {
      preserved_strides(expanded, strides);
    } else {
      for (size_t d = 0; d < nB; ++d) strides[d] = expanded.strides[d];
    }
    for (size_t d = 0; d < rank; ++d) {
      const bool in_b = d >= nb && d < nb + nB;
      operand[2 + j][d] = in_b ? strides[d - nb] : 0;
    }
  }
  size_t kept[kMaxDim];
  size_t num_kept = 0;
  int64_t kept_sizes[kMaxDim];
  int64_t kept_strides[2 + kMaxDim][kMaxDim];
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 1) continue;
    kept_sizes[num_kept] = sizes[d];
    for (size_t a = 0; a < num_operands; ++a) kept_strides[a][num_kept] = operand[a][d];
    kept[num_kept++] = d;
  }
  size_t perm[kMaxDim];
  iterator_order(num_kept, kept_sizes, num_operands, kept_strides, perm);
  // B's dims, slowest first: only their order among themselves matters for
  // which duplicate wins (different positions elsewhere never share an
  // element of out).
  int64_t position_strides[kMaxDim];
  int64_t p = 1;
  for (size_t d = nB; d-- > 0;) {
    position_strides[d] = p;
    p *= index.index_sizes[d];
  }
  for (size_t i = num_kept; i-- > 0;) {
    const size_t d = kept[perm[i]];
    if (d >= nb && d < nb + nB) plan->index.add(sizes[d], 0, value_strides[d], position_strides[d - nb]);
  }
  // Before and after dims, with out's (contiguous) strides.
  for (size_t d = 0; d < nb; ++d) plan->before.add(sizes[d], out.strides[index.dims[d]], value_strides[d]);
  Dims after;
  for (size_t d = nb + nB; d < rank; ++d) {
    const int64_t so = out.strides[index.dims[d - nB + k]];
    const int64_t sv = value_strides[d];
    // Coalesce with the previous dim when both operands allow it.
    if (after.n > 0 && after.out[after.n - 1] == so * sizes[d] && after.value[after.n - 1] == sv * sizes[d]) {
      after.sizes[after.n - 1] *= sizes[d];
      after.out[after.n - 1] = so;
      after.value[after.n - 1] = sv;
    } else {
      after.add(sizes[d], so, sv);
    }
  }
  if (after.n > 0) {
    --after.n;
    plan->inner = after.sizes[after.n];
    plan->inner_out = after.out[after.n];
    plan->inner_value = after.value[after.n];
  }
  plan->after = after;
  plan->offsets = offsets;
  return Error::Ok;
}

}  // namespace

// aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
Error aten_index_put(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const TensorList indices = args.optional_tensor_list(1, "indices");
  const Tensor& values = args.tensor(2, "values");
  const bool accumulate = args.boolean_or(3, "accumulate", false);
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, indices.size <= self.dim, Error::IndexOutOfRange,
                       "argument 'indices': %zu index tensors for a tensor of %u dims", indices.size,
                       static_cast<unsigned>(self.dim));
  // The masked-fill shortcut, or the general path's plan.
  const Tensor* mask = nullptr;
  size_t lead = 0;
  if (!accumulate && values.numel() == 1) {
    size_t tensors = 0;
    for (size_t j = 0; j < indices.size; ++j) {
      if (indices.items[j]->kind != ValueKind::Tensor) continue;
      const Tensor& t = indices.items[j]->tensor;
      ++tensors;
      if ((t.dtype == ScalarType::Bool || t.dtype == ScalarType::Byte) && mask == nullptr) {
        mask = &t;
        lead = j;  // Nones before it: each keeps one dim
      }
    }
    if (tensors != 1) mask = nullptr;
  }
  Scalar fill;
  Tensor where{};
  indexing::AdvancedIndex index;
  IndexPutPlan plan;
  size_t indexed_numel = 0;
  Tensor* out = nullptr;
  if (mask != nullptr) {
    PARE_TRY(plan_masked_fill(ctx, self, lead, *mask, values, &fill, &where));
    PARE_TRY_ASSIGN(out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  } else {
    PARE_CHECK_OR_RETURN(ctx, values.dtype == self.dtype, Error::UnsupportedDtype,
                         "argument 'values' has dtype %s but 'self' is %s; they must match (convert values first)",
                         to_string(values.dtype), to_string(self.dtype));
    PARE_TRY(indexing::plan_advanced_index(ctx, self, indices, /*allow_masks=*/true, &index));
    PARE_TRY_ASSIGN(out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
    checked_numel(IntArrayRef(index.result_sizes, index.result_dim), &indexed_numel);
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(index.count) * sizeof(int64_t)));
    int64_t* offsets = static_cast<int64_t*>(memory);
    PARE_TRY(plan_index_put(ctx, self, values, index, *out, offsets, &plan));
    // Like torch, no index is checked when nothing is written.
    if (indexed_numel > 0) PARE_TRY(indexing::advanced_index_offsets(ctx, self, index, out->strides, offsets));
  }
  return dispatch<tags::index_put_kernel>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    if (mask != nullptr) {
      PARE_CHECK_OR_RETURN(ctx, indexing::fits<T>(fill), Error::InvalidArgument,
                           "argument 'values': the value cannot be converted to %s without overflow",
                           to_string(self.dtype));
    }
    if (out->numel() > 0) PARE_TRY(copy_self_into(ctx, self, *out));
    if (mask != nullptr) {
      fill_where<Bits<T>>(where, __builtin_bit_cast(Bits<T>, fill.to<T>()), *out);
    } else if (indexed_numel == 0) {
      return Error::Ok;
    } else if (accumulate) {
      index_put_elements<T, true>(plan, values.data_as<T>(), out->data_as<T>());
    } else {
      index_put_elements<Bits<T>, false>(plan, values.data_as<Bits<T>>(), out->data_as<Bits<T>>());
    }
    return Error::Ok;
  });
}

// aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
Error aten_masked_scatter(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& self = args.tensor(0, "self");
  const Tensor& mask = args.tensor(1, "mask");
  const Tensor& source = args.tensor(2, "source");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, mask.dtype == ScalarType::Bool, Error::UnsupportedDtype,
                       "argument 'mask' must be a Bool tensor, got %s", to_string(mask.dtype));
  PARE_CHECK_OR_RETURN(ctx, source.dtype == self.dtype, Error::UnsupportedDtype,
                       "argument 'source' has dtype %s but 'self' is %s; they must match (convert source first)",
                       to_string(source.dtype), to_string(self.dtype));
  int64_t sizes[kMaxDim];
  size_t rank = 0;
  PARE_CHECK_OR_RETURN(ctx, broadcast_shapes(self.size_span(), mask.size_span(), sizes, &rank), Error::InvalidShape,
                       "arguments 'self' (sizes %s) and 'mask' (sizes %s) cannot be broadcast together",
                       sizes_to_string(self.size_span()).text, sizes_to_string(mask.size_span()).text);
  const IntArrayRef shape(sizes, rank);
  auto broadcast = [&](const Tensor& t) {
    Tensor v = t;
    v.dim = static_cast<uint8_t>(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t td = static_cast<int64_t>(d) - static_cast<int64_t>(rank - t.dim);
      v.sizes[d] = sizes[d];
      v.strides[d] = td >= 0 && t.sizes[td] == sizes[d] ? t.strides[td] : 0;
    }
    return v;
  };
  const Tensor m = broadcast(mask);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, shape));
  const size_t n = out->numel();
  if (n == 0) return Error::Ok;
  // Count the mask's true elements first: every check before any element moves.
  const int64_t zeros[kMaxDim] = {};
  const uint8_t* flags = m.data_as<uint8_t>();
  size_t count = 0;
  indexing::walk(rank, sizes, m.strides, zeros, zeros, [&](int64_t mi, int64_t, int64_t) { count += flags[mi] != 0; });
  PARE_CHECK_OR_RETURN(ctx, count <= source.numel(), Error::InvalidShape,
                       "argument 'source' has %zu elements but 'mask' is true at %zu positions; source needs at "
                       "least as many",
                       source.numel(), count);
  PARE_TRY(convert_into(ctx, broadcast(self), *out));
  if (count == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor src, as_contiguous(ctx, source, source.dtype));
  return PARE_DISPATCH(masked_scatter_kernel, ctx, self.dtype, T, {
    using U = Bits<T>;
    const U* from = src.data_as<U>();
    U* o = out->data_as<U>();
    int64_t out_strides[kMaxDim];
    for (size_t d = 0; d < rank; ++d) out_strides[d] = out->strides[d];
    indexing::walk(rank, sizes, out_strides, m.strides, zeros, [&](int64_t oi, int64_t mi, int64_t) {
      if (flags[mi] != 0) o[oi] = *from++;
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
