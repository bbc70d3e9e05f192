// Sorting along a dim: aten::sort, aten::sort.stable and aten::topk, with
// PyTorch's CPU results, indices included.
//
// NaN is greater than every number (first when descending or largest, last
// otherwise); NaNs tie with each other, as -0.0 and 0.0 do; Half and
// BFloat16 compare as float. Which of several equal values comes first:
//  - sort.stable with stable=True: input order.
//  - sort, and sort.stable with stable=False or None: PyTorch runs
//    libstdc++ sort, which is not stable (from 17 elements on, equal values leave
//    its introsort in an order of its own); sorting.h repeats it step for
//    step, so they come out as in PyTorch (2.13, on its default and AVX2
//    paths; a PyTorch built with USE_X86_SIMD_SORT sorts Int, Long, Float
//    and Double with x86-simd-sort instead, in an order of its own). Along
//    a dim of stride 0 (an expanded input) PyTorch does not sort and
//    returns indices 0, 1, ...; so does this kernel.
//  - topk, as PyTorch's topk_impl_loop: libstdc++ partial_sort of the k first
//    when k * 64 <= n (sorted, whatever `sorted` says), else libstdc++ nth_element
//    of the k-th, then libstdc++ sort of the k - 1 before it when `sorted`. With
//    sorted=False PyTorch documents the order as unspecified; its CPU
//    kernel's order (nth_element's) is the one matched here.
// A 0-dim input is one element: sort returns it with index 0, and so does
// topk, even with k = 0 (as PyTorch). Outputs are contiguous.

#include "runtime/kernels/reduction/reduce.h"
#include "runtime/kernels/reduction/sorting.h"

namespace pare {
namespace kernels {

namespace {

template <typename V>
struct Entry {
  V value;
  int64_t index;
};

// PyTorch's KeyValueCompAsc / KeyValueCompDesc (topk's lambdas are the
// same); `stable` breaks ties by input position, so that any sort is stable.
// Runtime flags rather than template arguments: one instantiation of each
// algorithm per dtype.
template <typename V>
struct Order {
  bool descending;
  bool stable;

  PARE_ALWAYS_INLINE bool value_before(V a, V b) const {
    const bool a_nan = reduction::is_nan(a);
    const bool b_nan = reduction::is_nan(b);
    return descending ? (a_nan && !b_nan) || a > b : (!a_nan && b_nan) || a < b;
  }
  PARE_ALWAYS_INLINE bool operator()(const Entry<V>& a, const Entry<V>& b) const {
    if (value_before(a.value, b.value)) return true;
    return stable && a.index < b.index && !value_before(b.value, a.value);
  }
};

// For each line [o, :, i] of the plan's [outer, length, inner] input: its
// elements with their positions into `line`, reorder(line, length), then the
// first `count` entries into the [outer, count, inner] values and indices.
template <typename T, typename V, typename Reorder>
void for_each_line(const reduction::Plan& p, int64_t count, Entry<V>* line, T* values, int64_t* indices,
                   Reorder reorder) {
  const T* x = p.input.data_as<T>();
  const int64_t length = p.length;
  const int64_t inner = p.inner;
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* src = x + o * length * inner + i;
      for (int64_t j = 0; j < length; ++j) line[j] = Entry<V>{convert<V>(src[j * inner]), j};
      reorder(line, length);
      T* v = values + o * count * inner + i;
      int64_t* ix = indices + o * count * inner + i;
      for (int64_t j = 0; j < count; ++j) {
        v[j * inner] = convert<T>(line[j].value);
        ix[j * inner] = line[j].index;
      }
    }
  }
}

// Scratch for one line of `length` entries (none for an empty line).
template <typename V>
Result<Entry<V>*> line_scratch(KernelContext& ctx, int64_t length) {
  if (length == 0) return static_cast<Entry<V>*>(nullptr);
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(length) * sizeof(Entry<V>)));
  return static_cast<Entry<V>*>(memory);
}

