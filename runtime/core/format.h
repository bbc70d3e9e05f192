#pragma once
// A tiny bounded printf for error messages, with no stdio.
//
// Supports %s %c %d %i %u %x %p and %%, with the length modifiers l, ll, z
// and j, and a precision for %s. Width and flags are accepted and ignored.
// A real number goes in as text: "%s" with real_to_string(x).text, so the
// real printer (append_double, about 900 B on arm64) is in a runtime only
// if one of its kernels has such a message, not in every runtime's
// formatter; %f, %g and %e print a placeholder (tools/lint.sh rejects them
// in runtime/). Output is always NUL-terminated and truncated (with
// a trailing "...") when the buffer is full; formatting never fails and never
// allocates. The printf format attribute lets the compiler check arguments.

#include <stdarg.h>

#include "runtime/core/compiler.h"

namespace pare {

class FormatBuffer {
 public:
  FormatBuffer(char* buffer, size_t capacity);

  void append(const char* text);
  void append(const char* text, size_t length);
  void append_char(char c);
  void append_int(int64_t value);
  void append_uint(uint64_t value, unsigned base = 10);
  void append_double(double value, char conversion = 'g', int precision = -1);
  void vformat(const char* fmt, va_list args);
  void format(const char* fmt, ...) PARE_PRINTF(2, 3);

  const char* c_str() const { return buffer_; }
  size_t size() const { return size_; }
  bool truncated() const { return truncated_; }

 private:
  char* buffer_;
  size_t capacity_;
  size_t size_ = 0;
  bool truncated_ = false;
};

// snprintf equivalent: returns the number of characters written (excluding
// the terminator).
size_t format_to(char* buffer, size_t capacity, const char* fmt, ...) PARE_PRINTF(3, 4);

// A real number as printf's %g would print it (6 significant digits), for
// messages: "%s", real_to_string(x).text.
struct RealString {
  char text[32];
};
RealString real_to_string(double value);

size_t string_length(const char* s);
bool string_equal(const char* a, const char* b);

}  // namespace pare
