"""Error messages of runtimes built without them, turned back into text.

A runtime built with `error_messages = False` (docs/errors.md) keeps no
message text: each `PARE_FAIL` writes its format's identifier and its raw
arguments instead, `{#1a2b3c4d "forward" 3}`, next to whatever literal text
surrounds it (the op name prefix, "invalid program: "). The identifier is the
32-bit FNV-1a of the format string (`runtime/core/error.h`,
`detail::message_id`), so it is stable across builds and platforms and this
module recomputes it from the runtime's sources: `MessageTable.scan` reads
every `PARE_FAIL`, `PARE_CHECK_OR_RETURN`, `PARE_INVALID` and `PARE_APPEND`
format in `runtime/`, and `explain` formats each identifier's arguments the
way the runtime's own formatter (`runtime/core/format.cc`) would have, so the
result is the message a runtime with messages gives, byte for byte (short of
the 512-byte cut, which the two forms reach at different places).
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# Macros whose argument at this index is a message format (error.h, program.cc).
FORMAT_ARGUMENT = {"PARE_FAIL": 2, "PARE_CHECK_OR_RETURN": 3, "PARE_INVALID": 0, "PARE_APPEND": 1}
SOURCE_SUFFIXES = (".cc", ".h", ".inc")
DEFAULT_RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"

# One identifier chunk: `{#` eight hex digits, then arguments, then `}`.
_ARG = r'(?:-?\d+|r[0-9a-f]+|null|"(?:\\.|[^"\\])*")'
CHUNK = re.compile(rf"\{{#([0-9a-f]{{8}})((?: {_ARG})*)\}}")
_ARG_TOKEN = re.compile(_ARG)
_CONVERSION = re.compile(r"%[-+ #0]*[0-9]*(?:\.(\*|[0-9]*))?(ll|l|z|j)?([a-zA-Z%]|$)")
_INVOCATION = re.compile(r"\b(" + "|".join(FORMAT_ARGUMENT) + r")\s*\(")


class MessageError(ValueError):
    """The sources or a message cannot be read; str() says which and how to fix it."""


def message_id(fmt: str) -> int:
    """32-bit FNV-1a of `fmt`'s bytes, as error.h's detail::message_id."""
    h = 2166136261
    for byte in fmt.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class Site:
    """One message format in the sources."""

    fmt: str
    path: str  # relative to the scanned runtime directory
    line: int


@dataclass(frozen=True)
class MessageTable:
    """Every message format of a runtime's sources, by identifier."""

    sites: Mapping[int, tuple[Site, ...]]

    @classmethod
    def scan(cls, runtime_dir: Path | str = DEFAULT_RUNTIME_DIR) -> MessageTable:
        root = Path(runtime_dir)
        if not root.is_dir():
            raise MessageError(
                f"{root}: no runtime sources to read message formats from; pass the runtime/ directory "
                "of the checkout the runtime was built from (--runtime-dir)"
            )
        by_id: dict[int, list[Site]] = {}
        for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
            for site in sites_in(path.read_text(encoding="utf-8"), str(path.relative_to(root))):
                by_id.setdefault(message_id(site.fmt), []).append(site)
        return cls({k: tuple(v) for k, v in by_id.items()})

    def collisions(self) -> list[tuple[int, list[str]]]:
        """Identifiers shared by different formats (which explain cannot tell apart)."""
        out = []
        for k, sites in sorted(self.sites.items()):
            formats = sorted({s.fmt for s in sites})
            if len(formats) > 1:
                out.append((k, formats))
        return out

    def format_of(self, ident: int) -> str:
        sites = self.sites.get(ident)
        if not sites:
            raise MessageError(
                f"message identifier {ident:08x} is not in these runtime sources; explain with the sources "
                "the runtime was built from (--runtime-dir)"
            )
        return sites[0].fmt


@functools.cache
def default_table() -> MessageTable:
    """The table of this checkout's runtime sources (scanned once)."""
    return MessageTable.scan(DEFAULT_RUNTIME_DIR)


def explain(text: str, table: MessageTable) -> str:
    """`text` with every `{#id args}` chunk replaced by its message."""

    def expand(match: re.Match) -> str:
        args = [_decode_arg(t) for t in _ARG_TOKEN.findall(match.group(2))]
        return format_message(table.format_of(int(match.group(1), 16)), args)

    return CHUNK.sub(expand, text)


def has_identifiers(text: str) -> bool:
    return CHUNK.search(text) is not None


# --- formatting, as runtime/core/format.cc ---


def _decode_arg(token: str) -> int | float | str | None:
    if token == "null":
        return None
    if token.startswith('"'):
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    if token.startswith("r"):
        return struct.unpack("<d", struct.pack("<Q", int(token[1:], 16)))[0]
    return int(token)


