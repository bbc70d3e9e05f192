// Error message storage (see diagnostics.h).

#include "runtime/core/diagnostics.h"

#include "runtime/core/format.h"

namespace pare {

void Diagnostics::clear() {
  code_ = Error::Ok;
  message_[0] = '\0';
}

Error Diagnostics::vfail(Error code, const char* prefix, const char* fmt, va_list args) {
  code_ = code;
  FormatBuffer out(message_, kCapacity);
  if (prefix != nullptr) {
    out.append(prefix);
    out.append(": ");
  }
  if (fmt != nullptr) {
    out.vformat(fmt, args);
  } else {
    out.append(to_string(code));
  }
  return code;
}

Error Diagnostics::fail(Error code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vfail(code, nullptr, fmt, args);
  va_end(args);
  return code;
}

Error Diagnostics::fail_code(Error code) {
  code_ = code;
  format_to(message_, kCapacity, "%s", to_string(code));
  return code;
}

void Diagnostics::append(const char* fmt, ...) {
  const size_t used = string_length(message_);
  FormatBuffer out(message_ + used, kCapacity - used);
  va_list args;
  va_start(args, fmt);
  out.vformat(fmt, args);
  va_end(args);
}

}  // namespace pare
