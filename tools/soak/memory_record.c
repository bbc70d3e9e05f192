/* The PAL record and the resident-set sampler (memory_record.h). */

#define _POSIX_C_SOURCE 200809L /* posix_memalign */

#include "tools/soak/memory_record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- The PAL record ---------------------------------------------------- */

extern void* __libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void* ptr);

/* Live PAL blocks: open addressing with linear probing and backward-shift
 * deletion (no tombstones, so churn cannot fill the table). A few thousand
 * blocks live at most. */
typedef struct {
  void* ptr;
  size_t size;
} Block;
static Block g_blocks[PAL_TABLE_SIZE];
static pthread_mutex_t g_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static PalRecord g_pal;
static int g_table_overflow;
static _Thread_local uint64_t t_pal_allocs;

static size_t slot_of(const void* ptr) {
  return (size_t)(((uint64_t)(uintptr_t)ptr >> 4) * 0x9E3779B97F4A7C15ull >> (64 - PAL_TABLE_BITS));
}

static void record_alloc(void* ptr, size_t size) {
  ++t_pal_allocs;
  pthread_mutex_lock(&g_blocks_lock);
  ++g_pal.allocs;
  if (g_pal.live_blocks >= PAL_MAX_LIVE_BLOCKS) {
    g_table_overflow = 1;
  } else {
    size_t i = slot_of(ptr);
    while (g_blocks[i].ptr != NULL) i = (i + 1) & (PAL_TABLE_SIZE - 1);
    g_blocks[i].ptr = ptr;
    g_blocks[i].size = size;
    ++g_pal.live_blocks;
    g_pal.live_bytes += size;
  }
  pthread_mutex_unlock(&g_blocks_lock);
}

static void record_free(void* ptr) {
  pthread_mutex_lock(&g_blocks_lock);
  size_t i = slot_of(ptr);
  while (g_blocks[i].ptr != NULL && g_blocks[i].ptr != ptr) i = (i + 1) & (PAL_TABLE_SIZE - 1);
  if (g_blocks[i].ptr == ptr) {
    ++g_pal.frees;
    --g_pal.live_blocks;
    g_pal.live_bytes -= g_blocks[i].size;
    /* Backward shift: move later entries of the probe run into the hole
     * unless their home slot lies cyclically in (hole, j]. */
    size_t hole = i, j = i;
    for (;;) {
      g_blocks[hole].ptr = NULL;
      for (;;) {
        j = (j + 1) & (PAL_TABLE_SIZE - 1);
        if (g_blocks[j].ptr == NULL) goto done;
        const size_t home = slot_of(g_blocks[j].ptr);
        const int stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) break;
      }
      g_blocks[hole] = g_blocks[j];
      hole = j;
    }
  }
done:
  pthread_mutex_unlock(&g_blocks_lock);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* ptr = __libc_memalign(alignment, size);
  if (ptr == NULL) return ENOMEM;
  record_alloc(ptr, size);
  *out = ptr;
  return 0;
}

void free(void* ptr) {
  if (ptr == NULL) return;
  record_free(ptr);
  __libc_free(ptr);
}

PalRecord pal_record(void) {
  pthread_mutex_lock(&g_blocks_lock);
  PalRecord r = g_pal;
  pthread_mutex_unlock(&g_blocks_lock);
  return r;
}

uint64_t pal_thread_allocs(void) { return t_pal_allocs; }

int pal_record_overflowed(void) { return g_table_overflow; }

/* ---- Resident set ------------------------------------------------------ */

static long status_field(const char* text, const char* name) {
  const char* at = strstr(text, name);
  return at == NULL ? -1 : strtol(at + strlen(name), NULL, 10);
}

/* /proc/self/status with read(2) into a static buffer: sampling allocates
 * nothing (stdio would). Main thread only. */
Rss read_rss(void) {
  static char text[16384];
  Rss r = {-1, -1};
  const int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return r;
  size_t n = 0;
  ssize_t got;
  while (n + 1 < sizeof text && (got = read(fd, text + n, sizeof text - 1 - n)) > 0) n += (size_t)got;
  close(fd);
  text[n] = 0;
  r.rss_kib = status_field(text, "VmRSS:");
  r.anon_kib = status_field(text, "RssAnon:");
  return r;
}
