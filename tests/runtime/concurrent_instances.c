/* Method instances sharing one loaded program, run concurrently
 * (tests/runtime/test_concurrency.py builds and runs this, plainly and
 * under ThreadSanitizer).
 *
 *   concurrent_instances PROGRAM INPUTS SHAPE THREADS ITERATIONS REFERENCE [POOL]
 *   concurrent_instances --plant-race   (the sanitizer wiring check)
 *
 * PROGRAM is a program file whose method "forward" takes one float32
 * input; INPUTS holds K input sets of SHAPE (e.g. 1x3x32x32), float32,
 * back to back. The program is loaded once, borrowing the file's bytes, so
 * its constants and packed weights exist once. One instance first runs
 * every set and its output 0 (float32) becomes the reference, written to
 * REFERENCE for the test to compare with torch. Then THREADS threads each
 * create their own instance of the same program and run ITERATIONS
 * executions, thread t's i-th on set (t + i) % K, comparing every output
 * with the reference bit for bit: instances must neither share mutable
 * state nor disturb each other's arenas. With POOL > 1 each of those
 * instances also runs its kernels on POOL threads of its own
 * (pare_method_set_num_threads; build feature threads) while the reference
 * ran on one: outputs must not depend on the thread count either. Prints
 * one summary line; exit 0
 * when every output matched, 1 on a mismatch, 2 on a usage or runtime
 * error. */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/c_api/pare.h"

typedef struct {
  pare_program* program;
  const float* inputs;
  size_t set_floats;
  int num_sets;
  int64_t sizes[PARE_MAX_DIM];
  size_t ndim;
  const float* reference; /* num_sets * out_floats */
  size_t out_floats;
  int iterations;
  uint32_t pool; /* threads per instance */
} Shared;

typedef struct {
  const Shared* shared;
  int index;
  long mismatches;
  long runs;
  char error[256];
} Worker;

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* 64-byte aligned, as the loader wants constants for in-place use. */
  void* data = aligned_alloc(64, ((size_t)n + 63) / 64 * 64 + 64);
  if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Runs input set `k` on `method`; on success *out is its output 0. */
static int run_set(const Shared* s, pare_method* method, int k, pare_tensor_info* out, char* error) {
  const float* x = s->inputs + (size_t)k * s->set_floats;
  pare_status st =
      pare_method_set_input(method, 0, PARE_DTYPE_FLOAT, s->sizes, s->ndim, NULL, x, s->set_floats * sizeof(float));
  if (st == PARE_OK) st = pare_method_execute(method);
  if (st == PARE_OK) st = pare_method_output_tensor(method, 0, out);
  if (st != PARE_OK) {
    snprintf(error, 256, "input set %d: %s: %s", k, pare_status_name(st), pare_method_error_message(method));
    return 0;
  }
  if (out->dtype != PARE_DTYPE_FLOAT) {
    snprintf(error, 256, "output 0 is not float32");
    return 0;
  }
  return 1;
}

static size_t numel(const pare_tensor_info* t) {
  size_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= (size_t)t->sizes[d];
  return n;
}

static void* worker_main(void* arg) {
  Worker* w = (Worker*)arg;
  const Shared* s = w->shared;
  pare_method* method = NULL;
  pare_status st = pare_method_create(s->program, "forward", &method);
  if (st == PARE_OK) st = pare_method_set_num_threads(method, s->pool);
  if (st != PARE_OK) {
    snprintf(w->error, sizeof w->error, "thread %d: creating the method: %s: %s", w->index, pare_status_name(st),
             pare_method_error_message(method));
    pare_method_destroy(method);
    return NULL;
  }
  for (int i = 0; i < s->iterations && w->error[0] == 0; ++i) {
    const int k = (w->index + i) % s->num_sets;
    pare_tensor_info out;
    if (!run_set(s, method, k, &out, w->error)) break;
    ++w->runs;
    /* Outputs of these programs are contiguous. */
    if (numel(&out) != s->out_floats ||
        memcmp(out.data, s->reference + (size_t)k * s->out_floats, s->out_floats * sizeof(float)) != 0) {
      ++w->mismatches;
    }
  }
  pare_method_destroy(method);
  return NULL;
}

/* A deliberate data race: two threads write one int with no
 * synchronisation. ThreadSanitizer must report it. */
static int g_racy;

static void* racer(void* arg) {
  for (int i = 0; i < 1000; ++i) g_racy += (int)(intptr_t)arg;
  return NULL;
}

