// pare::rope: rotary position embedding on interleaved pairs in one pass,
// what the tracer's fuse_norms pass writes for the rotation as eager
// PyTorch writes it (Llama's layout): the pairs view [..., P, 2] of q or k,
// its two selects, four muls, a sub, an add and the stack (or the cat of
// two unsqueezes) back to [..., P, 2] (docs/llm.md, "Fused norms and rotary
// embeddings"):
//   out[..., p, 0] = x0 * cos - x1 * sin,  out[..., p, 1] = x0 * sin + x1 * cos
// with cos and sin [..., P] broadcast over the pairs' other dims (a size 1
// dim repeats), as torch's muls broadcast them. The products and sums keep
// torch's order. Build feature threads: the pairs' leading rows are split.

#include "runtime/kernels/common/convert.h"

namespace pare {
namespace kernels {
namespace {

constexpr size_t kMaxDim = 8;

// Element strides of a contiguous `t` seen at the pairs' leading shape
// `lead` (t.dim == lead dims): 0 where t's size is 1 and lead's is not.
void broadcast_strides(const Tensor& t, const int64_t* lead, size_t dims, int64_t* strides) {
  int64_t stride = 1;
  for (size_t k = dims; k-- > 0;) {
    strides[k] = t.sizes[k] == 1 && lead[k] != 1 ? 0 : stride;
    stride *= t.sizes[k];
  }
}

}  // namespace

// pare::rope(Tensor pairs, Tensor cos, Tensor sin) -> Tensor
Error pare_rope(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 3, 3, 1);
  const Tensor& pairs = args.tensor(0, "pairs");
  const Tensor& cos = args.tensor(1, "cos");
  const Tensor& sin = args.tensor(2, "sin");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, pairs.dim >= 2 && pairs.dim <= kMaxDim + 1 && pairs.sizes[pairs.dim - 1] == 2,
                       Error::InvalidShape,
                       "argument 'pairs' must be [..., P, 2] (2 to %d dims, the last of size 2), got %s",
                       static_cast<int>(kMaxDim + 1), sizes_to_string(pairs.size_span()).text);
  const size_t dims = pairs.dim - 1;
  bool broadcasts = cos.dim == dims && sin.dim == dims;
  for (size_t k = 0; broadcasts && k < dims; ++k) {
    broadcasts =
        (cos.sizes[k] == pairs.sizes[k] || cos.sizes[k] == 1) && (sin.sizes[k] == pairs.sizes[k] || sin.sizes[k] == 1);
  }
  PARE_CHECK_OR_RETURN(ctx, broadcasts && cos.dtype == pairs.dtype && sin.dtype == pairs.dtype, Error::InvalidShape,
                       "arguments 'cos' and 'sin' must be %s of %zu dims broadcasting to the pairs' %s, got %s %s "
                       "and %s %s",
                       to_string(pairs.dtype), dims, sizes_to_string(pairs.size_span()).text, to_string(cos.dtype),
                       sizes_to_string(cos.size_span()).text, to_string(sin.dtype),
                       sizes_to_string(sin.size_span()).text);
  return PARE_DISPATCH(rope_kernel, ctx, pairs.dtype, T, {
    static_assert(is_same_v<T, float>, "the fused rotary embedding takes float32");
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, pairs.size_span()));
    if (out->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, pairs, ScalarType::Float));
    PARE_TRY_ASSIGN(const Tensor c, as_contiguous(ctx, cos, ScalarType::Float));
    PARE_TRY_ASSIGN(const Tensor s, as_contiguous(ctx, sin, ScalarType::Float));
    int64_t cs[kMaxDim], ss[kMaxDim];
    broadcast_strides(c, pairs.sizes, dims, cs);
    broadcast_strides(s, pairs.sizes, dims, ss);
    const int64_t p = pairs.sizes[dims - 1];
    const int64_t rows = out->numel() / (2 * p);  // the leading dims' positions, P pairs each
    const float* xs = x.data_as<float>();
    const float* cd = c.data_as<float>();
    const float* sd = s.data_as<float>();
    float* ys = out->data_as<float>();
    const uint32_t chunks = ctx.chunks_for(rows, 1, rows * p * 6);
    ctx.parallel(chunks, rows, 1, [&](uint32_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        // Offsets of row r's cos and sin rows: r's index in the leading dims (all but P).
        int64_t rest = r, co = 0, so = 0;
        for (size_t k = dims - 1; k-- > 0;) {
          const int64_t i = rest % pairs.sizes[k];
          rest /= pairs.sizes[k];
          co += i * cs[k];
          so += i * ss[k];
        }
        const float* xr = xs + r * 2 * p;
        float* yr = ys + r * 2 * p;
        const int64_t cp = cs[dims - 1], sp = ss[dims - 1];
        for (int64_t j = 0; j < p; ++j) {
          const float x0 = xr[2 * j], x1 = xr[2 * j + 1];
          const float cj = cd[co + j * cp], sj = sd[so + j * sp];
          yr[2 * j] = x0 * cj - x1 * sj;
          yr[2 * j + 1] = x0 * sj + x1 * cj;
        }
      }
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
