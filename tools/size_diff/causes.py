"""What caused the section bytes no symbol covers: strings, relocations, linker tables, padding.

Attribution (attribution.py) first gives every byte a symbol covers to that
symbol's bucket. What is left (the gaps) is not noise: it is made by
something, and this module says what, from the library's own bytes and the
runtime's sources:

  linker table  .dynsym/.dynstr/.gnu.hash/.dynamic/.plt/.got/... (ELF),
                __stubs/__got (Mach-O): the exported C API and the imported
                functions, which every runtime has -> core
  relocations   each dynamic relocation of .rela.dyn/.relr.dyn (packed or
                not) is charged to the symbol whose pointer it fixes (a
                vtable, a registry table); the table's bytes are shared out
                by relocation count -> that symbol's bucket
  string        a NUL-terminated literal in .rodata/__cstring/__const: an
                error message format (pare.messages knows each one and its
                file and line), any other string literal of runtime/, an
                operator or class name of the manifest, or a string a
                relocated pointer points at -> the op, class or core that
                owns it (below)
  packed text   a runtime with messages stores each error message format
                packed (runtime/core/message_text.h), as a symbol
                pare::detail::PackedText<bytes...>::text: its bytes, read
                from the name and unpacked with message_pairs.inc, are the
                format, owned like the plain string above; the row shows the
                text
  padding       alignment bytes right before a symbol (zeros in data;
                anything shorter than the symbol's alignment in code) -> the
                symbol they align

Which part owns a literal of runtime/<layer>/...: anything outside kernels/ is
core; in kernels/, the function that holds the literal (the last
definition at column 0 above its line) decides: an op's kernel function
gives the op, a `Class::method` of a selected class gives the class; a helper
goes to the one selected op or class its file defines, and to the shared
kernel code when the file serves several or none (as a shared helper's code
does). A literal used from several places goes to core as soon as one of
them is core, else to the shared kernel code when the places disagree.

Everything else (jump tables, numeric constants, strings found nowhere)
stays unattributed. The report's identity does not change: each byte gets
one bucket, and the residual stays 0.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lief

from pare.messages import (
    DEFAULT_RUNTIME_DIR,
    MESSAGE_PAIRS,
    SOURCE_SUFFIXES,
    MessageError,
    MessageTable,
    _blank_comments,
    read_pairs,
    unpack,
)
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.layers import Layers
from tools.verify.binary import Section
from tools.verify.expected import CLASS, OP, Expected

SHARED_KERNELS = "shared_kernels"
CORE = "core"
OTHER = "other"

# Row kinds (AttributedSymbol.kind).
SYMBOL = "symbol"
STRING = "string"
RELOCATIONS = "relocations"
LINKER_TABLE = "linker table"
PADDING = "padding"
KINDS = (SYMBOL, STRING, RELOCATIONS, LINKER_TABLE, PADDING)

_EXPORTS_AND_IMPORTS = "dynamic linking: the exported C API (pare_*) and the imported libc/libm functions"
_IMPORT_CALLS = "calls to imported functions (memcpy, libm, pthread, ...) go through these"
# Sections the linker makes, and why a runtime has them.
LINKER_TABLES = {
    ".dynsym": _EXPORTS_AND_IMPORTS,
    ".dynstr": _EXPORTS_AND_IMPORTS,
    ".gnu.hash": _EXPORTS_AND_IMPORTS + " (the hash table the loader looks them up in)",
    ".hash": _EXPORTS_AND_IMPORTS + " (the hash table the loader looks them up in)",
    ".gnu.version": _EXPORTS_AND_IMPORTS + " (symbol versions)",
    ".gnu.version_r": _EXPORTS_AND_IMPORTS + " (versions of the imported symbols)",
    ".gnu.version_d": _EXPORTS_AND_IMPORTS + " (versions of the exported symbols)",
    ".dynamic": "dynamic linking: the loader's table of contents (needed libraries, where the tables are)",
    ".interp": "dynamic linking: the loader's path",
    ".note.gnu.build-id": "the build id note the linker writes (crash reports match symbols by it)",
    ".note.android.ident": "the Android NDK note (the API level)",
    ".rela.plt": _IMPORT_CALLS + " (their relocations)",
    ".rel.plt": _IMPORT_CALLS + " (their relocations)",
    ".plt": _IMPORT_CALLS + " (the stubs)",
    ".plt.got": _IMPORT_CALLS + " (the stubs)",
    ".plt.sec": _IMPORT_CALLS + " (the stubs)",
    ".got.plt": _IMPORT_CALLS + " (their addresses)",
    ".got": "addresses the loader fills in (imported data, functions taken by address)",
    ".eh_frame": "unwind tables (the crt files' and the terminator)",
    ".eh_frame_hdr": "unwind tables (the lookup header)",
    ".init_array": "pointers to the crt files' constructors",
    ".fini_array": "pointers to the crt files' destructors",
    "__TEXT,__stubs": _IMPORT_CALLS + " (the stubs)",
    "__TEXT,__stub_helper": _IMPORT_CALLS + " (the lazy binding helper)",
    "__DATA_CONST,__got": _IMPORT_CALLS + " (their addresses)",
    "__DATA,__got": _IMPORT_CALLS + " (their addresses)",
    "__DATA,__la_symbol_ptr": _IMPORT_CALLS + " (their addresses)",
    "__TEXT,__unwind_info": "unwind tables",
    "__TEXT,__eh_frame": "unwind tables",
}
RELOCATION_SECTIONS = (".rela.dyn", ".rel.dyn", ".relr.dyn")

# What a kernel source's top-level function definitions look like (clang-format
# puts them at column 0 inside the namespaces): `Error aten_mm(KernelContext& ...`.
_DEFINITION = re.compile(
    r"^(?![\s#}/])(?!namespace\b|using\b|static_assert\b|struct\b|class\b|enum\b)[^;=(]*?\b([A-Za-z_][\w:]*)\s*\("
)
_LITERAL = re.compile(r'"((?:\\.|[^"\\\n])*)"')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_TEXT_BYTES = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D} | frozenset(range(0x80, 0x100))


@dataclass(frozen=True)
class Cause:
    """A range of a gap, and who caused it."""

    start: int  # address
    end: int
    kind: str  # STRING, RELOCATIONS, LINKER_TABLE, PADDING
    name: str  # the row's name: the string's text, "relocations of X", the section, "padding before X"
    bucket: str
    key: str | None
    reason: str


@dataclass(frozen=True)
class Owner:
    bucket: str
    key: str | None
    reason: str


# A packed message's symbol (message_text.h); its template arguments are the
# packed bytes, signed or not as the platform's char is.
_PACKED_TEXT = re.compile(r"^pare::detail::PackedText<((?:\(char\)-?\d+(?:, )?)*)>::text$")
_PACKED_BYTE = re.compile(r"\(char\)(-?\d+)")


def _quoted(text: str) -> str:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return '"' + shown.replace("\n", "\\n") + '"'


# (bucket, key, name) of the attributed symbol covering an address, or None.
OwnerAt = Callable[[int], "tuple[str, str | None, str] | None"]


def _unescape(body: str) -> str:
    def one(m: re.Match) -> str:
        s = m.group(1)
        if s[0] == "x":
            return chr(int(s[1:], 16))
        if s[0] in "01234567":
            return chr(int(s, 8))
        return _C_ESCAPES.get(s, s)

    return _ESCAPE.sub(one, body)


def _literals(code: str) -> list[tuple[str, int]]:
    """Every string literal of comment-free `code` (adjacent ones joined) with its line."""
    out: list[tuple[str, int]] = []
    last_end, for_line = -1, 0
    for m in _LITERAL.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        if code[line_start : m.start()].lstrip().startswith("#include"):
            continue
        if m.start() > 0 and code[m.start() - 1] == "'":  # '"'
            continue
        text = _unescape(m.group(1))
        if out and last_end >= 0 and not code[last_end : m.start()].strip():
            out[-1] = (out[-1][0] + text, out[-1][1])
        else:
            for_line = code.count("\n", 0, m.start()) + 1
            out.append((text, for_line))
        last_end = m.end()
    return out


class SourceOwners:
    """Which part of the runtime (op, class, shared kernel code, core) owns each literal of runtime/'s sources,
    and (`layers`) which layer defines each symbol."""

    def __init__(self, expected: Expected | None, runtime_dir: Path | str | None = None):
        # Without an explicit directory, this checkout's runtime/; where there is none (a Bazel test's
        # runfiles), only the manifest's names are known and the other strings stay unattributed.
        root = Path(runtime_dir) if runtime_dir is not None else DEFAULT_RUNTIME_DIR
        if runtime_dir is not None and not root.is_dir():
            raise SizeDiffError(
                f"{root}: no runtime sources to find string literals in; pass the runtime/ directory the "
                "runtime was built from (--runtime-dir)"
            )
        self.layers = Layers(root) if root.is_dir() else None
        self.ops: dict[str, str] = {}  # kernel function name -> op
        self.classes: set[str] = set()
        self.names: dict[str, Owner] = {}  # exact strings: op and class names of the manifest
        if expected is not None:
            for e in expected.entries:
                if not e.selected:
                    continue
                if e.kind == OP:
                    if e.symbol:
                        self.ops[e.symbol.rsplit("::", 1)[-1]] = e.key
                    self.names[e.key] = Owner(
                        OP, e.key, f"the name of op {e.key} in the registry; the manifest selects it"
                    )
                elif e.kind == CLASS:
                    self.classes.add(e.key)
                    self.names[e.key] = Owner(CLASS, e.key, f"the name of class {e.key}; the manifest selects it")
        try:
            table = MessageTable.scan(root) if root.is_dir() else MessageTable({})
        except MessageError as e:
            raise SizeDiffError(str(e)) from None
        self.messages: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for sites in table.sites.values():
            for s in sites:
                self.messages[s.fmt].append((s.path, s.line))
        pairs_path = root / MESSAGE_PAIRS.relative_to(DEFAULT_RUNTIME_DIR)
        self.pairs = read_pairs(pairs_path) if pairs_path.is_file() else None
        self.literals: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self._definitions: dict[str, list[tuple[int, str]]] = {}
        for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES + (".def",) and p.is_file()):
            rel = path.relative_to(root).as_posix()
            code = _blank_comments(path.read_text(encoding="utf-8"))
            for text, line in _literals(code):
                if text:
                    self.literals[text].append((rel, line))
            if rel.startswith("kernels/"):
                defs = []
                for i, line in enumerate(code.split("\n"), 1):
                    m = _DEFINITION.match(line)
                    if m and not line.rstrip().endswith(";"):
                        defs.append((i, m.group(1)))
                self._definitions[rel] = defs
        self._cache: dict[str, Owner | None] = {}

    def _site_owner(self, path: str, line: int) -> Owner:
        where = f"runtime/{path}:{line}"
        if not path.startswith("kernels/"):
            return Owner(CORE, None, f"{where}, in the {path.split('/')[0]} layer: every runtime carries it")
        defs = self._definitions.get(path, [])
        i = bisect.bisect_right([d[0] for d in defs], line) - 1
        fn = defs[i][1] if i >= 0 else None
        if fn is not None:
            if fn in self.ops:
                return Owner(OP, self.ops[fn], f"{where}, in {fn}, op {self.ops[fn]}'s kernel")
            cls = fn.split("::")[0]
            if "::" in fn and cls in self.classes:
                return Owner(CLASS, cls, f"{where}, in {fn}, of class {cls}")
        owners = sorted(
            {(OP, self.ops[f]) for _, f in defs if f in self.ops}
            | {(CLASS, f.split("::")[0]) for _, f in defs if "::" in f and f.split("::")[0] in self.classes}
        )
        in_fn = f", in {fn}" if fn else ""
        if len(owners) == 1:
            b, k = owners[0]
            return Owner(
                b,
                k,
                f"{where}{in_fn}, a helper of the one selected {'op' if b == OP else 'class'} its file holds ({k})",
            )
        if owners:
            keys = ", ".join(k for _, k in owners)
            return Owner(
                SHARED_KERNELS, None, f"{where}{in_fn}, a helper its file's selected ops/classes share ({keys})"
            )
        return Owner(SHARED_KERNELS, None, f"{where}{in_fn}, kernel code no single selected op owns")

    def owner(self, text: str) -> Owner | None:
        """Who owns the literal `text`, or None when the sources have no such literal."""
        if text in self._cache:
            return self._cache[text]
        found: Owner | None = self.names.get(text)
        if found is None:
            sites = self.messages.get(text)
            what = "error message"
            if not sites:
                sites, what = self.literals.get(text), "string literal"
            if sites:
                owners = [self._site_owner(p, ln) for p, ln in sorted(set(sites))]
                kinds = {(o.bucket, o.key) for o in owners}
                if len(kinds) == 1:
                    o = owners[0]
                    more = f" (and {len(owners) - 1} more places)" if len(owners) > 1 else ""
                    found = Owner(o.bucket, o.key, f"{what} at {o.reason}{more}")
                else:
                    core = next((o for o in owners if o.bucket == CORE), None)
                    if core is not None:
                        found = Owner(
                            CORE, None, f"{what} used in {len(owners)} places, core among them: {core.reason}"
                        )
                    else:
                        keys = ", ".join(sorted({o.key or "shared kernel code" for o in owners}))
                        found = Owner(SHARED_KERNELS, None, f"{what} used in {len(owners)} kernel places: {keys}")
        self._cache[text] = found
        return found


class LibraryBytes:
    """The section contents and dynamic relocations of one library (read with LIEF)."""

    def __init__(self, path: Path | str):
        parsed = lief.parse(str(path))
        if isinstance(parsed, lief.MachO.FatBinary):
            slices = [parsed.at(i) for i in range(parsed.size)]
            parsed = next((s for s in slices if s.header.cpu_type == lief.MachO.Header.CPU_TYPE.ARM64), slices[0])
        self.contents: dict[str, bytes] = {}
        # section -> [(location, target)] of the relocations stored in it
        self.relocations: dict[str, list[tuple[int, int]]] = defaultdict(list)
        targets: dict[int, int] = {}  # target address -> the lowest location pointing at it
        if isinstance(parsed, lief.ELF.Binary):
            for s in parsed.sections:
                if s.size and s.type != lief.ELF.Section.TYPE.NOBITS:
                    self.contents[s.name] = bytes(s.content)
            names = {sec.name for sec in parsed.sections}
            relr = ".relr.dyn" if ".relr.dyn" in names else None
            rela = next((n for n in (".rela.dyn", ".rel.dyn") if n in names), None)
            for r in parsed.dynamic_relocations:
                home = relr if (r.encoding == lief.ELF.Relocation.ENCODING.RELR and relr) else rela
                if home:
                    self.relocations[home].append((r.address, r.addend))
                    if r.addend and (r.addend not in targets or r.address < targets[r.addend]):
                        targets[r.addend] = r.address
        elif isinstance(parsed, lief.MachO.Binary):
            for s in parsed.sections:
                if s.size and s.type not in (lief.MachO.Section.TYPE.ZEROFILL, lief.MachO.Section.TYPE.GB_ZEROFILL):
                    self.contents[f"{s.segment_name},{s.name}"] = bytes(s.content)

        self._targets = sorted(targets.items())

    def pointed_at(self, start: int, end: int) -> int | None:
        """The lowest location whose relocated pointer targets [start, end), if any."""
        hits = []
        for target, location in self._targets[bisect.bisect_left(self._targets, (start, -1)) :]:
            if target >= end:
                break
            hits.append(location)
        return min(hits) if hits else None

    def data(self, section: Section, start: int, end: int) -> bytes | None:
        blob = self.contents.get(section.name)
        if blob is None:
            return None
        return blob[start - section.address : end - section.address]


def _apportion(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, largest remainder first (ties: earlier first)."""
    w = sum(weights)
    shares = [total * x // w for x in weights]
    rest = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-((total * weights[i]) % w), i))
    for i in order[:rest]:
        shares[i] += 1
    return shares


