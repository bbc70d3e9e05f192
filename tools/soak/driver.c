/* The soak driver (python -m tools.soak builds and runs it; docs/testing.md,
 * "Soak"): many method instances over a few threads for many calls, every
 * output checked, the process's resident memory and the PAL's allocations
 * compared after warm-up and at the end. No Python in the process: what it
 * measures is the runtime, this driver and libc.
 *
 *   soak_driver [--threads N] [--instances N] [--calls N] [--warmup-rounds N]
 *               [--rss-bound-kib N] [--plant-leak BYTES] CASE...
 *
 * A CASE file (written by tools/soak/soak.py, format in case_file.h) holds
 * a program, the method to run and input sets, each with its reference
 * outputs. Every case's program is loaded twice: borrowed in place (a
 * 64-byte aligned buffer) and copied (PARE_LOAD_COPY). Instance j runs case
 * j % cases on program copy (j / cases) % 2, and thread t drives instances
 * t * I .. t * I + I - 1 (I = instances / threads) in turn, one call each,
 * each instance cycling through its case's input sets, so one thread runs
 * different programs and one program runs on many threads at once
 * (docs/c_api.md, "Threading"). Each thread creates its own instances.
 *
 * Phases: every instance runs every set --warmup-rounds times (checked);
 * the threads wait while the main thread samples; --calls calls in all
 * (checked) are run; the threads wait again while the main thread samples;
 * then they destroy their instances and the programs are destroyed.
 *
 * Checks (each failure is one line in "problems"; exit status 1):
 *  - every output of every call, warm-up included, equals the case's
 *    reference bit for bit (dtype, shape and bytes);
 *  - the PAL's live blocks and bytes at the end equal those after warm-up,
 *    and are zero once everything is destroyed;
 *  - a thread whose instances made no new memory plan during the measured
 *    calls (docs/c_api.md: a method keeps the plans of its last four input
 *    signatures) made no PAL allocation in them;
 *  - the process's anonymous resident memory (RssAnon: heap, arenas, stacks,
 *    where any leak lands) grew by at most --rss-bound-kib from warm-up to
 *    the end. VmRSS is reported too but not bounded: its file-backed part
 *    is library code the kernel may drop and fault in again at any time.
 *
 * The PAL record: this executable defines posix_memalign and free, which
 * the runtime's PAL imports, and records each block the PAL holds
 * (memory_record.h says how). glibc only (Linux hosts).
 *
 * --plant-leak BYTES: every measured call also allocates BYTES with
 * posix_memalign, touches them and never frees them. The soak's wiring
 * check: the PAL and resident-set checks must both fail.
 *
 * Prints one JSON object on stdout; progress on stderr every 5 seconds.
 * Exit status: 0 every check passed, 1 a check failed, 2 a usage error, an
 * unreadable case or a runtime error (one line on stderr).
 */

#define _POSIX_C_SOURCE 200809L /* pthread barriers, clock_gettime, posix_memalign */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/c_api/pare.h"
#include "tools/soak/case_file.h"
#include "tools/soak/memory_record.h"

enum { EXIT_CHECK_FAILED = 1, EXIT_USAGE = 2 };
enum { MAX_THREADS = 64, MAX_INSTANCES_PER_THREAD = 16, MAX_CASES = 16, MAX_PROBLEMS = 32 };

/* ---- Instances and threads --------------------------------------------- */

typedef struct {
  Case* c;
  int index;   /* global instance number */
  int variant; /* 0 borrowed program, 1 copied */
  pare_method* method;
  uint64_t calls; /* every call, warm-up included: picks the next set */
  uint64_t measured_calls;
  double cpu_seconds; /* measured calls, set_input to the last output read: this thread's CPU time */
  uint64_t mismatches;
  uint64_t plans_warm, plans_end;
} Instance;

typedef struct {
  int index;
  Instance* instances[MAX_INSTANCES_PER_THREAD];
  int count;
  uint64_t calls; /* measured calls this thread makes */
  uint64_t pal_allocs;
  double finished; /* seconds since the measured phase began */
  char error[256];
  char mismatch[256]; /* the first one */
} Worker;

