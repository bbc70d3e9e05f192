"""Symbol lists of the system libraries Pare links against without an SDK.

Android: the runtime's .so must carry DT_NEEDED entries for Bionic's libc.so,
libm.so and liblog.so, resolved at link time against stub libraries, as the
NDK's own stubs are (//toolchains/android:system_stubs turns these lists into
ELF stubs with llvm-ifs). iOS: libSystem.B.dylib re-exports libc and libm;
//toolchains/ios:libsystem writes a TAPI .tbd stub from the same lists.

A symbol missing here fails the link with `-z defs` / ld64's undefined-symbol
error naming it: add it to the right list (only symbols the real library
exports on the minimum API level / OS version).
"""

LIBC_FUNCTIONS = [
    "abort",
    "aligned_alloc",
    "calloc",
    "clock_gettime",
    "close",
    "fclose",
    "fopen",
    "fread",
    "free",
    "fseek",
    "fstat",
    "ftell",
    "fwrite",
    "getenv",
    "lseek",
    "malloc",
    "memchr",
    "memcmp",
    "memcpy",
    "memmove",
    "memset",
    "mmap",
    "munmap",
    "open",
    "posix_memalign",
    "pthread_cond_broadcast",
    "pthread_cond_destroy",
    "pthread_cond_init",
    "pthread_cond_wait",
    "pthread_create",
    "pthread_join",
    "pthread_mutex_destroy",
    "pthread_mutex_init",
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "read",
    "realloc",
    "snprintf",
    "strcmp",
    "strlen",
    "strncmp",
    "vsnprintf",
    "write",
    "__errno",
    "__stack_chk_fail",
]

LIBC_OBJECTS = [
    "__stack_chk_guard",
    "__sF",
]

_LIBM_F32 = [
    "acosf",
    "acoshf",
    "asinf",
    "asinhf",
    "atan2f",
    "atanf",
    "atanhf",
    "ceilf",
    "cosf",
    "coshf",
    "erff",
    "exp2f",
    "expf",
    "expm1f",
    "fabsf",
    "floorf",
    "fmaxf",
    "fminf",
    "fmodf",
    "log10f",
    "log1pf",
    "log2f",
    "logf",
    "nearbyintf",
    "powf",
    "remainderf",
    "rintf",
    "roundf",
    "sinf",
    "sinhf",
    "sqrtf",
    "tanf",
    "tanhf",
    "truncf",
]

# Every float function also in its double form (drop the trailing "f").
LIBM_FUNCTIONS = _LIBM_F32 + [f[:-1] for f in _LIBM_F32]

# Darwin-only libSystem entry points: those clang emits calls to on its own
# (it lowers zeroing memset to bzero on Apple targets), and the PAL's CPU
# feature query (runtime/pal/libc.h).
DARWIN_EXTRA_FUNCTIONS = [
    "__bzero",
    "bzero",
    "dlclose",
    "dlopen",
    "dlsym",
    "memset_pattern16",
    "sysctlbyname",
]

# Bionic-only libc entry points the PAL calls: the CPU feature query
# (runtime/pal/libc.h; since API 18).
ANDROID_EXTRA_FUNCTIONS = [
    "getauxval",
]

# Android's libdl.so (glibc >= 2.34 and libSystem have these in libc): the
# PAL's run-time library loading (runtime/pal/pal.h), which only backends
# with a system driver call (the Vulkan backend); linked --as-needed, so a
# runtime without one records no DT_NEEDED libdl.so.
LIBDL_FUNCTIONS = [
    "dlclose",
    "dlopen",
    "dlsym",
]

LIBLOG_FUNCTIONS = [
    "__android_log_print",
    "__android_log_write",
]
