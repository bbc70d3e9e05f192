// The quantize pass's int8 ops besides the layers (docs/quantization.md,
// "Int8 layers: the quantize pass"): what runs between a dequantize of int8
// and a quantize to int8 without the float detour.
//
// pare::qadd / pare::qmul (broadcasting) compute the reference's own float32
// operations per element, (q - zero_point) * scale for each input, the sum
// or product, then quantize_per_tensor's rounding: the same bits as torch's
// dequantize -> add / mul -> quantize. pare::qmean sums int8 values in
// int64 (exact) and takes the mean in double, then quantizes in float32:
// torch's float32 sum rounds on the way, so an element near half a step
// may land one step away. pare::qavg_pool2d sums each window exactly
// (int32) with aten::avg_pool2d's windows and divisors (nn/pooling.h) and
// divides in double, then quantizes in float32: one step at most, as
// pare::qmean. pare::qlut maps each int8 value through a
// 256-entry table the exporter computed by running torch on every int8
// value, exact by construction. Every ISA gives the same bits: no
// floating-point contraction, and round half to even as quantized.h does.

#include "runtime/core/cpu.h"
#include "runtime/core/format.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/elementwise.h"
#include "runtime/kernels/nn/pooling.h"
#include "runtime/kernels/quantized/qaddmul.h"
#include "runtime/kernels/quantized/quantized.h"

// The product must round before the rounding to an integer (quantized.h).
#pragma clang fp contract(off)

namespace pare {
namespace kernels {
namespace {

Error check_char(KernelContext& ctx, const Tensor& t, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, t.dtype == ScalarType::Char, Error::UnsupportedDtype,
                       "argument '%s' must be an int8 (Char) tensor, got %s: it takes the output of a "
                       "quantize_per_tensor to int8",
                       name, to_string(t.dtype));
  return Error::Ok;
}

Error check_scale(KernelContext& ctx, double scale, const char* name) {
  PARE_CHECK_OR_RETURN(ctx, scale > 0.0, Error::InvalidArgument,
                       "argument '%s' must be positive, got %s (recalibrate the model)", name,
                       real_to_string(scale).text);
  return Error::Ok;
}

Error check_range(KernelContext& ctx, int64_t lo, int64_t hi) {
  PARE_CHECK_OR_RETURN(ctx, -128 <= lo && lo <= hi && hi <= 127, Error::InvalidArgument,
                       "output_min %lld and output_max %lld must satisfy -128 <= output_min <= output_max <= 127",
                       static_cast<long long>(lo), static_cast<long long>(hi));
  return Error::Ok;
}

// The output's quantization: x * inv_scale rounded half to even, plus the
// zero point, clamped to [lo, hi] (quantize_per_tensor to int8, its range
// narrowed by a fused relu / clamp).
struct OutputQuant {
  float inv_scale, zero_point, lo, hi;

  OutputQuant(double scale, int64_t zp, int64_t output_min, int64_t output_max)
      : inv_scale(static_cast<float>(1.0 / scale)),
        zero_point(static_cast<float>(zp)),
        lo(static_cast<float>(output_min)),
        hi(static_cast<float>(output_max)) {}

  PARE_ALWAYS_INLINE int8_t operator()(float x) const {
    return quantized::quantize_value<int8_t, float>(x, inv_scale, zero_point, lo, hi, static_cast<int64_t>(lo),
                                                    static_cast<int64_t>(hi));
  }
};

// An op's last four arguments, from `first`: out_scale, out_zero_point,
// output_min, output_max (read before the KernelArgs' status is checked,
// checked by check()).
struct OutputArgs {
  double scale;
  int64_t zero_point, min, max;

  OutputArgs(KernelArgs& args, size_t first)
      : scale(args.real(first, "out_scale")),
        zero_point(args.int64(first + 1, "out_zero_point")),
        min(args.int64(first + 2, "output_min")),
        max(args.int64(first + 3, "output_max")) {}

