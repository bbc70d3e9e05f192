// The C API (pare.h) over the C++ runtime. The only translation unit with
// exported symbols; everything it calls has hidden visibility, so two
// runtimes loaded into one process never bind to each other's internals.

#include "runtime/c_api/pare.h"

#include "runtime/core/cpu.h"
#include "runtime/core/format.h"
#include "runtime/executor/method.h"

struct pare_program {
  pare::Program program;
};

struct pare_method {
  pare::Method method;
  explicit pare_method(pare::Program& p) : method(p) {}
};

namespace pare {
namespace {

constexpr const char kVersion[] = "0.1.0";
// The error message of a NULL program or method handle (one string for both).
constexpr const char kNullHandle[] = "NULL handle (out of memory or never created)";

static_assert(PARE_MAX_DIM == kMaxDim, "pare.h and the runtime disagree on the rank limit");
// pare.h's pare_status is generated from runtime/core/errors.def: every
// constant has its Error's number (else run python -m codegen.tables).
#define PARE_ERROR(name, code, c_name)                                               \
  static_assert(static_cast<uint32_t>(c_name) == static_cast<uint32_t>(Error::name), \
                #c_name " mirrors pare::Error::" #name);
#include "runtime/core/errors.def"
static_assert(PARE_FORMAT_VERSION_MAJOR == kFormatVersionMajor, "format version mismatch");
static_assert(PARE_LOAD_COPY == Program::kLoadCopyBuffer, "load flags mismatch");

pare_status status(Error e) { return static_cast<pare_status>(static_cast<uint32_t>(e)); }

template <typename T, typename... Args>
T* create(Args&... args) {
  void* memory = pare_pal_malloc(sizeof(T), alignof(T) < 16 ? 16 : alignof(T));
  if (memory == nullptr) return nullptr;
  return PARE_PLACEMENT_NEW(memory) T(args...);
}

template <typename T>
void destroy(T* object) {
  if (object == nullptr) return;
  object->~T();
  pare_pal_free(object);
}

void fill_info(const Tensor& t, pare_tensor_info* info) {
  info->dtype = static_cast<int32_t>(t.dtype);
  info->ndim = t.dim;
  for (size_t d = 0; d < kMaxDim; ++d) {
    info->sizes[d] = d < t.dim ? t.sizes[d] : 0;
    info->strides[d] = d < t.dim ? t.strides[d] : 0;
  }
  info->data = t.numel() > 0 ? t.data() : nullptr;
}

// Every failing call leaves a message on the handle (never a stale one).
// Getters take const handles in pare.h; the message is their only effect.
Diagnostics& diagnostics_of(const pare_method* method) {
  return const_cast<pare_method*>(method)->method.diagnostics();
}

// The output, or null with a message explaining why there is none.
const Value* output_value(const pare_method* method, size_t index) {
  if (method == nullptr) return nullptr;
  const Value* v = method->method.output(index);
  if (v == nullptr) {
    const size_t count = method->method.initialized() ? method->method.desc().num_outputs : 0;
    if (index >= count) {
      PARE_FAIL(diagnostics_of(method), Error::IndexOutOfRange,
                "output index %zu is out of range: the method has %zu outputs", index, count);
    } else {
      PARE_FAIL(diagnostics_of(method), Error::InvalidState,
                "no outputs: execute() has not succeeded since the last set_input()");
    }
  }
  return v;
}

pare_status output_kind_error(const pare_method* method, size_t index, const Value& v, ValueKind wanted) {
  return status(PARE_FAIL(diagnostics_of(method), Error::InvalidArgument, "output %zu is a %s value, not %s", index,
                          to_string(v.kind), to_string(wanted)));
}

// The index-th set element of a trace table, for the enumeration functions.
template <typename Pred>
bool nth(size_t count, size_t index, Pred pred, size_t* found) {
  for (size_t i = 0; i < count; ++i) {
    if (pred(i)) {
      if (index == 0) {
        *found = i;
        return true;
      }
      --index;
    }
  }
  return false;
}

template <typename Pred>
size_t count_where(size_t count, Pred pred) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += pred(i) ? 1 : 0;
  return n;
}

// The selected entries of a class or feature table: how many, and the name
// of the index-th (null past the last).
template <size_t N>
PARE_ALWAYS_INLINE size_t count_selected(const NamedEntry (&table)[N]) {
  return count_where(N, [&table](size_t i) { return table[i].selected; });
}
template <size_t N>
PARE_ALWAYS_INLINE const char* nth_selected_name(const NamedEntry (&table)[N], size_t index) {
  size_t found = 0;
  return nth(
             N, index, [&table](size_t i) { return table[i].selected; }, &found)
             ? table[found].name
             : nullptr;
}

// (tag, dtype) pairs reached, enumerated as tag-major, dtype-code order.
bool trace_kernel_dtype_at(const Observer& o, size_t index, size_t* tag, int* dtype) {
  for (size_t t = 0; t < kNumTags; ++t) {
    const uint16_t mask = o.kernel_dtypes(static_cast<TagId>(t));
    for (int code = 0; code < 16; ++code) {
      if ((mask & (1u << code)) == 0) continue;
      if (index == 0) {
        *tag = t;
        *dtype = code;
        return true;
      }
      --index;
    }
  }
  return false;
}

// The CPU copy of method `name` that tools.tracer export --delegate-fallback
// writes, "<name>__cpu", or null (also in a runtime with no backend, where
// no method can fail for want of one: the class is a link-time constant).
const MethodDesc* delegate_fallback(const Program& program, const char* name) {
  if (!class_selected(ClassId::Delegate)) return nullptr;
  const char kSuffix[] = "__cpu";
  char fallback[256];
  size_t n = 0;
  for (; name[n] != '\0'; ++n) {
    if (n + sizeof(kSuffix) >= sizeof(fallback)) return nullptr;
    fallback[n] = name[n];
  }
  for (size_t i = 0; i < sizeof(kSuffix); ++i) fallback[n + i] = kSuffix[i];
  return program.find_method(fallback);
}

}  // namespace
}  // namespace pare

