// Emulator harness: an aarch64 glibc program that loads an Android .so and
// calls into it, run under qemu-aarch64 (see README.md: an emulated stand-in
// for a device, not a device).
//
//   harness call-i32 LIB SYMBOL ARG   calls int32_t SYMBOL(int32_t ARG) and
//                                     prints the result on stdout.
//
//   harness run LIB PROGRAM METHOD OUTDIR [DTYPE:SIZES:FILE ...]
//       drives a Pare runtime's C API (runtime/c_api/pare.h): loads the
//       program file, creates METHOD, sets one input per DTYPE:SIZES:FILE
//       (ScalarType code, sizes joined by 'x' (empty for a 0-dim tensor),
//       a file of the contiguous little-endian elements), executes, and
//       describes every output on stdout, one line each:
//         output I tensor DTYPE NDIM SIZE...   (data in OUTDIR/outputI.bin,
//                                               contiguous)
//         output I int V | output I double V | output I bool V
//         output I other KIND                  (any other value kind code)
//
// Exit codes: 0 ok, 2 usage, 3 the library does not load, 4 the symbol is
// missing, 5 a Pare call failed (status name and message on stderr), 6 an
// input or output file could not be read or written. Library errors print
// dlerror()'s message.
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/c_api/pare.h"

static void* open_library(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "harness: cannot load %s: %s\n", path, dlerror());
    exit(3);
  }
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
// loaded at run time, so nothing links against it).
typedef struct api {
  const char* (*status_name)(pare_status);
  pare_status (*program_load_file)(const char*, pare_program**);
  const char* (*program_error_message)(const pare_program*);
  pare_status (*method_create)(pare_program*, const char*, pare_method**);
  const char* (*method_error_message)(const pare_method*);
  size_t (*method_input_count)(const pare_method*);
  size_t (*method_output_count)(const pare_method*);
  pare_status (*method_set_input)(pare_method*, size_t, int32_t, const int64_t*, size_t, const int64_t*, const void*,
                                  size_t);
  pare_status (*method_execute)(pare_method*);
  pare_status (*method_output_kind)(const pare_method*, size_t, int32_t*);
  pare_status (*method_output_tensor)(const pare_method*, size_t, pare_tensor_info*);
  pare_status (*method_output_int)(const pare_method*, size_t, int64_t*);
  pare_status (*method_output_double)(const pare_method*, size_t, double*);
  pare_status (*method_output_bool)(const pare_method*, size_t, int32_t*);
} api;

#define RESOLVE(lib, a, field) (*(void**)(&(a)->field) = find_symbol((lib), "pare_" #field))

static void resolve_api(void* lib, api* a) {
  RESOLVE(lib, a, status_name);
  RESOLVE(lib, a, program_load_file);
  RESOLVE(lib, a, program_error_message);
  RESOLVE(lib, a, method_create);
  RESOLVE(lib, a, method_error_message);
  RESOLVE(lib, a, method_input_count);
  RESOLVE(lib, a, method_output_count);
  RESOLVE(lib, a, method_set_input);
  RESOLVE(lib, a, method_execute);
  RESOLVE(lib, a, method_output_kind);
  RESOLVE(lib, a, method_output_tensor);
  RESOLVE(lib, a, method_output_int);
  RESOLVE(lib, a, method_output_double);
  RESOLVE(lib, a, method_output_bool);
}

static void pare_failed(const api* a, const char* what, pare_status status, const char* message) {
  fprintf(stderr, "harness: %s failed: %s: %s\n", what, a->status_name(status), message ? message : "");
  exit(5);
}

static size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case PARE_DTYPE_BYTE:
    case PARE_DTYPE_CHAR:
    case PARE_DTYPE_BOOL: return 1;
    case PARE_DTYPE_SHORT:
    case PARE_DTYPE_HALF:
    case PARE_DTYPE_BFLOAT16: return 2;
    case PARE_DTYPE_INT:
    case PARE_DTYPE_FLOAT: return 4;
    case PARE_DTYPE_LONG:
    case PARE_DTYPE_DOUBLE: return 8;
    default: return 0;
  }
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
  if (end == spec || *end != ':' || dtype_size((int32_t)dtype) == 0) {
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
  if (nbytes != numel * dtype_size((int32_t)dtype)) {
    fprintf(stderr, "harness: input '%s': file has %zu bytes, the sizes need %zu\n", spec, nbytes,
            numel * dtype_size((int32_t)dtype));
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
  const size_t item = dtype_size(t->dtype);
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
  pare_program* program = NULL;
  pare_status status = a.program_load_file(argv[3], &program);
  if (status != PARE_OK) pare_failed(&a, "pare_program_load_file", status, a.program_error_message(program));
  pare_method* method = NULL;
  status = a.method_create(program, argv[4], &method);
  if (status != PARE_OK) {
    pare_failed(&a, "pare_method_create", status,
                method ? a.method_error_message(method) : a.program_error_message(program));
  }
  const size_t num_inputs = (size_t)(argc - 6);
  if (num_inputs != a.method_input_count(method)) {
    fprintf(stderr, "harness: method %s takes %zu inputs, got %zu\n", argv[4], a.method_input_count(method),
            num_inputs);
    return 2;
  }
  for (size_t i = 0; i < num_inputs; ++i) set_input(&a, method, i, argv[6 + i]);
  status = a.method_execute(method);
  if (status != PARE_OK) pare_failed(&a, "pare_method_execute", status, a.method_error_message(method));
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
  fprintf(stderr,
          "usage: harness call-i32 LIB SYMBOL ARG\n"
          "       harness run LIB PROGRAM METHOD OUTDIR [DTYPE:SIZES:FILE ...]\n");
  return 2;
}
