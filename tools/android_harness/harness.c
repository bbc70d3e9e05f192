// Emulator harness: an aarch64 glibc program that loads an Android .so and
// calls into it, run under qemu-aarch64 (see README.md: an emulated stand-in
// for a device, not a device).
//
//   harness call-i32 LIB SYMBOL ARG   calls int32_t SYMBOL(int32_t ARG) and
//                                     prints the result on stdout.
//
//   harness load LIB   loads a Pare runtime, resolves the C API entry points
//                      `run` uses and calls pare_status_name: the check that
//                      a runtime's relocations load (tools.verify --load).
//
//   harness run LIB PROGRAM METHOD OUTDIR [DTYPE:SIZES:FILE ...] [-- DTYPE:SIZES:FILE ...]...
//       drives a Pare runtime's C API (runtime/c_api/pare.h): loads the
//       program file, creates METHOD, sets one input per DTYPE:SIZES:FILE
//       (ScalarType code, sizes joined by 'x' (empty for a 0-dim tensor),
//       a file of the contiguous little-endian elements), executes, and
//       describes every output on stdout, one line each. `--` between
//       input lists runs one execute per list, in order, on the one method
//       instance (a program with state: a prefill, then decode steps); the
//       outputs described are the last call's:
//         output I tensor DTYPE NDIM SIZE...   (data in OUTDIR/outputI.bin,
//                                               contiguous)
//         output I int V | output I double V | output I bool V
//         output I other KIND                  (any other value kind code)
//
// Exit codes: 0 ok, 2 usage, 3 the library does not load, 4 the symbol is
// missing, 5 a Pare call failed (status name and message on stderr), 6 an
// input or output file could not be read or written. Library errors print
// dlerror()'s message.
//
// Android's own relocation forms: glibc's loader ignores the dynamic tags of
// Bionic's packed relocations (DT_ANDROID_RELA, API 23+) and of RELR under
// Bionic's pre-standard tags (DT_ANDROID_RELR, API 28-29), which the Android
// toolchain emits by API level (toolchains/toolchains.bzl). After dlopen the
// harness applies them itself, as Bionic's linker would, before any call into
// the library. That is safe only because a Pare runtime has no initializers
// (run.py refuses a library with DT_INIT / DT_INIT_ARRAY and such relocations).
// Standard DT_RELR (API 30+) glibc applies itself.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/c_api/pare.h"

// Bionic's tags (bionic/libc/include/elf.h).
#define HARNESS_DT_ANDROID_RELA 0x60000011
#define HARNESS_DT_ANDROID_RELASZ 0x60000012
#define HARNESS_DT_ANDROID_RELR 0x6fffe000
#define HARNESS_DT_ANDROID_RELRSZ 0x6fffe001

static void relocation_error(const char* path, const char* what) {
  fprintf(stderr, "harness: cannot load %s: its Android relocations %s\n", path, what);
  exit(3);
}

typedef struct loaded {
  const char* path;
  uintptr_t base;
  const ElfW(Sym) * symbols;
  const char* strings;
} loaded;

// S + A for relocation `info`'s symbol: an import resolves through the
// loader (the library's own lookup scope), a definition is base-relative.
static uintptr_t symbol_value(const loaded* l, void* lib, uint64_t info) {
  const ElfW(Sym)* sym = &l->symbols[ELF64_R_SYM(info)];
  if (sym->st_shndx != SHN_UNDEF) return l->base + sym->st_value;
  void* address = dlsym(lib, l->strings + sym->st_name);
  if (!address) relocation_error(l->path, "name a symbol the loader cannot resolve");
  return (uintptr_t)address;
}

static void apply_rela(const loaded* l, void* lib, uint64_t offset, uint64_t info, int64_t addend) {
  uint64_t* where = (uint64_t*)(l->base + offset);
  switch (ELF64_R_TYPE(info)) {
    case R_AARCH64_NONE: return;
    case R_AARCH64_RELATIVE: *where = l->base + (uint64_t)addend; return;
    case R_AARCH64_ABS64:
    case R_AARCH64_GLOB_DAT:
    case R_AARCH64_JUMP_SLOT: *where = symbol_value(l, lib, info) + (uint64_t)addend; return;
    default: relocation_error(l->path, "hold a relocation type the harness does not apply");
  }
}

