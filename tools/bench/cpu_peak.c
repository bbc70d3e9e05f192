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

#define CHAINS 12

__attribute__((target("avx2,fma"))) static double fma_gflops(double seconds) {
  __m256 acc[CHAINS];
  for (int j = 0; j < CHAINS; ++j) acc[j] = _mm256_set1_ps((float)j);
  const __m256 a = _mm256_set1_ps(0.999999f);
  const __m256 b = _mm256_set1_ps(1e-7f);
  long iterations = 1 << 16;
  for (;;) {
    double start = now();
    for (long i = 0; i < iterations; ++i) {
      for (int j = 0; j < CHAINS; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
      __asm__ volatile("" : : : "memory");
    }
    double elapsed = now() - start;
    if (elapsed >= seconds) {
      float sink[8];
      __m256 sum = acc[0];
      for (int j = 1; j < CHAINS; ++j) sum = _mm256_add_ps(sum, acc[j]);
      _mm256_storeu_ps(sink, sum);
      if (sink[0] == 12345.0f) puts("");  // keeps the chains live
      return (double)iterations * CHAINS * 8 * 2 / elapsed * 1e-9;
    }
    iterations *= 2;
  }
}

__attribute__((target("avx512f"))) static double avx512_gflops(double seconds) {
  __m512 acc[CHAINS];
  for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_set1_ps((float)j);
  const __m512 a = _mm512_set1_ps(0.999999f);
  const __m512 b = _mm512_set1_ps(1e-7f);
  long iterations = 1 << 16;
  for (;;) {
    double start = now();
    for (long i = 0; i < iterations; ++i) {
      for (int j = 0; j < CHAINS; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
      __asm__ volatile("" : : : "memory");
    }
    double elapsed = now() - start;
    if (elapsed >= seconds) {
      __m512 sum = acc[0];
      for (int j = 1; j < CHAINS; ++j) sum = _mm512_add_ps(sum, acc[j]);
      if (_mm512_reduce_add_ps(sum) == 12345.0f) puts("");  // keeps the chains live
      return (double)iterations * CHAINS * 16 * 2 / elapsed * 1e-9;
    }
    iterations *= 2;
  }
}

static double sse_gflops(double seconds) {
  __m128 acc[CHAINS];
  for (int j = 0; j < CHAINS; ++j) acc[j] = _mm_set1_ps((float)j);
  const __m128 a = _mm_set1_ps(0.999999f);
  const __m128 b = _mm_set1_ps(1e-7f);
  long iterations = 1 << 16;
  for (;;) {
    double start = now();
    for (long i = 0; i < iterations; ++i) {
      for (int j = 0; j < CHAINS; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], a), b);
      __asm__ volatile("" : : : "memory");
    }
    double elapsed = now() - start;
    if (elapsed >= seconds) {
      float sink[4];
      __m128 sum = acc[0];
      for (int j = 1; j < CHAINS; ++j) sum = _mm_add_ps(sum, acc[j]);
      _mm_storeu_ps(sink, sum);
      if (sink[0] == 12345.0f) puts("");
      return (double)iterations * CHAINS * 4 * 2 / elapsed * 1e-9;
    }
    iterations *= 2;
  }
}

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
