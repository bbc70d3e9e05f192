// Emulator harness: an aarch64 glibc program that loads an Android .so and
// calls into it, run under qemu-aarch64 (see README.md: an emulated stand-in
// for a device, not a device).
//
//   harness call-i32 LIB SYMBOL ARG   calls int32_t SYMBOL(int32_t ARG) and
//                                     prints the result on stdout.
//
// Exit codes: 0 ok, 2 usage, 3 the library does not load, 4 the symbol is
// missing. Library errors print dlerror()'s message.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "call-i32") == 0) {
    void* lib = open_library(argv[2]);
    int32_t (*fn)(int32_t) = (int32_t(*)(int32_t))find_symbol(lib, argv[3]);
    printf("%d\n", (int)fn((int32_t)strtol(argv[4], NULL, 10)));
    return 0;
  }
  fprintf(stderr, "usage: harness call-i32 LIB SYMBOL ARG\n");
  return 2;
}
