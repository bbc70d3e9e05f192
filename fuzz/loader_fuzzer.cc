// libFuzzer target for the program loader and the method API: any byte
// string either loads or fails with a clean error (docs/program_format.md,
// "closed-world validation"); a program that loads must create and run
// every method on generated inputs without memory errors or undefined
// behaviour; and every misuse of the C API the input asks for must fail
// with an error code (and, where the call has a handle, a message), never
// crash.
//
// Input: a program, optionally followed by a control block. The header's
// file_size says where the program ends and the loader ignores what
// follows (docs/program_format.md, "Header"), so the bytes after it steer
// the harness: the kernels' instruction set, per method the planner, the
// thread count, profiling, extra runs and deliberate misuses, and per run
// the size of dynamic dims, each input's layout (strides: padded,
// transposed, broadcast, overlapping) or misuse, and each output's
// caller-provided buffer (pare_method_set_output_buffer). A missing control
// byte reads as 0, which is the plain behaviour: so the seeds, programs with
// nothing after file_size, run as they always did (contiguous inputs, sizes
// 2 then 3 for dynamic dims, one thread, the default planner, no output
// buffers). fuzz/README.md documents the block; make_seeds.py writes seeds
// that use it.
//
// Built by fuzz/build.py against the full runtime (default selection: every
// build feature, threads and output_buffers included) with
// -fsanitize=fuzzer,address,undefined, and linked with memory_budget.cc.
// tests/fuzz replays saved inputs through this same file with
// replay_main.cc. Only the C API (pare.h) is used, as an app would. The
// harness is test code, not runtime code, so it may use libc.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/c_api/pare.h"
#include "runtime/core/scalar_type.h"

namespace {

// Inputs stay small so one execution stays fast; a method whose declared
// shapes need more is loaded and created but not run.
constexpr int64_t kMaxInputElements = 4096;
// A strided input's buffer (padding, gaps) spans at most this many elements;
// a layout needing more falls back to contiguous.
constexpr int64_t kMaxInputBufferElements = 4 * kMaxInputElements;
// Inputs and outputs the harness controls per method.
constexpr size_t kMaxInputs = 16;
constexpr size_t kMaxOutputs = 16;
// Caller-provided output buffers larger than this are not bound (the
// runtime's own memory is bounded by memory_budget.cc; these are not).
constexpr size_t kMaxOutputBufferBytes = size_t{64} << 20;
constexpr size_t kOutputBufferAlignment = 16;  // pare_method_set_output_buffer's requirement

// The C API's dtype codes are PyTorch's ScalarType codes (runtime/c_api/pare.h),
// so the runtime's own table gives the sizes: 0 for a code it does not support.
size_t element_size(int32_t dtype) {
  return pare::is_supported_scalar_type_code(dtype) ? pare::element_size(static_cast<pare::ScalarType>(dtype)) : 0;
}

// Every dtype the C API names, for inputs that accept any dtype.
constexpr int32_t kDtypes[] = {PARE_DTYPE_FLOAT, PARE_DTYPE_DOUBLE, PARE_DTYPE_HALF,  PARE_DTYPE_BFLOAT16,
                               PARE_DTYPE_INT,   PARE_DTYPE_LONG,   PARE_DTYPE_SHORT, PARE_DTYPE_CHAR,
                               PARE_DTYPE_BYTE,  PARE_DTYPE_BOOL};
constexpr size_t kNumDtypes = sizeof(kDtypes) / sizeof(kDtypes[0]);
// Codes that are no dtype of the C API (9 is: PARE_DTYPE_COMPLEX_FLOAT).
constexpr int32_t kBadDtypes[] = {8, 17, 10, 12, 13, 14, 16, -1};

// The C API accepted a misuse, or broke a promise it documents: a crash the
// fuzzer reports. The line of the failed check is printed first (on an
// "ERROR" line, which tools/fuzz.sh shows), so a CI log names the promise
// even when the crashing input is not kept.
[[noreturn]] void broken_promise(int line = __builtin_LINE()) {
  fprintf(stderr, "==fuzz== ERROR: broken C API promise at fuzz/loader_fuzzer.cc:%d\n", line);
  abort();
}

// A failure of a call that may fail must still say why (when there is a
// method to say it: a failed pare_method_create may leave none).
void expect_explained(pare_status status, const pare_method* method) {
  if (status != PARE_OK && method != nullptr && pare_method_error_message(method)[0] == '\0') broken_promise();
}

// A call the C API must refuse: a failure code and, from a method, a message.
void expect_refused(pare_status status, const pare_method* method) {
  if (status == PARE_OK) broken_promise();
  expect_explained(status, method);
}

// The control block: bytes after the program's declared file_size (u64 at
// header offset 16), read one at a time; past its end every byte is 0.
class Controls {
 public:
  Controls(const uint8_t* data, size_t size) {
    if (size < 64 || memcmp(data, "PARE", 4) != 0) return;
    uint64_t file_size = 0;
    for (int i = 0; i < 8; ++i) file_size |= uint64_t{data[16 + i]} << (8 * i);
    if (file_size < 64 || file_size >= size) return;
    next_ = data + file_size;
    left_ = size - static_cast<size_t>(file_size);
  }
  uint8_t next() {
    if (left_ == 0) return 0;
    --left_;
    return *next_++;
  }

