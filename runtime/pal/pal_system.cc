// The hooks both PALs (pal_posix.cc, the shipped one; pal_test_double.cc,
// the tests' recording one) implement alike, on the C library: the clock,
// CPU features, the environment and shared libraries. (Each PAL reads
// files itself: its own malloc's address is a PC-relative constant there,
// here a GOT entry.)

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

extern "C" {

uint64_t pare_pal_ticks(void) { return pare::pal::monotonic_nanoseconds(); }

uint64_t pare_pal_ticks_per_second(void) { return 1000000000u; }

uint32_t pare_pal_cpu_features(void) { return pare::pal::cpu_features(); }

const char* pare_pal_getenv(const char* name) { return getenv(name); }

void* pare_pal_library_open(const char* name) { return dlopen(name, pare::pal::kDlopenNowLocal); }

void* pare_pal_library_symbol(void* library, const char* name) { return dlsym(library, name); }

void pare_pal_library_close(void* library) { dlclose(library); }

}  // extern "C"
