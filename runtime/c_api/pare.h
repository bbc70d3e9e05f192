#pragma once
/* Pare runtime C API: the only symbols a Pare runtime library exports.
 *
 * Self-contained C (no other Pare header needed). Handle-based: every
 * object is created by a function returning a pare_status and destroyed by
 * an explicit destroy function. Errors come back as a pare_status code
 * (the same numbers as the runtime's Error enum, grouped by range) plus a
 * message kept in the handle that failed, so independent programs and
 * methods never overwrite each other's messages. Load and method creation
 * return their handle even on failure (unless memory runs out) so the
 * message can be read; destroy it afterwards.
 *
 * Typical use:
 *
 *   pare_program* program = NULL;
 *   if (pare_program_load(bytes, size, 0, &program) != PARE_OK) {
 *     log(pare_program_error_message(program));   // NULL-safe
 *     pare_program_destroy(program);
 *   }
 *   pare_method* method = NULL;
 *   pare_method_create(program, "forward", &method);
 *   int64_t sizes[2] = {1, 16};
 *   pare_method_set_input(method, 0, PARE_DTYPE_FLOAT, sizes, 2, NULL, data, sizeof(data));
 *   pare_method_execute(method);
 *   pare_tensor_info out;
 *   pare_method_output_tensor(method, 0, &out);  // valid until the next execute
 *   pare_method_destroy(method);                  // before its program
 *   pare_program_destroy(program);
 *
 * Threading, what the caller serialises (docs/c_api.md, "Threading"):
 *  - One method handle: every call on it (set_input, execute, the output
 *    getters, set_num_threads, error_message, destroy, ...) from one thread
 *    at a time, destroy last. Two threads running one handle overwrite each
 *    other's inputs and outputs; to run in parallel, create one per thread.
 *  - One program: pare_method_create, the methods' calls and the program's
 *    getters may run on many threads at once (its constants and packed
 *    weights are read-only and exist once, each method has its own arena).
 *    pare_program_destroy only after every method of it is destroyed and
 *    no other call on it is under way. Not in an instrumentation build (its
 *    trace is per program), and a failing pare_method_create also writes
 *    the program's error message: with concurrent creations, read the
 *    method's (pare_method_error_message).
 *  - Separate programs, and the inventory functions, need nothing;
 *    pare_set_max_isa is process-wide: call it before running methods.
 */

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define PARE_API __declspec(dllexport)
#else
#define PARE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define PARE_MAX_DIM 8

/* Program format version this runtime reads (docs/program_format.md). */
#define PARE_FORMAT_VERSION_MAJOR 1

typedef enum pare_status {
  PARE_OK = 0x00,
  /* System */
  PARE_ERROR_INTERNAL = 0x01,
  PARE_ERROR_NOT_IMPLEMENTED = 0x02,
  /* Invalid input */
  PARE_ERROR_INVALID_ARGUMENT = 0x10,
  PARE_ERROR_INVALID_PROGRAM = 0x11,
  PARE_ERROR_INVALID_STATE = 0x12,
  PARE_ERROR_INVALID_SHAPE = 0x13,
  PARE_ERROR_UNSUPPORTED_DTYPE = 0x14,
  PARE_ERROR_INDEX_OUT_OF_RANGE = 0x15,
  /* Not selected in this build: re-trace or edit the manifest */
  PARE_ERROR_OPERATOR_NOT_SELECTED = 0x20,
  PARE_ERROR_OPERATOR_NOT_FOUND = 0x21,
  PARE_ERROR_DTYPE_NOT_SELECTED = 0x22,
  PARE_ERROR_CLASS_NOT_SELECTED = 0x23,
  PARE_ERROR_FEATURE_NOT_SELECTED = 0x24,
  /* Resources */
  PARE_ERROR_OUT_OF_MEMORY = 0x30,
  PARE_ERROR_LIMIT_EXCEEDED = 0x31,
  PARE_ERROR_FILE = 0x32
} pare_status;