  Error check(KernelContext& ctx) const {
    PARE_TRY(check_scale(ctx, scale, "out_scale"));
    return check_range(ctx, min, max);
  }
  OutputQuant quant() const { return OutputQuant(scale, zero_point, min, max); }
};

struct InputQuant {
  float scale, zero_point;
  InputQuant(double s, int64_t zp) : scale(static_cast<float>(s)), zero_point(static_cast<float>(zp)) {}
  PARE_ALWAYS_INLINE float operator()(int8_t q) const { return (static_cast<float>(q) - zero_point) * scale; }
};

enum class Binary { Add, Mul };

template <Binary kKind, typename V>
PARE_ALWAYS_INLINE V combine(V u, V w) {
  if constexpr (kKind == Binary::Add) {
    return u + w;
  } else {
    return u * w;
  }
}

// Whether a and b are contiguous with one shape (a residual block's add).
bool same_contiguous(const Tensor& a, const Tensor& b) {
  if (a.dim != b.dim || !a.is_contiguous() || !b.is_contiguous()) return false;
  for (size_t i = 0; i < a.dim; ++i) {
    if (a.sizes[i] != b.sizes[i]) return false;
  }
  return true;
}

// qadd / qmul of same_contiguous operands: qaddmul.h's vector loop (16
// lanes on an x86-64-v4 CPU at --//runtime:x86_64_isa=auto, else 4), the
// general loop's steps at the tail: the same bits.
template <Binary kKind>
Error run_contiguous(KernelContext& ctx, Value& out, const Tensor& a, const Tensor& b, const InputQuant& da,
                     const InputQuant& db, const OutputQuant& q) {
  PARE_TRY_ASSIGN(Tensor * result, ctx.allocate_output(out, ScalarType::Char, a.size_span()));
  const int8_t* x = a.data_as<int8_t>();
  const int8_t* y = b.data_as<int8_t>();
  int8_t* o = result->data_as<int8_t>();
  const int64_t n = static_cast<int64_t>(a.numel());
  const qaddmul::Params p{da.scale, da.zero_point, db.scale, db.zero_point, q.inv_scale, q.zero_point, q.lo, q.hi};
  const auto f = [](auto u, auto w) { return combine<kKind>(u, w); };
  int64_t i = 0;
#if defined(PARE_X86_64_DISPATCH)
  if (cpu::kernel_isa() >= cpu::Isa::x86_64_v4) {
    i = kKind == Binary::Add ? qaddmul::x86_64_v4::add_vectors(x, y, o, n, p)
                             : qaddmul::x86_64_v4::mul_vectors(x, y, o, n, p);
  }
#endif
  i += qaddmul::vectors<4>(x + i, y + i, o + i, n - i, p, f);
  // The tail stays scalar: the code stays small.
#pragma clang loop vectorize(disable) unroll(disable)
  for (; i < n; ++i) {
    float v = quantized::round_half_even(f(da(x[i]), db(y[i])) * q.inv_scale) + q.zero_point;
    v = v < q.lo ? q.lo : v;
    v = v > q.hi ? q.hi : v;
    o[i] = static_cast<int8_t>(static_cast<int32_t>(v));
  }
  return Error::Ok;
}

// Whether one of a and b (`small`) broadcasts one value over each row of
// the other's trailing dims ([N, C, 1, 1] against [N, C, H, W], both
// contiguous, one dim count): then *rows values of small, each against
// *inner contiguous elements of the other.
bool row_broadcast(const Tensor& a, const Tensor& b, bool* a_small, int64_t* rows, int64_t* inner) {
  if (a.dim != b.dim || a.dim == 0 || !a.is_contiguous() || !b.is_contiguous()) return false;
  for (int side = 0; side < 2; ++side) {
    const Tensor& big = side == 0 ? b : a;
    const Tensor& small = side == 0 ? a : b;
    size_t d = 0;
    while (d < a.dim && small.sizes[d] == big.sizes[d]) ++d;
    size_t e = d;
    while (e < a.dim && small.sizes[e] == 1) ++e;
    if (e != a.dim || d == a.dim) continue;
    *a_small = side == 0;
    *rows = 1;
    *inner = 1;
    for (size_t i = 0; i < a.dim; ++i) (i < d ? *rows : *inner) *= big.sizes[i];
    return true;
  }
  return false;
}

// qadd / qmul of row_broadcast operands: each row's value of the small
// operand dequantized once (the general loop's float for it), qaddmul.h's
// vectors_by over the row. The sum and product of two floats are
// commutative, so taking the big operand first gives the same bits.
template <Binary kKind>
Error run_rows(KernelContext& ctx, Value& out, const Tensor& big, const Tensor& small, const InputQuant& dbig,
               const InputQuant& dsmall, const OutputQuant& q, int64_t rows, int64_t inner) {
  PARE_TRY_ASSIGN(Tensor * result, ctx.allocate_output(out, ScalarType::Char, big.size_span()));
  const int8_t* x = big.data_as<int8_t>();
  const int8_t* y = small.data_as<int8_t>();
  int8_t* o = result->data_as<int8_t>();
  const qaddmul::Params p{dbig.scale, dbig.zero_point, 0.0f, 0.0f, q.inv_scale, q.zero_point, q.lo, q.hi};
  const auto f = [](auto u, auto w) { return combine<kKind>(u, w); };
#if defined(PARE_X86_64_DISPATCH)
  const bool v4 = cpu::kernel_isa() >= cpu::Isa::x86_64_v4;
#endif
  for (int64_t r = 0; r < rows; ++r, x += inner, o += inner) {
    const float w = dsmall(y[r]);
    int64_t i = 0;
#if defined(PARE_X86_64_DISPATCH)
    if (v4) {
      i = kKind == Binary::Add ? qaddmul::x86_64_v4::add_vectors_by(x, w, o, inner, p)
                               : qaddmul::x86_64_v4::mul_vectors_by(x, w, o, inner, p);
    }
#endif
    i += qaddmul::vectors_by<4>(x + i, w, o + i, inner - i, p, f);
#pragma clang loop vectorize(disable) unroll(disable)
    for (; i < inner; ++i) {
      float v = quantized::round_half_even(f(dbig(x[i]), w) * q.inv_scale) + q.zero_point;
      v = v < q.lo ? q.lo : v;
      v = v > q.hi ? q.hi : v;
      o[i] = static_cast<int8_t>(static_cast<int32_t>(v));
    }
  }
  return Error::Ok;
}

// qadd / qmul under its kernel tag: same_contiguous operands take
// run_contiguous, row_broadcast ones run_rows, others the broadcasting
// elementwise loop op (a, b).
template <typename Tag, Binary kKind>
Error run_binary(KernelContext& ctx, Elementwise<2>& op, Value& out, const Tensor& a, const Tensor& b,
                 const InputQuant& da, const InputQuant& db, const OutputQuant& q) {
  return dispatch<Tag>(ctx, a.dtype, [&](auto type) -> Error {
    static_assert(is_same_v<typename decltype(type)::type, int8_t>, "int8 ops take int8 inputs");
    if (same_contiguous(a, b)) return run_contiguous<kKind>(ctx, out, a, b, da, db, q);
    bool a_small = false;
    int64_t rows = 0, inner = 0;
    if (row_broadcast(a, b, &a_small, &rows, &inner)) {
      return a_small ? run_rows<kKind>(ctx, out, b, a, db, da, q, rows, inner)
                     : run_rows<kKind>(ctx, out, a, b, da, db, q, rows, inner);
    }
    PARE_TRY(op.prepare(out, ScalarType::Char, ScalarType::Char));
    op.run<int8_t, int8_t>([=](int8_t x, int8_t y) -> int8_t { return q(combine<kKind>(da(x), db(y))); });
    return Error::Ok;
  });
}

// pare::qadd / pare::qmul(Tensor a, Tensor b, float a_scale, int a_zero_point, float b_scale,
//   int b_zero_point, float out_scale, int out_zero_point, int output_min, int output_max) -> Tensor
Error qbinary(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, Binary kind) {
  KernelArgs args(ctx, inputs, outputs, 10, 10, 1);
  const Tensor& a = args.tensor(0, "a");
  const Tensor& b = args.tensor(1, "b");
  const double a_scale = args.real(2, "a_scale");
  const int64_t a_zp = args.int64(3, "a_zero_point");
  const double b_scale = args.real(4, "b_scale");
  const int64_t b_zp = args.int64(5, "b_zero_point");
  const OutputArgs output(args, 6);
  PARE_TRY(args.status());
  PARE_TRY(check_char(ctx, a, "a"));
  PARE_TRY(check_char(ctx, b, "b"));
  PARE_TRY(check_scale(ctx, a_scale, "a_scale"));
  PARE_TRY(check_scale(ctx, b_scale, "b_scale"));
  PARE_TRY(output.check(ctx));
  const InputQuant da(a_scale, a_zp);
  const InputQuant db(b_scale, b_zp);
  const OutputQuant q = output.quant();
  Elementwise<2> op(ctx);
  op.add_input(Operand::of(a), "a");
  op.add_input(Operand::of(b), "b");
  if (kind == Binary::Add) {
    return run_binary<tags::qadd_kernel, Binary::Add>(ctx, op, args.output(0), a, b, da, db, q);
  }
  return run_binary<tags::qmul_kernel, Binary::Mul>(ctx, op, args.output(0), a, b, da, db, q);
}

}  // namespace

Error pare_qadd(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return qbinary(ctx, inputs, outputs, Binary::Add);
}

Error pare_qmul(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return qbinary(ctx, inputs, outputs, Binary::Mul);
}

// pare::qmean(Tensor input, int dims, bool keepdim, float in_scale, int in_zero_point, float out_scale,
//   int out_zero_point, int output_min, int output_max) -> Tensor
// The mean over the input's last `dims` dims (global average pooling:
// adaptive_avg_pool2d to 1x1, mean over H and W).
Error pare_qmean(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 9, 9, 1);
  const Tensor& input = args.tensor(0, "input");
  const int64_t dims = args.int64(1, "dims");
  const bool keepdim = args.boolean(2, "keepdim");
  const double in_scale = args.real(3, "in_scale");
  const int64_t in_zp = args.int64(4, "in_zero_point");
  const OutputArgs output(args, 5);
  PARE_TRY(args.status());
  PARE_TRY(check_char(ctx, input, "input"));
  PARE_CHECK_OR_RETURN(ctx, dims >= 1 && static_cast<size_t>(dims) <= input.dim, Error::InvalidArgument,
                       "argument 'dims' = %lld must be between 1 and the input's %d dims", static_cast<long long>(dims),
                       static_cast<int>(input.dim));
  PARE_TRY(check_scale(ctx, in_scale, "in_scale"));
  PARE_TRY(output.check(ctx));
  const size_t kept = input.dim - static_cast<size_t>(dims);
  int64_t sizes[kMaxDim];
  int64_t inner = 1;
  for (size_t d = 0; d < input.dim; ++d) {
    if (d < kept) {
      sizes[d] = input.sizes[d];
    } else {
      inner *= input.sizes[d];
      sizes[d] = 1;
    }
  }
  PARE_CHECK_OR_RETURN(ctx, inner > 0, Error::InvalidShape,
                       "argument 'input' with sizes %s has no elements to average over its last %lld dims",
                       sizes_to_string(input.size_span()).text, static_cast<long long>(dims));
  return PARE_DISPATCH(qmean_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, int8_t>, "int8 ops take int8 inputs");
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Char,
                                                      IntArrayRef(sizes, keepdim ? input.dim : kept)));
    const int64_t outer = static_cast<int64_t>(out->numel());
    if (outer == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, ScalarType::Char));
    const OutputQuant q = output.quant();
    const double scale_per_element = in_scale / static_cast<double>(inner);
    const int8_t* x = in.data_as<int8_t>();
    int8_t* y = out->data_as<int8_t>();
    for (int64_t o = 0; o < outer; ++o) {
      const int8_t* row = x + o * inner;
      // int32 sums of blocks of at most 2^23 values (|sum| < 2^30: exact),
      // which vectorise, where an int64 sum per byte does not.
      int64_t sum = 0;
      for (int64_t b = 0; b < inner; b += int64_t{1} << 23) {
        const int64_t e = inner - b < (int64_t{1} << 23) ? inner : b + (int64_t{1} << 23);
        int32_t block = 0;
        for (int64_t i = b; i < e; ++i) block += row[i];
        sum += block;
      }
      const double centered = static_cast<double>(sum - inner * in_zp);
      y[o] = q(static_cast<float>(centered * scale_per_element));
    }
    return Error::Ok;
  });
}