static int64_t read_sleb128(const uint8_t** p, const uint8_t* end, const char* path) {
  uint64_t value = 0;
  unsigned shift = 0;
  uint8_t byte = 0;
  do {
    if (*p == end || shift > 63) relocation_error(path, "are truncated or malformed (APS2)");
    byte = *(*p)++;
    value |= (uint64_t)(byte & 0x7f) << shift;
    shift += 7;
  } while (byte & 0x80);
  if (shift < 64 && (byte & 0x40)) value |= ~(uint64_t)0 << shift;
  return (int64_t)value;
}

// Bionic's packed RELA ("APS2", bionic/linker/linker_reloc_iterators.h):
// a count, a first offset, then groups whose members may share their
// offset delta, info or addend.
static void apply_android_rela(const loaded* l, void* lib, const uint8_t* p, size_t size) {
  enum { BY_INFO = 1, BY_OFFSET_DELTA = 2, BY_ADDEND = 4, HAS_ADDEND = 8 };
  const uint8_t* end = p + size;
  if (size < 4 || memcmp(p, "APS2", 4) != 0) relocation_error(l->path, "lack the APS2 magic");
  p += 4;
  int64_t count = read_sleb128(&p, end, l->path);
  uint64_t offset = (uint64_t)read_sleb128(&p, end, l->path);
  uint64_t info = 0;
  int64_t addend = 0;
  while (count > 0) {
    int64_t group = read_sleb128(&p, end, l->path);
    int64_t flags = read_sleb128(&p, end, l->path);
    if (group <= 0 || group > count) relocation_error(l->path, "have a malformed group (APS2)");
    uint64_t delta = (flags & BY_OFFSET_DELTA) ? (uint64_t)read_sleb128(&p, end, l->path) : 0;
    if (flags & BY_INFO) info = (uint64_t)read_sleb128(&p, end, l->path);
    if ((flags & HAS_ADDEND) && (flags & BY_ADDEND)) {
      addend += read_sleb128(&p, end, l->path);
    } else if (!(flags & HAS_ADDEND)) {
      addend = 0;
    }
    for (int64_t i = 0; i < group; ++i) {
      offset += (flags & BY_OFFSET_DELTA) ? delta : (uint64_t)read_sleb128(&p, end, l->path);
      if (!(flags & BY_INFO)) info = (uint64_t)read_sleb128(&p, end, l->path);
      if ((flags & HAS_ADDEND) && !(flags & BY_ADDEND)) addend += read_sleb128(&p, end, l->path);
      apply_rela(l, lib, offset, info, addend);
    }
    count -= group;
  }
}

// RELR: an address entry relocates one word and sets the cursor after it; a
// bitmap entry (low bit set) relocates the following 63 words its bits name.
static void apply_relr(const loaded* l, const uint64_t* entry, size_t size) {
  uint64_t* where = NULL;
  for (size_t i = 0; i < size / sizeof(uint64_t); ++i) {
    uint64_t e = entry[i];
    if ((e & 1) == 0) {
      where = (uint64_t*)(l->base + e);
      *where++ += l->base;
      continue;
    }
    if (!where) relocation_error(l->path, "start with a RELR bitmap");
    for (unsigned bit = 0; (e >>= 1) != 0; ++bit) {
      if (e & 1) where[bit] += l->base;
    }
    where += 63;
  }
}

typedef struct relro {
  uintptr_t base;
  uintptr_t start;
  size_t size;
} relro;

static int find_relro(struct dl_phdr_info* info, size_t size, void* data) {
  relro* r = data;
  if (info->dlpi_addr != r->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      r->start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      r->size = info->dlpi_phdr[i].p_memsz;
    }
  }
  return 1;
}

