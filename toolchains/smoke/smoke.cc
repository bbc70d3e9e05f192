#include "toolchains/smoke/smoke.h"

extern "C" double sqrt(double);

namespace {

// Kept out of the export list by -fvisibility=hidden; only the C entry point
// below is exported.
template <typename T>
constexpr T twice(T x) {
  return x + x;
}

}  // namespace

extern "C" int32_t pare_smoke_answer(int32_t x) { return twice(x) + static_cast<int32_t>(sqrt(4.0)); }
