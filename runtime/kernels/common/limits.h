#pragma once
// The least and greatest values of an element type, the identities of max
// and min: the integer limits, false and true for Bool, -inf and +inf for
// floating types. Shared by the max/min reductions, max pooling and
// scatter_reduce, and by the indexing family's Scalar overflow check.

#include "runtime/core/scalar_type.h"

namespace pare {
namespace kernels {

template <typename T>
constexpr T highest_value() {
  if constexpr (is_same_v<T, bool>) {
    return true;
  } else if constexpr (is_integral_v<T>) {
    // Every bit of T but a signed type's sign bit.
    return static_cast<T>(~static_cast<uint64_t>(0) >> (64 - 8 * sizeof(T) + (T(-1) < T(0) ? 1 : 0)));
  } else {
    return static_cast<T>(__builtin_inf());
  }
}

template <typename T>
constexpr T lowest_value() {
  if constexpr (is_same_v<T, bool> || is_same_v<T, uint8_t>) {
    return T(0);
  } else if constexpr (is_integral_v<T>) {
    return static_cast<T>(-highest_value<T>() - 1);  // two's complement
  } else {
    return static_cast<T>(-__builtin_inf());
  }
}

static_assert(highest_value<uint8_t>() == 255 && lowest_value<uint8_t>() == 0, "uint8 limits");
static_assert(highest_value<int8_t>() == 127 && lowest_value<int8_t>() == -128, "int8 limits");
static_assert(highest_value<int32_t>() == 2147483647 && lowest_value<int32_t>() == -2147483647 - 1, "int32 limits");
static_assert(highest_value<int64_t>() == 9223372036854775807LL &&
                  lowest_value<int64_t>() == -9223372036854775807LL - 1,
              "int64 limits");

}  // namespace kernels
}  // namespace pare