 private:
  const uint8_t* next_ = nullptr;
  size_t left_ = 0;
};

// The harness's own element loops (filling inputs, reading outputs) carry no
// coverage instrumentation: their comparisons say nothing about the runtime,
// and with it they took over half of every execution's time (perf: 50% in
// __sanitizer_cov_trace_cmp8 under exercise_method). ASan still checks their
// memory accesses. noinline keeps them out of instrumented callers.
#define DATA_LOOP __attribute__((noinline, no_sanitize("coverage")))

// Small, finite values of every dtype (-2..2 cycling; 0/1 for bool), so the
// run exercises kernels rather than float-to-int conversions of NaN, which
// C++ leaves undefined and torch does too.
DATA_LOOP void fill(void* data, int32_t dtype, int64_t n, int salt) {
  for (int64_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((i + salt) % 5) - 2;
    switch (dtype) {
      case PARE_DTYPE_BYTE: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v + 2); break;
      case PARE_DTYPE_CHAR: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); break;
      case PARE_DTYPE_BOOL: static_cast<uint8_t*>(data)[i] = v > 0; break;
      case PARE_DTYPE_SHORT: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); break;
      case PARE_DTYPE_INT: static_cast<int32_t*>(data)[i] = v; break;
      case PARE_DTYPE_LONG: static_cast<int64_t*>(data)[i] = v; break;
      case PARE_DTYPE_FLOAT: static_cast<float*>(data)[i] = 0.5f * static_cast<float>(v); break;
      case PARE_DTYPE_DOUBLE: static_cast<double*>(data)[i] = 0.5 * v; break;
      // The runtime's own conversions, exact for these values.
      case PARE_DTYPE_HALF: static_cast<pare::Half*>(data)[i] = pare::Half(0.5f * static_cast<float>(v)); break;
      case PARE_DTYPE_BFLOAT16:
        static_cast<pare::BFloat16*>(data)[i] = pare::BFloat16(0.5f * static_cast<float>(v));
        break;
      default: break;
    }
  }
}

// Exactly `nbytes` long and 16-byte aligned (ASan reports a touch past the
// end): caller memory for inputs and output buffers.
void* allocate(size_t nbytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kOutputBufferAlignment, nbytes == 0 ? 1 : nbytes) != 0) return nullptr;
  return p;
}

int64_t numel_of(const pare_tensor_info& info) {
  int64_t numel = 1;
  for (int d = 0; d < info.ndim; ++d) numel *= info.sizes[d];
  return numel;
}