def format_message(fmt: str, args: list) -> str:
    """printf as FormatBuffer::vformat: flags and width ignored, precision for
    s/f/g/e, `*` precision from the arguments, length modifiers l ll z j."""
    out: list[str] = []
    pending = iter(args)

    def take():
        try:
            return next(pending)
        except StopIteration:
            raise MessageError(f"message {fmt!r} has more conversions than the identifier's arguments") from None

    pos = 0
    for m in _CONVERSION.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        star, length, conv = m.group(1), m.group(2), m.group(3)
        precision = -1
        if star == "*":
            precision = int(take())
        elif star is not None:
            precision = int(star or 0)
        if conv == "":
            break
        bits = 32 if length is None else 64
        if conv in "di":
            v = int(take()) & ((1 << bits) - 1)
            out.append(str(v - (1 << bits) if v >> (bits - 1) else v))
        elif conv in "uxX":
            v = int(take()) & ((1 << bits) - 1)
            out.append(str(v) if conv == "u" else f"{v:x}")
        elif conv == "p":
            out.append(f"0x{int(take()) & (2**64 - 1):x}")
        elif conv == "c":
            out.append(chr(int(take()) & 0xFF))
        elif conv == "s":
            s = take()
            s = "(null)" if s is None else str(s)
            out.append(s if precision < 0 else s[:precision])
        elif conv in "fge":
            out.append(format_double(float(take()), conv, precision))
        elif conv == "%":
            out.append("%")
        else:
            out.append("%" + conv)
    out.append(fmt[pos:])
    return "".join(out)


def argument_kinds(fmt: str) -> list[str]:
    """What each argument of `fmt` is: "int", "text" or "real", in order."""
    kinds = []
    for m in _CONVERSION.finditer(fmt):
        if m.group(1) == "*":
            kinds.append("int")
        conv = m.group(3)
        if conv in ("", "%"):
            continue
        kinds.append("text" if conv == "s" else "real" if conv in "fge" else "int")
    return kinds


def format_double(value: float, conversion: str = "g", precision: int = -1) -> str:
    """FormatBuffer::append_double, step for step (it is no round-trip printer,
    so Python's own %g would differ in the last digits)."""
    if value != value:
        return "nan"
    sign = ""
    if value < 0 or (value == 0 and str(value).startswith("-")):
        sign, value = "-", -value
    if value > 1.7976931348623157e308:
        return sign + "inf"
    precision = 6 if precision < 0 else min(precision, 17)
    exponent = 0
    if value != 0:
        v = value
        while v >= 10.0:
            v /= 10.0
            exponent += 1
        while v < 1.0:
            v *= 10.0
            exponent -= 1
    scientific = conversion == "e"
    frac_digits = precision
    trim = False
    if conversion == "g":
        p = 1 if precision == 0 else precision
        scientific = exponent < -4 or exponent >= p
        frac_digits = max(p - 1 if scientific else p - 1 - exponent, 0)
        trim = True
    mantissa = value
    if scientific and value != 0:
        for _ in range(exponent):
            mantissa /= 10.0
        for _ in range(-exponent):
            mantissa *= 10.0
    scale = 1.0
    for _ in range(frac_digits):
        scale *= 10.0
    rounded = mantissa * scale + 0.5
    if rounded >= 1.8e19:
        return sign + format_double(value, "e", precision)
    scaled = int(rounded)
    int_scale = int(scale)
    integer, fraction = divmod(scaled, int_scale)
    if scientific and integer >= 10:
        integer //= 10
        fraction //= 10
        exponent += 1
    frac = str(fraction).rjust(frac_digits, "0")[-frac_digits:] if frac_digits else ""
    if trim:
        frac = frac.rstrip("0")
    text = sign + str(integer) + ("." + frac if frac else "")
    if scientific:
        text += f"e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return text


# --- reading the sources ---


def _literal_end(code: str, i: int) -> int:
    """The index just past the string or character literal opening at code[i]."""
    j = i + 1
    while j < len(code) and code[j] != code[i]:
        j += 2 if code[j] == "\\" else 1
    return j + 1


