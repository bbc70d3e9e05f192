// One x86_64 core's float32 peak, measured: what SGEMM GFLOP/s are compared
// with (python -m tools.bench.sgemm, docs/performance.md).
//
//   cpu_peak [SECONDS]   prints: clock_ghz=... fma_gflops=... avx512_gflops=... sse_gflops=...
//
// clock_ghz   an estimate of the clock integer code runs at (turbo and VM
//             included), from a chain of dependent register adds; printed
//             for information only: the peaks below are what SGEMM is
//             compared with (see clock_ghz() for why).
// fma_gflops  12 independent chains of 8-lane fused multiply-adds (AVX2+FMA,
//             the --//runtime:x86_64_isa=v3 kernels' instruction), registers
//             only: the most float work the core retires per second.
// avx512_gflops  the same with 16-lane fused multiply-adds (AVX-512 F, the
//             auto level's v4 tile).
// sse_gflops  the same with 4-lane multiply then add (SSE2, the baseline
//             kernels' instructions).
// fma_gflops is 0 when the CPU lacks AVX2 or FMA, avx512_gflops without
// AVX-512 F. Each figure is the best of five interleaved measurements: sharing
// the core only ever slows a measurement down, so the best is the closest to
// the hardware's.

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// 16 dependent adds per iteration (the loop counter runs beside them), each
// adding a register: one per cycle on every x86_64 core since the Pentium Pro.
// Not `add $1, reg`, which this loop used to run: Golden Cove and its
// successors (Alder Lake's P-cores, Sapphire Rapids Xeons and later) do a
// 64-bit add of a small immediate in the renamer, with no latency and up to
// five a cycle, so that chain read 15.0-15.5 GHz on such a Xeon (Pare issue
// 47); an add of a register still goes to an ALU. Even a right clock only
// bounds a vector peak: a core may run wide vectors slower than integer code
// (the AVX-512 licences of Skylake-SP and Ice Lake Xeons), so tools.bench.sgemm
// takes its peak from the loops below, never clock x FLOP per cycle.
static double clock_ghz(double seconds) {
  long iterations = 1 << 20;
  for (;;) {
    unsigned long x = 0, one = 1;
    double start = now();
    for (long i = 0; i < iterations; ++i) {
      __asm__ volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(one));
    }
    double elapsed = now() - start;
    if (elapsed >= seconds) return 16.0 * (double)iterations / elapsed * 1e-9;
    iterations *= 2;
  }
}

// The peak loops: 12 independent chains of one vector operation on
// registers, 2 FLOP a lane. The accumulators are 12 named variables that an
// empty asm takes and gives back in vector registers ("+x") every iteration,
// so the loop is register-only whatever the compiler does; with an array and
// a memory clobber, as before, GCC 12 at -O2 kept the array in memory (a load
// and a store beside each FMA: 10-14 AVX2 GFLOP/s where Clang's build, and
// GCC's of this loop, measured 26-40 in the same minutes on a shared Zen 5).
#define PEAK_LOOP(name, attributes, vec, lanes, set1, step)                                                          \
  attributes static double name(double seconds) {                                                                    \
    const vec a = set1(0.999999f), b = set1(1e-7f);                                                                  \
    vec c0 = set1(0.0f), c1 = set1(1.0f), c2 = set1(2.0f), c3 = set1(3.0f), c4 = set1(4.0f), c5 = set1(5.0f);        \
    vec c6 = set1(6.0f), c7 = set1(7.0f), c8 = set1(8.0f), c9 = set1(9.0f), c10 = set1(10.f), c11 = set1(11.f);      \
    long iterations = 1 << 16;                                                                                       \
    for (;;) {                                                                                                       \
      double start = now();                                                                                          \
      for (long i = 0; i < iterations; ++i) {                                                                        \
        c0 = step(c0, a, b), c1 = step(c1, a, b), c2 = step(c2, a, b), c3 = step(c3, a, b);                          \
        c4 = step(c4, a, b), c5 = step(c5, a, b), c6 = step(c6, a, b), c7 = step(c7, a, b);                          \
        c8 = step(c8, a, b), c9 = step(c9, a, b), c10 = step(c10, a, b), c11 = step(c11, a, b);                      \
        __asm__ volatile(""                                                                                          \
                         : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7), "+x"(c8), \
                           "+x"(c9), "+x"(c10), "+x"(c11));                                                          \
      }                                                                                                              \
      double elapsed = now() - start;                                                                                \
      if (elapsed >= seconds) return (double)iterations * 12 * 2 * (lanes) / elapsed * 1e-9;                         \
      iterations *= 2;                                                                                               \
    }                                                                                                                \
  }

static inline __m128 mul_then_add(__m128 x, __m128 a, __m128 b) { return _mm_add_ps(_mm_mul_ps(x, a), b); }

PEAK_LOOP(fma_gflops, __attribute__((target("avx2,fma"))), __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps)
PEAK_LOOP(avx512_gflops, __attribute__((target("avx512f"))), __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps)
PEAK_LOOP(sse_gflops, , __m128, 4, _mm_set1_ps, mul_then_add)

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 0.5;
  if (!(seconds > 0)) {
    fprintf(stderr, "cpu_peak: SECONDS must be a positive number, got %s\n", argv[1]);
    return 2;
  }
  __builtin_cpu_init();
  int has_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  int has_avx512 = __builtin_cpu_supports("avx512f");
  double ghz = 0.0, fma = 0.0, avx512 = 0.0, sse = 0.0;
  for (int round = 0; round < 5; ++round) {
    double g = clock_ghz(seconds / 5);
    double f = has_fma ? fma_gflops(seconds / 5) : 0.0;
    double z = has_avx512 ? avx512_gflops(seconds / 5) : 0.0;
    double s = sse_gflops(seconds / 5);
    if (g > ghz) ghz = g;
    if (f > fma) fma = f;
    if (z > avx512) avx512 = z;
    if (s > sse) sse = s;
  }
  printf("clock_ghz=%.4f fma_gflops=%.3f avx512_gflops=%.3f sse_gflops=%.3f\n", ghz, fma, avx512, sse);
  return 0;
}