// Reads every byte of every output tensor, so an output whose sizes,
// strides or data pointer reach outside its memory is an ASan report here.
DATA_LOOP uint64_t touch_outputs(pare_method* method) {
  uint64_t sum = 0;
  const size_t n = pare_method_output_count(method);
  for (size_t i = 0; i < n; ++i) {
    int32_t kind = -1;
    if (pare_method_output_kind(method, i, &kind) != PARE_OK) broken_promise();  // execute succeeded: outputs exist
    if (kind != PARE_VALUE_TENSOR) continue;
    pare_tensor_info info;
    if (pare_method_output_tensor(method, i, &info) != PARE_OK) broken_promise();
    const size_t esize = element_size(info.dtype);
    if (esize == 0 || info.ndim < 0 || info.ndim > PARE_MAX_DIM) broken_promise();
    const int64_t numel = numel_of(info);
    if (numel == 0) continue;
    if (info.data == nullptr) broken_promise();
    // Walk the elements in index order through the strides.
    int64_t index[PARE_MAX_DIM] = {0};
    for (int64_t e = 0; e < numel && e < (int64_t{1} << 20); ++e) {
      int64_t offset = 0;
      for (int d = 0; d < info.ndim; ++d) offset += index[d] * info.strides[d];
      const uint8_t* p = static_cast<const uint8_t*>(info.data) + offset * static_cast<int64_t>(esize);
      for (size_t b = 0; b < esize; ++b) sum += p[b];
      for (int d = info.ndim - 1; d >= 0; --d) {
        if (++index[d] < info.sizes[d]) break;
        index[d] = 0;
      }
    }
  }
  return sum;
}

// One method instance and the caller memory bound to it.
struct MethodRun {
  pare_method* method = nullptr;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  void* inputs[kMaxInputs] = {nullptr};    // the buffer each input is set to
  void* outputs[kMaxOutputs] = {nullptr};  // each output's bound buffer, or null
  size_t bound_bytes[kMaxOutputs] = {0};   // and its size
  size_t output_bytes[kMaxOutputs] = {0};  // the last successful run's bytes of each tensor output
  bool output_known[kMaxOutputs] = {false};
  int32_t planner = PARE_PLANNER_SMALLER;
  bool profiling = false;

  ~MethodRun() {
    pare_method_destroy(method);  // first: it may still point at the buffers
    for (void* p : inputs) free(p);
    for (void* p : outputs) free(p);
  }
};

// Control byte: the thread count. 0 keeps it; 5..7 are refused counts.
void control_threads(MethodRun& run, uint8_t byte) {
  static constexpr uint32_t kCounts[] = {0, 1, 2, 3, 4, 0, 65, UINT32_MAX};
  const uint32_t threads = kCounts[byte & 7];
  if ((byte & 7) == 0) return;
  const uint32_t before = pare_method_num_threads(run.method);
  const pare_status status = pare_method_set_num_threads(run.method, threads);
  if ((byte & 7) >= 5) {
    expect_refused(status, run.method);
    if (pare_method_num_threads(run.method) != before) broken_promise();
    return;
  }
  // Starting threads may fail (out of memory): it must say so.
  expect_explained(status, run.method);
  if (status == PARE_OK && pare_method_num_threads(run.method) != threads) broken_promise();
}

// Control byte: the planner. 0 keeps it; 3 sets the default or a refused value.
void control_planner(MethodRun& run, uint8_t byte) {
  int32_t planner = 0;
  switch (byte & 3) {
    case 0: return;
    case 1: planner = PARE_PLANNER_FIRST_FIT; break;
    case 2: planner = PARE_PLANNER_GREEDY_BY_SIZE; break;
    default: {
      const int32_t k = byte >> 4;
      switch ((byte >> 2) & 3) {
        case 0: planner = PARE_PLANNER_SMALLER; break;
        case 1: planner = PARE_PLANNER_GREEDY_BY_SIZE + 1 + k; break;
        case 2: planner = -1 - k; break;
        default: planner = INT32_MIN + k; break;
      }
    }
  }
  const pare_status status = pare_method_set_planner(run.method, planner);
  if (planner < PARE_PLANNER_SMALLER || planner > PARE_PLANNER_GREEDY_BY_SIZE) {
    expect_refused(status, run.method);
  } else if (status != PARE_OK) {
    broken_promise();  // every pare_planner value is accepted
  } else {
    run.planner = planner;
  }
}

