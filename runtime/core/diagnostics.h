#pragma once
// Diagnostics: an error code plus its message, in a fixed buffer.
//
// Every object that can fail in front of a user (a loaded program, a method
// instance) owns one Diagnostics. Failing code formats the message once, at
// the point where it knows the op, argument and expectation, and returns the
// code; callers up the stack propagate the code and may add context with
// append(). There is no global "last error" (no thread-local storage, no statics),
// so independent programs and methods never overwrite each other's message.

#include <stdarg.h>

#include "runtime/core/error.h"

namespace pare {

class FormatBuffer;

namespace detail {
// The arguments of a message-less PARE_FAIL travel as C varargs of three
// kinds, 2 bits each in a `shape` word (argument k at bits 2k..2k+1, 0 after
// the last), so a call site costs what the printf form costs minus its
// format string. Integers of any type travel as their 64-bit two's
// complement: the format's conversion says how to read them, as in printf.
enum MessageArgKind : uint32_t { kIntegerArg = 1, kRealArg = 2, kTextArg = 3 };
constexpr int64_t message_value(long long v) { return v; }
constexpr int64_t message_value(long v) { return v; }
constexpr int64_t message_value(int v) { return v; }
constexpr int64_t message_value(short v) { return v; }
constexpr int64_t message_value(signed char v) { return v; }
constexpr int64_t message_value(char v) { return v; }
constexpr int64_t message_value(bool v) { return v; }
constexpr int64_t message_value(unsigned long long v) { return static_cast<int64_t>(v); }
constexpr int64_t message_value(unsigned long v) { return static_cast<int64_t>(v); }
constexpr int64_t message_value(unsigned v) { return v; }
constexpr int64_t message_value(unsigned short v) { return v; }
constexpr int64_t message_value(unsigned char v) { return v; }
constexpr double message_value(double v) { return v; }
constexpr const char* message_value(const char* v) { return v; }
inline int64_t message_value(const void* v) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(v)); }

template <typename T>
const T& unevaluated();  // declared only: for decltype
constexpr uint32_t message_kind(int64_t) { return kIntegerArg; }
constexpr uint32_t message_kind(double) { return kRealArg; }
constexpr uint32_t message_kind(const char*) { return kTextArg; }

template <typename... Args>
constexpr uint32_t message_shape() {
  static_assert(sizeof...(Args) <= 16, "a message takes at most 16 arguments");
  const uint32_t kinds[] = {message_kind(decltype(message_value(unevaluated<Args>()))())..., 0};
  uint32_t shape = 0;
  for (size_t k = 0; k < sizeof...(Args); ++k) shape |= kinds[k] << (2 * k);
  return shape;
}

// Writes `{#<id> <arg>...}` (docs/errors.md): the identifier in 8 hex digits,
// then each argument, integers in decimal, reals as `r` and their bits in
// hex, text in double quotes with `"` and `\` escaped.
void append_message_id(FormatBuffer& out, uint32_t id, uint32_t shape, va_list args);

// PARE_FAIL without messages: `format` is only there for PARE_MESSAGE_ID,
// and inlining drops it (and with it the text) from the binary.
template <typename Sink, typename... Args>
PARE_ALWAYS_INLINE Error fail_with_id(Sink& sink, Error code, uint32_t id, const char* /*format*/,
                                      const Args&... args) {
  return sink.fail_packed(code, id, message_shape<Args...>(), message_value(args)...);
}
// PARE_FAIL with messages: `format` is only there for PARE_MESSAGE_TEXT,
// which packed it, and inlining drops it; the sink unpacks `text`.
template <typename Sink, typename... Args>
PARE_ALWAYS_INLINE Error fail_text(Sink& sink, Error code, const char* text, const char* /*format*/,
                                   const Args&... args) {
  return sink.fail(code, text, args...);
}
template <typename Sink, typename... Args>
PARE_ALWAYS_INLINE void append_text(Sink& sink, const char* text, const char* /*format*/, const Args&... args) {
  sink.append(text, args...);
}
template <typename Sink, typename... Args>
PARE_ALWAYS_INLINE void append_with_id(Sink& sink, uint32_t id, const char* /*format*/, const Args&... args) {
  sink.append_packed(id, message_shape<Args...>(), message_value(args)...);
}
}  // namespace detail

class Diagnostics {
 public:
  static constexpr size_t kCapacity = 512;

  Diagnostics() { clear(); }

  // Records `code` with a printf-style message and returns `code`. `fmt` may
  // be packed (message_text.h): PARE_FAIL packs it and checks its arguments,
  // so this declaration carries no printf attribute.
  Error fail(Error code, const char* fmt, ...);
  Error vfail(Error code, const char* prefix, const char* fmt, va_list args);
  // Records `code` with the identifier form of a message (messages compiled
  // out: PARE_FAIL calls it through detail::fail_with_id).
  Error fail_packed(Error code, uint32_t id, uint32_t shape, ...);
  Error vfail_packed(Error code, const char* prefix, uint32_t id, uint32_t shape, va_list args);
  // Appends context to the current message (e.g. "(method 'forward',
  // instruction 3)").
  void append(const char* fmt, ...);
  void append_packed(uint32_t id, uint32_t shape, ...);

  void clear();
  Error code() const { return code_; }
  const char* message() const { return message_; }

 private:
  Error code_ = Error::Ok;
  char message_[kCapacity];
};

}  // namespace pare
