// The x86-64-v4 copy of pare::qadd / pare::qmul's same-shape loop
// (qaddmul.h: 16 lanes, one zmm register), for runtimes at
// --//runtime:x86_64_isa=auto on a CPU with AVX-512 F, BW, CD, DQ and VL
// (cpu::kernel_isa(); qelementwise.cc chooses). //runtime/kernels:kernels_v4
// compiles this file with -march=x86-64-v4; elsewhere it is empty.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/qaddmul.h"

#include <immintrin.h>

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

int64_t add_vectors_by(const int8_t* x, float w, int8_t* o, int64_t n, const Params& p) {
  return vectors_by<16>(x, w, o, n, p, [](auto a, auto b) { return a + b; });
}

int64_t mul_vectors_by(const int8_t* x, float w, int8_t* o, int64_t n, const Params& p) {
  return vectors_by<16>(x, w, o, n, p, [](auto a, auto b) { return a * b; });
}

// A byte's table index is x + 128 = x ^ 0x80: its low 7 bits pick the entry
// within a half of the table (vpermi2b over two 64-byte registers), its
// sign bit the half (set: the lower one, x < 0). The last bytes are a
// masked step.
__attribute__((target("avx512vbmi"))) void lut_vbmi(const int8_t* x, const int8_t* table, int8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table);
  const __m512i t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128);
  const __m512i t3 = _mm512_loadu_si512(table + 192);
  for (int64_t i = 0; i < n; i += 64) {
    const __mmask64 live = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(live, x + i);
    const __m512i lower = _mm512_permutex2var_epi8(t0, v, t1);
    const __m512i upper = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, live, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), upper, lower));
  }
}

}  // namespace x86_64_v4
}  // namespace qaddmul
}  // namespace kernels
}  // namespace pare

#endif