static struct {
  int warmup_rounds;
  size_t plant_leak;
  pthread_barrier_t warm, go, measured, sampled;
  _Atomic uint64_t progress;
  _Atomic int finished;
  struct timespec start;
} g;

static double seconds_since(clockid_t clock, const struct timespec* t0) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* A method output against its reference: 1 when equal; else 0, and why. */
static int output_matches(const Tensor* want, const pare_tensor_info* got, char* why, size_t why_size) {
  if (got->dtype != want->dtype || got->ndim != (int32_t)want->ndim ||
      memcmp(got->sizes, want->sizes, want->ndim * sizeof(int64_t)) != 0) {
    snprintf(why, why_size, "dtype or shape differs (dtype %d rank %d, reference dtype %d rank %u)", got->dtype,
             got->ndim, want->dtype, want->ndim);
    return 0;
  }
  /* Walk the output's strides in row-major order against the contiguous
   * reference; a contiguous output is one memcmp. */
  size_t numel = want->nbytes / want->itemsize;
  int contiguous = 1;
  int64_t expect = 1;
  for (int d = (int)want->ndim - 1; d >= 0; --d) {
    if (want->sizes[d] != 1 && got->strides[d] != expect) contiguous = 0;
    expect *= want->sizes[d];
  }
  const unsigned char* base = got->data;
  const unsigned char* ref = want->data;
  if (contiguous || numel == 0) {
    if (numel == 0 || memcmp(base, ref, want->nbytes) == 0) return 1;
    for (size_t e = 0; e < numel; ++e) {
      if (memcmp(base + e * want->itemsize, ref + e * want->itemsize, want->itemsize) != 0) {
        snprintf(why, why_size, "element %zu differs", e);
        break;
      }
    }
    return 0;
  }
  int64_t index[PARE_MAX_DIM] = {0};
  for (size_t e = 0; e < numel; ++e) {
    int64_t offset = 0;
    for (uint32_t d = 0; d < want->ndim; ++d) offset += index[d] * got->strides[d];
    if (memcmp(base + offset * (int64_t)want->itemsize, ref + e * want->itemsize, want->itemsize) != 0) {
      snprintf(why, why_size, "element %zu differs", e);
      return 0;
    }
    for (int d = (int)want->ndim - 1; d >= 0 && ++index[d] == want->sizes[d]; --d) index[d] = 0;
  }
  return 1;
}

/* One call of `inst` on its next set, checked. Returns 0 on a runtime
 * error (written to w->error); a mismatch is counted, not an error. */
static int call(Worker* w, Instance* inst, int measured) {
  const Case* c = inst->c;
  const Set* s = &c->sets[(inst->index + inst->calls++) % c->num_sets];
  struct timespec t0;
  if (measured) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  pare_status st = PARE_OK;
  for (uint32_t i = 0; i < s->num_inputs && st == PARE_OK; ++i) {
    const Tensor* x = &s->tensors[i];
    st = pare_method_set_input(inst->method, i, x->dtype, x->sizes, x->ndim, NULL, x->data, x->nbytes);
  }
  if (st == PARE_OK) st = pare_method_execute(inst->method);
  const size_t outputs = pare_method_output_count(inst->method);
  pare_tensor_info got[64];
  for (uint32_t o = 0; o < s->num_outputs && o < outputs && st == PARE_OK; ++o)
    st = pare_method_output_tensor(inst->method, o, &got[o]);
  if (measured) {
    inst->cpu_seconds += seconds_since(CLOCK_THREAD_CPUTIME_ID, &t0);
    ++inst->measured_calls;
  }
  if (st != PARE_OK) {
    snprintf(w->error, sizeof w->error, "%s instance %d: %s: %s", c->name, inst->index, pare_status_name(st),
             pare_method_error_message(inst->method));
    return 0;
  }
  int ok = outputs == s->num_outputs;
  char why[160] = "the method returned a different number of outputs";
  uint32_t bad = 0;
  for (uint32_t o = 0; ok && o < s->num_outputs; ++o) {
    ok = output_matches(&s->tensors[s->num_inputs + o], &got[o], why, sizeof why);
    bad = o;
  }
  if (!ok) {
    ++inst->mismatches;
    if (w->mismatch[0] == 0)
      snprintf(w->mismatch, sizeof w->mismatch, "%s instance %d, input set %d, output %u: %s", c->name, inst->index,
               (int)((inst->index + inst->calls - 1) % c->num_sets), bad, why);
  }
  if (measured && g.plant_leak > 0) {
    void* leak = NULL;
    if (posix_memalign(&leak, 64, g.plant_leak) == 0) memset(leak, 1, g.plant_leak);
  }
  return 1;
}

