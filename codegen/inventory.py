"""The runtime's inventory: what the runtime can contain, from its `.def` files.

docs/selection.md defines the X-macro files under `runtime/inventory/`:
`*.ops.def` (PARE_OP), `*.tags.def` (PARE_KERNEL_TAG), `classes.def`
(PARE_CLASS) and `features.def` (PARE_BUILD_FEATURE), one entry per line,
nothing else on a line but comments. Codegen validates manifests against this
inventory and lists what must be absent from a selective build.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from codegen.dtypes import KERNEL_DTYPE_NAMES, QUANTIZED_STORAGE, storage_dtype, suggest_dtype
from codegen.errors import InventoryError
from codegen.manifest import DEFAULT_OVERLOAD_SUFFIX, Operator, strip_overload

REPO_ROOT = Path(__file__).absolute().parent.parent
DEFAULT_INVENTORY_DIR = REPO_ROOT / "runtime" / "inventory"

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_OP_NAME = re.compile(rf"{_IDENT}::{_IDENT}(?:\.{_IDENT})?")
_ENTRY = {
    "PARE_OP": re.compile(rf'PARE_OP\(\s*"(?P<name>[^"]*)"\s*,\s*(?P<fn>{_IDENT})\s*\)'),
    "PARE_KERNEL_TAG": re.compile(rf"PARE_KERNEL_TAG\(\s*(?P<name>{_IDENT})\s*(?P<dtypes>(?:,\s*{_IDENT}\s*)+)\)"),
    "PARE_CLASS": re.compile(rf"PARE_CLASS\(\s*(?P<name>{_IDENT})\s*\)"),
    "PARE_BUILD_FEATURE": re.compile(rf"PARE_BUILD_FEATURE\(\s*(?P<name>{_IDENT})\s*\)"),
}
# (glob, the one macro its lines may use)
_FILE_KINDS = (
    ("**/*.ops.def", "PARE_OP"),
    ("**/*.tags.def", "PARE_KERNEL_TAG"),
    ("**/classes.def", "PARE_CLASS"),
    ("**/features.def", "PARE_BUILD_FEATURE"),
)
_EXAMPLES = {
    "PARE_OP": 'PARE_OP("aten::add.Tensor", aten_add_Tensor)',
    "PARE_KERNEL_TAG": "PARE_KERNEL_TAG(add_kernel, Float, Long)",
    "PARE_CLASS": "PARE_CLASS(LinearPackedParams)",
    "PARE_BUILD_FEATURE": "PARE_BUILD_FEATURE(op_profiling)",
}


@dataclass(frozen=True)
class InventoryOp:
    name: str  # full name, default overload without a dot: aten::relu
    function: str  # kernel function in namespace pare::kernels
    location: str  # "<file relative to the inventory dir>:<line>"

    @property
    def base_name(self) -> str:
        return strip_overload(self.name)


@dataclass(frozen=True)
class KernelTag:
    name: str
    # every dtype its dispatch can reach, in ScalarType order of their
    # storage, as the tag names them (a quantized name: QInt8 for Char)
    dtypes: tuple[str, ...]
    location: str

    def manifest_name(self, dtype: str) -> str:
        """How a manifest names this tag's case for the runtime's dtype
        `dtype` (what a trace reports): the tag's own name for it."""
        return next((d for d in self.dtypes if storage_dtype(d).name == dtype), dtype)


@dataclass(frozen=True)
class Inventory:
    root: str  # the directory, as given, for messages
    ops: dict[str, InventoryOp] = field(default_factory=dict)
    tags: dict[str, KernelTag] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)  # name -> location
    build_features: dict[str, str] = field(default_factory=dict)  # name -> location

    def overloads_of(self, base_name: str) -> tuple[str, ...]:
        return tuple(n for n, op in self.ops.items() if op.base_name == base_name)

    def ops_selected_by(self, op: Operator) -> tuple[str, ...]:
        """The runtime operators one manifest entry selects (torchgen semantics)."""
        if op.selects_all_overloads:
            return self.overloads_of(op.name)
        return (op.name,) if op.name in self.ops else ()


