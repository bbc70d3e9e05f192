// The libFuzzer loader target's memory budget (fuzz/build.py links it into
// build/fuzz/loader_fuzzer with --wrap=pare_pal_malloc, so the statically
// linked runtime's allocations reach the PAL through this wrapper): like a
// small device, the process has a 256 MB budget, and an allocation past it
// fails, which the runtime must turn into its OutOfMemory error. Without it,
// a valid program whose constant shapes ask for several 1 GB intermediates
// ends the run on libFuzzer's RSS limit, and one that fills 1 GB takes
// seconds under ASan (a timeout on a loaded machine): findings about this
// machine rather than the runtime.
//
// Not part of the replay build (replay_main.cc links the harness against a
// shared runtime, whose internal calls no --wrap reaches).

#include <stddef.h>

#include <sanitizer/allocator_interface.h>

namespace {
constexpr size_t kMemoryBudget = size_t{256} << 20;
}  // namespace

extern "C" void* __real_pare_pal_malloc(size_t size, size_t alignment);

extern "C" void* __wrap_pare_pal_malloc(size_t size, size_t alignment) {
  const size_t used = __sanitizer_get_current_allocated_bytes();
  if (size > kMemoryBudget || used > kMemoryBudget - size) return nullptr;
  return __real_pare_pal_malloc(size, alignment);
}
