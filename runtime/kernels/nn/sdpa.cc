// pare::sdpa: scaled-dot-product attention of queries over a KV cache in
// one pass, what the tracer's fuse_attention pass writes for the pattern
// q K^T * scale (+ mask), softmax, weights V (docs/llm.md, "Fused
// attention"). For each query row it walks the cache's keys and values once
// in blocks of kBlock positions, keeping a running max, sum and weighted
// sum of values (an online softmax): no [S, L] score matrix exists, and a
// causal row (input_pos given: row i sees positions 0..input_pos[i]) stops
// at its last visible position, so a decode step's work grows with the
// position, not with the cache's length. Grouped-query heads read key /
// value head h / (heads / kv_heads), as repeat_interleave does. Build
// feature threads: the (batch, head, row) rows are split (disjoint
// outputs: the same bits for any split).

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"
#include "runtime/kernels/common/rows.h"
#include "runtime/kernels/common/simd.h"

namespace pare {
namespace kernels {
namespace {

constexpr int64_t kBlock = 64;  // cache positions scored before the running sums are updated

struct Attention {
  const float* q;      // [B, H, S, D], contiguous
  const float* k;      // [B, KVH, L, D], contiguous
  const float* v;      // [B, KVH, L, D], contiguous
  const float* mask;   // additive [S, L], contiguous, or null
  const int64_t* pos;  // [S], or null: row i sees positions 0..pos[i]
  float scale;
  int64_t heads, kv_heads, s, l, d;
};

// Output row `row` of [B * H * S] (its D values at out): the softmax over
// the visible positions of (q . k_j) * scale + mask[i, j], times V.
// `acc` holds D floats, `scores` kBlock.
PARE_UNUSED void attend_row(const Attention& a, int64_t row, float* PARE_RESTRICT out, float* PARE_RESTRICT acc,
                            float* PARE_RESTRICT scores) {
  const int64_t i = row % a.s;
  const int64_t bh = row / a.s;
  const int64_t b = bh / a.heads;
  const int64_t kvh = (bh % a.heads) / (a.heads / a.kv_heads);
  const int64_t d = a.d;
  const float* q = a.q + row * d;
  const float* keys = a.k + (b * a.kv_heads + kvh) * a.l * d;
  const float* values = a.v + (b * a.kv_heads + kvh) * a.l * d;
  const float* mask = a.mask ? a.mask + i * a.l : nullptr;
  int64_t visible = a.l;
  if (a.pos != nullptr) {
    const int64_t p = a.pos[i];
    visible = p < 0 ? 0 : (p + 1 < a.l ? p + 1 : a.l);
  }
  for (int64_t c = 0; c < d; ++c) acc[c] = 0.0f;
  float max = -math::kInfinityF;
  float sum = 0.0f;
  for (int64_t j0 = 0; j0 < visible; j0 += kBlock) {
    const int64_t n = visible - j0 < kBlock ? visible - j0 : kBlock;
    for (int64_t j = 0; j < n; ++j) scores[j] = rows::dot(q, keys + (j0 + j) * d, d) * a.scale;
    if (mask != nullptr) {
      for (int64_t j = 0; j < n; ++j) scores[j] += mask[j0 + j];
    }
    const float block_max = rows::nan_max(max, rows::max(scores, n));
    if (block_max == -math::kInfinityF) continue;  // every position so far masked out
    if (block_max != max) {
      const float rescale = math::exp(max - block_max);  // 0 for the first visible block
      sum *= rescale;
      for (int64_t c = 0; c < d; ++c) acc[c] *= rescale;
      max = block_max;
    }
#pragma clang loop interleave_count(1)
    for (int64_t j = 0; j < n; ++j) scores[j] = math::exp(scores[j] - max);
    sum += rows::sum<float>(scores, n);
    // Four positions a pass over acc: a quarter of its loads and stores.
    const float* vj = values + j0 * d;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4, vj += 4 * d) {
      const float w0 = scores[j], w1 = scores[j + 1], w2 = scores[j + 2], w3 = scores[j + 3];
      for (int64_t c = 0; c < d; ++c)
        acc[c] += (w0 * vj[c] + w1 * vj[d + c]) + (w2 * vj[2 * d + c] + w3 * vj[3 * d + c]);
    }
    for (; j < n; ++j, vj += d) {
      const float w = scores[j];
      for (int64_t c = 0; c < d; ++c) acc[c] += w * vj[c];
    }
  }
  // Nothing visible: 0 / 0, NaN, as torch's softmax of a row of -inf.
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < d; ++c) out[c] = acc[c] * inv;
}

}  // namespace

