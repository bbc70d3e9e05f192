#pragma once
// Program: a validated, decoded program file (docs/program_format.md).
//
// load() checks every offset, size, index, kind, dtype, rank and count of
// the bytes before using them, with overflow-safe arithmetic; any byte
// string either loads or returns a clean error in diagnostics(), never a
// crash or an out-of-bounds read. It also resolves every operator against
// this build's operator table and every class against its class table, so a
// program that needs something the build left out fails here, at load time,
// with a message naming it and the fix.
//
// The decoded tables (MethodDesc etc.) are immutable and shared by all
// method instances (runtime/executor/method.h) created from the program.

#include "runtime/core/diagnostics.h"
#include "runtime/registry/selection.h"
#include "runtime/core/memory.h"
#include "runtime/registry/observer.h"
#include "runtime/core/program_format.h"

namespace pare {

// The format's constants (kFormatVersionMajor, kNoValue: an IntList element
// that is a literal, ...) are in program_format.h.
constexpr uint32_t kLastUseForever = 0xFFFFFFFEu;  // method outputs

struct ValueDesc {
  ValueKind kind;
  bool constant;
  ScalarType dtype;      // tensors; Undefined when the program leaves it open
  uint8_t dim;           // tensors; kUnknownRank when open
  ClassId class_id;      // objects
  uint32_t count;        // list lengths
  const int64_t* sizes;  // tensors: `dim` sizes, -1 = any (non-constant only)
  const void* data;      // constant tensors
  union {
    int64_t int_value;
    double double_value;
    bool bool_value;
    const char* string;
    const int64_t* ints;        // IntList literals
    const double* doubles;      // DoubleList
    const uint32_t* value_ids;  // TensorList items
  };
  const uint32_t* int_refs;  // IntList: per element, an Int value id or kNoValue
  static constexpr uint8_t kUnknownRank = 0xFF;
};

struct InstructionDesc {
  uint32_t op;  // index into Program::op()
  uint16_t num_inputs;
  uint16_t num_outputs;
  const uint32_t* args;  // value ids: inputs, then outputs
};

// A buffer the method keeps between calls (format 1.2, build feature
// state): `value` is a constant Tensor whose data is the initial value;
// each instance holds its own copy, which `update` (kNoValue: none) is
// written into at the end of every execute, or in place by its producer
// when `in_place`.
// The error of a program, or an entry point, needing a build feature this
// runtime does not select: one message (and one string in the binary) for
// every feature.
PARE_COLD Error feature_not_selected(Diagnostics& diagnostics, const char* feature);

struct StateDesc {
  const char* name;
  uint32_t value;
  uint32_t update;
  bool in_place;
};

struct MethodDesc {
  const char* name;
  uint32_t num_values;
  const ValueDesc* values;
  uint32_t num_inputs;
  const uint32_t* inputs;
  uint32_t num_outputs;
  const uint32_t* outputs;
  uint32_t num_instructions;
  uint32_t num_init_instructions;  // instructions [0, n) run once, at method creation
  const InstructionDesc* instructions;
  // Per value: the last instruction reading it (kLastUseForever for method
  // outputs); the memory planner's lifetimes.
  const uint32_t* last_use;
  uint32_t num_states;
  const StateDesc* states;
};

struct ProgramOp {
  const char* name;
  const OpEntry* entry;  // in kOpTable
  size_t table_index;
};

class Program {
 public:
  static constexpr uint32_t kLoadCopyBuffer = 1u;  // pare.h PARE_LOAD_COPY

  Program() = default;
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Validates and decodes `size` bytes. Unless kLoadCopyBuffer is set the
  // bytes are borrowed and must outlive the program (constants are used in
  // place when 64-byte aligned).
  Error load(const void* data, size_t size, uint32_t flags);
  Error load_file(const char* path);

  Diagnostics& diagnostics() { return diagnostics_; }
  const Diagnostics& diagnostics() const { return diagnostics_; }
  Observer& observer() { return observer_; }
  const Observer& observer() const { return observer_; }
  bool loaded() const { return loaded_; }

  uint32_t num_methods() const { return num_methods_; }
  const MethodDesc& method(uint32_t i) const { return methods_[i]; }
  const MethodDesc* find_method(const char* name) const;
  const ProgramOp& op(uint32_t i) const { return ops_[i]; }
  // True when constant tensors point into the caller's buffer (no copy).
  bool constants_in_place() const { return owned_data_ == nullptr; }

 private:
  friend class Loader;
  void reset();

  bool loaded_ = false;
  void* owned_buffer_ = nullptr;  // copy of the file (kLoadCopyBuffer, load_file)
  void* owned_data_ = nullptr;    // aligned copy of a misaligned data segment
  LoadAllocator allocator_;
  const char** strings_ = nullptr;
  uint32_t num_strings_ = 0;
  ProgramOp* ops_ = nullptr;
  uint32_t num_ops_ = 0;
  MethodDesc* methods_ = nullptr;
  uint32_t num_methods_ = 0;
  Diagnostics diagnostics_;
  Observer observer_;
};

}  // namespace pare
