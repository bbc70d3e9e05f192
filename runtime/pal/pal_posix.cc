// PAL for platforms with a C library: Linux (glibc), Android (bionic,
// logging through liblog) and iOS (libSystem). The libm hooks are in
// pal_libm.cc, the hooks the test PAL shares in pal_system.cc. No libc
// headers: see libc.h.

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

extern "C" {

void* pare_pal_malloc(size_t size, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* ptr = nullptr;
  // posix_memalign may reject size 0; a 1-byte block keeps "non-null means
  // success" uniform for callers.
  if (posix_memalign(&ptr, alignment, size == 0 ? 1 : size) != 0) return nullptr;
  return ptr;
}

void pare_pal_free(void* ptr) { free(ptr); }

void pare_pal_log_message(int level, const char* message) {
#ifdef __ANDROID__
  // android/log.h priorities: DEBUG 3, INFO 4, WARN 5, ERROR 6.
  __android_log_write(level + 3, "pare", message);
#else
  const char* const names[] = {"[pare debug] ", "[pare info] ", "[pare warning] ", "[pare error] "};
  pare::pal::write_stderr(level >= 0 && level <= 3 ? names[level] : "[pare] ");
  pare::pal::write_stderr(message);
  pare::pal::write_stderr("\n");
#endif
}

void pare_pal_abort(const char* message) {
  pare_pal_log_message(PARE_PAL_LOG_ERROR, message);
  abort();
}

int pare_pal_read_file(const char* path, size_t alignment, void** out_data, size_t* out_size) {
  return pare::pal::read_whole_file(path, alignment, out_data, out_size, pare_pal_malloc, pare_pal_free);
}

}  // extern "C"
