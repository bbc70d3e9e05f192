#pragma once
// pare::weight_only_linear's row kernels (weight_only_kernels.inc): float32
// inputs against int8 or packed int4 weights with float32 scales per group
// of inputs, dequantized in registers (docs/llm.md, "Quantized weights").
// Compiled once per ISA like qgemm_kernels.inc: this build's copy
// (weight_only_linear.cc, ISA PARE_SIMD_ISA) and, at
// --//runtime:x86_64_isa=auto, the x86-64-v3 (common/kernels_x86_64_v3.cc)
// and x86-64-v4 (weight_only_x86_64_v4.cc) copies; weight_only_linear.cc
// chooses (cpu::kernel_isa()). Every copy computes the same operations in
// the same order on 16-lane vectors, contraction off: the same bits.

#include <stddef.h>
#include <stdint.h>

#include "runtime/kernels/common/simd.h"

namespace pare {
namespace kernels {
namespace weight_only {

// A layer's weights: `out` rows of `in` values, int8 (bits 8: `in` bytes a
// row) or int4 (bits 4: `in` / 2 bytes a row, each 32 inputs in 16 bytes,
// byte j holding input j in its low nibble and input j + 16 in its high
// one), and `in` / `group` float32 scales a row. `group` is a multiple of
// kStep(bits).
struct Weights {
  const uint8_t* data;
  const float* scales;
  const float* bias;  // null: none
  int64_t out;
  int64_t in;
  int64_t group;
  int bits;
};

// The inputs one step of a row reads: a 16-lane vector of int8 weights, or
// 16 bytes of int4 ones.
constexpr int64_t step(int bits) { return bits == 8 ? 16 : 32; }

// y[r] = sum over groups g of (sum over g's inputs k of w[r, k] x[k]) *
// scale[r, g], plus bias[r], for the rows r in [r0, r1).
// many_rows: the same for the m input rows x[m, in] into y[m, out], the
// weight rows decoded to floats once into scratch[2 * in].
#define PARE_WEIGHT_ONLY_KERNELS                                                 \
  void rows(const Weights& w, const float* x, int64_t r0, int64_t r1, float* y); \
  void many_rows(const Weights& w, const float* x, int64_t m, int64_t r0, int64_t r1, float* y, float* scratch);
namespace PARE_SIMD_ISA {
PARE_WEIGHT_ONLY_KERNELS
}  // namespace PARE_SIMD_ISA
#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v3 {
PARE_WEIGHT_ONLY_KERNELS
}  // namespace x86_64_v3
namespace x86_64_v4 {
PARE_WEIGHT_ONLY_KERNELS
}  // namespace x86_64_v4
#endif
#undef PARE_WEIGHT_ONLY_KERNELS

}  // namespace weight_only
}  // namespace kernels
}  // namespace pare
