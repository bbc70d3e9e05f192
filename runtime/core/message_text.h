#pragma once
// Packed message text: how a runtime with error messages stores them.
//
// Error message formats are about a sixth of a small runtime's bytes. Each
// PARE_FAIL format is packed at compile time with a fixed table of 128
// pairs (message_pairs.inc, trained on the runtime's own formats by
// `python -m tools.message_pairs`): a byte from 0x80 up stands for row
// byte - 0x80 of the table, two bytes each plain or packed again. Formats
// are ASCII, so plain bytes never collide with codes. The formatter
// (FormatBuffer::vformat) unpacks a format before it reads it, so a message
// reads exactly as its literal in the source, and a plain format (one not
// written through the macros) formats as before. Packing halves the text
// (docs/errors.md, "How messages are stored").
//
// PARE_MESSAGE_TEXT(literal) is the packed text of one literal, as a `const
// char*`. The literal itself is only read by the compiler: nothing of it
// reaches the binary. The packed bytes are a template's static array keyed
// by the bytes themselves, so equal messages anywhere in a runtime share one
// copy, as equal string literals do.

#include "runtime/core/compiler.h"

namespace pare {
namespace detail {

struct MessagePair {
  uint8_t first;
  uint8_t second;
};
inline constexpr MessagePair kMessagePairs[] = {
#include "runtime/core/message_pairs.inc"
};
constexpr size_t kMessagePairCount = sizeof(kMessagePairs) / sizeof(kMessagePairs[0]);
static_assert(kMessagePairCount <= 128, "message_pairs.inc has at most 128 rows (the bytes 0x80..0xff)");

// The longest format a message may have, and the unpacking buffer's size.
constexpr size_t kMaxMessageFormat = 256;

struct PackedFormat {
  uint8_t bytes[kMaxMessageFormat];
  size_t size;
  bool ascii;
};

// `text` packed: each row of the table in turn replaces every pair it names,
// left to right (pare/messages.py's pack does the same).
template <size_t N>
constexpr PackedFormat pack_format(const char (&text)[N]) {
  static_assert(N <= kMaxMessageFormat, "a message format has at most 255 characters");
  PackedFormat p{};
  p.size = N - 1;
  p.ascii = true;
  for (size_t i = 0; i + 1 < N; ++i) {
    p.bytes[i] = static_cast<uint8_t>(text[i]);
    if (p.bytes[i] >= 0x80) p.ascii = false;
  }
  // How often each byte occurs, so that a row whose bytes are not both
  // there costs no pass (most rows, for any one message: compile time).
  uint32_t count[256] = {};
  for (size_t i = 0; i < p.size; ++i) ++count[p.bytes[i]];
  for (size_t k = 0; k < kMessagePairCount; ++k) {
    const uint8_t a = kMessagePairs[k].first;
    const uint8_t b = kMessagePairs[k].second;
    if (count[a] == 0 || count[b] == 0) continue;
    size_t out = 0;
    for (size_t i = 0; i < p.size;) {
      if (i + 1 < p.size && p.bytes[i] == a && p.bytes[i + 1] == b) {
        --count[a];
        --count[b];
        ++count[0x80 + k];
        p.bytes[out++] = static_cast<uint8_t>(0x80 + k);
        i += 2;
      } else {
        p.bytes[out++] = p.bytes[i++];
      }
    }
    p.size = out;
  }
  return p;
}

// M::get() packs one literal; Packed<M> evaluates it once for all the
// template arguments below.
template <typename M>
struct Packed {
  static constexpr PackedFormat value = M::get();
};
template <char... C>
struct PackedText {
  static constexpr char text[] = {C..., '\0'};
};
template <size_t... I>
struct Indices {};
template <typename T, T... I>
struct IndexList {
  using type = Indices<I...>;
};
template <typename M, size_t... I>
constexpr const char* packed_text(Indices<I...>) {
  static_assert(Packed<M>::value.ascii, "a message format is ASCII (bytes from 0x80 up are the packed codes)");
  return PackedText<static_cast<char>(Packed<M>::value.bytes[I])...>::text;
}

// Unpacks `format` into `plain` (NUL-terminated, cut at its size) and
// returns it; returns `format` itself when it holds no packed byte.
const char* unpack_format(const char* format, char (&plain)[kMaxMessageFormat]);

// Declared only: PARE_FAIL's printf check of a format and its arguments.
int check_format(const char* format, ...) PARE_PRINTF(1, 2);

}  // namespace detail
}  // namespace pare

#define PARE_MESSAGE_TEXT(literal)                                                                                     \
  ([]() -> const char* {                                                                                               \
    struct M {                                                                                                         \
      static constexpr ::pare::detail::PackedFormat get() { return ::pare::detail::pack_format(literal); }             \
    };                                                                                                                 \
    return ::pare::detail::packed_text<M>(typename __make_integer_seq<::pare::detail::IndexList, size_t,               \
                                                                      ::pare::detail::Packed<M>::value.size>::type{}); \
  }())

// The compiler's printf check of a PARE_FAIL's format and arguments, which
// the packed text no longer gets from the sink's own declaration.
#define PARE_CHECK_FORMAT(...) static_cast<void>(sizeof(::pare::detail::check_format(__VA_ARGS__)))
