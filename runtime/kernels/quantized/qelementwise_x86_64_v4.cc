// The x86-64-v4 copy of pare::qadd / pare::qmul's same-shape loop
// (qaddmul.h: 16 lanes, one zmm register), for runtimes at
// --//runtime:x86_64_isa=auto on a CPU with AVX-512 F, BW, CD, DQ and VL
// (cpu::kernel_isa(); qelementwise.cc chooses). //runtime/kernels:kernels_v4
// compiles this file with -march=x86-64-v4; elsewhere it is empty.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qaddmul.h"

namespace pare {
namespace kernels {
namespace qaddmul {
namespace x86_64_v4 {

int64_t add_vectors(const int8_t* x, const int8_t* y, int8_t* o, int64_t n, const Params& p) {
  return vectors<16>(x, y, o, n, p, [](auto a, auto b) { return a + b; });
}

int64_t mul_vectors(const int8_t* x, const int8_t* y, int8_t* o, int64_t n, const Params& p) {
  return vectors<16>(x, y, o, n, p, [](auto a, auto b) { return a * b; });
}

}  // namespace x86_64_v4
}  // namespace qaddmul
}  // namespace kernels
}  // namespace pare

#endif