// Control byte: output `k`'s buffer before a run. 0 keeps the binding.
void control_output(MethodRun& run, size_t k, uint8_t byte) {
  const int mode = byte & 7;
  const size_t arg = byte >> 3;
  if (mode == 0) return;
  if (mode == 6) {  // an index past the outputs
    expect_refused(pare_method_set_output_buffer(run.method, run.num_outputs + arg, nullptr, 0), run.method);
    return;
  }
  if (mode == 4) {  // unbind
    const pare_status status = pare_method_set_output_buffer(run.method, k, nullptr, 0);
    expect_explained(status, run.method);
    if (status == PARE_OK) {
      free(run.outputs[k]);
      run.outputs[k] = nullptr;
    }
    return;
  }
  // The size the output needed last time (exact, one byte short, or with
  // slack); before any run, a size from the control byte.
  const size_t known = run.output_known[k] ? run.output_bytes[k] : 16 * arg;
  size_t nbytes = known;
  if (mode == 2 && known > 0) nbytes = known - 1;
  if (mode == 3) nbytes = known + 16 * (arg + 1);
  if (mode == 7) nbytes = 0;
  if (nbytes > kMaxOutputBufferBytes) return;
  if (mode == 5) {  // one byte off the required alignment
    uint8_t* buffer = static_cast<uint8_t*>(allocate(nbytes + 1));
    if (buffer == nullptr) return;
    expect_refused(pare_method_set_output_buffer(run.method, k, buffer + 1, nbytes), run.method);
    free(buffer);
    return;
  }
  void* buffer = allocate(nbytes);
  if (buffer == nullptr) return;
  const pare_status status = pare_method_set_output_buffer(run.method, k, buffer, nbytes);
  expect_explained(status, run.method);  // e.g. a build without output_buffers
  if (status != PARE_OK) {
    free(buffer);
    return;
  }
  free(run.outputs[k]);  // the runtime let go of it
  run.outputs[k] = buffer;
  run.bound_bytes[k] = nbytes;
}

// An input as the plain run sets it: the declared dtype (Float where any is
// allowed), the declared sizes (`dynamic` where any size is allowed, rank 2
// where any rank is). False when it would be too large to run.
struct InputShape {
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[PARE_MAX_DIM + 1];  // + 1: room for a rank one too high
  int64_t numel;
  bool dtype_declared;
  bool rank_declared;
  int fixed_dim;  // a dim whose size is declared, or -1
};

bool recompute_numel(InputShape* s) {
  s->numel = 1;
  for (int32_t d = 0; d < s->ndim; ++d) {
    if (s->sizes[d] > kMaxInputElements) return false;
    s->numel *= s->sizes[d];
    if (s->numel > kMaxInputElements) return false;
  }
  return true;
}

bool plain_shape(pare_method* method, size_t i, int64_t dynamic, InputShape* s) {
  pare_tensor_info info;
  if (pare_method_input_info(method, i, &info) != PARE_OK) return false;
  s->dtype_declared = info.dtype >= 0;
  s->dtype = s->dtype_declared ? info.dtype : PARE_DTYPE_FLOAT;
  if (element_size(s->dtype) == 0) return false;
  s->rank_declared = info.ndim >= 0;
  s->ndim = s->rank_declared ? info.ndim : 2;
  if (s->ndim > PARE_MAX_DIM) return false;
  s->fixed_dim = -1;
  for (int32_t d = 0; d < s->ndim; ++d) {
    const bool fixed = s->rank_declared && info.sizes[d] >= 0;
    s->sizes[d] = fixed ? info.sizes[d] : dynamic;
    if (fixed && s->fixed_dim < 0) s->fixed_dim = d;
  }
  return recompute_numel(s);
}

