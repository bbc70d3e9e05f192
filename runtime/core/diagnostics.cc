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

Error Diagnostics::fail_packed(Error code, uint32_t id, uint32_t shape, ...) {
  va_list args;
  va_start(args, shape);
  vfail_packed(code, nullptr, id, shape, args);
  va_end(args);
  return code;
}

Error Diagnostics::vfail_packed(Error code, const char* prefix, uint32_t id, uint32_t shape, va_list args) {
  code_ = code;
  FormatBuffer out(message_, kCapacity);
  if (prefix != nullptr) {
    out.append(prefix);
    out.append(": ");
  }
  detail::append_message_id(out, id, shape, args);
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

void Diagnostics::append_packed(uint32_t id, uint32_t shape, ...) {
  const size_t used = string_length(message_);
  FormatBuffer out(message_ + used, kCapacity - used);
  va_list args;
  va_start(args, shape);
  detail::append_message_id(out, id, shape, args);
  va_end(args);
}

void detail::append_message_id(FormatBuffer& out, uint32_t id, uint32_t shape, va_list args) {
  out.append("{#");
  for (int bit = 28; bit >= 0; bit -= 4) out.append_char("0123456789abcdef"[(id >> bit) & 0xf]);
  for (; shape != 0; shape >>= 2) {
    out.append_char(' ');
    switch (shape & 3) {
      case kIntegerArg: out.append_int(va_arg(args, int64_t)); break;
      case kRealArg: {
        const double value = va_arg(args, double);
        uint64_t bits;
        __builtin_memcpy(&bits, &value, sizeof(bits));
        out.append_char('r');
        out.append_uint(bits, 16);
        break;
      }
      default: {
        const char* text = va_arg(args, const char*);
        if (text == nullptr) {
          out.append("null");
          break;
        }
        out.append_char('"');
        for (; *text != '\0'; ++text) {
          if (*text == '"' || *text == '\\') out.append_char('\\');
          out.append_char(*text);
        }
        out.append_char('"');
        break;
      }
    }
  }
  out.append_char('}');
}

}  // namespace pare
