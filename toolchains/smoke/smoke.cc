#include "toolchains/smoke/smoke.h"

extern "C" double sqrt(double);

namespace {

// Kept out of the export list by -fvisibility=hidden; only the C entry point
// below is exported.
template <typename T>
constexpr T twice(T x) {
  return x + x;
}

int32_t twice_even(int32_t x) { return twice(x); }
int32_t twice_odd(int32_t x) { return x * 2; }

// Pointers in data, so the library has the dynamic relocations every runtime
// has (its kernel and dtype tables): relative ones (kTwice) and one against
// an imported symbol (kRoot). The Android toolchain packs them by API level
// (toolchains/toolchains.bzl); one the loader misses makes the answer wrong.
using Step = int32_t (*)(int32_t);
Step const kTwice[2] = {twice_even, twice_odd};
// volatile: read through the pointer, not folded into a direct call.
double (*volatile const kRoot)(double) = sqrt;

}  // namespace

extern "C" int32_t pare_smoke_answer(int32_t x) { return kTwice[x & 1](x) + static_cast<int32_t>(kRoot(4.0)); }