// Strides (in elements) for a layout the control byte picks, or false for
// contiguous. Every layout is one the C API accepts (strides >= 0).
bool layout_strides(const InputShape& s, int mode, int arg, int64_t* strides) {
  const int32_t n = s.ndim;
  int64_t step = 1;
  for (int32_t d = n - 1; d >= 0; --d) {  // contiguous
    strides[d] = step;
    step *= s.sizes[d] > 0 ? s.sizes[d] : 1;
  }
  switch (mode) {
    case 1: return true;  // contiguous, spelled out
    case 2: {             // padded rows and a gap between elements
      const int64_t pad = (arg >> 1) & 3;
      if (n > 0) strides[n - 1] = 1 + (arg & 1);
      for (int32_t d = n - 2; d >= 0; --d) strides[d] = strides[d + 1] * (s.sizes[d + 1] + pad);
      return true;
    }
    case 3: {  // column-major (every dim transposed)
      int64_t col = 1;
      for (int32_t d = 0; d < n; ++d) {
        strides[d] = col;
        col *= s.sizes[d] > 0 ? s.sizes[d] : 1;
      }
      return true;
    }
    case 4:  // one dim broadcast (expand)
      if (n > 0) strides[arg % n] = 0;
      return true;
    case 5:  // every element the same one
      for (int32_t d = 0; d < n; ++d) strides[d] = 0;
      return true;
    case 6:  // overlapping windows (as_strided)
      for (int32_t d = 0; d < n; ++d) strides[d] = 1;
      return true;
    default: return false;
  }
}

// Input `i`'s misuse for control `mode` (7..15): every one must be refused.
// Modes 11 and 13 on an input that accepts any dtype / rank are not misuse:
// they change the dtype / rank the run uses (in *s).
void misuse_input(MethodRun& run, size_t i, int mode, int arg, InputShape* s, void* data, size_t nbytes) {
  pare_method* m = run.method;
  int64_t strides[PARE_MAX_DIM + 1];
  for (int32_t d = 0; d < s->ndim; ++d) strides[d] = 1;
  switch (mode) {
    case 7:  // a negative stride
      if (s->ndim == 0) return;
      strides[arg % s->ndim] = -1 - arg;
      expect_refused(pare_method_set_input(m, i, s->dtype, s->sizes, s->ndim, strides, data, nbytes), m);
      return;
    case 8:  // a buffer one byte short
      if (s->numel == 0) return;
      expect_refused(pare_method_set_input(m, i, s->dtype, s->sizes, s->ndim, nullptr, data, nbytes - 1), m);
      return;
    case 9:  // no data
      if (s->numel == 0) return;
      expect_refused(pare_method_set_input(m, i, s->dtype, s->sizes, s->ndim, nullptr, nullptr, nbytes), m);
      return;
    case 10: {  // a stride whose offsets overflow (or leave the buffer)
      int32_t d = 0;
      while (d < s->ndim && s->sizes[d] < 2) ++d;
      if (d == s->ndim || s->numel == 0) return;
      layout_strides(*s, 1, 0, strides);
      strides[d] = INT64_MAX - arg;
      expect_refused(pare_method_set_input(m, i, s->dtype, s->sizes, s->ndim, strides, data, nbytes), m);
      return;
    }
    case 11:  // another dtype
      if (!s->dtype_declared) {
        s->dtype = kDtypes[arg % kNumDtypes];
      } else {
        int32_t other = kDtypes[arg % kNumDtypes];
        if (other == s->dtype) other = kDtypes[(arg + 1) % kNumDtypes];
        expect_refused(pare_method_set_input(m, i, other, s->sizes, s->ndim, nullptr, data, nbytes), m);
      }
      return;
    case 12:  // no dtype at all
      expect_refused(pare_method_set_input(m, i, kBadDtypes[arg % 8], s->sizes, s->ndim, nullptr, data, nbytes), m);
      return;
    case 13:  // another rank
      if (!s->rank_declared) {
        const int64_t dynamic = s->ndim > 0 ? s->sizes[0] : 2;
        s->ndim = arg % 5;
        for (int32_t d = 0; d < s->ndim; ++d) s->sizes[d] = dynamic;
        if (!recompute_numel(s)) s->ndim = 0;  // a scalar instead
        recompute_numel(s);
      } else {
        InputShape wrong = *s;
        wrong.ndim = s->ndim < PARE_MAX_DIM ? s->ndim + 1 : s->ndim - 1;
        wrong.sizes[wrong.ndim - 1] = 1;
        expect_refused(pare_method_set_input(m, i, s->dtype, wrong.sizes, wrong.ndim, nullptr, data, nbytes), m);
      }
      return;
    case 14:  // an index past the inputs, or more dims than PARE_MAX_DIM
      if (arg & 1) {
        int64_t sizes[PARE_MAX_DIM + 1];
        for (int64_t& size : sizes) size = 1;
        expect_refused(pare_method_set_input(m, i, s->dtype, sizes, PARE_MAX_DIM + 1, nullptr, data, nbytes), m);
      } else {
        expect_refused(
            pare_method_set_input(m, run.num_inputs + arg, s->dtype, s->sizes, s->ndim, nullptr, data, nbytes), m);
      }
      return;
    default:  // 15: no sizes, or a declared size changed
      if (!(arg & 1)) {
        if (s->ndim > 0) {
          expect_refused(pare_method_set_input(m, i, s->dtype, nullptr, s->ndim, nullptr, data, nbytes), m);
        }
      } else if (s->fixed_dim >= 0) {
        InputShape wrong = *s;
        wrong.sizes[s->fixed_dim] += 1;
        expect_refused(pare_method_set_input(m, i, s->dtype, wrong.sizes, s->ndim, nullptr, data, nbytes), m);
      }
      return;
  }
}