static uint64_t num_plans(const Instance* inst) {
  pare_memory_stats stats;
  return pare_method_memory_stats(inst->method, &stats) == PARE_OK ? stats.num_plans : 0;
}

static void* worker_main(void* arg) {
  Worker* w = arg;
  int ok = 1;
  for (int i = 0; i < w->count && ok; ++i) {
    Instance* inst = w->instances[i];
    pare_status st = pare_method_create(inst->c->programs[inst->variant], inst->c->method, &inst->method);
    if (st != PARE_OK) {
      snprintf(w->error, sizeof w->error, "%s instance %d: creating method %s: %s: %s", inst->c->name, inst->index,
               inst->c->method, pare_status_name(st), pare_method_error_message(inst->method));
      ok = 0;
    }
  }
  for (int i = 0; i < w->count && ok; ++i)
    for (uint64_t k = 0; k < (uint64_t)g.warmup_rounds * w->instances[i]->c->num_sets && ok; ++k)
      ok = call(w, w->instances[i], 0);
  for (int i = 0; i < w->count && ok; ++i) w->instances[i]->plans_warm = num_plans(w->instances[i]);
  pthread_barrier_wait(&g.warm);
  pthread_barrier_wait(&g.go);
  const uint64_t allocs_before = pal_thread_allocs();
  for (uint64_t k = 0; k < w->calls && ok; ++k) {
    ok = call(w, w->instances[k % (uint64_t)w->count], 1);
    atomic_fetch_add_explicit(&g.progress, 1, memory_order_relaxed);
  }
  w->pal_allocs = pal_thread_allocs() - allocs_before;
  w->finished = seconds_since(CLOCK_MONOTONIC, &g.start);
  for (int i = 0; i < w->count; ++i)
    if (w->instances[i]->method != NULL) w->instances[i]->plans_end = num_plans(w->instances[i]);
  atomic_fetch_add(&g.finished, 1);
  pthread_barrier_wait(&g.measured);
  pthread_barrier_wait(&g.sampled);
  for (int i = 0; i < w->count; ++i) {
    pare_method_destroy(w->instances[i]->method);
    w->instances[i]->method = NULL;
  }
  return NULL;
}

/* ---- Main -------------------------------------------------------------- */

static char g_problems[MAX_PROBLEMS][320];
static int g_num_problems;

static void problem(const char* format, ...) {
  if (g_num_problems == MAX_PROBLEMS) return;
  va_list args;
  va_start(args, format);
  vsnprintf(g_problems[g_num_problems++], sizeof g_problems[0], format, args);
  va_end(args);
}

static void json_string(const char* s) {
  putchar('"');
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", *s);
    else
      putchar(*s);
  }
  putchar('"');
}

static int usage(const char* message) {
  fprintf(stderr,
          "soak_driver: %s (usage: soak_driver [--threads N] [--instances N] [--calls N] "
          "[--warmup-rounds N] [--rss-bound-kib N] [--plant-leak BYTES] CASE...)\n",
          message);
  return EXIT_USAGE;
}

static int parse_count(const char* text, long min, long max, long* out) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != 0 || v < min || v > max) return 0;
  *out = v;
  return 1;
}

