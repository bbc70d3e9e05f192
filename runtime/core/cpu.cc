#include "runtime/core/cpu.h"

#include "runtime/core/format.h"
#include "runtime/pal/pal.h"

namespace pare {
namespace cpu {
namespace {

constexpr const char* kNames[] = {"x86_64_baseline", "x86_64_v3", "x86_64_v4", "arm64_neon", "arm64_dotprod"};

// The build's own ISA: what every kernel runs without dispatch.
PARE_UNUSED constexpr Isa kBuildIsa =
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
    Isa::x86_64_v3;
#elif defined(__x86_64__)
    Isa::x86_64_baseline;
#else
    Isa::arm64_neon;
#endif

#if defined(__x86_64__)
struct Regs {
  uint32_t a, b, c, d;
};
Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __asm__ volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(subleaf));
  return r;
}
bool bit(uint32_t word, int n) { return ((word >> n) & 1u) != 0; }

// The best x86_64 level this CPU and OS run: baseline, v3 or v4.
Isa detect_x86_64() {
  const uint32_t max_leaf = cpuid(0, 0).a;
  if (max_leaf < 7 || cpuid(0x80000000u, 0).a < 0x80000001u) return Isa::x86_64_baseline;
  const Regs l1 = cpuid(1, 0);
  const Regs l7 = cpuid(7, 0);
  const Regs e1 = cpuid(0x80000001u, 0);
  // Leaf 1 ECX: FMA 12, MOVBE 22, OSXSAVE 27, AVX 28, F16C 29. Leaf 7 EBX:
  // BMI1 3, AVX2 5, BMI2 8. Leaf 0x80000001 ECX: LZCNT (ABM) 5.
  const bool v3 = bit(l1.c, 12) && bit(l1.c, 22) && bit(l1.c, 27) && bit(l1.c, 28) && bit(l1.c, 29) && bit(l7.b, 3) &&
                  bit(l7.b, 5) && bit(l7.b, 8) && bit(e1.c, 5);
  if (!v3) return Isa::x86_64_baseline;
  // XCR0: the OS saves the XMM (bit 1) and YMM (bit 2) state; for AVX-512
  // also the opmask (5) and the ZMM registers (6, 7).
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  if ((lo & 0x6u) != 0x6u) return Isa::x86_64_baseline;
  // Leaf 7 EBX: AVX512F 16, AVX512DQ 17, AVX512CD 28, AVX512BW 30, AVX512VL 31.
  const bool v4 =
      bit(l7.b, 16) && bit(l7.b, 17) && bit(l7.b, 28) && bit(l7.b, 30) && bit(l7.b, 31) && (lo & 0xE0u) == 0xE0u;
  return v4 ? Isa::x86_64_v4 : Isa::x86_64_v3;
}

// 0: not asked yet, else 1 + the Isa detect_x86_64() found. Racing first
// calls store the same value.
uint8_t g_x86_64 = 0;

Isa x86_64_level() {
  uint8_t known = __atomic_load_n(&g_x86_64, __ATOMIC_RELAXED);
  if (known == 0) {
    known = static_cast<uint8_t>(1 + static_cast<int>(detect_x86_64()));
    __atomic_store_n(&g_x86_64, known, __ATOMIC_RELAXED);
  }
  return static_cast<Isa>(known - 1);
}

// 0: not asked yet, 1: no, 2: yes. Leaf 7 ECX bit 11: AVX512_VNNI.
uint8_t g_x86_64_vnni = 0;
// The same for leaf 7 ECX bit 1: AVX512_VBMI.
uint8_t g_x86_64_vbmi = 0;
#endif

#if defined(__aarch64__)
// 0: not asked yet, else 1 + the Isa the PAL's features give. Racing first
// calls store the same value.
uint8_t g_arm64 = 0;

Isa arm64_level() {
  uint8_t known = __atomic_load_n(&g_arm64, __ATOMIC_RELAXED);
  if (known == 0) {
    const bool dotprod = (pare_pal_cpu_features() & PARE_PAL_CPU_ARM64_DOTPROD) != 0;
    known = static_cast<uint8_t>(1 + static_cast<int>(dotprod ? Isa::arm64_dotprod : Isa::arm64_neon));
    __atomic_store_n(&g_arm64, known, __ATOMIC_RELAXED);
  }
  return static_cast<Isa>(known - 1);
}
#endif

// set_max_isa's cap, an Isa; the best there is until it is set (every
// architecture's ISAs compare below it).
uint8_t g_max_isa = static_cast<uint8_t>(Isa::arm64_dotprod);

}  // namespace