// pare::sdpa(Tensor query, Tensor key, Tensor value, Tensor? mask, Tensor? input_pos, float scale) -> Tensor
Error pare_sdpa(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 6, 6, 1);
  const Tensor& query = args.tensor(0, "query");
  const Tensor& key = args.tensor(1, "key");
  const Tensor& value = args.tensor(2, "value");
  const Tensor* mask = args.optional_tensor(3, "mask");
  const Tensor* input_pos = args.optional_tensor(4, "input_pos");
  const double scale = args.real(5, "scale");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, query.dim == 4 && key.dim == 4 && value.dim == 4, Error::InvalidShape,
                       "arguments 'query', 'key' and 'value' must be 4-d [batch, heads, positions, head_dim], got %s, "
                       "%s and %s",
                       sizes_to_string(query.size_span()).text, sizes_to_string(key.size_span()).text,
                       sizes_to_string(value.size_span()).text);
  const int64_t batch = query.sizes[0], heads = query.sizes[1], s = query.sizes[2], d = query.sizes[3];
  const int64_t kv_heads = key.sizes[1], l = key.sizes[2];
  bool same_kv = true;
  for (size_t k = 0; k < 4; ++k) same_kv = same_kv && key.sizes[k] == value.sizes[k];
  PARE_CHECK_OR_RETURN(ctx,
                       same_kv && key.sizes[0] == batch && key.sizes[3] == d && kv_heads > 0 && heads % kv_heads == 0,
                       Error::InvalidShape,
                       "arguments 'key' and 'value' must both be [%lld, kv_heads, positions, %lld] with kv_heads "
                       "dividing the query's %lld heads, got %s and %s",
                       static_cast<long long>(batch), static_cast<long long>(d), static_cast<long long>(heads),
                       sizes_to_string(key.size_span()).text, sizes_to_string(value.size_span()).text);
  PARE_CHECK_OR_RETURN(
      ctx,
      mask == nullptr || (mask->dtype == query.dtype && mask->dim == 2 && mask->sizes[0] == s && mask->sizes[1] == l),
      Error::InvalidShape, "argument 'mask' must be an additive %s [%lld, %lld] mask, got %s %s",
      to_string(query.dtype), static_cast<long long>(s), static_cast<long long>(l), mask ? to_string(mask->dtype) : "",
      mask ? sizes_to_string(mask->size_span()).text : "");
  PARE_CHECK_OR_RETURN(
      ctx,
      input_pos == nullptr || (input_pos->dtype == ScalarType::Long && input_pos->dim == 1 && input_pos->sizes[0] == s),
      Error::InvalidShape, "argument 'input_pos' must be int64 [%lld] (each query row's position), got %s %s",
      static_cast<long long>(s), input_pos ? to_string(input_pos->dtype) : "",
      input_pos ? sizes_to_string(input_pos->size_span()).text : "");
  PARE_CHECK_OR_RETURN(ctx, key.dtype == query.dtype && value.dtype == query.dtype, Error::InvalidArgument,
                       "arguments 'key' and 'value' must be %s as 'query' is, got %s and %s", to_string(query.dtype),
                       to_string(key.dtype), to_string(value.dtype));
  return PARE_DISPATCH(sdpa_kernel, ctx, query.dtype, T, {
    static_assert(is_same_v<T, float>, "the fused attention takes float32");
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, query.size_span()));
    if (out->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor q, as_contiguous(ctx, query, ScalarType::Float));
    PARE_TRY_ASSIGN(const Tensor k, as_contiguous(ctx, key, ScalarType::Float));
    PARE_TRY_ASSIGN(const Tensor v, as_contiguous(ctx, value, ScalarType::Float));
    const float* mask_data = nullptr;
    if (mask != nullptr) {
      PARE_TRY_ASSIGN(const Tensor m, as_contiguous(ctx, *mask, ScalarType::Float));
      mask_data = m.data_as<float>();
    }
    const int64_t* pos = nullptr;
    if (input_pos != nullptr) {
      PARE_TRY_ASSIGN(const Tensor p, as_contiguous(ctx, *input_pos, ScalarType::Long));
      pos = p.data_as<int64_t>();
    }
    const Attention a{q.data_as<float>(),
                      k.data_as<float>(),
                      v.data_as<float>(),
                      mask_data,
                      pos,
                      static_cast<float>(scale),
                      heads,
                      kv_heads,
                      s,
                      l,
                      d};
    const int64_t rows = batch * heads * s;
    const uint32_t chunks = ctx.chunks_for(rows, 1, rows * l * d * 2);
    const size_t per_chunk = static_cast<size_t>(d + kBlock);
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(per_chunk * chunks * sizeof(float)));
    float* scratch = static_cast<float*>(memory);
    float* ys = out->data_as<float>();
    ctx.parallel(chunks, rows, 1, [&](uint32_t c, int64_t begin, int64_t end) {
      float* acc = scratch + c * per_chunk;
      for (int64_t r = begin; r < end; ++r) attend_row(a, r, ys + r * d, acc, acc + d);
    });
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
