/* What the soak driver measures of memory: the PAL's allocations and the
 * process's resident set.
 *
 * The PAL record: the runtime's PAL (runtime/pal/pal_posix.cc) allocates
 * with posix_memalign and frees with free, imported from libc. The driver
 * executable defines both (memory_record.c; the dynamic linker resolves the
 * runtime's imports to an executable's definitions first) and forwards them
 * to glibc's __libc_memalign and __libc_free, recording each posix_memalign
 * block until it is freed. Nothing else in the process calls
 * posix_memalign, so the record is the PAL's allocations; frees of other
 * blocks pass through unrecorded. glibc only (Linux hosts).
 */

#pragma once

#include <stdint.h>

/* Live PAL blocks are kept in a table of PAL_TABLE_SIZE slots; past
 * PAL_MAX_LIVE_BLOCKS (3/4 full), recording stops and is reported. */
enum { PAL_TABLE_BITS = 16, PAL_TABLE_SIZE = 1 << PAL_TABLE_BITS, PAL_MAX_LIVE_BLOCKS = PAL_TABLE_SIZE / 4 * 3 };

typedef struct {
  uint64_t allocs, frees, live_blocks, live_bytes;
} PalRecord;

/* The process's PAL allocations so far. */
PalRecord pal_record(void);

/* The PAL allocations the calling thread has made. */
uint64_t pal_thread_allocs(void);

/* Whether more than PAL_MAX_LIVE_BLOCKS were live at once (the record stopped). */
int pal_record_overflowed(void);

typedef struct {
  long rss_kib, anon_kib;
} Rss;

/* VmRSS and RssAnon from /proc/self/status (-1 when missing), read without
 * allocating. Main thread only. */
Rss read_rss(void);