using pare::Error;

extern "C" {

const char* pare_version(void) { return pare::kVersion; }
uint32_t pare_format_version_major(void) { return pare::kFormatVersionMajor; }
int pare_is_tracing_build(void) { return pare::Observer::kEnabled ? 1 : 0; }
const char* pare_isa(void) {
#if defined(PARE_X86_64_DISPATCH)
  return "x86_64_auto";
#elif defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
  return "x86_64_v3";
#elif defined(__x86_64__)
  return "x86_64_baseline";
#elif defined(__aarch64__)
  return "arm64_neon";
#else
  return "unknown";
#endif
}
const char* pare_kernel_isa(void) { return pare::cpu::isa_name(pare::cpu::kernel_isa()); }
pare_status pare_set_max_isa(const char* isa) {
  pare::cpu::Isa cap;
  if (!pare::cpu::isa_from_name(isa, &cap)) return PARE_ERROR_INVALID_ARGUMENT;
  const bool arm64_cap = cap == pare::cpu::Isa::arm64_neon || cap == pare::cpu::Isa::arm64_dotprod;
#if defined(__x86_64__)
  if (arm64_cap) return PARE_ERROR_INVALID_ARGUMENT;
#else
  if (!arm64_cap) return PARE_ERROR_INVALID_ARGUMENT;
#endif
  return pare::cpu::set_max_isa(cap) ? PARE_OK : PARE_ERROR_NOT_IMPLEMENTED;
}
const char* pare_status_name(pare_status s) { return pare::to_string(static_cast<Error>(s)); }
const char* pare_dtype_name(int32_t dtype) {
  return pare::is_supported_scalar_type_code(dtype) ? pare::to_string(static_cast<pare::ScalarType>(dtype)) : "Unknown";
}

size_t pare_op_count(void) { return pare::kNumOps; }
const char* pare_op_name(size_t index) { return index < pare::kNumOps ? pare::kOpTable[index].name : nullptr; }
size_t pare_kernel_dtype_count(void) { return pare::kNumKernelDtypes; }
pare_status pare_kernel_dtype(size_t index, const char** tag, const char** dtype_name) {
  if (index >= pare::kNumKernelDtypes || tag == nullptr || dtype_name == nullptr) {
    return PARE_ERROR_INDEX_OUT_OF_RANGE;
  }
  const pare::KernelDtypeEntry& e = pare::kKernelDtypeTable[index];
  *tag = e.tag_name;
  *dtype_name = pare::to_string(e.dtype);
  return PARE_OK;
}
size_t pare_class_count(void) { return pare::count_selected(pare::kClasses); }
const char* pare_class_name(size_t index) { return pare::nth_selected_name(pare::kClasses, index); }
size_t pare_feature_count(void) { return pare::count_selected(pare::kFeatures); }
const char* pare_feature_name(size_t index) { return pare::nth_selected_name(pare::kFeatures, index); }

pare_status pare_program_load(const void* data, size_t size, uint32_t flags, pare_program** out_program) {
  if (out_program == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  *out_program = pare::create<pare_program>();
  if (*out_program == nullptr) return PARE_ERROR_OUT_OF_MEMORY;
  return pare::status((*out_program)->program.load(data, size, flags));
}

pare_status pare_program_load_file(const char* path, pare_program** out_program) {
  if (out_program == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  *out_program = pare::create<pare_program>();
  if (*out_program == nullptr) return PARE_ERROR_OUT_OF_MEMORY;
  return pare::status((*out_program)->program.load_file(path));
}

void pare_program_destroy(pare_program* program) { pare::destroy(program); }

const char* pare_program_error_message(const pare_program* program) {
  if (program == nullptr) return pare::kNullHandle;
  return program->program.diagnostics().message();
}

int pare_program_constants_in_place(const pare_program* program) {
  return program != nullptr && program->program.loaded() && program->program.constants_in_place() ? 1 : 0;
}

size_t pare_program_method_count(const pare_program* program) {
  return program != nullptr ? program->program.num_methods() : 0;
}

const char* pare_program_method_name(const pare_program* program, size_t index) {
  if (program == nullptr || index >= program->program.num_methods()) return nullptr;
  return program->program.method(static_cast<uint32_t>(index)).name;
}

pare_status pare_method_create(pare_program* program, const char* name, pare_method** out_method) {
  return pare_method_create_sharing_state(program, name, nullptr, out_method);
}

pare_status pare_method_create_sharing_state(pare_program* program, const char* name, pare_method* share_with,
                                             pare_method** out_method) {
  if (out_method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  *out_method = nullptr;
  if (program == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  *out_method = pare::create<pare_method>(program->program);
  if (*out_method == nullptr) return PARE_ERROR_OUT_OF_MEMORY;
  Error e = (*out_method)->method.init(name, share_with != nullptr ? &share_with->method : nullptr);
  if (pare::class_selected(pare::ClassId::Delegate) && e == Error::BackendUnavailable && name != nullptr) {
    // A backend this device lacks: the program's CPU copy of the method
    // (tools.tracer export --delegate-fallback), when it has one.
    const pare::MethodDesc* fallback = pare::delegate_fallback(program->program, name);
    if (fallback != nullptr) {
      pare::destroy(*out_method);
      *out_method = pare::create<pare_method>(program->program);
      if (*out_method == nullptr) return PARE_ERROR_OUT_OF_MEMORY;
      e = (*out_method)->method.init(fallback->name, share_with != nullptr ? &share_with->method : nullptr);
    }
  }
  if (e != Error::Ok) {
    // Also report on the program, where a caller that only keeps the
    // program handle looks.
    pare::Diagnostics& diag = program->program.diagnostics();
    PARE_FAIL(diag, e, "%s", (*out_method)->method.diagnostics().message());
  }
  return pare::status(e);
}

void pare_method_destroy(pare_method* method) { pare::destroy(method); }

const char* pare_method_error_message(const pare_method* method) {
  if (method == nullptr) return pare::kNullHandle;
  return method->method.diagnostics().message();
}

size_t pare_method_input_count(const pare_method* method) {
  return method != nullptr && method->method.initialized() ? method->method.desc().num_inputs : 0;
}

size_t pare_method_output_count(const pare_method* method) {
  return method != nullptr && method->method.initialized() ? method->method.desc().num_outputs : 0;
}

pare_status pare_method_input_info(const pare_method* method, size_t index, pare_tensor_info* info) {
  if (method == nullptr || info == nullptr || !method->method.initialized()) return PARE_ERROR_INVALID_ARGUMENT;
  const pare::MethodDesc& m = method->method.desc();
  if (index >= m.num_inputs) {
    return pare::status(PARE_FAIL(pare::diagnostics_of(method), Error::IndexOutOfRange,
                                  "input index %zu is out of range: method '%s' has %u inputs", index, m.name,
                                  m.num_inputs));
  }
  const pare::ValueDesc& d = m.values[m.inputs[index]];
  info->dtype = d.dtype == pare::ScalarType::Undefined ? -1 : static_cast<int32_t>(d.dtype);
  info->ndim = d.dim == pare::ValueDesc::kUnknownRank ? -1 : d.dim;
  for (size_t k = 0; k < PARE_MAX_DIM; ++k) {
    info->sizes[k] = info->ndim >= 0 && k < d.dim ? d.sizes[k] : 0;
    info->strides[k] = 0;
  }
  info->data = nullptr;
  return PARE_OK;
}

pare_status pare_method_set_input(pare_method* method, size_t index, int32_t dtype, const int64_t* sizes, size_t ndim,
                                  const int64_t* strides, const void* data, size_t nbytes) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.set_input(index, dtype, sizes, ndim, strides, data, nbytes));
}

pare_status pare_method_execute(pare_method* method) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.execute());
}

pare_status pare_method_output_kind(const pare_method* method, size_t index, int32_t* kind) {
  const pare::Value* v = pare::output_value(method, index);
  if (v == nullptr || kind == nullptr) return PARE_ERROR_INVALID_STATE;
  *kind = static_cast<int32_t>(v->kind);
  return PARE_OK;
}

pare_status pare_method_output_tensor(const pare_method* method, size_t index, pare_tensor_info* info) {
  const pare::Value* v = pare::output_value(method, index);
  if (v == nullptr || info == nullptr) return PARE_ERROR_INVALID_STATE;
  if (!v->is_tensor()) return pare::output_kind_error(method, index, *v, pare::ValueKind::Tensor);
  pare::fill_info(v->tensor, info);
  return PARE_OK;
}

pare_status pare_method_output_int(const pare_method* method, size_t index, int64_t* value) {
  const pare::Value* v = pare::output_value(method, index);
  if (v == nullptr || value == nullptr) return PARE_ERROR_INVALID_STATE;
  if (v->kind != pare::ValueKind::Int) return pare::output_kind_error(method, index, *v, pare::ValueKind::Int);
  *value = v->int_value;
  return PARE_OK;
}

pare_status pare_method_output_double(const pare_method* method, size_t index, double* value) {
  const pare::Value* v = pare::output_value(method, index);
  if (v == nullptr || value == nullptr) return PARE_ERROR_INVALID_STATE;
  if (v->kind != pare::ValueKind::Double) return pare::output_kind_error(method, index, *v, pare::ValueKind::Double);
  *value = v->double_value;
  return PARE_OK;
}

pare_status pare_method_output_bool(const pare_method* method, size_t index, int32_t* value) {
  const pare::Value* v = pare::output_value(method, index);
  if (v == nullptr || value == nullptr) return PARE_ERROR_INVALID_STATE;
  if (v->kind != pare::ValueKind::Bool) return pare::output_kind_error(method, index, *v, pare::ValueKind::Bool);
  *value = v->bool_value ? 1 : 0;
  return PARE_OK;
}

pare_status pare_method_set_output_buffer(pare_method* method, size_t index, void* data, size_t nbytes) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.set_output_buffer(index, data, nbytes));
}

