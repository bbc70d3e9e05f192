"""expected_symbols.json (written by codegen, schema in codegen/generate.py) as checkable entries.

Each operator, (kernel tag, dtype) and custom class entry carries a regex per
symbol format (`match.elf`, `match.macho`) that runs against demangled names,
and an expectation: `present` (at least one defined symbol matches),
`absent` (none may) or `allowed` (either).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tools.verify.errors import VerifyError

SCHEMA = "pare.expected_symbols"
SUPPORTED_VERSIONS = (1,)
EXPECTATIONS = ("present", "allowed", "absent")

OP = "op"
KERNEL_DTYPE = "kernel_dtype"
CLASS = "class"
KINDS = (OP, KERNEL_DTYPE, CLASS)


@dataclass(frozen=True)
class Entry:
    kind: str  # "op", "kernel_dtype" or "class"
    key: str  # "aten::add.Tensor", "add_kernel/Float", "LinearPackedParams"
    expect: str  # "present", "allowed" or "absent"
    selected: bool
    symbol: str  # human form of what matches, e.g. pare::kernels::aten_add_Tensor
    patterns: dict[str, re.Pattern[str]]  # symbol format -> compiled `match`
    declared_at: str
    tag: str | None = None
    dtype: str | None = None

    def label(self) -> str:
        if self.kind == OP:
            return f"op {self.key}"
        if self.kind == KERNEL_DTYPE:
            return f"kernel tag {self.tag}, dtype {self.dtype}"
        return f"class {self.key}"


@dataclass(frozen=True)
class Expected:
    path: Path
    manifest_sha256: str
    symbol_formats: tuple[str, ...]
    entries: tuple[Entry, ...]
    dropped_operators: tuple[str, ...]
    build_features: dict[str, bool] = dataclasses.field(default_factory=dict)  # name -> selected

    def of_kind(self, kind: str) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.kind == kind)


def load_expected(path: str | os.PathLike[str]) -> Expected:
    """Reads and validates expected_symbols.json; raises VerifyError naming the problem and the fix."""
    path = Path(path)
    if not path.is_file():
        raise VerifyError(
            f"{path}: no such file; selective_runtime writes it to bazel-bin/<pkg>/<name>/expected_symbols.json "
            "(or run `python -m codegen generate`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise VerifyError(
            f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg}); regenerate it with codegen"
        ) from None
    except UnicodeDecodeError:
        raise VerifyError(f"{path}: not UTF-8 text; regenerate it with codegen") from None
    return parse_expected(data, path)


def parse_expected(data: object, path: Path) -> Expected:
    def bad(msg: str) -> VerifyError:
        return VerifyError(f"{path}: {msg}; regenerate it with `python -m codegen generate` from the manifest")

    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise bad(f'not an expected_symbols file (want "schema": "{SCHEMA}")')
    if data.get("version") not in SUPPORTED_VERSIONS:
        raise bad(f"schema version {data.get('version')!r} is not supported (this tool reads {SUPPORTED_VERSIONS})")
    formats = data.get("symbol_formats")
    if not isinstance(formats, list) or not formats or not all(isinstance(f, str) for f in formats):
        raise bad("symbol_formats must be a non-empty list of strings")

    entries: list[Entry] = []
    sections = (("operators", OP), ("kernel_dtypes", KERNEL_DTYPE), ("custom_classes", CLASS))
    for field_name, kind in sections:
        items = data.get(field_name)
        if not isinstance(items, list):
            raise bad(f"{field_name} must be a list")
        for i, item in enumerate(items):
            where = f"{field_name}[{i}]"
            if not isinstance(item, dict):
                raise bad(f"{where} must be an object")
            expect = item.get("expect")
            if expect not in EXPECTATIONS:
                raise bad(f"{where}.expect is {expect!r}; want one of {', '.join(EXPECTATIONS)}")
            match = item.get("match")
            if not isinstance(match, dict):
                raise bad(f"{where}.match must be an object of symbol format -> regex")
            patterns = {}
            for fmt in formats:
                if not isinstance(match.get(fmt), str):
                    raise bad(f"{where}.match.{fmt} is missing")
                try:
                    patterns[fmt] = re.compile(match[fmt])
                except re.error as e:
                    raise bad(f"{where}.match.{fmt} is not a valid regex ({e})") from None
            if kind == KERNEL_DTYPE:
                tag, dtype = item.get("tag"), item.get("dtype")
                if not isinstance(tag, str) or not isinstance(dtype, str):
                    raise bad(f"{where} needs string tag and dtype")
                key = f"{tag}/{dtype}"
                symbol = item.get("symbol")
                symbol = symbol.get(formats[0], "") if isinstance(symbol, dict) else str(symbol or "")
            else:
                name = item.get("name")
                if not isinstance(name, str) or not name:
                    raise bad(f"{where}.name must be a non-empty string")
                key, tag, dtype = name, None, None
                symbol = str(item.get("symbol", ""))
            entries.append(
                Entry(
                    kind=kind,
                    key=key,
                    expect=expect,
                    selected=bool(item.get("selected", expect != "absent")),
                    symbol=symbol,
                    patterns=patterns,
                    declared_at=str(item.get("declared_at", "")),
                    tag=tag,
                    dtype=dtype,
                )
            )
    dropped = data.get("dropped", {}).get("operators", []) if isinstance(data.get("dropped"), dict) else []
    features = {}
    for i, item in enumerate(data.get("build_features", [])):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("selected"), bool)
        ):
            raise bad(f"build_features[{i}] must be an object with a string 'name' and a boolean 'selected'")
        features[item["name"]] = item["selected"]
    return Expected(
        path=path,
        manifest_sha256=str(data.get("manifest_sha256", "")),
        symbol_formats=tuple(formats),
        entries=tuple(entries),
        dropped_operators=tuple(str(d) for d in dropped),
        build_features=features,
    )


def check_format(expected: Expected, fmt: str) -> None:
    if fmt not in expected.symbol_formats:
        raise VerifyError(
            f"{expected.path}: has no match patterns for {fmt} binaries (it has {', '.join(expected.symbol_formats)}); "
            "regenerate it with a current codegen"
        )


# Attribution precedence when one symbol matches several entries: a dtype
# case instantiated with a lambda from a kernel or class method names both in
# its template arguments, and belongs to the (tag, dtype) it specialises.
ATTRIBUTION_ORDER = (KERNEL_DTYPE, CLASS, OP)


def classify(expected: Expected, fmt: str, demangled: str) -> Entry | None:
    """The one entry a symbol is attributed to (ATTRIBUTION_ORDER), or None."""
    for kind in ATTRIBUTION_ORDER:
        for e in expected.entries:
            if e.kind == kind and e.patterns[fmt].search(demangled):
                return e
    return None