int main(int argc, char** argv) {
  long threads = 4, instances = 8, calls = 1000, warmup_rounds = 2, rss_bound_kib = 1024, plant_leak = 0;
  static Case cases[MAX_CASES];
  int num_cases = 0;
  char error[320];
  for (int a = 1; a < argc; ++a) {
    struct {
      const char* flag;
      long* value;
      long min, max;
    } const options[] = {
        {"--threads", &threads, 1, MAX_THREADS},
        {"--instances", &instances, 1, MAX_THREADS * MAX_INSTANCES_PER_THREAD},
        {"--calls", &calls, 1, 1000000000},
        {"--warmup-rounds", &warmup_rounds, 1, 1000},
        {"--rss-bound-kib", &rss_bound_kib, 0, 1l << 30},
        {"--plant-leak", &plant_leak, 0, 1l << 20},
    };
    int matched = 0;
    for (size_t o = 0; o < sizeof options / sizeof options[0] && !matched; ++o) {
      if (strcmp(argv[a], options[o].flag) != 0) continue;
      matched = 1;
      if (a + 1 == argc || !parse_count(argv[++a], options[o].min, options[o].max, options[o].value)) {
        snprintf(error, sizeof error, "%s takes a whole number from %ld to %ld", options[o].flag, options[o].min,
                 options[o].max);
        return usage(error);
      }
    }
    if (matched) continue;
    if (argv[a][0] == '-') {
      snprintf(error, sizeof error, "unknown option %s", argv[a]);
      return usage(error);
    }
    if (num_cases == MAX_CASES) return usage("too many case files");
    if (!read_case(argv[a], &cases[num_cases], error, sizeof error)) {
      fprintf(stderr, "soak_driver: %s\n", error);
      return EXIT_USAGE;
    }
    ++num_cases;
  }
  if (num_cases == 0) return usage("no case file given");
  if (instances % threads != 0 || instances / threads > MAX_INSTANCES_PER_THREAD)
    return usage("--instances must be a multiple of --threads, at most 16 per thread");
  if (instances < num_cases) return usage("fewer --instances than case files: some case would never run");
  g.warmup_rounds = (int)warmup_rounds;
  g.plant_leak = (size_t)plant_leak;

  const char* max_isa = getenv("PARE_MAX_ISA"); /* as pare/runtime.py: the reference's ISA */
  if (max_isa != NULL && max_isa[0] != 0 && pare_set_max_isa(max_isa) != PARE_OK) {
    fprintf(stderr, "soak_driver: PARE_MAX_ISA=%s is not an ISA level of this runtime\n", max_isa);
    return EXIT_USAGE;
  }
  const PalRecord before_load = pal_record();
  uint64_t copied_bytes = 0;
  for (int k = 0; k < num_cases; ++k) {
    for (int v = 0; v < 2; ++v) {
      Case* c = &cases[k];
      const pare_status st =
          pare_program_load(c->program_bytes, c->program_size, v ? PARE_LOAD_COPY : 0, &c->programs[v]);
      if (st != PARE_OK) {
        fprintf(stderr, "soak_driver: %s: loading its program: %s: %s\n", c->name, pare_status_name(st),
                pare_program_error_message(c->programs[v]));
        return EXIT_USAGE;
      }
    }
    copied_bytes += cases[k].program_size;
  }
  const PalRecord loaded = pal_record();
  /* The wiring: the copied programs are the runtime's own allocations. */
  if (loaded.live_bytes - before_load.live_bytes < copied_bytes)
    problem(
        "the PAL record saw %llu bytes allocated by loading, less than the %llu bytes of the copied "
        "programs: the posix_memalign/free interposition is not in effect",
        (unsigned long long)(loaded.live_bytes - before_load.live_bytes), (unsigned long long)copied_bytes);
  const Rss rss_loaded = read_rss();

  static Instance all[MAX_THREADS * MAX_INSTANCES_PER_THREAD];
  static Worker workers[MAX_THREADS];
  const int per_thread = (int)(instances / threads);
  for (int j = 0; j < instances; ++j) {
    all[j].c = &cases[j % num_cases];
    all[j].index = j;
    all[j].variant = (j / num_cases) % 2;
  }
  pthread_barrier_init(&g.warm, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&g.go, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&g.measured, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&g.sampled, NULL, (unsigned)threads + 1);
  pthread_t ids[MAX_THREADS];
  for (int t = 0; t < threads; ++t) {
    Worker* w = &workers[t];
    w->index = t;
    w->count = per_thread;
    for (int i = 0; i < per_thread; ++i) w->instances[i] = &all[t * per_thread + i];
    w->calls = (uint64_t)(calls / threads + (t < calls % threads));
    if (pthread_create(&ids[t], NULL, worker_main, w) != 0) {
      fprintf(stderr, "soak_driver: pthread_create failed\n");
      return EXIT_USAGE;
    }
  }

  pthread_barrier_wait(&g.warm);
  const Rss rss_warm = read_rss();
  const PalRecord warm = pal_record();
  struct timespec cpu_start;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  clock_gettime(CLOCK_MONOTONIC, &g.start);
  pthread_barrier_wait(&g.go);
  long peak_kib = rss_warm.rss_kib, peak_anon_kib = rss_warm.anon_kib;
  double last_progress = 0;
  while (atomic_load(&g.finished) < threads) {
    const struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    const Rss now = read_rss();
    if (now.rss_kib > peak_kib) peak_kib = now.rss_kib;
    if (now.anon_kib > peak_anon_kib) peak_anon_kib = now.anon_kib;
    const double elapsed = seconds_since(CLOCK_MONOTONIC, &g.start);
    if (elapsed - last_progress >= 5) {
      last_progress = elapsed;
      fprintf(stderr, "soak_driver: %llu/%ld calls, %.0f s, resident %ld KiB (anonymous %ld KiB)\n",
              (unsigned long long)atomic_load(&g.progress), calls, elapsed, now.rss_kib, now.anon_kib);
    }
  }
  pthread_barrier_wait(&g.measured);
  const double cpu_seconds = seconds_since(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  const Rss rss_end = read_rss();
  const PalRecord end = pal_record();
  if (rss_end.rss_kib > peak_kib) peak_kib = rss_end.rss_kib;
  if (rss_end.anon_kib > peak_anon_kib) peak_anon_kib = rss_end.anon_kib;
  pthread_barrier_wait(&g.sampled);
  int runtime_error = 0;
  double seconds = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    if (workers[t].finished > seconds) seconds = workers[t].finished;
    if (workers[t].error[0] != 0) {
      fprintf(stderr, "soak_driver: %s\n", workers[t].error);
      runtime_error = 1;
    }
  }
  for (int k = 0; k < num_cases; ++k)
    for (int v = 0; v < 2; ++v) pare_program_destroy(cases[k].programs[v]);
  const PalRecord after = pal_record();
  if (runtime_error) return EXIT_USAGE;

  /* The checks. */
  uint64_t mismatches = 0, measured_calls = 0;
  for (int j = 0; j < instances; ++j) {
    mismatches += all[j].mismatches;
    measured_calls += all[j].measured_calls;
  }
  if (mismatches > 0) {
    for (int t = 0; t < threads; ++t)
      if (workers[t].mismatch[0] != 0) {
        problem("%llu of %llu calls gave outputs other than the reference, first: %s", (unsigned long long)mismatches,
                (unsigned long long)measured_calls, workers[t].mismatch);
        break;
      }
  }
  if (end.live_blocks != warm.live_blocks || end.live_bytes != warm.live_bytes)
    problem("the PAL holds %llu blocks, %llu bytes after the measured calls, %llu blocks, %llu bytes after warm-up",
            (unsigned long long)end.live_blocks, (unsigned long long)end.live_bytes,
            (unsigned long long)warm.live_blocks, (unsigned long long)warm.live_bytes);
  if (after.live_blocks != before_load.live_blocks || after.live_bytes != before_load.live_bytes)
    problem("%llu PAL blocks (%llu bytes) still live after every method and program was destroyed",
            (unsigned long long)(after.live_blocks - before_load.live_blocks),
            (unsigned long long)(after.live_bytes - before_load.live_bytes));
  for (int t = 0; t < threads; ++t) {
    int planned = 0;
    for (int i = 0; i < workers[t].count; ++i)
      planned |= workers[t].instances[i]->plans_end != workers[t].instances[i]->plans_warm;
    if (!planned && workers[t].pal_allocs > 0)
      problem(
          "thread %d made %llu PAL allocations in %llu measured calls that made no new plan "
          "(a call on planned shapes allocates nothing, docs/c_api.md)",
          t, (unsigned long long)workers[t].pal_allocs, (unsigned long long)workers[t].calls);
  }
  if (pal_record_overflowed()) problem("more than %d PAL blocks live at once: the record stopped", PAL_MAX_LIVE_BLOCKS);
  if (rss_end.anon_kib < 0 || rss_warm.anon_kib < 0)
    problem("no RssAnon in /proc/self/status: the resident-memory check needs Linux 4.5 or later");
  else if (rss_end.anon_kib - rss_warm.anon_kib > rss_bound_kib)
    problem(
        "anonymous resident memory grew by %ld KiB from warm-up (%ld KiB) to the end (%ld KiB), more than the "
        "%ld KiB allowed",
        rss_end.anon_kib - rss_warm.anon_kib, rss_warm.anon_kib, rss_end.anon_kib, rss_bound_kib);

  /* The report. */
  printf(
      "{\"threads\": %ld, \"instances\": %ld, \"calls\": %llu, \"warmup_rounds\": %ld, \"seconds\": %.6f, "
      "\"calls_per_second\": %.1f, \"cpu_seconds\": %.6f,\n",
      threads, instances, (unsigned long long)measured_calls, warmup_rounds, seconds,
      seconds > 0 ? (double)measured_calls / seconds : 0.0, cpu_seconds);
  printf(" \"rss_kib\": {\"loaded\": %ld, \"warm\": %ld, \"end\": %ld, \"peak\": %ld},\n", rss_loaded.rss_kib,
         rss_warm.rss_kib, rss_end.rss_kib, peak_kib);
  printf(" \"rss_anon_kib\": {\"loaded\": %ld, \"warm\": %ld, \"end\": %ld, \"peak\": %ld, \"bound\": %ld},\n",
         rss_loaded.anon_kib, rss_warm.anon_kib, rss_end.anon_kib, peak_anon_kib, rss_bound_kib);
  printf(
      " \"pal\": {\"loaded_bytes\": %llu, \"warm_blocks\": %llu, \"warm_bytes\": %llu, \"end_blocks\": %llu, "
      "\"end_bytes\": %llu, \"measured_allocs\": %llu, \"measured_frees\": %llu, \"destroyed_bytes\": %llu},\n",
      (unsigned long long)(loaded.live_bytes - before_load.live_bytes), (unsigned long long)warm.live_blocks,
      (unsigned long long)warm.live_bytes, (unsigned long long)end.live_blocks, (unsigned long long)end.live_bytes,
      (unsigned long long)(end.allocs - warm.allocs), (unsigned long long)(end.frees - warm.frees),
      (unsigned long long)(after.live_bytes - before_load.live_bytes));
  printf(" \"models\": [");
  for (int k = 0; k < num_cases; ++k) {
    uint64_t n = 0, plans = 0, mis = 0;
    double cpu = 0;
    int count = 0;
    for (int j = 0; j < instances; ++j) {
      if (all[j].c != &cases[k]) continue;
      ++count;
      n += all[j].measured_calls;
      cpu += all[j].cpu_seconds;
      plans += all[j].plans_end - all[j].plans_warm;
      mis += all[j].mismatches;
    }
    printf("%s{\"name\": ", k ? ", " : "");
    json_string(cases[k].name);
    printf(
        ", \"instances\": %d, \"sets\": %u, \"signatures\": %d, \"calls\": %llu, \"cpu_seconds\": %.6f, "
        "\"calls_per_cpu_second\": %.1f, \"measured_plans\": %llu, \"mismatches\": %llu}",
        count, cases[k].num_sets, cases[k].signatures, (unsigned long long)n, cpu, cpu > 0 ? (double)n / cpu : 0.0,
        (unsigned long long)plans, (unsigned long long)mis);
  }
  printf("],\n \"problems\": [");
  for (int p = 0; p < g_num_problems; ++p) {
    if (p) printf(", ");
    json_string(g_problems[p]);
  }
  printf("]}\n");
  return g_num_problems == 0 ? 0 : EXIT_CHECK_FAILED;
}