const char* isa_name(Isa isa) { return kNames[static_cast<int>(isa)]; }

bool isa_from_name(const char* name, Isa* isa) {
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    if (string_equal(name, kNames[i])) {
      *isa = static_cast<Isa>(i);
      return true;
    }
  }
  return false;
}

Isa cpu_isa() {
#if defined(__x86_64__)
  return x86_64_level();
#else
  return arm64_level();
#endif
}

#if defined(__x86_64__)
namespace {
// Whether an x86-64-v4 CPU has the feature in bit `bit_index` of CPUID
// leaf 7's ECX, probed once and kept in `*known_cache` (0: not asked yet,
// 1: no, 2: yes).
bool v4_leaf7_ecx_feature(uint8_t* known_cache, int bit_index) {
  uint8_t known = __atomic_load_n(known_cache, __ATOMIC_RELAXED);
  if (known == 0) {
    known = x86_64_level() == Isa::x86_64_v4 && bit(cpuid(7, 0).c, bit_index) ? 2 : 1;
    __atomic_store_n(known_cache, known, __ATOMIC_RELAXED);
  }
  return known == 2;
}
}  // namespace
#endif

bool x86_64_vnni() {
#if defined(__x86_64__)
  return v4_leaf7_ecx_feature(&g_x86_64_vnni, 11);
#else
  return false;
#endif
}

#if defined(__x86_64__)
namespace {
// The level-2 data or unified cache that CPUID `leaf` (4 or 0x8000001D:
// one sub-leaf per cache, the same fields) lists first; 0 if none.
int64_t l2_of_leaf(uint32_t leaf) {
  for (uint32_t sub = 0; sub < 16; ++sub) {
    const Regs r = cpuid(leaf, sub);
    const uint32_t type = r.a & 0x1fu;  // 0 no more caches, 1 data, 2 instruction, 3 unified
    if (type == 0) break;
    if (((r.a >> 5) & 7u) == 2 && type != 2) {
      // ways x partitions x line size x sets
      return int64_t{(r.b >> 22) + 1} * (((r.b >> 12) & 0x3ffu) + 1) * ((r.b & 0xfffu) + 1) * (int64_t{r.c} + 1);
    }
  }
  return 0;
}
// 0: not asked yet, else 1 + the size in KB. Racing first calls store the same value.
uint32_t g_l2_kb = 0;
}  // namespace
#endif

int64_t l2_cache_bytes() {
#if defined(__x86_64__)
  uint32_t known = __atomic_load_n(&g_l2_kb, __ATOMIC_RELAXED);
  if (known == 0) {
    int64_t bytes = cpuid(0, 0).a >= 4 ? l2_of_leaf(4) : 0;
    if (bytes == 0 && cpuid(0x80000000u, 0).a >= 0x8000001Du) bytes = l2_of_leaf(0x8000001Du);
    known = static_cast<uint32_t>(bytes >> 10) + 1;
    __atomic_store_n(&g_l2_kb, known, __ATOMIC_RELAXED);
  }
  return int64_t{known - 1} << 10;
#else
  return 0;
#endif
}

bool x86_64_vbmi() {
#if defined(__x86_64__)
  return v4_leaf7_ecx_feature(&g_x86_64_vbmi, 1);
#else
  return false;
#endif
}

Isa kernel_isa() {
#if defined(PARE_X86_64_DISPATCH) || defined(__aarch64__)
  const Isa cap = static_cast<Isa>(__atomic_load_n(&g_max_isa, __ATOMIC_RELAXED));
  const Isa cpu = cpu_isa();
  return cap < cpu ? cap : cpu;
#else
  return kBuildIsa;
#endif
}

bool set_max_isa(Isa isa) {
#if !defined(PARE_X86_64_DISPATCH)
  // A build pinned to v3 has no SSE2 kernels to fall back to.
  if (kBuildIsa == Isa::x86_64_v3 && isa == Isa::x86_64_baseline) return false;
#endif
  __atomic_store_n(&g_max_isa, static_cast<uint8_t>(isa), __ATOMIC_RELAXED);
  return true;
}

}  // namespace cpu
}  // namespace pare