// Sets input `i` for one run as control byte `byte` says: 0 the plain
// contiguous input, 1..6 a strided layout of it, 7..15 a misuse first.
// False when the input could not be set (nothing to run).
bool set_input(MethodRun& run, size_t i, int64_t dynamic, int salt, uint8_t byte) {
  const int mode = byte & 15;
  const int arg = byte >> 4;
  InputShape s;
  if (!plain_shape(run.method, i, dynamic, &s)) return false;
  if (mode >= 7) {
    const size_t nbytes = static_cast<size_t>(s.numel) * element_size(s.dtype);
    void* scratch = allocate(nbytes);
    if (scratch == nullptr) return false;
    misuse_input(run, i, mode, arg, &s, scratch, nbytes);
    free(scratch);
  }
  const size_t esize = element_size(s.dtype);
  int64_t strides[PARE_MAX_DIM];
  bool strided = layout_strides(s, mode, arg, strides);
  // Elements the buffer spans: one past the highest offset reached.
  int64_t span = s.numel;
  if (strided && s.numel > 0) {
    span = 1;
    for (int32_t d = 0; d < s.ndim; ++d) span += (s.sizes[d] - 1) * strides[d];
    if (span > kMaxInputBufferElements) {
      strided = false;
      span = s.numel;
    }
  }
  // Exactly sized: a kernel reading past an input is a report.
  const size_t nbytes = static_cast<size_t>(span) * esize;
  void* buffer = allocate(nbytes);
  if (buffer == nullptr) return false;
  fill(buffer, s.dtype, span, salt);
  const pare_status status = pare_method_set_input(run.method, i, s.dtype, s.sizes, static_cast<size_t>(s.ndim),
                                                   strided ? strides : nullptr, buffer, nbytes);
  expect_explained(status, run.method);
  if (status != PARE_OK) {
    free(buffer);
    return false;  // refused cleanly: nothing to run
  }
  free(run.inputs[i]);  // the input no longer points at it
  run.inputs[i] = buffer;
  return true;
}

// A program with state (format 1.2): every listed state reads back with
// its storage, refuses another dtype with a message, and resets.
void check_state(pare_method* method) {
  const char* name = nullptr;
  for (size_t k = 0; (name = pare_method_state_name(method, k)) != nullptr; ++k) {
    pare_tensor_info info;
    if (pare_method_state_tensor(method, name, &info) != PARE_OK) broken_promise();
    const size_t nbytes = static_cast<size_t>(numel_of(info)) * element_size(info.dtype);
    if (nbytes > 0 && info.data == nullptr) broken_promise();
    const int32_t other = info.dtype == PARE_DTYPE_FLOAT ? PARE_DTYPE_LONG : PARE_DTYPE_FLOAT;
    expect_refused(
        pare_method_set_state(method, name, other, info.sizes, static_cast<size_t>(info.ndim), info.data, nbytes),
        method);
  }
  if (pare_method_state_name(method, 0) != nullptr && pare_method_reset_state(method) != PARE_OK) broken_promise();
  expect_refused(pare_method_reset_state(nullptr), nullptr);
}