// pare::qavg_pool2d(Tensor input, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode,
//   bool count_include_pad, int? divisor_override, float in_scale, int in_zero_point, float out_scale,
//   int out_zero_point, int output_min, int output_max) -> Tensor
// aten::avg_pool2d's arguments, then the quantizations. Per output row, the
// window's rows are added column by column into int32 (a loop the
// vectoriser takes), then each window's columns; the padding's taps are
// the input's zero point (float zero), so a window's sum less its taps
// times the zero point is the reference's sum in input steps.
Error pare_qavg_pool2d(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  using namespace pooling;
  KernelArgs args(ctx, inputs, outputs, 13, 13, 1);
  const Tensor& input = args.tensor(0, "input");
  const bool ceil_mode = args.boolean(4, "ceil_mode");
  const bool count_include_pad = args.boolean(5, "count_include_pad");
  const Optional<int64_t> divisor_override = args.optional_int64(6, "divisor_override");
  const double in_scale = args.real(7, "in_scale");
  const int64_t in_zp = args.int64(8, "in_zero_point");
  const OutputArgs output(args, 9);
  PARE_TRY(args.status());
  PARE_TRY(check_char(ctx, input, "input"));
  PARE_CHECK_OR_RETURN(ctx, !divisor_override.has_value || divisor_override.value != 0, Error::InvalidArgument,
                       "argument 'divisor_override' must not be zero");
  PARE_TRY(check_scale(ctx, in_scale, "in_scale"));
  PARE_TRY(output.check(ctx));
  Planes<2> planes{};
  PARE_TRY(read_planes(ctx, input, &planes));
  PoolParams<2> p;
  PARE_TRY(read_pool_params(ctx, args, planes, /*with_dilation=*/false, 3, ceil_mode, &p));
  return PARE_DISPATCH(qavg_pool2d_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, int8_t>, "int8 ops take int8 inputs");
    PARE_TRY_ASSIGN(Tensor * out, allocate_pooled(ctx, args.output(0), ScalarType::Char, planes, p.out));
    if (out->numel() == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, ScalarType::Char));
    PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(static_cast<size_t>(planes.width) * sizeof(int32_t)));
    int32_t* columns = static_cast<int32_t*>(scratch);
    const OutputQuant q = output.quant();
    const AvgOptions options{count_include_pad, divisor_override};
    const int64_t width = planes.width;
    const int64_t in_plane = planes.volume();
    const int64_t out_plane = p.out_volume();
    for (int64_t i = 0; i < planes.count; ++i) {
      const int8_t* x = in.data_as<int8_t>() + i * in_plane;
      int8_t* y = out->data_as<int8_t>() + i * out_plane;
      for (int64_t oh = 0; oh < p.out[kH]; ++oh) {
        const AvgRows w = avg_window_rows<2>(0, oh, planes, p);
        for (int64_t iw = 0; iw < width; ++iw) columns[iw] = 0;
        for (int64_t ih = w.rows.first; ih < w.rows.end; ++ih) {
          const int8_t* row = x + ih * width;
          for (int64_t iw = 0; iw < width; ++iw) columns[iw] += row[iw];
        }
        for (int64_t ow = 0; ow < p.out[kW]; ++ow) {
          const AvgTaps c = avg_taps(ow, kW, width, p);
          const int64_t taps = w.rows.count() * c.count();
          if (w.empty() || taps <= 0) {
            y[oh * p.out[kW] + ow] = q(0.0f);
            continue;
          }
          int64_t sum = 0;
          for (int64_t iw = c.first; iw < c.end; ++iw) sum += columns[iw];
          const double centered = static_cast<double>(sum - taps * in_zp);
          const double divisor = static_cast<double>(options.divisor(w, c.pool, c.count()));
          y[oh * p.out[kW] + ow] = q(static_cast<float>(centered / divisor * in_scale));
        }
      }
    }
    return Error::Ok;
  });
}