/* PyTorch ScalarType codes. */
typedef enum pare_dtype {
  PARE_DTYPE_BYTE = 0,  /* uint8 */
  PARE_DTYPE_CHAR = 1,  /* int8 */
  PARE_DTYPE_SHORT = 2, /* int16 */
  PARE_DTYPE_INT = 3,   /* int32 */
  PARE_DTYPE_LONG = 4,  /* int64 */
  PARE_DTYPE_HALF = 5,
  PARE_DTYPE_FLOAT = 6,
  PARE_DTYPE_DOUBLE = 7,
  PARE_DTYPE_COMPLEX_FLOAT = 9, /* complex64: real, imaginary (two floats) */
  PARE_DTYPE_BOOL = 11,
  PARE_DTYPE_BFLOAT16 = 15
} pare_dtype;

typedef enum pare_value_kind {
  PARE_VALUE_NONE = 0,
  PARE_VALUE_TENSOR = 1,
  PARE_VALUE_INT = 2,
  PARE_VALUE_DOUBLE = 3,
  PARE_VALUE_BOOL = 4,
  PARE_VALUE_INT_LIST = 5,
  PARE_VALUE_DOUBLE_LIST = 6,
  PARE_VALUE_STRING = 7,
  PARE_VALUE_TENSOR_LIST = 8,
  PARE_VALUE_OBJECT = 9
} pare_value_kind;

typedef struct pare_program pare_program;
typedef struct pare_method pare_method;

/* A tensor's metadata and data. For outputs `data` points at element
 * [0, ..., 0] (storage offset applied) and strides are in elements; for
 * declared inputs `sizes` entries may be -1 (any size), `ndim` may be -1
 * (any rank) and `dtype` -1 (any dtype). */
typedef struct pare_tensor_info {
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[PARE_MAX_DIM];
  int64_t strides[PARE_MAX_DIM];
  const void* data;
} pare_tensor_info;

typedef struct pare_memory_stats {
  uint64_t arena_bytes;           /* activation arena currently allocated */
  uint64_t planned_arena_bytes;   /* arena size the current plan needs */
  uint64_t persistent_bytes;      /* value slots, init results, objects */
  uint64_t num_plans;             /* planning runs (first run, shape changes) */
  uint64_t temporary_blocks;      /* blocks served outside the arena last run */
  uint64_t first_fit_arena_bytes; /* the last plan laid out first fit ... */
  uint64_t greedy_arena_bytes;    /* ... and greedy by size (0 under PARE_PLANNER_FIRST_FIT) */
} pare_memory_stats;

/* How a method lays out its activation arena when it plans (first run,
 * new input shapes). Greedy by size places the largest blocks first, each
 * into the tightest gap among blocks alive at the same time (TFLite's and
 * Static Runtime's planner); first fit places blocks in request order.
 * Neither always wins, so the default keeps the smaller. */
typedef enum pare_planner {
  PARE_PLANNER_SMALLER = 0,
  PARE_PLANNER_FIRST_FIT = 1,
  PARE_PLANNER_GREEDY_BY_SIZE = 2,
} pare_planner;

/* ---- Version and build ------------------------------------------------ */

/* The runtime's version, e.g. "0.1.0" (static storage). */
PARE_API const char* pare_version(void);
/* The program-format major version this runtime loads
 * (docs/program_format.md); other majors fail with
 * PARE_ERROR_INVALID_PROGRAM. */
PARE_API uint32_t pare_format_version_major(void);
/* Non-zero for the instrumentation build (-DPARE_TRACING=1). */
PARE_API int pare_is_tracing_build(void);
/* The instruction set the build was compiled for: "x86_64_auto" (SSE2 code
 * plus x86-64-v3 float GEMM kernels and an AVX-512 GEMM tile it runs on a
 * CPU that has them: the default, --//runtime:x86_64_isa=auto),
 * "x86_64_baseline" (SSE2 only),
 * "x86_64_v3" (AVX2+FMA throughout: --//runtime:x86_64_isa=v3; dies with
 * SIGILL on a CPU without them, so check before loading a program),
 * "arm64_neon". */
PARE_API const char* pare_isa(void);
/* The instruction set the kernels run now: "x86_64_v4" (AVX-512),
 * "x86_64_v3" or "x86_64_baseline" for an x86_64_auto build (the best this
 * CPU has, at most pare_set_max_isa's cap), the build's own otherwise. */