// What the C API promises after a successful execute, beyond touch_outputs.
void check_after_execute(MethodRun& run) {
  touch_outputs(run.method);
  check_state(run.method);
  for (size_t k = 0; k < run.num_outputs && k < kMaxOutputs; ++k) {
    int32_t kind = -1;
    if (pare_method_output_kind(run.method, k, &kind) != PARE_OK) broken_promise();
    if (kind != PARE_VALUE_TENSOR) {
      if (run.outputs[k] != nullptr) broken_promise();  // a bound non-tensor output fails the run
      run.output_known[k] = false;
      continue;
    }
    pare_tensor_info info;
    if (pare_method_output_tensor(run.method, k, &info) != PARE_OK) broken_promise();
    const size_t nbytes = static_cast<size_t>(numel_of(info)) * element_size(info.dtype);
    if (run.outputs[k] != nullptr) {
      // A bound output is left in its buffer, contiguous (an empty one
      // has no data pointer).
      if (nbytes > run.bound_bytes[k] || (nbytes > 0 && info.data != run.outputs[k])) broken_promise();
      int64_t step = 1;
      for (int d = info.ndim - 1; d >= 0 && nbytes > 0; --d) {
        if (info.sizes[d] > 1 && info.strides[d] != step) broken_promise();
        step *= info.sizes[d];
      }
    }
    run.output_known[k] = true;
    run.output_bytes[k] = nbytes;
  }
  // The plan this run used keeps the layout its planner asks for.
  pare_memory_stats stats;
  if (pare_method_memory_stats(run.method, &stats) != PARE_OK) broken_promise();
  const uint64_t first_fit = stats.first_fit_arena_bytes;
  const uint64_t greedy = stats.greedy_arena_bytes;
  switch (run.planner) {
    case PARE_PLANNER_FIRST_FIT:
      if (greedy != 0 || stats.planned_arena_bytes != first_fit) broken_promise();
      break;
    case PARE_PLANNER_GREEDY_BY_SIZE:  // greedy 0: its working arrays did not fit, first fit stands
      if (stats.planned_arena_bytes != (greedy != 0 ? greedy : first_fit)) broken_promise();
      break;
    default:
      if (stats.planned_arena_bytes != (greedy != 0 && greedy < first_fit ? greedy : first_fit)) broken_promise();
      break;
  }
  if (run.profiling) {
    const size_t n = pare_method_instruction_count(run.method);
    const char* op = nullptr;
    uint64_t calls = 0;
    uint64_t ticks = 0;
    for (size_t i = 0; i < n; ++i) {
      if (pare_method_profile(run.method, i, &op, &calls, &ticks) != PARE_OK || op == nullptr) broken_promise();
    }
    expect_refused(pare_method_profile(run.method, n, &op, &calls, &ticks), run.method);
  }
}

// Per-method control byte `flags`.
constexpr uint8_t kProfile = 1 << 0;        // profiling on
constexpr uint8_t kMisuseEarly = 1 << 1;    // calls before any input is set
constexpr int kExtraRunsShift = 2;          // bits 2-3: 0..3 runs after the two
constexpr uint8_t kThreadsPerRun = 1 << 4;  // a thread-count byte before each run
constexpr uint8_t kPlannerPerRun = 1 << 5;  // a planner byte before each run

