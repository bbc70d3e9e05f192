#pragma once
// Value: the interpreter's typed slot for every operator argument and result.
//
// A method owns one Value per program value id. Constants are filled at load
// time, inputs by the caller, and every other value by the instruction that
// produces it. Kernels receive pointers to Values (inputs, then outputs) and
// read them through KernelArgs (runtime/registry/kernel.h), which checks kinds
// and reports mismatches by argument name.
//
// Kinds are the program format's value kinds (runtime/core/program_format.def).
// Lists are non-owning views into load-time memory.

#include "runtime/core/scalar.h"
#include "runtime/core/tensor.h"

namespace pare {

struct ObjectBase;
struct Value;

enum class ValueKind : uint8_t {
#define PARE_VALUE_KIND(enumerator, python_name, code, display_name) enumerator = code,
#include "runtime/core/program_format.def"
};
constexpr uint8_t kNumValueKinds = 0
#define PARE_VALUE_KIND(enumerator, python_name, code, display_name) +1
#include "runtime/core/program_format.def"
    ;
// The loader rejects a kind code >= kNumValueKinds, so the codes are dense
// (codegen/tables.py checks the order too).
#define PARE_VALUE_KIND(enumerator, python_name, code, display_name) \
  static_assert(code < kNumValueKinds, "value kind codes must be 0 .. count - 1");
#include "runtime/core/program_format.def"

constexpr const char* to_string(ValueKind k) {
  switch (k) {
#define PARE_VALUE_KIND(enumerator, python_name, code, display_name) \
  case ValueKind::enumerator: return display_name;
#include "runtime/core/program_format.def"
  }
  return "unknown";
}

// The elements of a Tensor[] value; each item is a Tensor-kind Value, or a
// None-kind one in a Tensor?[] argument (KernelArgs::optional_tensor_list).
struct TensorList {
  Value* const* items;
  size_t size;
};

using ValueSpan = Span<Value* const>;

struct Value {
  ValueKind kind;
  // Interpreter bookkeeping: the memory-plan slot that backs this tensor's
  // storage (kNoSlot for constants, inputs and persistent memory). Views
  // inherit it so the planner keeps the base alive as long as the view.
  uint32_t plan_slot;
  union {
    Tensor tensor;
    int64_t int_value;
    double double_value;
    bool bool_value;
    IntArrayRef int_list;
    Span<const double> double_list;
    const char* string;
    TensorList tensor_list;
    ObjectBase* object;
  };

  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;

  Value() : kind(ValueKind::None), plan_slot(kNoSlot), int_value(0) {}

  bool is_none() const { return kind == ValueKind::None; }
  bool is_tensor() const { return kind == ValueKind::Tensor; }
  bool is_scalar() const { return kind == ValueKind::Int || kind == ValueKind::Double || kind == ValueKind::Bool; }
  Scalar to_scalar() const {
    return kind == ValueKind::Double ? Scalar::from_double(double_value)
           : kind == ValueKind::Bool ? Scalar::from_bool(bool_value)
                                     : Scalar::from_int(int_value);
  }

  static Value make_none() { return Value(); }
  static Value make_tensor(const Tensor& t) {
    Value v;
    v.kind = ValueKind::Tensor;
    v.tensor = t;
    return v;
  }
  // An output placeholder for calling another op (runtime/registry/kernel.h).
  static Value make_empty_tensor() {
    Value v;
    v.kind = ValueKind::Tensor;
    v.tensor = Tensor{};
    return v;
  }
  static Value make_int(int64_t x) {
    Value v;
    v.kind = ValueKind::Int;
    v.int_value = x;
    return v;
  }
  static Value make_double(double x) {
    Value v;
    v.kind = ValueKind::Double;
    v.double_value = x;
    return v;
  }
  static Value make_bool(bool x) {
    Value v;
    v.kind = ValueKind::Bool;
    v.bool_value = x;
    return v;
  }
  static Value make_scalar(const Scalar& s) {
    switch (s.kind()) {
      case Scalar::Kind::Double: return make_double(s.as_double());
      case Scalar::Kind::Bool: return make_bool(s.as_bool());
      case Scalar::Kind::Int: break;
    }
    return make_int(s.as_int());
  }
  static Value make_int_list(IntArrayRef list) {
    Value v;
    v.kind = ValueKind::IntList;
    v.int_list = list;
    return v;
  }
  static Value make_string(const char* s) {
    Value v;
    v.kind = ValueKind::String;
    v.string = s;
    return v;
  }
};

}  // namespace pare