Error sort_op(KernelArgs& args, const Tensor& self, int64_t raw_dim, bool descending, bool stable) {
  KernelContext& ctx = args.ctx();
  int64_t dim = 0;
  PARE_TRY(wrap_dim(ctx, raw_dim, self.dim, "dim", &dim));
  PARE_TRY_ASSIGN(Tensor * values, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  PARE_TRY_ASSIGN(Tensor * indices, ctx.allocate_output(args.output(1), ScalarType::Long, self.size_span()));
  // PyTorch leaves a dim of stride 0 unsorted (pytorch/pytorch#91420): all
  // its elements are one, and libstdc++ sort would shuffle their indices.
  const bool keep_order = self.dim > 0 && self.strides[dim] == 0;
  PARE_TRY_ASSIGN(const reduction::Plan p, reduction::plan(ctx, self, reduction::single_dim(self, dim), self.dtype));
  return PARE_DISPATCH(sort_kernel, ctx, self.dtype, T, {
    using V = opmath_t<T>;
    if (values->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(Entry<V> * line, line_scratch<V>(ctx, p.length));
    const Order<V> order{descending, stable};
    for_each_line<T>(p, p.length, line, values->data_as<T>(), indices->data_as<int64_t>(),
                     [&](Entry<V>* first, int64_t n) {
                       if (!keep_order) sorting::sort(first, first + n, order);
                     });
    return Error::Ok;
  });
}

}  // namespace

// aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
Error aten_sort(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 1, 3, 2);
  const Tensor& self = args.tensor(0, "self");
  const int64_t dim = args.int64_or(1, "dim", -1);
  const bool descending = args.boolean_or(2, "descending", false);
  PARE_TRY(args.status());
  return sort_op(args, self, dim, descending, /*stable=*/false);
}

// aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
Error aten_sort_stable(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 4, 2);
  const Tensor& self = args.tensor(0, "self");
  const bool stable = args.boolean_or(1, "stable", false);  // None: not stable, as in PyTorch
  const int64_t dim = args.int64_or(2, "dim", -1);
  const bool descending = args.boolean_or(3, "descending", false);
  PARE_TRY(args.status());
  return sort_op(args, self, dim, descending, stable);
}

// aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
Error aten_topk(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 5, 2);
  const Tensor& self = args.tensor(0, "self");
  const int64_t k = args.int64(1, "k");
  const int64_t raw_dim = args.int64_or(2, "dim", -1);
  const bool largest = args.boolean_or(3, "largest", true);
  const bool sorted = args.boolean_or(4, "sorted", true);
  PARE_TRY(args.status());
  int64_t dim = 0;
  PARE_TRY(wrap_dim(ctx, raw_dim, self.dim, "dim", &dim));
  const int64_t size = self.dim > 0 ? self.sizes[dim] : 1;
  PARE_CHECK_OR_RETURN(ctx, k >= 0 && k <= size, Error::InvalidArgument,
                       "argument 'k': %lld is out of range for dim %lld of size %lld (expected 0 <= k <= %lld)",
                       static_cast<long long>(k), static_cast<long long>(dim), static_cast<long long>(size),
                       static_cast<long long>(size));
  int64_t sizes[kMaxDim] = {};
  for (size_t d = 0; d < self.dim; ++d) sizes[d] = static_cast<int64_t>(d) == dim ? k : self.sizes[d];
  const IntArrayRef out_sizes(sizes, self.dim);
  PARE_TRY_ASSIGN(Tensor * values, ctx.allocate_output(args.output(0), self.dtype, out_sizes));
  PARE_TRY_ASSIGN(Tensor * indices, ctx.allocate_output(args.output(1), ScalarType::Long, out_sizes));
  // A 0-dim input gives its one element whatever k (0 or 1) is.
  const int64_t count = self.dim > 0 ? k : 1;
  PARE_TRY_ASSIGN(const reduction::Plan p, reduction::plan(ctx, self, reduction::single_dim(self, dim), self.dtype));
  // Dispatched even when there is nothing to select: Bool fails as in PyTorch.
  return PARE_DISPATCH(topk_kernel, ctx, self.dtype, T, {
    using V = opmath_t<T>;
    if (values->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(Entry<V> * line, line_scratch<V>(ctx, p.length));
    const Order<V> order{largest, /*stable=*/false};
    for_each_line<T>(p, count, line, values->data_as<T>(), indices->data_as<int64_t>(),
                     [&](Entry<V>* first, int64_t n) {
                       if (count <= n / 64) {
                         sorting::partial_sort(first, first + count, first + n, order);
                         return;
                       }
                       sorting::nth_element(first, first + count - 1, first + n, order);
                       if (sorted) sorting::sort(first, first + count - 1, order);
                     });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