void exercise_method(pare_program* program, const char* name, Controls& controls) {
  MethodRun run;
  const pare_status created = pare_method_create(program, name, &run.method);
  expect_explained(created, run.method);
  if (created != PARE_OK) return;
  run.num_inputs = pare_method_input_count(run.method);
  run.num_outputs = pare_method_output_count(run.method);
  if (run.num_inputs > kMaxInputs) return;
  const uint8_t flags = controls.next();
  if (flags & kMisuseEarly) {
    if (run.num_inputs > 0) expect_refused(pare_method_execute(run.method), run.method);
    int32_t kind = 0;
    if (pare_method_output_kind(run.method, 0, &kind) == PARE_OK) broken_promise();
    pare_tensor_info info;
    if (pare_method_input_info(run.method, run.num_inputs, &info) == PARE_OK) broken_promise();
    const char* op = nullptr;
    uint64_t calls = 0;
    uint64_t ticks = 0;
    expect_refused(pare_method_profile(run.method, 0, &op, &calls, &ticks), run.method);  // profiling is off
  }
  if (flags & kProfile) {
    const pare_status status = pare_method_set_profiling(run.method, 1);
    expect_explained(status, run.method);
    run.profiling = status == PARE_OK;
  }
  control_planner(run, controls.next());
  control_threads(run, controls.next());
  const int runs = 2 + ((flags >> kExtraRunsShift) & 3);
  for (int r = 0; r < runs; ++r) {
    // Dynamic dims: 2, then 3 (the second run plans memory again), then 2
    // (a plan kept from the first run), unless the control byte says 0..4.
    const uint8_t size_byte = controls.next();
    const int64_t dynamic = size_byte != 0 ? (size_byte - 1) % 5 : (r == 1 ? 3 : 2);
    if (flags & kThreadsPerRun) control_threads(run, controls.next());
    if (flags & kPlannerPerRun) control_planner(run, controls.next());
    for (size_t k = 0; k < run.num_outputs && k < kMaxOutputs; ++k) control_output(run, k, controls.next());
    bool inputs_set = true;
    for (size_t i = 0; i < run.num_inputs && inputs_set; ++i) {
      inputs_set = set_input(run, i, dynamic, r, controls.next());
    }
    if (!inputs_set) {
      if (r == 0) return;  // too large, or refused: as the plain run, nothing to run
      continue;
    }
    if (run.num_inputs > 0 && run.num_outputs > 0) {
      // The outputs of an earlier run died with set_input.
      int32_t kind = 0;
      if (pare_method_output_kind(run.method, 0, &kind) == PARE_OK) broken_promise();
    }
    const pare_status status = pare_method_execute(run.method);
    expect_explained(status, run.method);
    if (status == PARE_OK) check_after_execute(run);
  }
}

// Program-level control byte: bits 0-2 the kernels' instruction set cap
// (pare_set_max_isa, process-wide, so set for every input); bit 3 a
// method that does not exist.
void control_isa(uint8_t byte) {
  // The cap of a process that never set one (the CPU's best), valid on every host.
  static const char* const default_isa = pare_kernel_isa();
  if (pare_set_max_isa(default_isa) != PARE_OK) broken_promise();
  static const char* const kRefused[] = {"x86_64_v5", "", nullptr, "X86_64_V3"};
  switch (byte & 7) {
    case 1: (void)pare_set_max_isa("x86_64_baseline"); break;  // refused by builds without SSE2 kernels
    case 2: (void)pare_set_max_isa("x86_64_v3"); break;
    case 3:
    case 4: {
      const char* before = pare_kernel_isa();
      if (pare_set_max_isa(kRefused[(byte >> 3) & 3]) == PARE_OK) broken_promise();
      if (strcmp(pare_kernel_isa(), before) != 0) broken_promise();
      break;
    }
    default: break;
  }
}
constexpr uint8_t kMisuseMissingMethod = 1 << 3;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Controls controls(data, size);
  const uint8_t program_flags = controls.next();
  control_isa(program_flags);
  // Odd sizes load a copy, even sizes borrow libFuzzer's exactly sized
  // buffer (usually not 64-byte aligned, so constants are copied out).
  const uint32_t flags = (size & 1) ? PARE_LOAD_COPY : 0;
  pare_program* program = nullptr;
  const pare_status status = pare_program_load(data, size, flags, &program);
  if (status != PARE_OK && program != nullptr && pare_program_error_message(program)[0] == '\0') {
    broken_promise();  // a failure always says why
  }
  if (program_flags & kMisuseMissingMethod) {
    // No such method, or (when the load failed) no program to make it from.
    pare_method* method = nullptr;
    const pare_status refused = pare_method_create(program, "\x01 no such method", &method);
    expect_refused(refused, method);
    pare_method_destroy(method);
  }
  if (status == PARE_OK) {
    const size_t methods = pare_program_method_count(program);
    for (size_t m = 0; m < methods && m < 8; ++m) {
      const char* name = pare_program_method_name(program, m);
      if (name == nullptr) broken_promise();  // a loaded program names all its methods
      exercise_method(program, name, controls);
    }
  }
  pare_program_destroy(program);
  return 0;
}