def _alignment(address: int) -> int:
    return address & -address if address else 1 << 16


class GapExplainer:
    """Turns one gap (bytes no symbol covers) into causes."""

    def __init__(self, lib: LibraryBytes, sources: SourceOwners | None):
        self.lib = lib
        self.sources = sources

    def causes(
        self,
        section: Section,
        start: int,
        end: int,
        owner_at: OwnerAt,
        starting_at: Callable[[int], "tuple[str, str | None, str] | None"],
    ) -> list[Cause]:
        if section.name in RELOCATION_SECTIONS and self.lib.relocations.get(section.name):
            return self._relocations(section, start, end, owner_at)
        if section.name in LINKER_TABLES:
            return [Cause(start, end, LINKER_TABLE, section.name, CORE, None, LINKER_TABLES[section.name])]
        if section.executable:
            nxt = starting_at(end)
            if nxt is not None and end - start < _alignment(end):
                return [self._padding(start, end, nxt)]
            return []
        data = self.lib.data(section, start, end)
        if data is None:
            return []
        return self._data(start, data, end, owner_at, starting_at)

    @staticmethod
    def _padding(start: int, end: int, nxt: tuple[str, str | None, str]) -> Cause:
        bucket, key, name = nxt
        return Cause(start, end, PADDING, f"padding before {name}", bucket, key, f"aligns {name}, which follows it")

    def _relocations(self, section: Section, start: int, end: int, owner_at: OwnerAt) -> list[Cause]:
        groups: dict[tuple[str, str | None, str], int] = defaultdict(int)
        for location, _ in self.lib.relocations[section.name]:
            found = owner_at(location)
            groups[
                found if found is not None else (CORE, None, "words outside any symbol (.got, unnamed pointer tables)")
            ] += 1
        items = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0][2]))
        out, at = [], start
        for ((bucket, key, name), count), share in zip(items, _apportion(end - start, [c for _, c in items])):
            if share:
                why = (
                    f"{count} of the {len(self.lib.relocations[section.name])} relocations in {section.name} "
                    f"fix pointers in {name}"
                )
                out.append(Cause(at, at + share, RELOCATIONS, f"relocations of {name}", bucket, key, why))
                at += share
        return out

    def _data(self, start: int, data: bytes, end: int, owner_at: OwnerAt, starting_at) -> list[Cause]:
        # NUL-terminated pieces: strings, runs of zeros, and binary data.
        pieces: list[tuple[int, int, Cause | None, bool]] = []  # start, end, cause, is_zero
        i = 0
        while i < len(data):
            j = data.find(b"\0", i)
            j = len(data) if j < 0 else j + 1
            body = data[i : j - 1] if data[j - 1 : j] == b"\0" else data[i:j]
            a, b = start + i, start + j
            if not body:
                pieces.append((a, b, None, True))
            elif all(c in _TEXT_BYTES for c in body) and data[j - 1 : j] == b"\0":
                pieces.append((a, b, self._string(a, b, body, owner_at), False))
            else:
                pieces.append((a, b, None, False))
            i = j
        out: list[Cause] = []
        # Zeros right before something attributed are its alignment padding.
        k = len(pieces) - 1
        follow = starting_at(end)
        while k >= 0:
            a, b, cause, zero = pieces[k]
            if cause is not None:
                out.append(cause)
                follow = (cause.bucket, cause.key, cause.name)
            elif zero:
                z = k
                while z > 0 and pieces[z - 1][3]:
                    z -= 1
                a = pieces[z][0]
                if follow is not None and b - a < _alignment(b):
                    out.append(self._padding(a, b, follow))
                follow = None
                k = z
            else:
                follow = None
            k -= 1
        return sorted(out, key=lambda c: c.start)

    def packed_message(self, demangled: str) -> tuple[str, Owner] | None:
        """The quoted text and owner of a packed message's symbol; None for any other symbol (or without
        the sources' pair table)."""
        m = _PACKED_TEXT.match(demangled)
        if m is None or self.sources is None or self.sources.pairs is None:
            return None
        packed = bytes(int(v) & 0xFF for v in _PACKED_BYTE.findall(m.group(1)))
        try:
            text = unpack(packed, self.sources.pairs)
        except (IndexError, UnicodeDecodeError):
            return None  # packed with another table than these sources'
        owner = self.sources.owner(text) or Owner(CORE, None, "an error message these sources do not have")
        return _quoted(text), Owner(owner.bucket, owner.key, f"packed {owner.reason}")

    def _string(self, a: int, b: int, body: bytes, owner_at: OwnerAt) -> Cause | None:
        text = body.decode("utf-8", errors="replace")
        name = _quoted(text)
        if self.sources is not None:
            o = self.sources.owner(text)
            if o is not None:
                return Cause(a, b, STRING, name, o.bucket, o.key, o.reason)
        location = self.lib.pointed_at(a, b)
        found = owner_at(location) if location is not None else None
        if found is not None:
            bucket, key, holder = found
            return Cause(a, b, STRING, name, bucket, key, f"a string {holder} points at (a relocated pointer)")
        return None