pare_status pare_method_memory_stats(const pare_method* method, pare_memory_stats* stats) {
  if (method == nullptr || stats == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  const pare::MethodMemoryStats s = method->method.memory_stats();
  stats->arena_bytes = s.arena_bytes;
  stats->planned_arena_bytes = s.planned_arena_bytes;
  stats->persistent_bytes = s.persistent_bytes;
  stats->num_plans = s.num_plans;
  stats->temporary_blocks = s.temporary_blocks;
  stats->first_fit_arena_bytes = s.first_fit_arena_bytes;
  stats->greedy_arena_bytes = s.greedy_arena_bytes;
  return PARE_OK;
}

pare_status pare_method_set_planner(pare_method* method, int32_t planner) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  method->method.diagnostics().clear();
  if (planner < PARE_PLANNER_SMALLER || planner > PARE_PLANNER_GREEDY_BY_SIZE) {
    return pare::status(PARE_FAIL(pare::diagnostics_of(method), Error::InvalidArgument,
                                  "planner %d is not a pare_planner (0, 1 or 2)", static_cast<int>(planner)));
  }
  return pare::status(method->method.set_planner(static_cast<pare::PlannerStrategy>(planner)));
}

const char* pare_method_state_name(const pare_method* method, size_t index) {
  return method != nullptr ? method->method.state_name(index) : nullptr;
}