PARE_API const char* pare_kernel_isa(void);
/* Caps the instruction set an x86_64_auto build's kernels run at `isa`
 * ("x86_64_baseline", "x86_64_v3" or "x86_64_v4"), as oneDNN's
 * dnnl_set_max_cpu_isa
 * does: the same results on every CPU, or the SSE2 kernels on an AVX2 one.
 * Process-wide; call it before running methods (a product already running
 * finishes on the kernels it started with). Builds without a choice accept
 * a cap at or above their own ISA. PARE_ERROR_INVALID_ARGUMENT for a name
 * that is not an ISA of this architecture; PARE_ERROR_NOT_IMPLEMENTED for
 * "x86_64_baseline" in a build compiled for x86_64_v3. */
PARE_API pare_status pare_set_max_isa(const char* isa);
PARE_API const char* pare_status_name(pare_status status);
PARE_API const char* pare_dtype_name(int32_t dtype);

/* ---- Inventory: what this build contains (.def files filtered by the
 * selection headers) ---------------------------------------------------- */

/* The operators this build contains ("aten::add.Tensor"); pare_op_name
 * returns NULL past the end. */
PARE_API size_t pare_op_count(void);
PARE_API const char* pare_op_name(size_t index);
/* Every (kernel tag, dtype) pair; returns PARE_ERROR_INDEX_OUT_OF_RANGE
 * past the end. `dtype_name` is the PyTorch ScalarType name. */
PARE_API size_t pare_kernel_dtype_count(void);
PARE_API pare_status pare_kernel_dtype(size_t index, const char** tag, const char** dtype_name);
PARE_API size_t pare_class_count(void);
PARE_API const char* pare_class_name(size_t index);
PARE_API size_t pare_feature_count(void);
PARE_API const char* pare_feature_name(size_t index);

/* ---- Programs --------------------------------------------------------- */

/* Load flag: copy the bytes (otherwise they are borrowed and must outlive
 * the program; a 64-byte aligned buffer lets constants be used in place). */
#define PARE_LOAD_COPY 1u

/* Validates and loads a program from memory (flags: PARE_LOAD_COPY or 0)
 * or from a file. On failure *out_program is still set (unless memory ran
 * out) so pare_program_error_message can say why: PARE_ERROR_INVALID_PROGRAM
 * for bad bytes, PARE_ERROR_FILE for an unreadable file,
 * PARE_ERROR_OPERATOR_NOT_SELECTED (or class / feature) for a program that
 * needs what the build left out. Destroy it either way. */
PARE_API pare_status pare_program_load(const void* data, size_t size, uint32_t flags, pare_program** out_program);
PARE_API pare_status pare_program_load_file(const char* path, pare_program** out_program);
/* Frees a program; NULL is a no-op. Its methods must be destroyed first. */
PARE_API void pare_program_destroy(pare_program* program);
/* Message of the last failure on this program (load, method creation), or
 * "" when none. NULL-safe. */
PARE_API const char* pare_program_error_message(const pare_program* program);

/* 1 when constant tensors are used in place in the loaded bytes (borrowed
 * or PARE_LOAD_COPY buffer), 0 when the constant segment had to be copied
 * because the caller's buffer was not 64-byte aligned. */
PARE_API int pare_program_constants_in_place(const pare_program* program);

/* The program's methods by name; the name is NULL past the end. */
PARE_API size_t pare_program_method_count(const pare_program* program);
PARE_API const char* pare_program_method_name(const pare_program* program, size_t index);

/* ---- Methods ---------------------------------------------------------- */

/* Creates an executable instance of method `name` and runs its init
 * section (e.g. weight prepacking). Destroy methods before their program. */
PARE_API pare_status pare_method_create(pare_program* program, const char* name, pare_method** out_method);
PARE_API void pare_method_destroy(pare_method* method);
PARE_API const char* pare_method_error_message(const pare_method* method);

/* How many inputs the method takes and outputs it returns. */
PARE_API size_t pare_method_input_count(const pare_method* method);
PARE_API size_t pare_method_output_count(const pare_method* method);
/* Declared dtype/shape of an input (see pare_tensor_info); data is NULL. */
PARE_API pare_status pare_method_input_info(const pare_method* method, size_t index, pare_tensor_info* info);

/* Sets input `index` to a tensor over `data` (borrowed: keep it alive and
 * unchanged until execute returns). `strides` (in elements, >= 0) may be
 * NULL for a contiguous tensor; every element must lie within `nbytes`. */
