// Bounded formatter used for every error message (see format.h).

#include "runtime/core/format.h"

#include "runtime/core/message_text.h"

namespace pare {
namespace {

constexpr const char kTruncationMark[] = "...";

}  // namespace

size_t string_length(const char* s) {
  size_t n = 0;
  if (s == nullptr) return 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool string_equal(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return a == b;
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

FormatBuffer::FormatBuffer(char* buffer, size_t capacity) : buffer_(buffer), capacity_(capacity) {
  if (capacity_ > 0) buffer_[0] = '\0';
}

void FormatBuffer::append_char(char c) {
  if (capacity_ == 0) return;
  if (size_ + 1 < capacity_) {
    buffer_[size_++] = c;
    buffer_[size_] = '\0';
    return;
  }
  if (!truncated_) {
    truncated_ = true;
    // Overwrite the tail with "..." so a cut message is visibly cut.
    const size_t mark = sizeof(kTruncationMark) - 1;
    if (capacity_ > mark) {
      for (size_t i = 0; i < mark; ++i) buffer_[capacity_ - 1 - mark + i] = kTruncationMark[i];
      buffer_[capacity_ - 1] = '\0';
    }
  }
}

void FormatBuffer::append(const char* text, size_t length) {
  for (size_t i = 0; i < length && !truncated_; ++i) append_char(text[i]);
}

void FormatBuffer::append(const char* text) {
  if (text == nullptr) text = "(null)";
  while (*text != '\0' && !truncated_) append_char(*text++);
}

void FormatBuffer::append_uint(uint64_t value, unsigned base) {
  char digits[24];
  size_t n = 0;
  do {
    const unsigned d = static_cast<unsigned>(value % base);
    digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    value /= base;
  } while (value != 0);
  while (n > 0) append_char(digits[--n]);
}

void FormatBuffer::append_int(int64_t value) {
  if (value < 0) {
    append_char('-');
    // Negate in unsigned arithmetic so INT64_MIN does not overflow.
    append_uint(~static_cast<uint64_t>(value) + 1u);
  } else {
    append_uint(static_cast<uint64_t>(value));
  }
}

void FormatBuffer::append_double(double value, char conversion, int precision) {
  // Good enough for diagnostics: correctly signed, nan/inf aware, and
  // accurate to ~15 significant digits. Not a round-trip printer.
  if (value != value) {
    append("nan");
    return;
  }
  if (value < 0 || (value == 0 && 1.0 / value < 0)) {
    append_char('-');
    value = -value;
  }
  if (value > 1.7976931348623157e308) {
    append("inf");
    return;
  }
  if (precision < 0) precision = 6;
  if (precision > 17) precision = 17;

  int exponent = 0;
  if (value != 0) {
    double v = value;
    while (v >= 10.0) {
      v /= 10.0;
      ++exponent;
    }
    while (v < 1.0) {
      v *= 10.0;
      --exponent;
    }
  }
  bool scientific = conversion == 'e';
  int frac_digits = precision;
  bool trim = false;
  if (conversion == 'g') {
    const int p = precision == 0 ? 1 : precision;
    scientific = exponent < -4 || exponent >= p;
    frac_digits = scientific ? p - 1 : p - 1 - exponent;
    if (frac_digits < 0) frac_digits = 0;
    trim = true;
  }
  double mantissa = value;
  if (scientific && value != 0) {
    for (int i = 0; i < exponent; ++i) mantissa /= 10.0;
    for (int i = 0; i > exponent; --i) mantissa *= 10.0;
  }
  double scale = 1.0;
  for (int i = 0; i < frac_digits; ++i) scale *= 10.0;
  double rounded = mantissa * scale + 0.5;
  if (rounded >= 1.8e19) {  // beyond uint64: print in scientific instead
    append_double(value, 'e', precision);
    return;
  }
  uint64_t scaled = static_cast<uint64_t>(rounded);
  const uint64_t int_scale = static_cast<uint64_t>(scale);
  uint64_t integer = scaled / int_scale;
  uint64_t fraction = scaled % int_scale;
  if (scientific && integer >= 10) {  // rounding carried into a new digit
    integer /= 10;
    fraction /= 10;
    ++exponent;
  }
  append_uint(integer);
  char frac[20];
  int n = frac_digits;
  for (int i = n - 1; i >= 0; --i) {
    frac[i] = static_cast<char>('0' + fraction % 10);
    fraction /= 10;
  }
  if (trim) {
    while (n > 0 && frac[n - 1] == '0') --n;
  }
  if (n > 0) {
    append_char('.');
    append(frac, static_cast<size_t>(n));
  }
  if (scientific) {
    append_char('e');
    append_char(exponent < 0 ? '-' : '+');
    const int e = exponent < 0 ? -exponent : exponent;
    if (e < 10) append_char('0');
    append_uint(static_cast<uint64_t>(e));
  }
}

#if PARE_ENABLE_ERROR_MESSAGES
namespace {
// Appends code `c`'s bytes (message_text.h) to plain[*n...], stopping at the
// buffer's last byte. The table's rows only name earlier rows, so this ends.
void unpack_code(uint8_t c, char* plain, size_t* n) {
  if (c < 0x80) {
    if (*n + 1 < detail::kMaxMessageFormat) plain[(*n)++] = static_cast<char>(c);
    return;
  }
  const detail::MessagePair& pair = detail::kMessagePairs[c - 0x80];
  unpack_code(pair.first, plain, n);
  unpack_code(pair.second, plain, n);
}
}  // namespace

const char* detail::unpack_format(const char* format, char (&plain)[kMaxMessageFormat]) {
  const char* p = format;
  while (*p != '\0' && static_cast<uint8_t>(*p) < 0x80) ++p;
  if (*p == '\0') return format;
  size_t n = 0;
  for (p = format; *p != '\0'; ++p) unpack_code(static_cast<uint8_t>(*p), plain, &n);
  plain[n] = '\0';
  return plain;
}
#endif

void FormatBuffer::vformat(const char* fmt, va_list args) {
  if (fmt == nullptr) return;
#if PARE_ENABLE_ERROR_MESSAGES
  char plain[detail::kMaxMessageFormat];
  fmt = detail::unpack_format(fmt, plain);
#endif
  while (*fmt != '\0' && !truncated_) {
    if (*fmt != '%') {
      append_char(*fmt++);
      continue;
    }
    ++fmt;
    // Flags and width are accepted for printf compatibility and ignored.
    while (*fmt == '-' || *fmt == '+' || *fmt == ' ' || *fmt == '#' || *fmt == '0') ++fmt;
    while (*fmt >= '0' && *fmt <= '9') ++fmt;
    int precision = -1;
    if (*fmt == '.') {
      ++fmt;
      precision = 0;
      if (*fmt == '*') {
        precision = va_arg(args, int);
        ++fmt;
      } else {
        while (*fmt >= '0' && *fmt <= '9') precision = precision * 10 + (*fmt++ - '0');
      }
    }
    int longness = 0;  // 0: int, 1: long, 2: long long, 3: size_t, 4: intmax_t
    if (*fmt == 'l') {
      ++fmt;
      longness = 1;
      if (*fmt == 'l') {
        ++fmt;
        longness = 2;
      }
    } else if (*fmt == 'z') {
      ++fmt;
      longness = 3;
    } else if (*fmt == 'j') {
      ++fmt;
      longness = 4;
    }
    const char conv = *fmt;
    if (conv == '\0') break;
    ++fmt;
    switch (conv) {
      case 'd':
      case 'i': {
        int64_t v = longness == 0   ? va_arg(args, int)
                    : longness == 1 ? va_arg(args, long)
                    : longness == 2 ? va_arg(args, long long)
                    : longness == 3 ? static_cast<int64_t>(va_arg(args, size_t))
                                    : static_cast<int64_t>(va_arg(args, intmax_t));
        append_int(v);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        uint64_t v = longness == 0   ? va_arg(args, unsigned)
                     : longness == 1 ? va_arg(args, unsigned long)
                     : longness == 2 ? va_arg(args, unsigned long long)
                     : longness == 3 ? va_arg(args, size_t)
                                     : static_cast<uint64_t>(va_arg(args, uintmax_t));
        append_uint(v, conv == 'u' ? 10 : 16);
        break;
      }
      case 'p':
        append("0x");
        append_uint(reinterpret_cast<uintptr_t>(va_arg(args, void*)), 16);
        break;
      case 'c': append_char(static_cast<char>(va_arg(args, int))); break;
      case 's': {
        const char* s = va_arg(args, const char*);
        if (s == nullptr) s = "(null)";
        if (precision >= 0) {
          size_t n = 0;
          while (n < static_cast<size_t>(precision) && s[n] != '\0') ++n;
          append(s, n);
        } else {
          append(s);
        }
        break;
      }
      case 'f':
      case 'g':
      case 'e':  // reals go in as text (format.h): read the argument, print no digits
        (void)va_arg(args, double);
        append("(real)");
        break;
      case '%': append_char('%'); break;
      default:
        append_char('%');
        append_char(conv);
        break;
    }
  }
}

void FormatBuffer::format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vformat(fmt, args);
  va_end(args);
}

RealString real_to_string(double value) {
  RealString s;
  FormatBuffer out(s.text, sizeof(s.text));
  out.append_double(value, 'g', -1);
  return s;
}

size_t format_to(char* buffer, size_t capacity, const char* fmt, ...) {
  FormatBuffer out(buffer, capacity);
  va_list args;
  va_start(args, fmt);
  out.vformat(fmt, args);
  va_end(args);
  return out.size();
}

}  // namespace pare