// pare::qlut(Tensor input, Tensor table) -> Tensor
// table: 256 int8 values, the output for each input value from -128 up.
Error pare_qlut(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 2, 2, 1);
  const Tensor& input = args.tensor(0, "input");
  const Tensor& table = args.tensor(1, "table");
  PARE_TRY(args.status());
  PARE_TRY(check_char(ctx, input, "input"));
  PARE_CHECK_OR_RETURN(ctx, table.dtype == ScalarType::Char && table.numel() == 256, Error::InvalidArgument,
                       "argument 'table' must be 256 int8 (Char) values, got %zu %s values: the exporter "
                       "writes one output per int8 input",
                       table.numel(), to_string(table.dtype));
  return PARE_DISPATCH(qlut_kernel, ctx, input.dtype, T, {
    static_assert(is_same_v<T, int8_t>, "int8 ops take int8 inputs");
    PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Char, input.size_span()));
    const size_t n = out->numel();
    if (n == 0) return Error::Ok;
    PARE_TRY_ASSIGN(const Tensor in, as_contiguous(ctx, input, ScalarType::Char));
    PARE_TRY_ASSIGN(const Tensor t, as_contiguous(ctx, table, ScalarType::Char));
    const int8_t* lut = t.data_as<int8_t>() + 128;
    const int8_t* x = in.data_as<int8_t>();
    int8_t* y = out->data_as<int8_t>();
#if defined(PARE_X86_64_DISPATCH)
    if (cpu::kernel_isa() >= cpu::Isa::x86_64_v4 && cpu::x86_64_vbmi()) {
      qaddmul::x86_64_v4::lut_vbmi(x, lut - 128, y, static_cast<int64_t>(n));
      return Error::Ok;
    }
#endif
    for (size_t i = 0; i < n; ++i) y[i] = lut[x[i]];
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
