// A recording PAL for tests, linked instead of pal_posix.cc (with :common:
// pal_libm.cc, pal_system.cc, pal_threads.cc). It counts every call that
// matters to the runtime's memory and failure contracts: allocations and
// frees (with live and peak bytes), logs and abort requests, and can make
// allocations fail on demand to exercise out-of-memory paths. Tests read
// the record through the default-visibility pare_test_pal_* functions below.
//
// The record is one global POD (zero-initialised, no destructor); like the
// tests using it, this PAL is single-threaded.

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

#define PARE_TEST_PAL_API extern "C" __attribute__((visibility("default")))

struct pare_test_pal_stats_t {
  uint64_t malloc_calls;
  uint64_t free_calls;
  uint64_t failed_mallocs;
  uint64_t live_blocks;
  uint64_t live_bytes;
  uint64_t peak_bytes;
  uint64_t log_calls;
  uint64_t abort_calls;
  char last_log[256];
};

namespace {

pare_test_pal_stats_t g_stats;
int64_t g_fail_after = -1;  // allocations left before one fails; -1: never

// Each block is prefixed with its size so frees can be accounted for; the
// prefix is as large as the alignment to keep the payload aligned.
struct BlockHeader {
  size_t size;
  size_t offset;
};

}  // namespace

extern "C" {

PARE_TEST_PAL_API void pare_test_pal_stats(pare_test_pal_stats_t* out) { *out = g_stats; }

PARE_TEST_PAL_API void pare_test_pal_reset(void) {
  const uint64_t live_blocks = g_stats.live_blocks;
  const uint64_t live_bytes = g_stats.live_bytes;
  g_stats = pare_test_pal_stats_t{};
  // Blocks still alive stay accounted for, so later frees balance.
  g_stats.live_blocks = live_blocks;
  g_stats.live_bytes = live_bytes;
  g_stats.peak_bytes = live_bytes;
  g_fail_after = -1;
}

PARE_TEST_PAL_API void pare_test_pal_fail_after(int64_t successful_allocations) {
  g_fail_after = successful_allocations;
}

void* pare_pal_malloc(size_t size, size_t alignment) {
  ++g_stats.malloc_calls;
  if (g_fail_after == 0) {
    ++g_stats.failed_mallocs;
    return nullptr;
  }
  if (g_fail_after > 0) --g_fail_after;
  if (alignment < sizeof(BlockHeader)) alignment = sizeof(BlockHeader);
  void* raw = nullptr;
  if (posix_memalign(&raw, alignment, size + alignment) != 0) {
    ++g_stats.failed_mallocs;
    return nullptr;
  }
  char* payload = static_cast<char*>(raw) + alignment;
  BlockHeader* header = reinterpret_cast<BlockHeader*>(payload) - 1;
  header->size = size;
  header->offset = alignment;
  ++g_stats.live_blocks;
  g_stats.live_bytes += size;
  if (g_stats.live_bytes > g_stats.peak_bytes) g_stats.peak_bytes = g_stats.live_bytes;
  return payload;
}

void pare_pal_free(void* ptr) {
  if (ptr == nullptr) return;
  ++g_stats.free_calls;
  BlockHeader* header = static_cast<BlockHeader*>(ptr) - 1;
  --g_stats.live_blocks;
  g_stats.live_bytes -= header->size;
  free(static_cast<char*>(ptr) - header->offset);
}

void pare_pal_log_message(int level, const char* message) {
  (void)level;
  ++g_stats.log_calls;
  size_t n = 0;
  for (; message[n] != '\0' && n + 1 < sizeof(g_stats.last_log); ++n) g_stats.last_log[n] = message[n];
  g_stats.last_log[n] = '\0';
}

void pare_pal_abort(const char* message) {
  ++g_stats.abort_calls;
  pare::pal::write_stderr("[pare test PAL] abort: ");
  pare::pal::write_stderr(message);
  pare::pal::write_stderr("\n");
  abort();
}

int pare_pal_read_file(const char* path, size_t alignment, void** out_data, size_t* out_size) {
  return pare::pal::read_whole_file(path, alignment, out_data, out_size, pare_pal_malloc, pare_pal_free);
}

}  // extern "C"
