#pragma once
// Error codes, Result<T> and the error-propagation macros.
//
// The runtime has no exceptions: every fallible function returns an Error or
// a Result<T>. Codes are grouped by range so callers (and the C API, which
// exposes the same numbers) can classify a failure without a table: system
// faults, invalid input, something the build did not select, and resource
// exhaustion. The human-readable message that goes with an error is
// formatted into a fixed buffer owned by the caller's context (see
// runtime/core/diagnostics.h); this header only carries codes.

#include "runtime/core/compiler.h"
#include "runtime/core/message_text.h"

namespace pare {

// The enumerators are runtime/core/errors.def's table, which also makes
// pare.h's pare_status (the C API returns the same numbers).
enum class Error : uint32_t {
#define PARE_ERROR(name, code, c_name) name = code,
#include "runtime/core/errors.def"
};

constexpr const char* to_string(Error e) {
  switch (e) {
#define PARE_ERROR(name, code, c_name) \
  case Error::name: return #name;
#include "runtime/core/errors.def"
  }
  return "Unknown";
}

constexpr bool is_not_selected(Error e) { return static_cast<uint32_t>(e) >= 0x20 && static_cast<uint32_t>(e) < 0x30; }

// Either a T or a non-Ok Error. Construct from a T for success or from an
// Error for failure; read with ok()/error()/get().
template <typename T>
class PARE_NODISCARD Result {
 public:
  Result(const T& value) : ok_(true) { PARE_PLACEMENT_NEW(&storage_.value) T(value); }
  Result(T&& value) : ok_(true) { PARE_PLACEMENT_NEW(&storage_.value) T(pare::move(value)); }
  Result(Error error) : ok_(false) {
    // A Result built from Error::Ok would claim failure with no cause;
    // map it to Internal so the bug surfaces instead of reading garbage.
    storage_.error = error == Error::Ok ? Error::Internal : error;
  }
  Result(const Result& other) : ok_(other.ok_) {
    if (ok_)
      PARE_PLACEMENT_NEW(&storage_.value) T(other.storage_.value);
    else
      storage_.error = other.storage_.error;
  }
  Result& operator=(const Result&) = delete;
  ~Result() {
    if (ok_) storage_.value.~T();
  }

  bool ok() const { return ok_; }
  Error error() const { return ok_ ? Error::Ok : storage_.error; }
  T& get() { return storage_.value; }
  const T& get() const { return storage_.value; }
  T* operator->() { return &storage_.value; }
  T& operator*() { return storage_.value; }

 private:
  union Storage {
    Storage() {}
    ~Storage() {}
    T value;
    Error error;
  } storage_;
  bool ok_;
};

namespace detail {
// 32-bit FNV-1a of a message format (pare/messages.py: message_id).
constexpr uint32_t message_id(const char* text) {
  uint32_t hash = 2166136261u;
  for (; *text != '\0'; ++text) {
    hash ^= static_cast<uint8_t>(*text);
    hash *= 16777619u;
  }
  return hash;
}
template <uint32_t Id>
struct MessageId {
  static constexpr uint32_t value = Id;
};

constexpr Error error_of(Error e) { return e; }
template <typename T>
Error error_of(const Result<T>& r) {
  return r.error();
}
}  // namespace detail

}  // namespace pare

#define PARE_CONCAT_IMPL(a, b) a##b
#define PARE_CONCAT(a, b) PARE_CONCAT_IMPL(a, b)

// Evaluates an Error- or Result-returning expression and returns its error
// from the enclosing function if it failed. The enclosing function returns
// Error or any Result<U>.
#define PARE_TRY(expr)                                                    \
  do {                                                                    \
    const ::pare::Error pare_try_error_ = ::pare::detail::error_of(expr); \
    if (PARE_UNLIKELY(pare_try_error_ != ::pare::Error::Ok)) {            \
      return pare_try_error_;                                             \
    }                                                                     \
  } while (0)

