#pragma once
// The CPU's instruction sets, for the kernels that choose one at run time.
//
// At --//runtime:x86_64_isa=auto (rules/private/isa.bzl, the default) the
// runtime is compiled for baseline x86-64 (SSE2) and carries more copies of
// the float GEMM's kernels: one compiled for x86-64-v3 (AVX2, FMA, BMI1/2,
// F16C, LZCNT, MOVBE) and a register tile for x86-64-v4 (AVX-512 F, BW,
// CD, DQ, VL). PARE_X86_64_DISPATCH is defined, and gemm.cc runs the best
// copy kernel_isa() allows. Other x86_64 levels choose nothing here: their
// kernels are the build's.
//
// arm64 always has NEON; the int8 GEMM (runtime/kernels/quantized/
// qgemm_arm64.inc) also carries an ARMv8.2 dot-product (SDOT) copy, which
// runs where the OS reports the feature (the PAL's pare_pal_cpu_features:
// getauxval on Linux and Android, sysctlbyname on iOS).

#include "runtime/core/compiler.h"

namespace pare {
namespace cpu {

// The ISAs a kernel can run, as pare_isa() and pare_kernel_isa() name them.
// Each architecture's in increasing order (a cap compares them).
enum class Isa : uint8_t { x86_64_baseline, x86_64_v3, x86_64_v4, arm64_neon, arm64_dotprod };

// "x86_64_baseline", "x86_64_v3", "x86_64_v4", "arm64_neon", "arm64_dotprod".
const char* isa_name(Isa isa);
// The Isa named `name` (isa_name's spelling); false for other names.
bool isa_from_name(const char* name, Isa* isa);

// The best ISA this CPU and its OS run: for x86_64, CPUID's feature bits
// and XGETBV's saved-state mask (the OS must save the YMM registers; for v4
// also the opmask and ZMM ones), asked once; on arm64, arm64_dotprod where
// the PAL reports the dot product, else arm64_neon.
Isa cpu_isa();

// The ISA the dispatching kernels run: the best the CPU has, at most the
// cap set_max_isa() set. On x86_64 without PARE_X86_64_DISPATCH, the
// build's own.
Isa kernel_isa();

// Whether this CPU, at level x86_64_v4, also has AVX-512 VNNI (vpdpbusd),
// which the int8 GEMM's VNNI copy needs (its callers check kernel_isa() >=
// x86_64_v4 too, so a cap below v4 turns it off); asked once. false
// elsewhere.
bool x86_64_vnni();

// Whether this CPU, at level x86_64_v4, also has AVX-512 VBMI (vpermi2b:
// 64 bytes looked up in a 128-byte table), which pare::qlut's wide copy
// needs (its callers check kernel_isa() >= x86_64_v4 too); asked once.
// false elsewhere.
bool x86_64_vbmi();

// The size in bytes of this core's level-2 cache, asked once: on x86_64
// the first level-2 data or unified cache CPUID describes (leaf 4 on Intel,
// 0x8000001D on AMD); 0 where it is not known (a CPU without those leaves,
// other architectures). The float GEMM's loop blocking reads it
// (gemm::blocking_for).
int64_t l2_cache_bytes();

// Caps kernel_isa() at `isa` (oneDNN's dnnl_set_max_cpu_isa): reproducible
// results across CPUs, or the SSE2 path on an AVX2 machine in tests. One
// process-wide setting; products already running finish on the ISA they
// started with (arm64_neon: the plain NEON int8 kernels on a CPU with the
// dot product). `isa` is one of this architecture's (the C API checks);
// false (nothing changed) for x86_64_baseline in a build pinned to v3,
// which has no SSE2 kernels.
bool set_max_isa(Isa isa);

}  // namespace cpu
}  // namespace pare