pare_status pare_method_reset_state(pare_method* method) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.reset_state());
}

pare_status pare_method_state_tensor(pare_method* method, const char* name, pare_tensor_info* info) {
  if (method == nullptr || info == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  const pare::Tensor* t = method->method.state(name);
  if (t == nullptr) return pare::status(method->method.diagnostics().code());
  // Only reached with the feature (state() is null without it): fill_info
  // then stays inlined in pare_method_output_tensor alone.
  if (pare::feature_selected(pare::FeatureId::state)) pare::fill_info(*t, info);
  return PARE_OK;
}

pare_status pare_method_set_state(pare_method* method, const char* name, int32_t dtype, const int64_t* sizes,
                                  size_t ndim, const void* data, size_t nbytes) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.set_state(name, dtype, sizes, ndim, data, nbytes));
}

pare_status pare_method_set_num_threads(pare_method* method, uint32_t threads) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.set_num_threads(threads));
}

uint32_t pare_method_num_threads(const pare_method* method) {
  return method != nullptr ? method->method.num_threads() : 0;
}

pare_status pare_method_set_profiling(pare_method* method, int enabled) {
  if (method == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  return pare::status(method->method.set_profiling(enabled != 0));
}

size_t pare_method_instruction_count(const pare_method* method) {
  return method != nullptr && method->method.initialized() ? method->method.desc().num_instructions : 0;
}

pare_status pare_method_profile(const pare_method* method, size_t instruction, const char** op_name, uint64_t* calls,
                                uint64_t* ticks) {
  if (method == nullptr || op_name == nullptr || calls == nullptr || ticks == nullptr) {
    return PARE_ERROR_INVALID_ARGUMENT;
  }
  if (!method->method.profile(instruction, calls, ticks)) {
    return pare::status(PARE_FAIL(pare::diagnostics_of(method), Error::InvalidState,
                                  "no profile for instruction %zu: enable profiling and execute first", instruction));
  }
  const pare::InstructionDesc& ins = method->method.desc().instructions[instruction];
  *op_name = method->method.program().op(ins.op).name;
  return PARE_OK;
}

uint64_t pare_ticks_per_second(void) { return pare_pal_ticks_per_second(); }

size_t pare_trace_op_count(const pare_program* program) {
  if (program == nullptr) return 0;
  const pare::Observer& o = program->program.observer();
  return pare::count_where(pare::kNumOps, [&](size_t i) { return o.op_calls(i) != 0; });
}

pare_status pare_trace_op(const pare_program* program, size_t index, const char** name, int32_t* flags) {
  if (program == nullptr || name == nullptr || flags == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  const pare::Observer& o = program->program.observer();
  size_t found = 0;
  if (!pare::nth(
          pare::kNumOps, index, [&](size_t i) { return o.op_calls(i) != 0; }, &found)) {
    return PARE_ERROR_INDEX_OUT_OF_RANGE;
  }
  *name = pare::kOpTable[found].name;
  *flags = o.op_calls(found);
  return PARE_OK;
}

size_t pare_trace_kernel_dtype_count(const pare_program* program) {
  if (program == nullptr) return 0;
  const pare::Observer& o = program->program.observer();
  size_t n = 0;
  for (size_t t = 0; t < pare::kNumTags; ++t) n += __builtin_popcount(o.kernel_dtypes(static_cast<pare::TagId>(t)));
  return n;
}

pare_status pare_trace_kernel_dtype(const pare_program* program, size_t index, const char** tag,
                                    const char** dtype_name) {
  if (program == nullptr || tag == nullptr || dtype_name == nullptr) return PARE_ERROR_INVALID_ARGUMENT;
  const pare::Observer& o = program->program.observer();
  size_t tag_index = 0;
  int code = 0;
  if (!pare::trace_kernel_dtype_at(o, index, &tag_index, &code)) return PARE_ERROR_INDEX_OUT_OF_RANGE;
  *tag = pare::kTags[tag_index].name;
  *dtype_name = pare_dtype_name(code);
  return PARE_OK;
}

size_t pare_trace_class_count(const pare_program* program) {
  if (program == nullptr) return 0;
  const pare::Observer& o = program->program.observer();
  return pare::count_where(pare::kNumClasses, [&](size_t i) { return o.class_used(static_cast<pare::ClassId>(i)); });
}

const char* pare_trace_class(const pare_program* program, size_t index) {
  if (program == nullptr) return nullptr;
  const pare::Observer& o = program->program.observer();
  size_t found = 0;
  return pare::nth(
             pare::kNumClasses, index, [&](size_t i) { return o.class_used(static_cast<pare::ClassId>(i)); }, &found)
             ? pare::kClasses[found].name
             : nullptr;
}

size_t pare_trace_feature_count(const pare_program* program) {
  if (program == nullptr) return 0;
  const pare::Observer& o = program->program.observer();
  return pare::count_where(pare::kNumFeatures,
                           [&](size_t i) { return o.feature_used(static_cast<pare::FeatureId>(i)); });
}

const char* pare_trace_feature(const pare_program* program, size_t index) {
  if (program == nullptr) return nullptr;
  const pare::Observer& o = program->program.observer();
  size_t found = 0;
  return pare::nth(
             pare::kNumFeatures, index, [&](size_t i) { return o.feature_used(static_cast<pare::FeatureId>(i)); },
             &found)
             ? pare::kFeatures[found].name
             : nullptr;
}

void pare_trace_reset(pare_program* program) {
  if (program != nullptr) program->program.observer().reset();
}

}  // extern "C"