// Makes the RELRO range writable (glibc protected it after its own
// relocations) or read-only again.
static void protect_relro(const relro* r, int prot, const char* path) {
  if (!r->size) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t start = r->start & ~(page - 1);
  uintptr_t end = (r->start + r->size + page - 1) & ~(page - 1);
  if (mprotect((void*)start, end - start, prot) != 0) relocation_error(path, "cannot be applied (mprotect failed)");
}

static void apply_android_relocations(void* lib, const char* path) {
  struct link_map* map = NULL;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map) relocation_error(path, "cannot be found (dlinfo failed)");
  loaded l = {path, map->l_addr, NULL, NULL};
  const uint8_t* rela = NULL;
  const uint64_t* relr = NULL;
  size_t rela_size = 0, relr_size = 0;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    // glibc has already made DT_SYMTAB and DT_STRTAB absolute.
    switch (d->d_tag) {
      case DT_SYMTAB: l.symbols = (const ElfW(Sym)*)d->d_un.d_ptr; break;
      case DT_STRTAB: l.strings = (const char*)d->d_un.d_ptr; break;
      case HARNESS_DT_ANDROID_RELA: rela = (const uint8_t*)(l.base + d->d_un.d_ptr); break;
      case HARNESS_DT_ANDROID_RELASZ: rela_size = d->d_un.d_val; break;
      case HARNESS_DT_ANDROID_RELR: relr = (const uint64_t*)(l.base + d->d_un.d_ptr); break;
      case HARNESS_DT_ANDROID_RELRSZ: relr_size = d->d_un.d_val; break;
    }
  }
  if (!rela && !relr) return;
  relro r = {l.base, 0, 0};
  dl_iterate_phdr(find_relro, &r);
  protect_relro(&r, PROT_READ | PROT_WRITE, path);
  if (relr) apply_relr(&l, relr, relr_size);
  if (rela) apply_android_rela(&l, lib, rela, rela_size);
  protect_relro(&r, PROT_READ, path);
}

static void* open_library(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "harness: cannot load %s: %s\n", path, dlerror());
    exit(3);
  }
  apply_android_relocations(lib, path);
  return lib;
}

static void* find_symbol(void* lib, const char* name) {
  void* sym = dlsym(lib, name);
  if (!sym) {
    fprintf(stderr, "harness: symbol %s not found: %s\n", name, dlerror());
    exit(4);
  }
  return sym;
}

// The C API entry points `run` uses, resolved with dlsym (the library is
// loaded at run time, so nothing links against it). Each pointer has its
// function's type from pare.h, so a signature that changes there fails this
// build instead of miscalling.
#define HARNESS_API(X)      \
  X(status_name)            \
  X(program_load_file)      \
  X(program_error_message)  \
  X(method_create)          \
  X(method_error_message)   \
  X(method_input_count)     \
  X(method_output_count)    \
  X(method_set_input)       \
  X(method_execute)         \
  X(method_output_kind)     \
  X(method_output_tensor)   \
  X(method_output_int)      \
  X(method_output_double)   \
  X(method_output_bool)     \
  X(method_set_num_threads) \
  X(set_max_isa)            \
  X(kernel_isa)

typedef struct api {
#define HARNESS_API_FIELD(name) __typeof__(pare_##name)* name;
  HARNESS_API(HARNESS_API_FIELD)
} api;

static void resolve_api(void* lib, api* a) {
#define HARNESS_API_RESOLVE(name) a->name = (__typeof__(pare_##name)*)find_symbol(lib, "pare_" #name);
  HARNESS_API(HARNESS_API_RESOLVE)
}