static int plant_race(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, racer, (void*)1);
  pthread_create(&b, NULL, racer, (void*)2);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("raced: %d\n", g_racy);
  return 0;
}

static int parse_shape(const char* text, int64_t* sizes, size_t* ndim) {
  *ndim = 0;
  while (*text != 0) {
    char* end = NULL;
    long long v = strtoll(text, &end, 10);
    if (end == text || v < 0 || *ndim == PARE_MAX_DIM) return 0;
    sizes[(*ndim)++] = v;
    text = *end == 'x' ? end + 1 : end;
    if (*end != 'x' && *end != 0) return 0;
  }
  return *ndim > 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--plant-race") == 0) return plant_race();
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: %s PROGRAM INPUTS SHAPE THREADS ITERATIONS REFERENCE [POOL] | --plant-race\n", argv[0]);
    return 2;
  }
  Shared s;
  memset(&s, 0, sizeof s);
  const int threads = atoi(argv[4]);
  s.iterations = atoi(argv[5]);
  const int pool = argc == 8 ? atoi(argv[7]) : 1;
  s.pool = (uint32_t)pool;
  if (!parse_shape(argv[3], s.sizes, &s.ndim) || threads < 1 || threads > 64 || s.iterations < 1 || pool < 1 ||
      pool > 64) {
    fprintf(stderr, "bad SHAPE, THREADS, ITERATIONS or POOL\n");
    return 2;
  }
  s.set_floats = 1;
  for (size_t d = 0; d < s.ndim; ++d) s.set_floats *= (size_t)s.sizes[d];
  size_t program_size = 0, inputs_size = 0;
  void* program_bytes = read_file(argv[1], &program_size);
  float* inputs = (float*)read_file(argv[2], &inputs_size);
  if (program_bytes == NULL || inputs == NULL || inputs_size % (s.set_floats * sizeof(float)) != 0) {
    fprintf(stderr, "cannot read %s and %s (a whole number of %zu-float input sets)\n", argv[1], argv[2], s.set_floats);
    return 2;
  }
  s.inputs = inputs;
  s.num_sets = (int)(inputs_size / (s.set_floats * sizeof(float)));

  /* Borrowed bytes: constants are used in place, once for every instance. */
  pare_status st = pare_program_load(program_bytes, program_size, 0, &s.program);
  if (st != PARE_OK) {
    fprintf(stderr, "loading %s: %s\n", argv[1], s.program ? pare_program_error_message(s.program) : "");
    return 2;
  }

  /* The reference: one instance, every set, before any thread starts. */
  pare_method* first = NULL;
  char error[256] = {0};
  if (pare_method_create(s.program, "forward", &first) != PARE_OK) {
    fprintf(stderr, "creating the method failed\n");
    return 2;
  }
  float* reference = NULL;
  for (int k = 0; k < s.num_sets; ++k) {
    pare_tensor_info out;
    if (!run_set(&s, first, k, &out, error)) {
      fprintf(stderr, "%s\n", error);
      return 2;
    }
    if (reference == NULL) {
      s.out_floats = numel(&out);
      reference = (float*)malloc(s.out_floats * sizeof(float) * (size_t)s.num_sets);
    }
    memcpy(reference + (size_t)k * s.out_floats, out.data, s.out_floats * sizeof(float));
  }
  pare_method_destroy(first);
  s.reference = reference;
  FILE* ref = fopen(argv[6], "wb");
  if (ref == NULL ||
      fwrite(reference, sizeof(float), s.out_floats * (size_t)s.num_sets, ref) != s.out_floats * (size_t)s.num_sets) {
    fprintf(stderr, "cannot write %s\n", argv[6]);
    return 2;
  }
  fclose(ref);

  Worker workers[64];
  pthread_t ids[64];
  for (int t = 0; t < threads; ++t) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].shared = &s;
    workers[t].index = t;
    if (pthread_create(&ids[t], NULL, worker_main, &workers[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  }
  long runs = 0, mismatches = 0;
  int failed = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    runs += workers[t].runs;
    mismatches += workers[t].mismatches;
    if (workers[t].error[0] != 0) {
      fprintf(stderr, "%s\n", workers[t].error);
      failed = 1;
    }
  }
  printf("threads=%d pool=%d runs=%ld mismatches=%ld sets=%d\n", threads, pool, runs, mismatches, s.num_sets);
  pare_program_destroy(s.program);
  free(reference);
  free(inputs);
  free(program_bytes);
  if (failed) return 2;
  return mismatches == 0 ? 0 : 1;
}
