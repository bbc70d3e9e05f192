#pragma once
// Shared machinery of the reduction family (sum, mean, prod, amax/amin,
// argmax/argmin, any, var, cumsum/cumprod).
//
// A reduction reads its `dim` argument into a DimMask, then plan_reduction()
// views the input as a contiguous [outer, length, inner] tensor in the
// compute dtype, so every kernel is one of two loops: inner == 1 (reduce
// contiguous rows, with several independent accumulators so the compiler
// vectorises and float sums stay accurate), or inner > 1 (accumulate whole
// contiguous rows of `inner` elements into a buffer, which vectorises across
// the row). Reducing dims that are not one block of the logical order
// (e.g. dims 0 and 2 of a 3-d tensor) permutes kept dims first into a
// scratch copy, so the reduced dims become one contiguous block.

#include "runtime/kernels/common/arith.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/limits.h"

namespace pare {
namespace kernels {
namespace reduction {

// The dims an op reduces, for a tensor of rank `ndim`.
struct DimMask {
  bool reduce[kMaxDim];
  size_t ndim;
};

// Reads an `int[1]? dim` argument (None, an int list or a single int).
// None, and an empty list when `empty_means_all`, select every dim. Wraps
// negative dims and rejects duplicates, naming the argument.
Error read_dims(KernelArgs& args, size_t i, const char* name, const Tensor& self, bool empty_means_all, DimMask* mask);

// A mask with one dim (already wrapped) or every dim.
DimMask single_dim(const Tensor& self, int64_t dim);
DimMask all_dims(const Tensor& self);

// Output sizes of reducing `self` over `mask`: reduced dims dropped, or
// kept as 1 with keepdim.
struct OutputShape {
  int64_t sizes[kMaxDim];
  size_t dim;
  IntArrayRef span() const { return IntArrayRef(sizes, dim); }
};
OutputShape reduced_shape(const Tensor& self, const DimMask& mask, bool keepdim);

// The input as a contiguous [outer, length, inner] tensor of the compute
// dtype: `length` elements reduced per output element.
struct Plan {
  Tensor input;
  int64_t outer;
  int64_t length;
  int64_t inner;
};
// Converts or permutes `self` into scratch memory only when it must.
Result<Plan> plan(KernelContext& ctx, const Tensor& self, const DimMask& mask, ScalarType compute_dtype);

// The first reduced dim of size 0, or -1 (for "Expected reduction dim N to
// have non-zero size" errors of ops without an identity).
int64_t first_empty_reduced_dim(const Tensor& self, const DimMask& mask);

// Where sum, prod and the scans accumulate: integral results in int64 (their
// default dtype is Long). *result starts as `out`; a narrower integral
// dtype= (dtype=torch.int32) replaces it with int64 scratch of `sizes`,
// which wraps to the same values when converted into `out` at the end.
PARE_ALWAYS_INLINE Error accumulate_in_int64(KernelContext& ctx, const Tensor& out, bool integral, ScalarType out_dtype,
                                             IntArrayRef sizes, Tensor* result) {
  if (integral && out_dtype != ScalarType::Long) {
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(out.numel() * sizeof(int64_t)));
    *result = make_tensor(memory, ScalarType::Long, sizes);
  }
  return Error::Ok;
}

template <typename T>
PARE_ALWAYS_INLINE bool is_nan(T v) {
  if constexpr (is_floating_point_v<T>) {
    return v != v;
  } else {
    (void)v;
    return false;
  }
}

// ---------------------------------------------------------------------------
// Reduction operators. Each has an accumulator type Acc, identity(),
// step(acc, value) with the value already converted to Acc, merge(a, b) of
// two partial results, and kCascade (float sums: accumulate in blocks so the
// rounding error grows with the block count, not the length).

template <typename A>
struct SumOp {
  using Acc = A;
  static constexpr bool kCascade = is_floating_point_v<A>;
  static Acc identity() { return Acc(0); }
  static Acc step(Acc a, Acc v) { return arith::add<Acc>(a, v); }
  static Acc merge(Acc a, Acc b) { return arith::add<Acc>(a, b); }
};

template <typename A>
struct ProdOp {
  using Acc = A;
  static constexpr bool kCascade = false;
  static Acc identity() { return Acc(1); }
  static Acc step(Acc a, Acc v) { return arith::mul<Acc>(a, v); }
  static Acc merge(Acc a, Acc b) { return arith::mul<Acc>(a, b); }
};

// NaN wins, as in torch.amax.
template <typename A>
struct MaxOp {
  using Acc = A;
  static constexpr bool kCascade = false;
  static Acc identity() { return lowest_value<Acc>(); }
  static Acc step(Acc a, Acc v) { return (v > a || is_nan(v)) ? v : a; }
  static Acc merge(Acc a, Acc b) { return step(a, b); }
};

template <typename A>
struct MinOp {
  using Acc = A;
  static constexpr bool kCascade = false;
  static Acc identity() { return highest_value<Acc>(); }
  static Acc step(Acc a, Acc v) { return (v < a || is_nan(v)) ? v : a; }
  static Acc merge(Acc a, Acc b) { return step(a, b); }
};

struct AnyOp {
  using Acc = bool;
  static constexpr bool kCascade = false;
  static Acc identity() { return false; }
  static Acc step(Acc a, Acc v) { return a | v; }
  static Acc merge(Acc a, Acc b) { return a | b; }
};

constexpr int64_t kLanes = 16;
constexpr int64_t kCascadeBlock = 2048;

// Reduces n contiguous elements. kLanes independent accumulators break the
// loop-carried dependency so the loop vectorises without reassociating
// anything the compiler could not prove safe.
template <typename In, typename Op>
PARE_ALWAYS_INLINE typename Op::Acc reduce_row(const In* PARE_RESTRICT p, int64_t n) {
  using Acc = typename Op::Acc;
  Acc total = Op::identity();
  const int64_t block = Op::kCascade ? kCascadeBlock : n;
  for (int64_t start = 0; start < n; start += block) {
    const int64_t m = min_of(block, n - start);
    const In* PARE_RESTRICT q = p + start;
    Acc lanes[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = Op::identity();
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] = Op::step(lanes[l], convert<Acc>(q[i + l]));
    }
    Acc tail = Op::identity();
    for (; i < m; ++i) tail = Op::step(tail, convert<Acc>(q[i]));
    for (int64_t width = kLanes / 2; width > 0; width /= 2) {
      for (int64_t l = 0; l < width; ++l) lanes[l] = Op::merge(lanes[l], lanes[l + width]);
    }
    total = Op::merge(total, Op::merge(lanes[0], tail));
  }
  return total;
}

// y[o] = finish(reduce over k of x[o, k]) for a plan whose inner is 1 (the
// reduced elements of each output are contiguous).
template <typename In, typename Op, typename Out, typename Finish>
PARE_ALWAYS_INLINE void reduce_rows(const Plan& plan, Out* PARE_RESTRICT y, Finish finish) {
  const In* x = plan.input.template data_as<In>();
  for (int64_t o = 0; o < plan.outer; ++o) y[o] = finish(reduce_row<In, Op>(x + o * plan.length, plan.length));
}

// y[o * inner + i] = finish(reduce over k of x[o, k, i]) for the plan's
// [outer, length, inner] input. `finish` maps the accumulator to Out.
template <typename In, typename Op, typename Out, typename Finish>
Error reduce_lines(KernelContext& ctx, const Plan& plan, Out* PARE_RESTRICT y, Finish finish) {
  using Acc = typename Op::Acc;
  const In* x = plan.input.template data_as<In>();
  const int64_t outer = plan.outer;
  const int64_t length = plan.length;
  const int64_t inner = plan.inner;
  if (outer == 0 || inner == 0) return Error::Ok;
  if (inner == 1) {
    reduce_rows<In, Op>(plan, y, finish);
    return Error::Ok;
  }
  // Two accumulator rows for cascading float sums: `acc` gathers a block of
  // kCascadeBlock rows, `total` the blocks.
  const size_t rows = Op::kCascade ? 2 : 1;
  PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(rows * static_cast<size_t>(inner) * sizeof(Acc)));
  Acc* PARE_RESTRICT acc = static_cast<Acc*>(memory);
  Acc* PARE_RESTRICT total = Op::kCascade ? acc + inner : acc;
  for (int64_t o = 0; o < outer; ++o) {
    const In* base = x + o * length * inner;
    for (int64_t i = 0; i < inner; ++i) total[i] = Op::identity();
    const int64_t block = Op::kCascade ? kCascadeBlock : (length > 0 ? length : 1);
    for (int64_t start = 0; start < length; start += block) {
      const int64_t end = min_of(length, start + block);
      if constexpr (Op::kCascade) {
        for (int64_t i = 0; i < inner; ++i) acc[i] = Op::identity();
      }
      for (int64_t k = start; k < end; ++k) {
        const In* PARE_RESTRICT row = base + k * inner;
        for (int64_t i = 0; i < inner; ++i) acc[i] = Op::step(acc[i], convert<Acc>(row[i]));
      }
      if constexpr (Op::kCascade) {
        for (int64_t i = 0; i < inner; ++i) total[i] = Op::merge(total[i], acc[i]);
      }
    }
    Out* PARE_RESTRICT yo = y + o * inner;
    for (int64_t i = 0; i < inner; ++i) yo[i] = finish(total[i]);
  }
  return Error::Ok;
}

}  // namespace reduction
}  // namespace kernels
}  // namespace pare