static void pare_failed(const api* a, const char* what, pare_status status, const char* message) {
  fprintf(stderr, "harness: %s failed: %s: %s\n", what, a->status_name(status), message ? message : "");
  exit(5);
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "harness: cannot open %s: %s\n", path, strerror(errno));
    exit(6);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  // 64-byte aligned, never empty: the runtime may use vector loads.
  void* data = aligned_alloc(64, ((size_t)n + 64) / 64 * 64);
  if (!data || (n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "harness: cannot read %s\n", path);
    exit(6);
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

// Parses DTYPE:SIZES:FILE and sets it as input `index`.
static void set_input(const api* a, pare_method* method, size_t index, const char* spec) {
  char* end = NULL;
  long dtype = strtol(spec, &end, 10);
  if (end == spec || *end != ':' || pare_dtype_element_size((int32_t)dtype) == 0) {
    fprintf(stderr, "harness: input '%s': expected DTYPE:SIZES:FILE with a ScalarType code\n", spec);
    exit(2);
  }
  const char* p = end + 1;
  int64_t sizes[PARE_MAX_DIM];
  size_t ndim = 0;
  size_t numel = 1;
  while (*p != ':') {
    if (ndim == PARE_MAX_DIM) {
      fprintf(stderr, "harness: input '%s': more than %d dims\n", spec, PARE_MAX_DIM);
      exit(2);
    }
    long long s = strtoll(p, &end, 10);
    if (end == p || s < 0 || (*end != 'x' && *end != ':')) {
      fprintf(stderr, "harness: input '%s': sizes are non-negative integers joined by 'x'\n", spec);
      exit(2);
    }
    sizes[ndim++] = (int64_t)s;
    numel *= (size_t)s;
    p = (*end == 'x') ? end + 1 : end;
  }
  size_t nbytes = 0;
  void* data = read_file(p + 1, &nbytes);
  if (nbytes != numel * pare_dtype_element_size((int32_t)dtype)) {
    fprintf(stderr, "harness: input '%s': file has %zu bytes, the sizes need %zu\n", spec, nbytes,
            numel * pare_dtype_element_size((int32_t)dtype));
    exit(6);
  }
  pare_status status = a->method_set_input(method, index, (int32_t)dtype, sizes, ndim, NULL, data, nbytes);
  if (status != PARE_OK) pare_failed(a, "pare_method_set_input", status, a->method_error_message(method));
}

// Writes a (possibly strided) output tensor contiguously.
static void write_tensor(const pare_tensor_info* t, const char* path) {
  FILE* f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "harness: cannot write %s: %s\n", path, strerror(errno));
    exit(6);
  }
  const size_t item = pare_dtype_element_size(t->dtype);
  size_t numel = 1;
  for (int32_t d = 0; d < t->ndim; ++d) numel *= (size_t)t->sizes[d];
  int64_t index[PARE_MAX_DIM] = {0};
  for (size_t n = 0; n < numel; ++n) {
    int64_t offset = 0;
    for (int32_t d = 0; d < t->ndim; ++d) offset += index[d] * t->strides[d];
    if (fwrite((const char*)t->data + offset * (int64_t)item, 1, item, f) != item) {
      fprintf(stderr, "harness: cannot write %s\n", path);
      exit(6);
    }
    for (int32_t d = t->ndim - 1; d >= 0; --d) {  // odometer over the sizes
      if (++index[d] < t->sizes[d]) break;
      index[d] = 0;
    }
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "harness: cannot write %s\n", path);
    exit(6);
  }
}

