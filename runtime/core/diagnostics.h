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

class Diagnostics {
 public:
  static constexpr size_t kCapacity = 512;

  Diagnostics() { clear(); }

  // Records `code` with a printf-style message and returns `code`.
  Error fail(Error code, const char* fmt, ...) PARE_PRINTF(3, 4);
  Error vfail(Error code, const char* prefix, const char* fmt, va_list args);
  // Records `code` with its name as the message (messages compiled out).
  Error fail_code(Error code);
  // Appends context to the current message (e.g. "(method 'forward',
  // instruction 3)").
  void append(const char* fmt, ...) PARE_PRINTF(2, 3);

  void clear();
  Error code() const { return code_; }
  const char* message() const { return message_; }

 private:
  Error code_ = Error::Ok;
  char message_[kCapacity];
};

}  // namespace pare
