#pragma once
// Element types: PyTorch's ScalarType numbering and names, element sizes,
// the C++ type behind each dtype, type promotion, and portable Half and
// BFloat16.
//
// Numbering and names are PyTorch's (c10/core/ScalarType.h) because they
// cross three boundaries: the program format stores the code, manifests
// (PyTorch's kernel_metadata) store the name, and the selection header
// compares both (docs/selection.md). Only the eleven dtypes the runtime
// supports have enumerators; any other code is rejected where it enters.
//
// ComplexFloat (complex64) exists for the FFTs and the few operators
// around them (docs/complex.md): kernels whose tags declare it handle it
// in code of their own; every other tag rejects it at compile time, so a
// real-only runtime carries no complex code, only its table entries.
//
// Half and BFloat16 are storage types: arithmetic converts to float
// (OpMath<T>) and rounds back once, as PyTorch's CPU kernels do. The
// conversions are bit-exact round-to-nearest-even and need no hardware
// support, so every target gives identical results.

#include "runtime/core/compiler.h"

namespace pare {

// The enumerators are runtime/core/dtypes.def's table.
enum class ScalarType : int8_t {
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name) name = code,
#include "runtime/core/dtypes.def"
  Undefined = -1,
};

// Dtype codes the runtime supports; everything else (ComplexHalf,
// ComplexDouble, quantized, float8, ...) is rejected by the loader and the
// C API.
constexpr bool is_supported_scalar_type_code(int64_t code) {
  return (code >= 0 && code <= 7) || code == 9 || code == 11 || code == 15;
}

constexpr const char* to_string(ScalarType t) {
  switch (t) {
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name) \
  case ScalarType::name: return #name;
#include "runtime/core/dtypes.def"
    case ScalarType::Undefined: return "Undefined";
  }
  return "Unknown";
}

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Bool: return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    case ScalarType::Int:
    case ScalarType::Float: return 4;
    case ScalarType::Long:
    case ScalarType::Double:
    case ScalarType::ComplexFloat: return 8;
    case ScalarType::Undefined: return 0;
  }
  return 0;
}

constexpr bool is_floating_type(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16 || t == ScalarType::Float || t == ScalarType::Double;
}

constexpr bool is_integral_type(ScalarType t, bool include_bool) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short || t == ScalarType::Int ||
         t == ScalarType::Long || (include_bool && t == ScalarType::Bool);
}

// ---------------------------------------------------------------------------
// Half and BFloat16.

