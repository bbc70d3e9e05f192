"""Who owns each byte of a library's sections: ops, dtype cases, classes, core, other, unattributed.

The basis is the shipped (stripped) library's allocated sections. Symbols and
their extents come from its unstripped twin (the same link, so the same
addresses). Every symbol goes to one bucket:

  op            pare::kernels::<fn> of an operator (expected_symbols.json)
  kernel_dtype  pare::dispatch_case<pare::tags::<tag>, <type>, ...>: (tag, dtype)
  class         pare::classes::<Name>
  shared_kernels  other code of runtime/kernels/, which no single op owns
                (the GEMM, im2col, reduction loops: layers.py says which)
  core          every other pare:: symbol (the loader, executor, planner,
                registry), and the C API / PAL (pare_*)
  other         named symbols outside Pare (crt files, compiler runtime)

Bytes no symbol covers (linker-made sections, relocations, string
literals, alignment padding) go, when the library's bytes are at hand
(`gaps`, tools/size_diff/causes.py), to what caused them: the relocations
of a table to the table's bucket, an error message to the op or core that
owns it, padding to the symbol it aligns, the dynamic symbol tables to core.
What no rule explains stays `unattributed`. When symbols overlap (aliases, a
Mach-O symbol's gap extent), every byte is counted once, for the first symbol
in the order above, so

    sum(op) + sum(kernel_dtype) + sum(class) + shared_kernels + core + other + unattributed
        == sum of the allocated sections' sizes          (residual 0)

holds by construction, and `residual` in the report says so.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field

from tools.size_diff.causes import STRING, SYMBOL, GapExplainer
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.layers import Layers
from tools.verify.binary import BinaryInfo, Section
from tools.verify.expected import CLASS, KERNEL_DTYPE, OP, Expected, classify

SHARED_KERNELS = "shared_kernels"
CORE = "core"
OTHER = "other"
UNATTRIBUTED = "unattributed"
KEYED_BUCKETS = (OP, KERNEL_DTYPE, CLASS)
BUCKETS = KEYED_BUCKETS + (SHARED_KERNELS, CORE, OTHER, UNATTRIBUTED)
_RANK = {KERNEL_DTYPE: 0, CLASS: 1, OP: 2, SHARED_KERNELS: 3, CORE: 4, OTHER: 5}

# The qualified name starts with pare:: (after an optional return type, or
# "vtable for " and friends), or it is a C-level pare_* name.
_CORE = re.compile(r"^(?:[^()]* )?pare::|^(?:vtable|typeinfo|typeinfo name|guard variable) for pare::|^pare_")


@dataclass(frozen=True)
class AttributedSymbol:
    name: str  # demangled
    bytes: int  # bytes counted for it (0 when an alias or overlap took them)
    section: str
    bucket: str
    key: str | None  # op name, "tag/dtype" or class name; None for shared_kernels/core/other
    kind: str = SYMBOL  # or what made bytes no symbol covers: "string", "relocations", "linker table", "padding"
    reason: str = ""  # why, for the kinds other than "symbol"


@dataclass(frozen=True)
class SectionShare:
    name: str
    bytes: int
    file_backed: bool
    attributed: int

    @property
    def unattributed(self) -> int:
        return self.bytes - self.attributed


@dataclass
class Attribution:
    sections: list[SectionShare]
    keyed: dict[str, dict[str, int]]  # bucket -> key -> bytes, for op / kernel_dtype / class
    shared_kernels: int
    core: int
    other: int
    unattributed: int
    symbols: list[AttributedSymbol]
    # op -> bytes of its kernel plus the dtype cases instantiated from it
    # (dispatch_case<..., pare::kernels::<fn>(...)::$_0>): what the op costs.
    op_inclusive: dict[str, int] = field(default_factory=dict)

    @property
    def section_bytes(self) -> int:
        return sum(s.bytes for s in self.sections)

    def bucket_total(self, bucket: str) -> int:
        if bucket in KEYED_BUCKETS:
            return sum(self.keyed[bucket].values())
        return {
            SHARED_KERNELS: self.shared_kernels,
            CORE: self.core,
            OTHER: self.other,
            UNATTRIBUTED: self.unattributed,
        }[bucket]

    @property
    def residual(self) -> int:
        """Section total minus every bucket: 0 unless the accounting is wrong."""
        return self.section_bytes - sum(self.bucket_total(b) for b in BUCKETS)


def check_twins(stripped: BinaryInfo, unstripped: BinaryInfo) -> None:
    """The stripped library must be the unstripped one minus symbols: identical allocated sections."""
    a = {(s.name, s.address, s.size) for s in stripped.sections}
    b = {(s.name, s.address, s.size) for s in unstripped.sections}
    if (stripped.format, stripped.arch) != (unstripped.format, unstripped.arch) or a != b:
        diff = sorted(a ^ b)
        what = (
            f"section {diff[0][0]} differs"
            if diff
            else f"{stripped.format}/{stripped.arch} vs {unstripped.format}/{unstripped.arch}"
        )
        raise SizeDiffError(
            f"{stripped.path} and {unstripped.path} are not a stripped/unstripped pair ({what}); "
            "pass both from the same bazel-bin/<pkg>/<name>/<platform>/ directory of one build"
        )


def _bucket(expected: Expected | None, layers: Layers | None, fmt: str, demangled: str) -> tuple[str, str | None]:
    if expected is not None:
        entry = classify(expected, fmt, demangled)
        if entry is not None:
            return entry.kind, entry.key
    if not _CORE.search(demangled):
        return OTHER, None
    if layers is not None and layers.is_shared_kernel_code(demangled):
        return SHARED_KERNELS, None
    return CORE, None


def _cstring_extent(s, home: Section, gaps: GapExplainer | None) -> int:
    """A Mach-O symbol in a C-string section ends at its NUL, not at the next
    symbol: the literals after it belong to whoever uses them."""
    if gaps is None or s.size_source != "gap" or not home.name.endswith(",__cstring"):
        return s.size
    data = gaps.lib.data(home, s.address, s.address + s.size)
    if not data:
        return s.size
    nul = data.find(b"\0")
    return s.size if nul < 0 else nul + 1


def attribute(
    unstripped: BinaryInfo,
    expected: Expected | None,
    sections: tuple[Section, ...] | None = None,
    *,
    gaps: GapExplainer | None = None,
) -> Attribution:
    """Attributes `sections` (default: the unstripped library's own) to the unstripped library's symbols,
    then, with `gaps`, the bytes between them to what caused them, and the Pare code outside ops, dtype cases
    and classes to the shared kernel code or the core by the layer the sources define it in (without sources,
    all of it to core)."""
    basis = sections if sections is not None else unstripped.sections
    layers = gaps.sources.layers if gaps is not None and gaps.sources is not None else None
    by_name = {s.name: s for s in basis}
    if expected is not None and unstripped.format not in expected.symbol_formats:
        raise SizeDiffError(f"{expected.path}: no match patterns for {unstripped.format}; regenerate it with codegen")

    candidates = []
    for s in unstripped.symbols:
        if s.section not in by_name or s.size <= 0:
            continue
        bucket, key = _bucket(expected, layers, unstripped.format, s.demangled)
        packed = gaps.packed_message(s.demangled) if gaps is not None else None
        if packed is not None:
            bucket, key = packed[1].bucket, packed[1].key
        candidates.append((s, _cstring_extent(s, by_name[s.section], gaps), bucket, key, packed))
    # Lower address first; at one address the more specific bucket, then the longer extent.
    candidates.sort(key=lambda c: (c[0].address, _RANK[c[2]], -c[1], c[0].name))

    keyed: dict[str, dict[str, int]] = {b: defaultdict(int) for b in KEYED_BUCKETS}
    shared = core = other = 0
    per_section: dict[str, int] = defaultdict(int)
    symbols = []
    covered = -1
    spans: list[tuple[int, int, str, str | None, str]] = []  # start, end, bucket, key, name: what symbols cover

    def count(n: int, bucket: str, key: str | None) -> None:
        nonlocal shared, core, other
        if bucket in KEYED_BUCKETS:
            keyed[bucket][key] += n
        elif bucket == SHARED_KERNELS:
            shared += n
        elif bucket == CORE:
            core += n
        else:
            other += n

    for s, size, bucket, key, packed in candidates:
        home = by_name[s.section]
        start = max(s.address, covered)
        end = min(s.address + size, home.end)
        n = max(0, end - start)
        covered = max(covered, end)
        per_section[home.name] += n
        count(n, bucket, key)
        if packed is not None:  # a packed error message: shown as its text, owned as the plain one
            symbols.append(AttributedSymbol(packed[0], n, home.name, bucket, key, STRING, packed[1].reason))
        else:
            symbols.append(AttributedSymbol(s.demangled, n, home.name, bucket, key))
        if n:
            spans.append((start, end, bucket, key, s.demangled))

    if gaps is not None:
        starts = [sp[0] for sp in spans]
        first_at: dict[int, tuple[str, str | None, str]] = {}
        for s, _, bucket, key, _ in candidates:
            first_at.setdefault(s.address, (bucket, key, s.demangled))

        def owner_at(address: int) -> tuple[str, str | None, str] | None:
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and spans[i][0] <= address < spans[i][1]:
                return spans[i][2], spans[i][3], spans[i][4]
            return None

        for home in basis:
            inside = [(a, b) for a, b, *_ in spans if home.address <= a < home.end]
            at = home.address
            for a, b in inside + [(home.end, home.end)]:
                if a > at:
                    for c in gaps.causes(home, at, a, owner_at, first_at.get):
                        per_section[home.name] += c.end - c.start
                        count(c.end - c.start, c.bucket, c.key)
                        symbols.append(
                            AttributedSymbol(c.name, c.end - c.start, home.name, c.bucket, c.key, c.kind, c.reason)
                        )
                at = max(at, b)

    shares = [SectionShare(s.name, s.size, s.file_backed, per_section.get(s.name, 0)) for s in basis]
    unattributed = sum(s.unattributed for s in shares)

    # Every expected entry appears, with 0 bytes when it is not linked, so
    # diffs show entries appearing and disappearing.
    if expected is not None:
        for e in expected.entries:
            keyed[e.kind].setdefault(e.key, 0)

    op_inclusive = {}
    if expected is not None:
        ops = {e.key: e.symbol + "(" for e in expected.entries if e.kind == OP and e.symbol}
        for op, needle in ops.items():
            total = keyed[OP].get(op, 0)
            total += sum(a.bytes for a in symbols if a.bucket == KERNEL_DTYPE and needle in a.name)
            op_inclusive[op] = total

    symbols.sort(key=lambda a: (-a.bytes, a.name))
    return Attribution(
        sections=sorted(shares, key=lambda s: (-s.bytes, s.name)),
        keyed={b: dict(sorted(v.items())) for b, v in keyed.items()},
        shared_kernels=shared,
        core=core,
        other=other,
        unattributed=unattributed,
        symbols=symbols,
        op_inclusive=dict(sorted(op_inclusive.items())),
    )
