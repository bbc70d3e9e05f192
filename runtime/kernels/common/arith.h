#pragma once
// Element arithmetic with PyTorch's semantics for every element type.
//
// Integer add/sub/mul wrap (two's complement) in PyTorch, but signed
// overflow is undefined behaviour in C++ and compilers exploit it; these
// helpers do integer arithmetic in uint64 and truncate, which is exact
// wrapping for every width. Floating types pass straight through: call them
// with opmath_t<T> values (float for Half/BFloat16) and round once.

#include "runtime/core/scalar_type.h"

namespace pare {
namespace arith {

namespace detail {
using Wide = decltype(static_cast<unsigned long long>(0));
}  // namespace detail

template <typename T>
PARE_ALWAYS_INLINE T add(T a, T b) {
  if constexpr (is_integral_v<T>) {
    return static_cast<T>(static_cast<detail::Wide>(a) + static_cast<detail::Wide>(b));
  } else {
    return a + b;
  }
}

template <typename T>
PARE_ALWAYS_INLINE T sub(T a, T b) {
  if constexpr (is_integral_v<T>) {
    return static_cast<T>(static_cast<detail::Wide>(a) - static_cast<detail::Wide>(b));
  } else {
    return a - b;
  }
}

template <typename T>
PARE_ALWAYS_INLINE T mul(T a, T b) {
  if constexpr (is_integral_v<T>) {
    return static_cast<T>(static_cast<detail::Wide>(a) * static_cast<detail::Wide>(b));
  } else {
    return a * b;
  }
}

// acc + a * b
template <typename T>
PARE_ALWAYS_INLINE T mul_add(T acc, T a, T b) {
  return add<T>(acc, mul<T>(a, b));
}

}  // namespace arith
}  // namespace pare