namespace detail {

PARE_ALWAYS_INLINE uint32_t float_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
PARE_ALWAYS_INLINE float float_from_bits(uint32_t b) { return __builtin_bit_cast(float, b); }

// IEEE binary16 <-> binary32, round to nearest even, with subnormals,
// infinities and NaN, matching PyTorch's c10::Half (the FP16 library's
// algorithms) bit for bit: a NaN becomes the quiet NaN 0x7E00 with its
// sign.
//
// Half to float stays integer arithmetic on every CPU: it vectorises, and
// the hardware conversion would not pay. Given `float(h) > c`, clang
// narrows the comparison to Half, which x86 cannot compare in vectors, and
// scalarises the loop around it (a Half sigmoid ran nearly 2x slower with
// vcvtph2ps than with these shifts).
inline float half_to_float(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = float_from_bits((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = float_from_bits((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result = sign | (two_w < denormalized_cutoff ? float_bits(denormalized) : float_bits(normalized));
  return float_from_bits(result);
}

#if defined(__F16C__) || defined(__aarch64__)
// Float to Half in hardware where the CPU has it (F16C, part of x86-64-v3;
// every arm64 core): vcvtps2ph / fcvtn, vectorised, instead of fifteen
// operations per element (on v3, a Half add 1.6x and a Half sigmoid 1.4x
// faster). A NaN is first made the quiet NaN with no payload, which
// converts to 0x7E00: the same bits as the software conversion for all
// 2^32 floats (checked exhaustively on x86-64-v3 and on arm64 under qemu
// when this was written; tests/runtime/kernels/test_conversion.py checks the
// rounding boundaries of every Half).
inline uint16_t float_to_half(float f) {
  const float quiet = float_from_bits((float_bits(f) & 0x80000000u) | 0x7FC00000u);
  return __builtin_bit_cast(uint16_t, static_cast<_Float16>(f != f ? quiet : f));
}
#else
inline uint16_t float_to_half(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  const uint32_t w = float_bits(f);
  float base = (float_from_bits(w & 0x7FFFFFFFu) * scale_to_inf) * scale_to_zero;
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
#endif

inline float bfloat16_to_float(uint16_t b) { return float_from_bits(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bfloat16(float f) {
  if (f != f) return 0x7FC0;  // canonical quiet NaN, as c10::BFloat16
  const uint32_t bits = float_bits(f);
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

}  // namespace detail

// Implicit conversions in both directions mirror c10::Half, so generic
// kernel code can write `T(x)` and `float(h)` for every dtype.
struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) : bits(detail::float_to_half(f)) {}
  operator float() const { return detail::half_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BFloat16(float f) : bits(detail::float_to_bfloat16(f)) {}
  operator float() const { return detail::bfloat16_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

// complex64 as c10::complex<float> stores it: real part, then imaginary.
// A storage type only: the kernels that declare ComplexFloat do their own
// arithmetic on the two parts.
struct ComplexFloat {
  float re;
  float im;
};

// ---------------------------------------------------------------------------
// C++ type <-> ScalarType.

template <ScalarType>
struct CppTypeFor;
template <typename T>
struct ScalarTypeOf;
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name) \
  template <>                                               \
  struct CppTypeFor<ScalarType::name> {                     \
    using type = cpp_type;                                  \
  };                                                        \
  template <>                                               \
  struct ScalarTypeOf<cpp_type> {                           \
    static constexpr ScalarType value = ScalarType::name;   \
  };
#include "runtime/core/dtypes.def"
template <typename T>
constexpr ScalarType scalar_type_of = ScalarTypeOf<T>::value;

// The type arithmetic is done in: float for the 16-bit floats, else T.
template <typename T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <typename T>
using opmath_t = typename OpMath<T>::type;

template <typename T>
constexpr bool is_reduced_float_v = is_same_v<T, Half> || is_same_v<T, BFloat16>;

// PyTorch's CPU acc_type, what arange steps and cumulative sums and products
// accumulate in: float for the 16-bit floats, double for float and double,
// int64 for integers and Bool.
template <typename T>
constexpr auto acc_type_value() {
  if constexpr (is_reduced_float_v<T>) {
    return float{};
  } else if constexpr (is_same_v<T, float> || is_same_v<T, double>) {
    return double{};
  } else {
    return int64_t{};
  }
}
template <typename T>
using acc_type_t = decltype(acc_type_value<T>());
template <typename T>
constexpr bool is_floating_point_v = is_same_v<T, float> || is_same_v<T, double> || is_reduced_float_v<T>;
template <typename T>
constexpr bool is_integral_v = is_same_v<T, uint8_t> || is_same_v<T, int8_t> || is_same_v<T, int16_t> ||
                               is_same_v<T, int32_t> || is_same_v<T, int64_t>;

// Converts between any two supported element types with PyTorch's
// semantics for the cases C++ leaves open: to bool is `!= 0`, real to
// complex has a zero imaginary part, complex to real keeps the real part
// (to bool: either part nonzero), and
// floating -> integral goes through int64 so narrow integer results wrap
// like PyTorch's CPU casts instead of being undefined.
template <typename To, typename From>
PARE_ALWAYS_INLINE To convert(From v) {
  if constexpr (is_same_v<To, From>) {
    return v;
  } else if constexpr (is_same_v<To, ComplexFloat>) {
    return ComplexFloat{convert<float>(v), 0.0f};
  } else if constexpr (is_same_v<From, ComplexFloat> && is_same_v<To, bool>) {
    return v.re != 0.0f || v.im != 0.0f;
  } else if constexpr (is_same_v<From, ComplexFloat>) {
    return convert<To>(v.re);  // the real part, as torch's complex-to-real copy
  } else if constexpr (is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != static_cast<opmath_t<From>>(0);
  } else if constexpr (is_integral_v<To> && is_floating_point_v<From>) {
    return static_cast<To>(static_cast<int64_t>(static_cast<opmath_t<From>>(v)));
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

// torch.promote_types for the supported dtypes.
constexpr ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  if (a == ScalarType::ComplexFloat || b == ScalarType::ComplexFloat) {
    // complex64 with float64 is complex128 in torch, which Pare lacks.
    return a == ScalarType::Double || b == ScalarType::Double ? ScalarType::Undefined : ScalarType::ComplexFloat;
  }
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  const bool af = is_floating_type(a);
  const bool bf = is_floating_type(b);
  if (af && bf) {
    // The two 16-bit formats have no common 16-bit supertype.
    if (element_size(a) == 2 && element_size(b) == 2) return ScalarType::Float;
    return element_size(a) >= element_size(b) ? a : b;
  }
  if (af) return a;
  if (bf) return b;
  // Both integral, at least one signed unless both are Byte (handled above).
  if (a == ScalarType::Byte) return b == ScalarType::Char ? ScalarType::Short : b;
  if (b == ScalarType::Byte) return a == ScalarType::Char ? ScalarType::Short : a;
  return element_size(a) >= element_size(b) ? a : b;
}

// What is written by hand above agrees with runtime/core/dtypes.def: each
// dtype's element size and code, and no other code is supported.
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name)                                               \
  static_assert(element_size(ScalarType::name) == (bytes) && sizeof(cpp_type) == (bytes), #name " size"); \
  static_assert(is_supported_scalar_type_code(code), #name " code");
#include "runtime/core/dtypes.def"
namespace detail {
constexpr int supported_codes_below(int64_t end) {
  return end <= 0 ? 0 : supported_codes_below(end - 1) + (is_supported_scalar_type_code(end - 1) ? 1 : 0);
}
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name) +1
constexpr int kNumDtypes = 0
#include "runtime/core/dtypes.def"
    ;
}  // namespace detail
static_assert(detail::supported_codes_below(128) == detail::kNumDtypes,
              "is_supported_scalar_type_code accepts a code runtime/core/dtypes.def lacks");

}  // namespace pare
