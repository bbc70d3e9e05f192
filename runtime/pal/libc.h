#pragma once
// The C library functions the PALs call, declared here instead of taken
// from libc headers.
//
// Pare cross-compiles every target with one clang and no SDK: there are no
// Android NDK or iOS SDK headers, only clang's freestanding headers and
// link stubs (docs/portable_cpp.md). So the PAL declares the few POSIX and
// libm functions it needs itself. Every declaration below is
// ABI-identical on Linux (glibc), Android (bionic) and iOS (libSystem) for
// 64-bit targets; platform differences (clock ids, log priorities) are
// spelled out where they are used. Only PAL sources include this file.

#include <stddef.h>
#include <stdint.h>

#include "runtime/pal/pal.h"

extern "C" {

// Memory.
int posix_memalign(void** out, size_t alignment, size_t size);
void free(void* ptr);
__attribute__((noreturn)) void abort(void);

// Files and output (POSIX). O_RDONLY is 0 and SEEK_SET/SEEK_END are 0/2 on
// every supported platform; off_t is 64-bit on all 64-bit targets.
int open(const char* path, int flags, ...);
long read(int fd, void* buffer, size_t count);
long write(int fd, const void* buffer, size_t count);
long lseek(int fd, long offset, int whence);
int close(int fd);

// The environment.
char* getenv(const char* name);

// Shared libraries (libc on glibc >= 2.34 and iOS, libdl on Android).
void* dlopen(const char* path, int flags);
void* dlsym(void* library, const char* name);
int dlclose(void* library);

// Monotonic time. struct timespec is {time_t, long}, two 64-bit fields on
// every 64-bit target.
struct pare_timespec {
  int64_t tv_sec;
  long tv_nsec;
};
int clock_gettime(int clock_id, pare_timespec* ts);

// POSIX threads (pal_threads.cc), declared over opaque storage the PAL
// sizes itself: pthread_t is 8 bytes (an integer or a pointer, passed the
// same way) and pthread_mutex_t / pthread_cond_t are at most 64 bytes on
// every 64-bit target (glibc 40/48, bionic 40/48, Darwin 64/48). Attributes
// are always null.
int pthread_create(uint64_t* thread, const void* attr, void* (*start)(void*), void* arg);
int pthread_join(uint64_t thread, void** result);
int pthread_mutex_init(void* mutex, const void* attr);
int pthread_mutex_destroy(void* mutex);
int pthread_mutex_lock(void* mutex);
int pthread_mutex_unlock(void* mutex);
int pthread_cond_init(void* cond, const void* attr);
int pthread_cond_destroy(void* cond);
int pthread_cond_wait(void* cond, void* mutex);
int pthread_cond_broadcast(void* cond);

// CPU features (arm64 only): Linux's and Android's auxiliary vector
// (bionic has getauxval since API 18), Darwin's sysctl by name.
#if defined(__aarch64__) && defined(__APPLE__)
int sysctlbyname(const char* name, void* old_value, size_t* old_size, void* new_value, size_t new_size);
#elif defined(__aarch64__)
unsigned long getauxval(unsigned long type);
#endif

#ifdef __ANDROID__
int __android_log_write(int priority, const char* tag, const char* text);
#endif

// libm: the functions of runtime/pal/libm.def.
#define PARE_LIBM_UNARY(name) \
  float name##f(float);       \
  double name(double);
#define PARE_LIBM_BINARY(name) \
  float name##f(float, float); \
  double name(double, double);
#include "runtime/pal/libm.def"

}  // extern "C"

namespace pare {
namespace pal {

constexpr int kOpenReadOnly = 0;
constexpr int kSeekSet = 0;
constexpr int kSeekEnd = 2;
// CLOCK_MONOTONIC: 1 on Linux and Android, 6 on Apple platforms.
#if defined(__APPLE__)
constexpr int kClockMonotonic = 6;
#else
constexpr int kClockMonotonic = 1;
#endif

// dlopen's RTLD_NOW | RTLD_LOCAL: RTLD_LOCAL is 0 on Linux and Android, 4
// on Apple platforms; RTLD_NOW is 2 on all.
#if defined(__APPLE__)
constexpr int kDlopenNowLocal = 2 | 4;
#else
constexpr int kDlopenNowLocal = 2;
#endif

inline uint64_t monotonic_nanoseconds() {
  pare_timespec ts{0, 0};
  clock_gettime(kClockMonotonic, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline void write_stderr(const char* text) {
  size_t n = 0;
  while (text[n] != '\0') ++n;
  (void)write(2, text, n);
}

// PARE_PAL_CPU_* bits (pal.h) for this CPU, as the OS reports them.
inline uint32_t cpu_features() {
#if defined(__aarch64__) && defined(__APPLE__)
  // FEAT_DotProd since iOS 15 / macOS 12; older systems name it
  // hw.optional.armv8_2_dotprod (absent on both before the A11's successors).
  int32_t value = 0;
  size_t size = sizeof value;
  if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, nullptr, 0) != 0) {
    value = 0;
    size = sizeof value;
    if (sysctlbyname("hw.optional.armv8_2_dotprod", &value, &size, nullptr, 0) != 0) value = 0;
  }
  return value != 0 ? PARE_PAL_CPU_ARM64_DOTPROD : 0u;
#elif defined(__aarch64__)
  constexpr unsigned long kAtHwcap = 16;              // AT_HWCAP
  constexpr unsigned long kHwcapAsimdDp = 1ul << 20;  // HWCAP_ASIMDDP
  return (getauxval(kAtHwcap) & kHwcapAsimdDp) != 0 ? PARE_PAL_CPU_ARM64_DOTPROD : 0u;
#else
  return 0u;
#endif
}

// Reads a whole file into memory from `allocate` (the PAL's own malloc, so
// a recording PAL sees it). Returns 0, -1 on I/O errors, -2 out of memory.
template <typename Allocate, typename Free>
int read_whole_file(const char* path, size_t alignment, void** out_data, size_t* out_size, Allocate allocate,
                    Free release) {
  *out_data = nullptr;
  *out_size = 0;
  const int fd = open(path, kOpenReadOnly);
  if (fd < 0) return -1;
  const long size = lseek(fd, 0, kSeekEnd);
  if (size < 0 || lseek(fd, 0, kSeekSet) != 0) {
    close(fd);
    return -1;
  }
  uint8_t* data = static_cast<uint8_t*>(allocate(static_cast<size_t>(size), alignment));
  if (data == nullptr) {
    close(fd);
    return -2;
  }
  size_t done = 0;
  while (done < static_cast<size_t>(size)) {
    const long n = read(fd, data + done, static_cast<size_t>(size) - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done != static_cast<size_t>(size)) {
    release(data);
    return -1;
  }
  *out_data = data;
  *out_size = done;
  return 0;
}

}  // namespace pal
}  // namespace pare
