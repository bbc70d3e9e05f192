#pragma once
// Compiler and language shims for the freestanding runtime.
//
// The runtime is built with -ffreestanding -fno-exceptions -fno-rtti and
// without any C++ standard library header (see docs/portable_cpp.md). This
// header collects the few attributes and language utilities we would
// otherwise take from <utility>/<new>: attribute wrappers, move/forward,
// a placement-new that cannot collide with <new>, and endianness checks.
// Everything here is header-only and constexpr-friendly.

#include <stddef.h>
#include <stdint.h>

#define PARE_NODISCARD [[nodiscard]]
#define PARE_NORETURN [[noreturn]]
#define PARE_NOINLINE __attribute__((noinline))
#define PARE_ALWAYS_INLINE inline __attribute__((always_inline))
#define PARE_COLD __attribute__((cold, noinline))
#define PARE_LIKELY(x) __builtin_expect(!!(x), 1)
#define PARE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PARE_UNUSED __attribute__((unused))
#define PARE_RESTRICT __restrict__
// Before a loop the compiler must leave scalar (edges, tails, strided rows:
// vectorising and unrolling them buys little and costs code in every
// runtime that has the kernel).
#define PARE_SCALAR_LOOP _Pragma("clang loop vectorize(disable) unroll(disable)")
// printf-style checking for our own formatter; `fmt_index` is 1-based and
// counts the implicit `this` for member functions.
#define PARE_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#define PARE_STRINGIZE_IMPL(x) #x
#define PARE_STRINGIZE(x) PARE_STRINGIZE_IMPL(x)

// Error strings can be compiled out of the smallest builds
// (-DPARE_ENABLE_ERROR_MESSAGES=0); error codes always remain.
#ifndef PARE_ENABLE_ERROR_MESSAGES
#define PARE_ENABLE_ERROR_MESSAGES 1
#endif

// The instrumentation build (-DPARE_TRACING=1) records every op, kernel
// dtype, class and build feature reached; see runtime/registry/observer.h.
#ifndef PARE_TRACING
#define PARE_TRACING 0
#endif

// Debug-only invariant checks. They guard programming errors inside the
// runtime, never user input (user input always gets an Error).
#ifndef PARE_DEBUG_CHECKS
#define PARE_DEBUG_CHECKS 0
#endif

// The program format and in-place constant tensors assume a little-endian
// host; every supported target (arm64, x86_64) is.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Pare supports little-endian targets only"
#endif

namespace pare {

// <utility> replacements.
template <typename T>
struct remove_reference {
  using type = T;
};
template <typename T>
struct remove_reference<T&> {
  using type = T;
};
template <typename T>
struct remove_reference<T&&> {
  using type = T;
};

template <typename T>
constexpr typename remove_reference<T>::type&& move(T&& t) noexcept {
  return static_cast<typename remove_reference<T>::type&&>(t);
}
template <typename T>
constexpr T&& forward(typename remove_reference<T>::type& t) noexcept {
  return static_cast<T&&>(t);
}

template <typename A, typename B>
struct is_same {
  static constexpr bool value = false;
};
template <typename A>
struct is_same<A, A> {
  static constexpr bool value = true;
};
template <typename A, typename B>
constexpr bool is_same_v = is_same<A, B>::value;

template <typename T>
constexpr T min_of(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
constexpr T max_of(T a, T b) {
  return a < b ? b : a;
}

constexpr bool is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }
// Rounds `x` up to a multiple of `alignment` (a power of two). It does not
// check for overflow: code handling untrusted sizes (the loader,
// runtime/executor/program.cc) checks with __builtin_*_overflow first.
constexpr size_t align_up(size_t x, size_t alignment) { return (x + alignment - 1) & ~(alignment - 1); }

namespace detail {
// Tag for our placement new. A tag (rather than the standard
// `operator new(size_t, void*)`) means this can never clash with <new> if a
// platform layer includes it in the same binary.
struct PlacementTag {};
constexpr PlacementTag kPlacement{};
}  // namespace detail

}  // namespace pare

inline void* operator new(size_t, pare::detail::PlacementTag, void* where) noexcept { return where; }
inline void operator delete(void*, pare::detail::PlacementTag, void*) noexcept {}

// Constructs a T in raw storage: PARE_PLACEMENT_NEW(ptr) T(args...).
#define PARE_PLACEMENT_NEW(where) new (::pare::detail::kPlacement, (where))
