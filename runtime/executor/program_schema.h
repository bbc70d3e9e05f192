#pragma once
// The value record's schema (docs/program_format.md, "Value record"), made
// from runtime/core/program_format.def's PARE_VALUE_FIELDS: per kind,
// whether a value may be constant and which of the record's four payload
// fields (a, b, c, d) it uses, and which of those only a constant sets.
// The loader checks every record against it before decoding
// (Loader::check_value_record, program_validation.cc); pare/program.py
// writes and reads the fields by the table's names (pare/_format_table.py).

#include "runtime/core/value.h"

namespace pare {
namespace schema {

enum class Constancy : uint8_t { Must, May, Never };

// Bit f of a mask is payload field f: a (u32 at offset 4), b, c, d (u64
// at 8, 16, 24).
struct ValueFields {
  Constancy constant;
  uint8_t used;           // the fields the kind uses
  uint8_t constant_only;  // those of them only a constant sets
};

// A field's name in the table: `_` for one the kind does not use, a
// `constant_` prefix for one only a constant sets.
constexpr bool is_used(const char* name) { return !(name[0] == '_' && name[1] == '\0'); }
constexpr bool is_constant_only(const char* name) {
  constexpr char kPrefix[] = "constant_";
  for (size_t i = 0; i + 1 < sizeof(kPrefix); ++i) {
    if (name[i] != kPrefix[i]) return false;
  }
  return true;
}
constexpr uint8_t bits(bool a, bool b, bool c, bool d) {
  return static_cast<uint8_t>((a ? 1 : 0) | (b ? 2 : 0) | (c ? 4 : 0) | (d ? 8 : 0));
}

constexpr ValueFields kValueFields[] = {
#define PARE_VALUE_FIELDS(enumerator, constant, a, b, c, d)                       \
  {Constancy::constant, bits(is_used(#a), is_used(#b), is_used(#c), is_used(#d)), \
   bits(is_constant_only(#a), is_constant_only(#b), is_constant_only(#c), is_constant_only(#d))},
#include "runtime/core/program_format.def"
};
static_assert(sizeof(kValueFields) / sizeof(kValueFields[0]) == kNumValueKinds,
              "program_format.def: one PARE_VALUE_FIELDS line per value kind");

// The table's rows are in the kinds' code order.
constexpr ValueKind kFieldsKinds[] = {
#define PARE_VALUE_FIELDS(enumerator, constant, a, b, c, d) ValueKind::enumerator,
#include "runtime/core/program_format.def"
};
constexpr bool in_code_order() {
  for (size_t i = 0; i < kNumValueKinds; ++i) {
    if (static_cast<size_t>(kFieldsKinds[i]) != i) return false;
  }
  return true;
}
static_assert(in_code_order(), "program_format.def: PARE_VALUE_FIELDS lines must follow the value kinds' codes");

}  // namespace schema
}  // namespace pare