// `PARE_TRY_ASSIGN(Tensor* out, ctx.allocate_output(...));` declares or
// assigns `lhs` from a Result, returning the error on failure.
#define PARE_TRY_ASSIGN(lhs, expr) PARE_TRY_ASSIGN_IMPL(lhs, expr, PARE_CONCAT(pare_try_result_, __LINE__))
#define PARE_TRY_ASSIGN_IMPL(lhs, expr, tmp)        \
  auto tmp = (expr);                                \
  if (PARE_UNLIKELY(!tmp.ok())) return tmp.error(); \
  lhs = pare::move(tmp.get())

// Reports a failure through `sink` (anything with Diagnostics' fail()
// interface: Diagnostics, KernelContext, the program loader) and yields the
// code. The first argument after the code is the printf-style format, always
// a string literal.
//
// Without error messages (PARE_ENABLE_ERROR_MESSAGES=0: the runtime rule's
// error_messages = False, docs/errors.md) the format's text is not compiled
// in. The message becomes its stable identifier (FNV-1a of the format, the
// same number pare/messages.py computes from the sources) and the raw
// arguments, `{#1a2b3c4d "forward" 3}`, which `python -m tools.tracer
// explain` and the SDK turn back into the full text.
//
// With messages, the format is stored packed (message_text.h) and the sink
// unpacks it as it formats; the compiler still checks the arguments against
// the literal.
#if PARE_ENABLE_ERROR_MESSAGES
#define PARE_FAIL(sink, code, ...) \
  (PARE_CHECK_FORMAT(__VA_ARGS__), \
   ::pare::detail::fail_text((sink), (code), PARE_MESSAGE_TEXT(PARE_FIRST_ARG(__VA_ARGS__)), __VA_ARGS__))
#else
#define PARE_FAIL(sink, code, ...) \
  ::pare::detail::fail_with_id((sink), (code), PARE_MESSAGE_ID(__VA_ARGS__), __VA_ARGS__)
#endif

// The identifier of a PARE_FAIL format (its first argument), computed at
// compile time: a template argument must be a constant, so a format that is
// not a literal fails to compile instead of hashing a pointer.
#define PARE_MESSAGE_ID(...) (::pare::detail::MessageId<::pare::detail::message_id(PARE_FIRST_ARG(__VA_ARGS__))>::value)
#define PARE_FIRST_ARG(...) PARE_FIRST_ARG_IMPL(__VA_ARGS__, 0)
#define PARE_FIRST_ARG_IMPL(first, ...) first

// Appends context to the message of a Diagnostics `sink`, in the same two
// forms as PARE_FAIL.
#if PARE_ENABLE_ERROR_MESSAGES
#define PARE_APPEND(sink, ...)     \
  (PARE_CHECK_FORMAT(__VA_ARGS__), \
   ::pare::detail::append_text((sink), PARE_MESSAGE_TEXT(PARE_FIRST_ARG(__VA_ARGS__)), __VA_ARGS__))
#else
#define PARE_APPEND(sink, ...) ::pare::detail::append_with_id((sink), PARE_MESSAGE_ID(__VA_ARGS__), __VA_ARGS__)
#endif

// Returns PARE_FAIL(sink, code, fmt, ...) from the enclosing function when
// `cond` is false. Messages should say what was expected and what was found.
#define PARE_CHECK_OR_RETURN(sink, cond, code, ...) \
  do {                                              \
    if (PARE_UNLIKELY(!(cond))) {                   \
      return PARE_FAIL(sink, code, __VA_ARGS__);    \
    }                                               \
  } while (0)

// Internal invariants (never user input): compiled out unless
// PARE_DEBUG_CHECKS; aborts through the PAL.
#if PARE_DEBUG_CHECKS
#include "runtime/pal/pal.h"
#define PARE_DCHECK(cond)                                               \
  do {                                                                  \
    if (PARE_UNLIKELY(!(cond))) {                                       \
      pare_pal_abort(__FILE__ ":" PARE_STRINGIZE(__LINE__) ": " #cond); \
    }                                                                   \
  } while (0)
#else
#define PARE_DCHECK(cond) ((void)0)
#endif
