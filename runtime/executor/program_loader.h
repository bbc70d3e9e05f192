#pragma once
// The program loader's internals (program.cc decodes, program_validation.cc
// validates), shared by the two files and nothing else: Program's public
// interface is program.h.

#include "runtime/executor/program.h"

namespace pare {
namespace loader {

// The host is little-endian (compiler.h), so a memcpy is a LE decode.
inline uint8_t rd8(const uint8_t* p) { return *p; }
inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline uint32_t rd32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t rd64(const uint8_t* p) {
  uint64_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// Definition state of a value while checking instruction order.
enum class DefState : uint8_t { Undefined, Defined, MethodInput };

// Stands in for a null buffer of size 0, so the header check can run.
constexpr uint8_t kEmptyBuffer[1] = {0};

// A hostile file can point many records at the same bytes (say, 10^4
// methods sharing one 10^4-value table) to make decoding quadratic. A
// well-formed file never shares, so the bytes decoded can never exceed the
// file size; we enforce that, plus a linear budget for visiting list
// elements during dataflow checks.
constexpr uint64_t kMaxMethods = 4096;
constexpr uint64_t kListVisitBudgetPerByte = 4;
constexpr uint64_t kListVisitBudgetBase = 1u << 20;

}  // namespace loader

class Loader {
 public:
  Loader(Program& program, const uint8_t* base, uint64_t size) : program_(program), base_(base), size_(size) {}

  Error run();

  // Every check fails through PARE_INVALID: InvalidProgram, with a message
  // that starts "invalid program: ". With messages, invalid() formats it;
  // without, the loader is a PARE_FAIL sink (fail_packed).
  Error invalid(const char* fmt, ...);
  Error fail_packed(Error code, uint32_t id, uint32_t shape, ...);

 private:
  Error out_of_memory(const char* what);
  // True when [offset, offset + count * elem_size) lies within the file and
  // offset is a multiple of `align`.
  bool in_file(uint64_t offset, uint64_t count, uint64_t elem_size, uint64_t align) const;
  Error check_range(const char* what, uint64_t offset, uint64_t count, uint64_t elem_size, uint64_t align);

  Error decode_strings(uint64_t offset);
  Error decode_ops(uint64_t offset);
  Error decode_methods(uint64_t offset);
  Error decode_method(uint32_t index, uint64_t offset, uint64_t states_offset, MethodDesc& m);
  Error decode_states(MethodDesc& m, uint64_t offset, uint32_t* last_use);
  Error decode_value(const MethodDesc& m, uint32_t id, const uint8_t* record, const ValueKind* kinds,
                     const bool* constants, ValueDesc& v);

  // Validation (program_validation.cc), apart from decoding: a value
  // record against the format's schema (program_schema.h) before any of
  // its fields is decoded, and a decoded method's dataflow.
  Error check_value_record(const MethodDesc& m, uint32_t id, const uint8_t* record, ValueKind kind, bool constant);
  Error check_dataflow(MethodDesc& m, ValueDesc* values, uint32_t* last_use);

  // Charges `bytes` of decoded table against the file size (see above).
  Error consume(uint64_t count, uint64_t elem_size, const char* what);
  Error visit_list(uint64_t count);

  Program& program_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t decode_budget_ = 0;
  uint64_t list_visit_budget_ = 0;
  bool has_state_ = false;  // header flag kHeaderFlagState: each method has a state table offset
  const uint8_t* data_base_ = nullptr;
  uint64_t data_size_ = 0;
  const char* method_name_ = "";
};

#if PARE_ENABLE_ERROR_MESSAGES
#define PARE_INVALID(...)          \
  (PARE_CHECK_FORMAT(__VA_ARGS__), \
   ::pare::detail::invalid_text(*this, PARE_MESSAGE_TEXT(PARE_FIRST_ARG(__VA_ARGS__)), __VA_ARGS__))
#else
#define PARE_INVALID(...) PARE_FAIL(*this, Error::InvalidProgram, __VA_ARGS__)
#endif

namespace detail {
// PARE_INVALID with messages: as fail_text, for the loader's invalid().
template <typename... Args>
PARE_ALWAYS_INLINE Error invalid_text(Loader& loader, const char* text, const char* /*format*/, const Args&... args) {
  return loader.invalid(text, args...);
}
}  // namespace detail

}  // namespace pare
