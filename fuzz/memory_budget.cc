// The libFuzzer loader target's memory budget (fuzz/build.py links it into
// build/fuzz/loader_fuzzer with --wrap=pare_pal_malloc,--wrap=pare_pal_free,
// so the statically linked runtime's allocations reach the PAL through these
// wrappers): like a small device, the runtime has a 256 MB budget, and an
// allocation past it fails, which the runtime must turn into its
// OutOfMemory error. Without it, a valid program whose constant shapes ask
// for several 1 GB intermediates ends the run on libFuzzer's RSS limit, and
// one that fills 1 GB takes seconds under ASan (a timeout on a loaded
// machine): findings about this machine rather than the runtime.
//
// The wrappers keep their own count of the runtime's live bytes. They used
// to ask ASan (__sanitizer_get_current_allocated_bytes), which sums the
// statistics of every thread the process has started: once inputs could
// ask for thread pools, each allocation cost more the longer the run went
// (4 times the runs of one threaded input took 10 times as long).
//
// Not part of the replay build (replay_main.cc links the harness against a
// shared runtime, whose internal calls no --wrap reaches).

#include <stddef.h>
#include <stdint.h>

#include <sanitizer/allocator_interface.h>

namespace {

constexpr int64_t kMemoryBudget = int64_t{256} << 20;

// Bytes the runtime holds (kernels may allocate on worker threads: atomic).
// Signed: a block the PAL allocated for itself without the wrapper (a file
// read by pal_posix.cc) is still freed through it, which only makes the
// budget a little more lenient.
int64_t g_live_bytes = 0;

}  // namespace

extern "C" void* __real_pare_pal_malloc(size_t size, size_t alignment);
extern "C" void __real_pare_pal_free(void* ptr);

extern "C" void* __wrap_pare_pal_malloc(size_t size, size_t alignment) {
  if (size > static_cast<size_t>(kMemoryBudget)) return nullptr;
  const int64_t request = static_cast<int64_t>(size);
  // Reserved before allocating, so threads allocating at once cannot
  // overshoot the budget together.
  if (__atomic_add_fetch(&g_live_bytes, request, __ATOMIC_RELAXED) > kMemoryBudget) {
    __atomic_sub_fetch(&g_live_bytes, request, __ATOMIC_RELAXED);
    return nullptr;
  }
  void* ptr = __real_pare_pal_malloc(size, alignment);
  // Counted as free will count it: the block's size by the allocator (a
  // 0-byte request is a 1-byte block).
  const int64_t actual = ptr != nullptr ? static_cast<int64_t>(__sanitizer_get_allocated_size(ptr)) : 0;
  __atomic_add_fetch(&g_live_bytes, actual - request, __ATOMIC_RELAXED);
  return ptr;
}

extern "C" void __wrap_pare_pal_free(void* ptr) {
  if (ptr != nullptr) {
    __atomic_sub_fetch(&g_live_bytes, static_cast<int64_t>(__sanitizer_get_allocated_size(ptr)), __ATOMIC_RELAXED);
  }
  __real_pare_pal_free(ptr);
}
