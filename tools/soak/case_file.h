/* The soak's case files: written by tools/soak/soak.py (case_bytes), read
 * by the driver (driver.c). A case holds a program, the method to run and
 * input sets, each with its reference outputs.
 *
 * Case file, little-endian:
 *   "PARESOAK" u32 version (1)
 *   u32 n, name[n]; u32 n, method[n]; u64 n, program[n]
 *   u32 sets; per set: u32 inputs, u32 outputs, then inputs and outputs:
 *     i32 dtype, u32 itemsize, u32 ndim, i64 sizes[ndim], u64 n, bytes[n]
 */

#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/c_api/pare.h"

enum { CASE_VERSION = 1, NAME_MAX_BYTES = 64 };

typedef struct {
  int32_t dtype;
  uint32_t itemsize;
  uint32_t ndim;
  int64_t sizes[PARE_MAX_DIM];
  size_t nbytes;
  void* data; /* 64-byte aligned copy */
} Tensor;

typedef struct {
  uint32_t num_inputs, num_outputs;
  Tensor* tensors; /* inputs, then outputs */
} Set;

typedef struct {
  char name[NAME_MAX_BYTES];
  char method[NAME_MAX_BYTES];
  void* program_bytes; /* 64-byte aligned: the borrowed load uses constants in place */
  size_t program_size;
  pare_program* programs[2]; /* borrowed, copied */
  uint32_t num_sets;
  Set* sets;
  int signatures; /* distinct input dtypes and shapes */
} Case;

/* Reads `path` into `c`; on failure writes a one-line reason to `error`. */
int read_case(const char* path, Case* c, char* error, size_t error_size);