def _blank_comments(src: str) -> str:
    """`src` with comments replaced by spaces (newlines kept), literals intact."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = _literal_end(src, i)
            out.append(src[i:j])
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _split_arguments(code: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose '(' is at code[start - 1]."""
    args, depth, i, begin = [], 0, start, start
    while i < len(code):
        c = code[i]
        if c in "\"'":
            i = _literal_end(code, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(code[begin:i])
                return args, i
            depth -= 1
        elif c == "," and depth == 0:
            args.append(code[begin:i])
            begin = i + 1
        i += 1
    raise MessageError("unbalanced parentheses")


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b"}
_LITERALS = re.compile(r'\s*"((?:\\.|[^"\\])*)"\s*')


def _string_literals(arg: str) -> str | None:
    """The value of `arg` if it is one or more adjacent string literals."""
    pos, parts = 0, []
    for m in _LITERALS.finditer(arg):
        if m.start() != pos:
            return None
        parts.append(re.sub(r"\\(x[0-9a-fA-F]+|.)", _unescape, m.group(1)))
        pos = m.end()
    return "".join(parts) if parts and pos == len(arg) else None


def _unescape(m: re.Match) -> str:
    s = m.group(1)
    if s[0] == "x":
        return chr(int(s[1:], 16))
    if s not in _ESCAPES:
        raise MessageError(f"unsupported escape \\{s} in a message format")
    return _ESCAPES[s]


def sites_in(src: str, path: str) -> Iterator[Site]:
    """Every message format in one source file. A format argument that is
    not a string literal fails (the runtime would not compile without
    messages either), except in the macros' own #define lines."""
    code = _blank_comments(src)
    for m in _INVOCATION.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        while line_start > 1 and code[: line_start - 1].rstrip(" ").endswith("\\"):  # a continued #define
            line_start = code.rfind("\n", 0, line_start - 1) + 1
        if code[line_start : m.start()].lstrip().startswith("#define"):
            continue
        line = code.count("\n", 0, m.start()) + 1
        try:
            args, _ = _split_arguments(code, m.end())
        except MessageError:
            raise MessageError(f"{path}:{line}: {m.group(1)} has unbalanced parentheses") from None
        index = FORMAT_ARGUMENT[m.group(1)]
        fmt = _string_literals(args[index]) if index < len(args) else None
        if fmt is None:
            raise MessageError(
                f"{path}:{line}: {m.group(1)}'s format (argument {index + 1}) is not a string literal; "
                "messages must be literals so runtimes without them can name them"
            )
        yield Site(fmt, path, line)


# Packed message text (docs/errors.md, "How messages are stored"). A runtime
# with messages stores each format packed: every byte from 0x80 up stands for
# the pair of bytes (each itself plain or packed) in this table's row
# byte - 0x80, and error.h's PARE_FAIL packs each literal at compile time by
# applying the rows in order, as `pack` does. The runtime's formatter
# unpacks before it formats. The rows are trained on the runtime's formats by
# `python -m tools.message_pairs`; a format written since is packed by the
# same rows, only less tightly.
MESSAGE_PAIRS = DEFAULT_RUNTIME_DIR / "core" / "message_pairs.inc"
MESSAGE_PAIR_COUNT = 128
_PAIR_ROW = re.compile(r"^\{(\d+), (\d+)\},$", re.MULTILINE)


def read_pairs(path: Path | str = MESSAGE_PAIRS) -> list[tuple[int, int]]:
    """The rows of a message_pairs.inc."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise MessageError(f"{path}: cannot read the message pair table ({e.strerror})") from e
    return [(int(a), int(b)) for a, b in _PAIR_ROW.findall(text)]


def _apply(seq: list[int], pair: tuple[int, int], code: int) -> list[int]:
    a, b = pair
    out: list[int] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
            out.append(code)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def pack(fmt: str, pairs: list[tuple[int, int]]) -> bytes:
    """`fmt` packed as the runtime's compiler packs it (message_text.h's pack_format)."""
    if not fmt.isascii():
        raise MessageError(f"message format {fmt!r} is not ASCII: write it in ASCII (docs/errors.md)")
    seq = list(fmt.encode("ascii"))
    for k, pair in enumerate(pairs):
        seq = _apply(seq, pair, 0x80 + k)
    return bytes(seq)


def unpack(packed: bytes, pairs: list[tuple[int, int]]) -> str:
    """The text of a packed format (format.cc's unpack_format)."""
    out = bytearray()

    def one(c: int) -> None:
        if c < 0x80:
            out.append(c)
        else:
            one(pairs[c - 0x80][0])
            one(pairs[c - 0x80][1])

    for c in packed:
        one(c)
    return out.decode("ascii")


def train_pairs(formats: list[str], count: int = MESSAGE_PAIR_COUNT) -> list[tuple[int, int]]:
    """The `count` rows that pack `formats` the most: each the most frequent adjacent pair left."""
    seqs = [list(f.encode("ascii")) for f in formats]
    pairs: list[tuple[int, int]] = []
    for k in range(count):
        counts: dict[tuple[int, int], int] = {}
        for s in seqs:
            for pair in zip(s, s[1:]):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        # Most frequent; ties to the smaller pair, so training is deterministic.
        pair = min(counts, key=lambda p: (-counts[p], p))
        pairs.append(pair)
        seqs = [_apply(s, pair, 0x80 + k) for s in seqs]
    return pairs