static int run(int argc, char** argv) {
  // argv: run LIB PROGRAM METHOD OUTDIR INPUT...
  api a;
  resolve_api(open_library(argv[2]), &a);
  // $PARE_MAX_ISA caps the kernels (pare_set_max_isa), as pare.runtime does:
  // the plain NEON int8 kernels on a CPU with the dot product.
  const char* cap = getenv("PARE_MAX_ISA");
  if (cap && *cap) {
    pare_status capped = a.set_max_isa(cap);
    if (capped != PARE_OK) pare_failed(&a, "pare_set_max_isa", capped, cap);
  }
  pare_program* program = NULL;
  pare_status status = a.program_load_file(argv[3], &program);
  if (status != PARE_OK) pare_failed(&a, "pare_program_load_file", status, a.program_error_message(program));
  pare_method* method = NULL;
  status = a.method_create(program, argv[4], &method);
  if (status != PARE_OK) {
    pare_failed(&a, "pare_method_create", status,
                method ? a.method_error_message(method) : a.program_error_message(program));
  }
  // $PARE_NUM_THREADS runs the method on that many threads
  // (pare_method_set_num_threads; build feature threads).
  const char* threads = getenv("PARE_NUM_THREADS");
  if (threads && *threads) {
    status = a.method_set_num_threads(method, (uint32_t)strtoul(threads, NULL, 10));
    if (status != PARE_OK) pare_failed(&a, "pare_method_set_num_threads", status, a.method_error_message(method));
  }
  for (int first = 6; first <= argc;) {
    int last = first;
    while (last < argc && strcmp(argv[last], "--") != 0) ++last;
    const size_t num_inputs = (size_t)(last - first);
    if (num_inputs != a.method_input_count(method)) {
      fprintf(stderr, "harness: method %s takes %zu inputs, got %zu\n", argv[4], a.method_input_count(method),
              num_inputs);
      return 2;
    }
    for (size_t i = 0; i < num_inputs; ++i) set_input(&a, method, i, argv[first + (int)i]);
    status = a.method_execute(method);
    if (status != PARE_OK) pare_failed(&a, "pare_method_execute", status, a.method_error_message(method));
    first = last + 1;
  }
  printf("kernel_isa %s\n", a.kernel_isa());
  for (size_t i = 0; i < a.method_output_count(method); ++i) {
    int32_t kind = 0;
    status = a.method_output_kind(method, i, &kind);
    if (status != PARE_OK) pare_failed(&a, "pare_method_output_kind", status, a.method_error_message(method));
    if (kind == PARE_VALUE_TENSOR) {
      pare_tensor_info t;
      status = a.method_output_tensor(method, i, &t);
      if (status != PARE_OK) pare_failed(&a, "pare_method_output_tensor", status, a.method_error_message(method));
      char path[4096];
      snprintf(path, sizeof path, "%s/output%zu.bin", argv[5], i);
      write_tensor(&t, path);
      printf("output %zu tensor %d %d", i, (int)t.dtype, (int)t.ndim);
      for (int32_t d = 0; d < t.ndim; ++d) printf(" %lld", (long long)t.sizes[d]);
      printf("\n");
    } else if (kind == PARE_VALUE_INT) {
      int64_t v = 0;
      status = a.method_output_int(method, i, &v);
      if (status != PARE_OK) pare_failed(&a, "pare_method_output_int", status, a.method_error_message(method));
      printf("output %zu int %lld\n", i, (long long)v);
    } else if (kind == PARE_VALUE_DOUBLE) {
      double v = 0;
      status = a.method_output_double(method, i, &v);
      if (status != PARE_OK) pare_failed(&a, "pare_method_output_double", status, a.method_error_message(method));
      printf("output %zu double %.17g\n", i, v);
    } else if (kind == PARE_VALUE_BOOL) {
      int32_t v = 0;
      status = a.method_output_bool(method, i, &v);
      if (status != PARE_OK) pare_failed(&a, "pare_method_output_bool", status, a.method_error_message(method));
      printf("output %zu bool %d\n", i, (int)v);
    } else {
      printf("output %zu other %d\n", i, (int)kind);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "call-i32") == 0) {
    void* lib = open_library(argv[2]);
    int32_t (*fn)(int32_t) = (int32_t(*)(int32_t))find_symbol(lib, argv[3]);
    printf("%d\n", (int)fn((int32_t)strtol(argv[4], NULL, 10)));
    return 0;
  }
  if (argc >= 6 && strcmp(argv[1], "run") == 0) return run(argc, argv);
  if (argc == 3 && strcmp(argv[1], "load") == 0) {
    api a;
    resolve_api(open_library(argv[2]), &a);
    printf("loaded: %s\n", a.status_name(PARE_OK));
    return 0;
  }
  fprintf(stderr,
          "usage: harness call-i32 LIB SYMBOL ARG\n"
          "       harness load LIB\n"
          "       harness run LIB PROGRAM METHOD OUTDIR [DTYPE:SIZES:FILE ...]\n");
  return 2;
}
