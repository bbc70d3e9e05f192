#pragma once
/* Platform abstraction layer (PAL): every call the runtime makes into the
 * platform goes through these extern "C" hooks, so the core stays
 * freestanding and one clang can cross-compile every target with no SDK.
 *
 * One implementation is linked per platform (chosen by a Bazel select() on
 * platform constraints): pal_posix.cc serves Linux, Android and iOS, which
 * all have libc and libm; pal_test_double.cc records calls for tests. An
 * embedded port implements this header and nothing else.
 *
 * The hooks are plain C so ports can be written in C. They are hidden
 * symbols of the runtime library (never exported), so two runtimes loaded
 * into one process keep their own PALs.
 *
 * Not wrapped: memcpy, memmove and memset. Compilers emit calls to them for
 * aggregate copies even under -ffreestanding, so every target must provide
 * them anyway; wrapping them would add a call without adding a port point.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Memory. `alignment` is a power of two <= 4096. Returns NULL on failure;
 * the runtime turns that into Error::OutOfMemory, never an abort. */
void* pare_pal_malloc(size_t size, size_t alignment);
void pare_pal_free(void* ptr);

/* Diagnostics. */
enum pare_pal_log_level {
  PARE_PAL_LOG_DEBUG = 0,
  PARE_PAL_LOG_INFO = 1,
  PARE_PAL_LOG_WARNING = 2,
  PARE_PAL_LOG_ERROR = 3
};
void pare_pal_log_message(int level, const char* message);
/* The only place the runtime may abort: unrecoverable internal invariant
 * violations. User input never reaches it. */
__attribute__((noreturn)) void pare_pal_abort(const char* message);

/* Monotonic tick counter for per-op profiling (build feature op_profiling). */
uint64_t pare_pal_ticks(void);
uint64_t pare_pal_ticks_per_second(void);

/* CPU features the OS reports, for the kernels that choose an instruction
 * set at run time (runtime/core/cpu.h): a mask of PARE_PAL_CPU_* bits.
 * arm64: the ARMv8.2 dot product (SDOT/UDOT) from getauxval(AT_HWCAP) on
 * Linux and Android, sysctlbyname("hw.optional.arm.FEAT_DotProd") on iOS
 * and macOS. x86_64 asks CPUID itself (an instruction, not an OS call), so
 * its bits are not here. 0 when the platform cannot tell. */
#define PARE_PAL_CPU_ARM64_DOTPROD 1u
uint32_t pare_pal_cpu_features(void);

/* The environment variable `name`, or NULL when it is unset (or the
 * platform has no environment). Only backends' is_available ask it
 * (docs/delegates.md); a runtime without one references no getenv. */
const char* pare_pal_getenv(const char* name);

/* Shared libraries loaded at run time: only backends whose driver is a
 * system library call these (the Vulkan backend's libvulkan), so an app
 * links no driver and runs on devices without one; a runtime without such
 * a backend references no dlopen. pare_pal_library_open returns NULL when
 * `name` cannot be loaded (and on platforms without dynamic loading);
 * pare_pal_library_symbol returns NULL for a missing symbol. */
void* pare_pal_library_open(const char* name);
void* pare_pal_library_symbol(void* library, const char* name);
void pare_pal_library_close(void* library);

/* Files: reads a whole file into memory obtained from
 * pare_pal_malloc(size, alignment). Returns 0 on success, a negative value
 * when the file cannot be opened or read, and -2 when memory runs out. */
int pare_pal_read_file(const char* path, size_t alignment, void** out_data, size_t* out_size);

/* Threads (build feature threads; pal_threads.cc implements them on POSIX
 * threads for every PAL). A runtime without the feature references none of
 * these, so its link imports no thread symbol.
 *
 * pare_pal_thread_start runs entry(arg) on a thread of its own (NULL when
 * it cannot be created); pare_pal_thread_join waits for it to return and
 * frees it.
 * A monitor is the wait/wake primitive: pare_pal_monitor_wait blocks while
 * the 32-bit word (read atomically, with acquire ordering) equals
 * `expected`; pare_pal_monitor_wake wakes every waiter, and must be called
 * after the word changed. Either may return early: callers re-check. */
typedef struct pare_pal_thread pare_pal_thread;
typedef struct pare_pal_monitor pare_pal_monitor;
pare_pal_thread* pare_pal_thread_start(void (*entry)(void* arg), void* arg);
void pare_pal_thread_join(pare_pal_thread* thread);
pare_pal_monitor* pare_pal_monitor_create(void);
void pare_pal_monitor_destroy(pare_pal_monitor* monitor);
void pare_pal_monitor_wait(pare_pal_monitor* monitor, const uint32_t* word, uint32_t expected);
void pare_pal_monitor_wake(pare_pal_monitor* monitor);

/* libm: only the functions kernels use, listed once in runtime/pal/libm.def
 * (pare_pal_expf and pare_pal_exp, ...; each PAL implements every pair). */
#define PARE_LIBM_UNARY(name)        \
  float pare_pal_##name##f(float x); \
  double pare_pal_##name(double x);
#define PARE_LIBM_BINARY(name)                \
  float pare_pal_##name##f(float x, float y); \
  double pare_pal_##name(double x, double y);
#include "runtime/pal/libm.def"

#ifdef __cplusplus
} /* extern "C" */
#endif