def load_inventory(directory: str | os.PathLike[str] | None = None) -> Inventory:
    """Parse every `.def` file under `directory` (default: runtime/inventory).

    Raises InventoryError naming file:line for anything off-format, and when
    the directory holds no `.def` file at all.
    """
    root = Path(directory) if directory is not None else DEFAULT_INVENTORY_DIR
    shown = os.fspath(directory) if directory is not None else "runtime/inventory"
    if not root.is_dir():
        raise InventoryError(
            f"{shown}: inventory directory does not exist; pass --inventory <runtime/inventory directory>"
        )

    files: list[tuple[str, Path, str]] = []
    for pattern, macro in _FILE_KINDS:
        for path in root.glob(pattern):
            if path.is_file():
                files.append((path.relative_to(root).as_posix(), path, macro))
    if not files:
        raise InventoryError(
            f"{shown}: no *.ops.def, *.tags.def, classes.def or features.def files; "
            "pass --inventory <runtime/inventory directory> (format: docs/selection.md)"
        )
    files.sort()

    ops: dict[str, InventoryOp] = {}
    functions: dict[str, str] = {}
    tags: dict[str, KernelTag] = {}
    classes: dict[str, str] = {}
    features: dict[str, str] = {}
    for rel, path, macro in files:
        for lineno, match in _entries(path, f"{shown}/{rel}", macro):
            loc = f"{rel}:{lineno}"
            where = f"{shown}/{loc}"
            name = match["name"]
            if macro == "PARE_OP":
                _check_op_name(name, where)
                fn = match["fn"]
                _no_duplicate(ops, name, where, "operator", lambda o: f"{shown}/{o.location}")
                if fn in functions:
                    raise InventoryError(
                        f"{where}: kernel function {fn} is already used by {functions[fn]}; give each operator its own function"
                    )
                functions[fn] = f"{shown}/{loc}"
                ops[name] = InventoryOp(name, fn, loc)
            elif macro == "PARE_KERNEL_TAG":
                _no_duplicate(tags, name, where, "kernel tag", lambda t: f"{shown}/{t.location}")
                dtypes = [d.strip() for d in match["dtypes"].split(",")[1:]]
                for d in dtypes:
                    if d not in KERNEL_DTYPE_NAMES:
                        hint = suggest_dtype(d)
                        raise InventoryError(
                            f"{where}: unknown dtype {d!r} in kernel tag {name}; "
                            f"{f'did you mean {hint}? ' if hint else ''}use {' '.join(KERNEL_DTYPE_NAMES)}"
                        )
                storages = [storage_dtype(d).name for d in dtypes]
                if len(set(storages)) != len(storages):
                    twice = ", ".join(f"{d} ({QUANTIZED_STORAGE[d]})" for d in dtypes if d in QUANTIZED_STORAGE)
                    raise InventoryError(
                        f"{where}: kernel tag {name} lists a dtype twice{f' (stored as: {twice})' if twice else ''}; "
                        "list each dtype once"
                    )
                ordered = tuple(sorted(dtypes, key=lambda d: storage_dtype(d).value))
                tags[name] = KernelTag(name, ordered, loc)
            elif macro == "PARE_CLASS":
                _no_duplicate(classes, name, where, "class", lambda at: f"{shown}/{at}")
                classes[name] = loc
            else:
                _no_duplicate(features, name, where, "build feature", lambda at: f"{shown}/{at}")
                features[name] = loc

    return Inventory(
        root=shown,
        ops=dict(sorted(ops.items())),
        tags=dict(sorted(tags.items())),
        classes=dict(sorted(classes.items())),
        build_features=dict(sorted(features.items())),
    )


def _entries(path: Path, shown: str, macro: str):
    """(line number, regex match) for each entry line; comments stripped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InventoryError(f"{shown}: cannot read ({e}); check the file") from None
    in_block_comment = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line, in_block_comment = _strip_comments(raw, in_block_comment)
        line = line.strip()
        if not line:
            continue
        match = _ENTRY[macro].fullmatch(line)
        if match is None:
            other = next((m for m in _ENTRY if m != macro and line.startswith(m + "(")), None)
            if other is not None:
                problem = f"{other} does not belong in this file (only {macro} lines)"
                fix = f"move it to a {_file_for(other)} file"
            else:
                problem = f"expected one {macro}(...) entry, got {line!r}"
                fix = f"write e.g. {_EXAMPLES[macro]}, one per line (docs/selection.md)"
            raise InventoryError(f"{shown}:{lineno}: {problem}; {fix}")
        yield lineno, match


def _strip_comments(line: str, in_block: bool) -> tuple[str, bool]:
    out = []
    i = 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_block = end + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_block = True
            i += 2
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_block


def _check_op_name(name: str, where: str) -> None:
    if name.endswith(DEFAULT_OVERLOAD_SUFFIX):
        fixed = name[: -len(DEFAULT_OVERLOAD_SUFFIX)]
        raise InventoryError(
            f"{where}: operator {name!r} spells the default overload with a dot; write {fixed!r} (docs/selection.md)"
        )
    if not _OP_NAME.fullmatch(name):
        raise InventoryError(
            f"{where}: {name!r} is not a full operator name; write namespace::name or namespace::name.overload, e.g. aten::add.Tensor"
        )


def _no_duplicate(seen: dict, name: str, where: str, what: str, location_of) -> None:
    if name in seen:
        raise InventoryError(
            f"{where}: {what} {name} is already declared at {location_of(seen[name])}; keep one declaration"
        )


def _file_for(macro: str) -> str:
    return {
        "PARE_OP": "*.ops.def",
        "PARE_KERNEL_TAG": "*.tags.def",
        "PARE_CLASS": "classes.def",
        "PARE_BUILD_FEATURE": "features.def",
    }[macro]