PARE_API pare_status pare_method_set_input(pare_method* method, size_t index, int32_t dtype, const int64_t* sizes,
                                           size_t ndim, const int64_t* strides, const void* data, size_t nbytes);
PARE_API pare_status pare_method_execute(pare_method* method);

/* Outputs of the last successful execute (valid until the next execute,
 * set_input or destroy). */
PARE_API pare_status pare_method_output_kind(const pare_method* method, size_t index, int32_t* kind);
PARE_API pare_status pare_method_output_tensor(const pare_method* method, size_t index, pare_tensor_info* info);
PARE_API pare_status pare_method_output_int(const pare_method* method, size_t index, int64_t* value);
PARE_API pare_status pare_method_output_double(const pare_method* method, size_t index, double* value);
PARE_API pare_status pare_method_output_bool(const pare_method* method, size_t index, int32_t* value);
/* Binds tensor output `index` to caller memory (16-byte aligned, `nbytes`
 * long; NULL unbinds): every later execute leaves the output there,
 * contiguous (written in place by its kernel when it fits, else copied
 * when the run ends; execute fails, naming the size needed, when it does
 * not fit), and pare_method_output_tensor describes that buffer. With every
 * tensor output bound, a steady-state execute neither allocates nor
 * copies. Build feature output_buffers: PARE_ERROR_FEATURE_NOT_SELECTED
 * when the build lacks it. */
PARE_API pare_status pare_method_set_output_buffer(pare_method* method, size_t index, void* data, size_t nbytes);

/* The method's memory: arena, persistent bytes, plans (pare_memory_stats). */
PARE_API pare_status pare_method_memory_stats(const pare_method* method, pare_memory_stats* stats);
/* Chooses the arena layout (a pare_planner value; PARE_ERROR_INVALID_ARGUMENT
 * for another); the next execute re-plans. */
PARE_API pare_status pare_method_set_planner(pare_method* method, int32_t planner);

/* ---- Build feature threads ---------------------------------------------- */

/* Runs the method's kernels on `threads` threads (1 to 64): the calling
 * thread plus threads - 1 workers the method owns (created here, joined by
 * pare_method_destroy or a later call). GEMM, convolution, depthwise and
 * pooling split their output between them when the work pays for it;
 * outputs are bitwise identical for every thread count. 1 always works;
 * more returns PARE_ERROR_FEATURE_NOT_SELECTED when the build lacks
 * threads, PARE_ERROR_OUT_OF_MEMORY when the platform cannot start them. */
PARE_API pare_status pare_method_set_num_threads(pare_method* method, uint32_t threads);
PARE_API uint32_t pare_method_num_threads(const pare_method* method);

/* ---- Build feature op_profiling ---------------------------------------- */

/* PARE_ERROR_FEATURE_NOT_SELECTED when the build lacks op_profiling. */
PARE_API pare_status pare_method_set_profiling(pare_method* method, int enabled);
PARE_API size_t pare_method_instruction_count(const pare_method* method);
/* Per instruction since profiling was enabled: operator name, calls and
 * ticks of pare_pal_ticks() (see pare_ticks_per_second). */
PARE_API pare_status pare_method_profile(const pare_method* method, size_t instruction, const char** op_name,
                                         uint64_t* calls, uint64_t* ticks);
PARE_API uint64_t pare_ticks_per_second(void);

/* ---- Tracing (instrumentation build; empty otherwise) ------------------ */

/* Everything recorded since load or the last reset, across all methods of
 * the program. Ops: `flags` bit 0 = called as a root op (by a method),
 * bit 1 = called from inside another kernel. */
PARE_API size_t pare_trace_op_count(const pare_program* program);
PARE_API pare_status pare_trace_op(const pare_program* program, size_t index, const char** name, int32_t* flags);
PARE_API size_t pare_trace_kernel_dtype_count(const pare_program* program);
PARE_API pare_status pare_trace_kernel_dtype(const pare_program* program, size_t index, const char** tag,
                                             const char** dtype_name);
PARE_API size_t pare_trace_class_count(const pare_program* program);
PARE_API const char* pare_trace_class(const pare_program* program, size_t index);
PARE_API size_t pare_trace_feature_count(const pare_program* program);
PARE_API const char* pare_trace_feature(const pare_program* program, size_t index);
PARE_API void pare_trace_reset(pare_program* program);

#ifdef __cplusplus
} /* extern "C" */
#endif
