// aten::reflection_pad1d/2d/3d and aten::replication_pad1d/2d/3d: pad the
// last 1, 2 or 3 dims of a tensor with its own elements, mirrored at the
// edge (reflection: 1 2 3 -> 3 2 1 2 3 2 1) or repeated (replication:
// 1 2 3 -> 1 1 1 2 3 3 3). Negative padding crops, as in PyTorch.
//
// The checks and the source index of every output element are ATen's
// (ReflectionPad.cpp, ReplicationPadding.cpp), so shapes, errors and values
// match torch, including crops. The output is written row by row along its
// last dim; each row maps its outer indices once, so any input strides
// work. One tag per mode, shared by the three ranks: a model that pads
// 2-d feature maps keeps only its dtype's copy of the one body.

#include "runtime/registry/dispatch.h"

namespace pare {
namespace kernels {
namespace {

enum class PadMode : uint8_t { kReflect, kReplicate };

constexpr const char* mode_name(PadMode mode) { return mode == PadMode::kReflect ? "reflection" : "replication"; }

// A padded dim: the input's size and the padding before and after it.
struct PaddedDim {
  int64_t size;
  int64_t lo;
  int64_t hi;
};

// The input index output index `j` reads along a padded dim (ATen's
// formula: the index in the uncropped padded dim, then shifted by the crop).
// In range for every j in [0, size + lo + hi) once check_padding passed.
template <PadMode kMode>
PARE_ALWAYS_INLINE int64_t source_index(int64_t j, const PaddedDim& d) {
  const int64_t in_start = d.lo < 0 ? -d.lo : 0;
  const int64_t out_start = d.lo > 0 ? d.lo : 0;
  int64_t i;
  if (j < d.lo) {
    i = kMode == PadMode::kReflect ? 2 * d.lo - j : d.lo;
  } else if (j < d.size + d.lo) {
    i = j;
  } else {
    i = kMode == PadMode::kReflect ? 2 * (d.size + d.lo - 1) - j : d.size + d.lo - 1;
  }
  return i - out_start + in_start;
}

// PyTorch's checks, with its rules: `k` padded dims need a rank of k + 1,
// or k + 2 with a batch dim that may be empty; every other dim non-empty;
// reflection pads less than the dim on both sides; no padded dim of the
// output negative, and one of them at least 1 long (PyTorch's "output_w >= 1
// || output_h >= 1": a 2-d pad may crop the width away if the height stays).
Error check_padding(KernelContext& ctx, PadMode mode, int k, const Tensor& self, IntArrayRef padding, PaddedDim* dims,
                    int64_t* out_sizes) {
  const char* name = mode_name(mode);
  PARE_CHECK_OR_RETURN(ctx, padding.size() == static_cast<size_t>(2 * k), Error::InvalidArgument,
                       "argument 'padding' must have %d elements for %s padding of %d dim(s), got %zu", 2 * k, name, k,
                       padding.size());
  const int rank = self.dim;
  bool sizes_ok = rank == k + 1 || rank == k + 2;
  for (int d = rank == k + 2 ? 1 : 0; sizes_ok && d < rank; ++d) sizes_ok = self.sizes[d] != 0;
  PARE_CHECK_OR_RETURN(ctx, sizes_ok, Error::InvalidArgument,
                       "argument 'self' must be %dD, or %dD with a batch dim, with non-empty dims (but the batch), "
                       "got a %dD tensor with an empty dim or another rank",
                       k + 1, k + 2, rank);
  for (int d = 0; d < rank; ++d) out_sizes[d] = self.sizes[d];
  bool any_nonempty = false;
  for (int p = 0; p < k; ++p) {
    // padding lists the last dim's (lo, hi) first.
    const int d = rank - 1 - p;
    PaddedDim& dim = dims[k - 1 - p];
    dim = PaddedDim{self.sizes[d], padding[2 * p], padding[2 * p + 1]};
    PARE_CHECK_OR_RETURN(
        ctx, mode != PadMode::kReflect || (dim.lo < dim.size && dim.hi < dim.size), Error::InvalidArgument,
        "argument 'padding': reflection padding (%lld, %lld) of dim %d must be less than its size "
        "%lld",
        static_cast<long long>(dim.lo), static_cast<long long>(dim.hi), d, static_cast<long long>(dim.size));
    int64_t size = 0;
    const bool ok = !__builtin_add_overflow(dim.size, dim.lo, &size) && !__builtin_add_overflow(size, dim.hi, &size);
    PARE_CHECK_OR_RETURN(ctx, ok && size >= 0, Error::InvalidArgument,
                         "argument 'padding': dim %d of size %lld padded by (%lld, %lld) gives a negative size", d,
                         static_cast<long long>(dim.size), static_cast<long long>(dim.lo),
                         static_cast<long long>(dim.hi));
    any_nonempty = any_nonempty || size >= 1;
    out_sizes[d] = size;
  }
  PARE_CHECK_OR_RETURN(ctx, any_nonempty, Error::InvalidArgument,
                       "argument 'padding' crops every padded dim of 'self' to nothing; at least one must keep an "
                       "element");
  return Error::Ok;
}

// Writes `out` from `self`; dims[0..k) are the last k dims of both.
template <PadMode kMode, typename T>
void pad(const Tensor& self, Tensor& out, int k, const PaddedDim* dims) {
  const int rank = self.dim;
  const int first_padded = rank - k;
  const int last = rank - 1;
  const int64_t width = out.sizes[last];
  const int64_t rows = static_cast<int64_t>(out.numel()) / width;
  const int64_t in_stride = self.strides[last];
  const PaddedDim& last_dim = dims[k - 1];
  T* o = out.data_as<T>();
  int64_t index[kMaxDim] = {};  // the output row's index in the dims before the last
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = self.data_as<T>();
    for (int d = 0; d < last; ++d) {
      const int64_t i = d >= first_padded ? source_index<kMode>(index[d], dims[d - first_padded]) : index[d];
      row += i * self.strides[d];
    }
    T* PARE_RESTRICT dst = o + r * width;
    for (int64_t j = 0; j < width; ++j) dst[j] = row[source_index<kMode>(j, last_dim) * in_stride];
    for (int d = last - 1; d >= 0; --d) {
      if (++index[d] < out.sizes[d]) break;
      index[d] = 0;
    }
  }
}

template <typename Tag, PadMode kMode>
Error pad_op(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, int k) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& self = args.tensor(0, "self");
  const IntArrayRef padding = args.int_list(1, "padding");
  PARE_TRY(args.status());
  PaddedDim dims[3];
  int64_t sizes[kMaxDim];
  PARE_TRY(check_padding(ctx, kMode, k, self, padding, dims, sizes));
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, IntArrayRef(sizes, self.dim)));
  return dispatch<Tag>(ctx, self.dtype, [&](auto tt) -> Error {
    using T = typename decltype(tt)::type;
    if (out->numel() > 0) pad<kMode, T>(self, *out, k, dims);
    return Error::Ok;
  });
}

}  // namespace

// aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor
Error aten_reflection_pad1d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::reflection_pad_kernel, PadMode::kReflect>(ctx, inputs, outputs, 1);
}

// aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor
Error aten_reflection_pad2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::reflection_pad_kernel, PadMode::kReflect>(ctx, inputs, outputs, 2);
}

// aten::reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor
Error aten_reflection_pad3d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::reflection_pad_kernel, PadMode::kReflect>(ctx, inputs, outputs, 3);
}

// aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor
Error aten_replication_pad1d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::replication_pad_kernel, PadMode::kReplicate>(ctx, inputs, outputs, 1);
}

// aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor
Error aten_replication_pad2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::replication_pad_kernel, PadMode::kReplicate>(ctx, inputs, outputs, 2);
}

// aten::replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor
Error aten_replication_pad3d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return pad_op<tags::replication_pad_kernel, PadMode::kReplicate>(ctx, inputs, outputs, 3);
}

}  // namespace kernels
}  // namespace pare
