"""The manifest: PyTorch's selected-operators YAML, read and written.

The schema and its semantics are torchgen's (`torchgen/selective_build/`):
`SelectiveBuilder.from_yaml_dict` for reading, `combine_selective_builders`
for merging, `is_operator_selected` / `is_kernel_dtype_selected` for what a
manifest selects. Pare reads everything PyTorch's own tracer writes (including
the quirks torchgen itself rejects, such as `kernel_metadata: []`) and writes
files that torchgen loads with the same answers. docs/manifest.md lists every
field, default and quirk.

This module is the model and its reading; `manifest_merge.py` merges and
diffs manifests. It knows nothing about the runtime; `selection.py` checks a
manifest against the runtime's inventory.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codegen.dtypes import DTYPES_BY_NAME, PARE_DTYPE_NAMES, PYTORCH_SCALAR_TYPE_NAMES, suggest_dtype
from codegen.errors import ManifestError

TOP_LEVEL_KEYS: tuple[str, ...] = (
    "include_all_operators",
    "include_all_non_op_selectives",
    "debug_info",
    "operators",
    "kernel_metadata",
    "et_kernel_metadata",
    "custom_classes",
    "build_features",
)
OPERATOR_KEYS: tuple[str, ...] = (
    "name",
    "is_root_operator",
    "is_used_for_training",
    "include_all_overloads",
    "debug_info",
)
DEFAULT_OVERLOAD_SUFFIX = ".default"

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A full PyTorch operator name. Names that cannot be one (`relu`, `aten:relu`)
# would only fail later as "not provided by the runtime", far from the typo.
_OP_NAME = re.compile(rf"{_IDENT}::{_IDENT}(?:\.{_IDENT})?")
# Namespaces a torch.ops-style `aten.add.Tensor` spelling may start with.
_KNOWN_NAMESPACES = frozenset({"aten", "prim", "quantized", "_quantized", "prepacked", "pare"})
# Keys people write for a top-level key, too far from it for difflib.
_TOP_LEVEL_ALIASES = {
    "ops": "operators",
    "op": "operators",
    "selected_operators": "operators",
    "dtypes": "kernel_metadata",
    "kernel_dtypes": "kernel_metadata",
    "classes": "custom_classes",
    "features": "build_features",
}


def strip_overload(name: str) -> str:
    """`aten::add.Tensor` -> `aten::add` (torchgen's strip_operator_overload_name)."""
    return name.split(".", maxsplit=1)[0]


def normalize_op_name(name: str) -> str:
    """Spell the default overload as docs/selection.md does: no `.default`."""
    if name.endswith(DEFAULT_OVERLOAD_SUFFIX) and name.count(".") == 1:
        return name[: -len(DEFAULT_OVERLOAD_SUFFIX)]
    return name


@dataclass(frozen=True)
class Operator:
    """One `operators:` entry. Defaults are torchgen's for a missing field."""

    name: str
    is_root_operator: bool = True
    is_used_for_training: bool = True
    # Only meaningful for a name without an overload: then it selects every
    # overload of that base name (torchgen ignores it on dotted names).
    include_all_overloads: bool = True
    debug_info: tuple[str, ...] | None = None

    @property
    def has_overload(self) -> bool:
        return "." in self.name

    @property
    def base_name(self) -> str:
        return strip_overload(self.name)

    @property
    def selects_all_overloads(self) -> bool:
        return self.include_all_overloads and not self.has_overload

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "is_root_operator": self.is_root_operator,
            "is_used_for_training": self.is_used_for_training,
            "include_all_overloads": self.include_all_overloads,
        }
        if self.debug_info is not None:
            d["debug_info"] = list(self.debug_info)
        return d


def ordered_union(lhs: Sequence[str] | None, rhs: Sequence[str] | None) -> tuple[str, ...] | None:
    """Both debug_info lists, in first occurrence order (None when both are).

    torchgen merges debug_info through a set (arbitrary order); first
    occurrence order keeps the same set and makes the output deterministic."""
    if lhs is None and rhs is None:
        return None
    return tuple(dict.fromkeys((*(lhs or ()), *(rhs or ()))))


def combine_operators(lhs: Operator, rhs: Operator) -> Operator:
    """torchgen's combine_operators: every flag is the OR of both."""
    if lhs.name != rhs.name:
        raise ValueError(f"cannot combine {lhs.name} with {rhs.name}")
    return Operator(
        name=lhs.name,
        is_root_operator=lhs.is_root_operator or rhs.is_root_operator,
        is_used_for_training=lhs.is_used_for_training or rhs.is_used_for_training,
        include_all_overloads=lhs.include_all_overloads or rhs.include_all_overloads,
        debug_info=ordered_union(lhs.debug_info, rhs.debug_info),
    )


def _normalized_operator(op: Operator) -> Operator:
    name = normalize_op_name(op.name)
    if name == op.name:
        return op
    # `aten::relu.default` named one overload; as the overload-less `aten::relu`
    # it must not start selecting every overload of relu.
    return dataclasses.replace(op, name=name, include_all_overloads=False)


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest. Build one in code or with `loads` / `load`.

    Construction normalises: operators keyed and sorted by name (`.default`
    spelled away, duplicates combined as torchgen does), dtype lists sorted and
    de-duplicated, classes and features as frozensets. Do not mutate the dicts.
    """

    operators: Mapping[str, Operator] = field(default_factory=dict)
    kernel_metadata: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    custom_classes: frozenset[str] = frozenset()
    build_features: frozenset[str] = frozenset()
    include_all_operators: bool = False
    include_all_non_op_selectives: bool = False
    debug_info: tuple[str, ...] | None = None
    # ExecuTorch only (op -> kernel keys). Preserved and merged, never used.
    et_kernel_metadata: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Where the manifest came from, for messages; not part of equality.
    source: str = field(default="<manifest>", compare=False)
    source_sha256: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        ops = self.operators.values() if isinstance(self.operators, Mapping) else self.operators
        combined: dict[str, Operator] = {}
        for op in ops:
            if isinstance(op, str):
                op = Operator(op)
            op = _normalized_operator(op)
            combined[op.name] = combine_operators(combined[op.name], op) if op.name in combined else op
        object.__setattr__(self, "operators", dict(sorted(combined.items())))
        object.__setattr__(
            self,
            "kernel_metadata",
            {str(t): tuple(sorted(set(d))) for t, d in sorted(self.kernel_metadata.items())},
        )
        object.__setattr__(
            self,
            "et_kernel_metadata",
            {str(k): tuple(v) for k, v in sorted(self.et_kernel_metadata.items())},
        )
        object.__setattr__(self, "custom_classes", frozenset(self.custom_classes))
        object.__setattr__(self, "build_features", frozenset(self.build_features))
        if self.debug_info is not None:
            object.__setattr__(self, "debug_info", tuple(self.debug_info))
        for tag, dtypes in self.kernel_metadata.items():
            for dtype in dtypes:
                if dtype not in PYTORCH_SCALAR_TYPE_NAMES:
                    raise ManifestError(_bad_dtype_message(self.source, None, tag, dtype))

    # --- What the manifest selects: torchgen's SelectiveBuilder answers. ---

    def is_operator_selected(self, name: str) -> bool:
        if self.include_all_operators:
            return True
        name = normalize_op_name(name)
        if name in self.operators:
            return True
        base = self.operators.get(strip_overload(name))
        return base is not None and base.include_all_overloads

    def is_kernel_dtype_selected(self, kernel_tag: str, dtype: str) -> bool:
        if self.include_all_operators or self.include_all_non_op_selectives:
            return True
        return dtype in self.kernel_metadata.get(kernel_tag, ())

    def is_custom_class_selected(self, name: str) -> bool:
        # PyTorch's header only emits the class allowlist when neither flag is set.
        if self.include_all_operators or self.include_all_non_op_selectives:
            return True
        return name in self.custom_classes

    def is_build_feature_selected(self, name: str) -> bool:
        if self.include_all_operators or self.include_all_non_op_selectives:
            return True
        return name in self.build_features

    # --- Writing. ---

    def to_dict(self) -> dict[str, Any]:
        """The YAML structure `dump` writes; torchgen's from_yaml_dict loads it."""
        d: dict[str, Any] = {
            "include_all_operators": self.include_all_operators,
            "include_all_non_op_selectives": self.include_all_non_op_selectives,
        }
        if self.debug_info is not None:
            d["debug_info"] = list(self.debug_info)
        d["operators"] = {name: op.to_dict() for name, op in self.operators.items()}
        d["kernel_metadata"] = {tag: list(dtypes) for tag, dtypes in self.kernel_metadata.items()}
        d["custom_classes"] = sorted(self.custom_classes)
        d["build_features"] = sorted(self.build_features)
        if self.et_kernel_metadata:
            d["et_kernel_metadata"] = {k: list(v) for k, v in self.et_kernel_metadata.items()}
        return d

    def dump(self) -> str:
        """The manifest as YAML text: same model, same bytes."""
        return yaml.safe_dump(
            self.to_dict(),
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            width=1 << 30,  # never fold long debug_info strings
        )

    def sha256(self) -> str:
        """Hash of the bytes this manifest was read from, else of `dump()`.

        The two agree for any manifest Pare wrote, since dump(loads(t)) == t.
        """
        if self.source_sha256 is not None:
            return self.source_sha256
        return hashlib.sha256(self.dump().encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a manifest file. Raises ManifestError."""
    source = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"{source}: no such manifest file; check the path") from None
    except OSError as e:
        raise ManifestError(f"{source}: cannot read manifest ({e.strerror}); check the path and permissions") from None
    if data.startswith(b"PARE"):
        raise ManifestError(
            f"{source}: this is a Pare program, not a manifest; pass the manifest YAML the tracer wrote for it"
        )
    if b"\0" in data:
        raise ManifestError(
            f"{source}: a binary file, not a manifest (NUL byte at offset {data.index(0)}); pass the manifest YAML"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{source}: not UTF-8 text (byte {e.start}); save the manifest as UTF-8 YAML") from None
    manifest = loads(text, source=source)
    return dataclasses.replace(manifest, source_sha256=hashlib.sha256(data).hexdigest())


def loads(text: str, source: str = "<string>") -> Manifest:
    """Parse and validate manifest text. `source` names it in errors."""
    loader = None
    try:
        # PyYAML's reader rejects control characters (a binary file) while
        # the loader is constructed, so that is inside the try too.
        loader = yaml.SafeLoader(text)
        # Scalars are constructed lazily while walking, so YAML errors (a
        # `!!python/...` tag, say) can surface in either step.
        return _Parser(loader, source).manifest(loader.get_single_node())
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise ManifestError(
            f"{source}:{line}: not a YAML text file (control character {code:#04x} "
            f"at character {e.position}); pass the manifest YAML, not a binary file"
        ) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = _one_line(" ".join(str(p) for p in (e.context, e.problem) if p))
        raise ManifestError(f"{where}: malformed YAML: {problem}; fix the syntax at that line") from None
    except yaml.YAMLError as e:
        raise ManifestError(f"{source}: malformed YAML: {_one_line(str(e))}; fix the syntax") from None
    finally:
        if loader is not None:
            loader.dispose()


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Parser:
    """Walks the composed YAML node tree so every error can name its line."""

    def __init__(self, loader: yaml.SafeLoader, source: str) -> None:
        self.loader = loader
        self.source = source

    def fail(self, node: yaml.Node | None, problem: str, fix: str) -> ManifestError:
        where = self.source if node is None else f"{self.source}:{node.start_mark.line + 1}"
        return ManifestError(f"{where}: {problem}; {fix}")

    def scalar(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise  # loads() reports it as malformed YAML, with PyYAML's own words
        except Exception as e:  # noqa: BLE001 - any other constructor failure is the value's fault
            # An explicit tag over a value it cannot hold (`!!int includrue`,
            # `!!bool maybe`, `!!binary` over non-base64, `!!timestamp` over a
            # bad date): PyYAML's constructors raise ValueError, KeyError and
            # others, not YAMLError (found by fuzz/codegen_targets.py manifest).
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            value = str(getattr(node, "value", ""))[:40]
            raise self.fail(
                node,
                f"cannot read {value!r} as {tag} ({type(e).__name__})",
                f"remove the explicit {tag} tag or fix the value",
            ) from None

    def mapping(self, node: yaml.MappingNode) -> list[tuple[yaml.Node, Any, yaml.Node]]:
        """(key node, key value, value node), rejecting duplicate keys."""
        seen: dict[Any, yaml.Node] = {}
        items = []
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "a key must be a plain name", "write the key as a string")
            key = self.scalar(key_node)
            if key in seen:
                raise self.fail(
                    key_node,
                    f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    "keep one entry and merge their contents",
                )
            seen[key] = key_node
            items.append((key_node, key, value_node))
        return items

    def is_null(self, node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and self.scalar(node) is None

    def boolean(self, node: yaml.Node, what: str) -> bool:
        value = self.scalar(node) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(value, bool):
            key = what.split(".")[-1]
            quoted = isinstance(value, str) and value.strip().lower() in ("true", "false")
            raise self.fail(
                node,
                f"{what} must be true or false, got {_describe(self, node)}",
                f"write `{key}: {value.strip().lower()}` without quotes"
                if quoted
                else f"write `{key}: true` or `{key}: false`",
            )
        return value

    def op_name(self, node: yaml.Node, what: str) -> str:
        """A full operator name; a near miss gets the name it most likely meant."""
        name = self.string(node, what)
        if _OP_NAME.fullmatch(name):
            return name
        suggestion = _suggest_op_name(name)
        hint = f"did you mean {suggestion}? " if suggestion else ""
        no_namespace = (
            ":" not in name and not name.startswith("torch.ops.") and name.split(".")[0] not in _KNOWN_NAMESPACES
        )
        problem = f"operator {name!r} {'has no namespace' if no_namespace else 'is not a full operator name'}"
        raise self.fail(
            node, problem, f"{hint}write namespace::name or namespace::name.overload, e.g. aten::add.Tensor"
        )

    def string(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(value, str) or not value:
            raise self.fail(
                node,
                f"{what} must be a non-empty string, got {_describe(self, node)}",
                "write it as a string (quote it if needed)",
            )
        return value

    def string_list(
        self, node: yaml.Node, what: str, example: str, coerce: bool = False, op_names: bool = False
    ) -> list[str]:
        """A YAML list of names. `coerce` stringifies scalars as torchgen does
        for debug_info; `op_names` checks each is a full operator name."""
        if self.is_null(node):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(
                node,
                f"{what} must be a list, got {_describe(self, node)}",
                f"write a YAML list, e.g. {example}",
            )
        out = []
        for item in node.value:
            if coerce and isinstance(item, yaml.ScalarNode):
                out.append(str(self.scalar(item)))
            elif op_names:
                out.append(self.op_name(item, f"each entry of {what}"))
            else:
                out.append(self.string(item, f"each entry of {what}"))
        return out

    # --- top level ---

    def manifest(self, node: yaml.Node | None) -> Manifest:
        if node is None or self.is_null(node):
            raise self.fail(
                None,
                "the manifest is empty",
                "trace the model again, or write `include_all_operators: true` to select everything",
            )
        if isinstance(node, yaml.SequenceNode):
            return self.legacy_op_list(node)
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node,
                f"the manifest must be a YAML mapping, got {_describe(self, node)}",
                "start with `operators:` (docs/manifest.md)",
            )

        fields: dict[str, Any] = {}
        for key_node, key, value_node in self.mapping(node):
            if key not in TOP_LEVEL_KEYS:
                if isinstance(key, str) and "::" in key:
                    raise self.fail(
                        key_node,
                        f"operator {key!r} is at the top level",
                        "indent it under `operators:`",
                    )
                alias = _TOP_LEVEL_ALIASES.get(str(key).lower())
                hint = f" (did you mean {alias!r}?)" if alias else _did_you_mean(str(key), TOP_LEVEL_KEYS)
                raise self.fail(
                    key_node,
                    f"unknown top-level key {key!r}{hint}",
                    f"valid keys: {', '.join(TOP_LEVEL_KEYS)}",
                )
            # Pare reads `key:` with no value as the key's default (torchgen rejects null).
            if self.is_null(value_node):
                continue
            if key in ("include_all_operators", "include_all_non_op_selectives"):
                fields[key] = self.boolean(value_node, key)
            elif key == "debug_info":
                fields[key] = tuple(self.string_list(value_node, key, '["model.ptl"]', coerce=True))
            elif key == "operators":
                fields[key] = self.operators(value_node)
            elif key == "kernel_metadata":
                fields[key] = self.kernel_metadata(value_node)
            elif key == "et_kernel_metadata":
                fields[key] = self.et_kernel_metadata(value_node)
            else:  # custom_classes, build_features
                example = "[LinearPackedParams]" if key == "custom_classes" else "[op_profiling]"
                fields[key] = frozenset(self.string_list(value_node, key, example))
        return Manifest(source=self.source, **fields)

    def legacy_op_list(self, node: yaml.SequenceNode) -> Manifest:
        # PyTorch's older SELECTED_OP_LIST format: the file is a bare list of op
        # names. torchgen loads it with from_legacy_op_registration_allow_list
        # (root, not training, all overloads, all dtypes and classes).
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                # `- operators: ...`: a mapping written as a list by mistake.
                raise self.fail(
                    item,
                    f"the manifest is a list (read as a legacy list of operator names) "
                    f"but this entry is {_describe(self, item)}",
                    "remove the leading `- ` so the manifest is a mapping starting with `operators:`",
                )
        names = self.string_list(node, "the operator list", "[aten::add.Tensor]", op_names=True)
        ops = [
            Operator(n, is_root_operator=True, is_used_for_training=False, include_all_overloads=True) for n in names
        ]
        return Manifest(operators=ops, include_all_non_op_selectives=True, source=self.source)

    def operators(self, node: yaml.Node) -> list[Operator]:
        if isinstance(node, yaml.SequenceNode):
            # `operators:` as a list of names (older hand-written files; torchgen
            # rejects it). Each name gets torchgen's defaults for a bare entry,
            # as from_legacy_operator_name_without_overload gives them.
            return [Operator(n) for n in self.string_list(node, "operators", "[aten::add.Tensor]", op_names=True)]
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node,
                f"operators must map operator names to their fields, got {_describe(self, node)}",
                "write `operators:` then `  aten::add.Tensor: {}` lines",
            )
        ops = []
        for key_node, name, value_node in self.mapping(node):
            name = self.op_name(key_node, "an operator name")
            ops.append(self.operator(name, value_node))
        return ops

    def operator(self, name: str, node: yaml.Node) -> Operator:
        if self.is_null(node):
            return Operator(name)
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node,
                f"operator {name} must be a mapping of its fields, got {_describe(self, node)}",
                f"write `{name}: {{}}` or list its fields ({', '.join(OPERATOR_KEYS[1:])})",
            )
        fields: dict[str, Any] = {}
        for key_node, key, value_node in self.mapping(node):
            if key not in OPERATOR_KEYS:
                if key in TOP_LEVEL_KEYS:
                    raise self.fail(
                        key_node,
                        f"{key} is inside operator {name}",
                        f"move it to the top level (no indentation); valid fields here: {', '.join(OPERATOR_KEYS)}",
                    )
                raise self.fail(
                    key_node,
                    f"unknown field {key!r} in operator {name}{_did_you_mean(str(key), OPERATOR_KEYS)}",
                    f"valid fields: {', '.join(OPERATOR_KEYS)}",
                )
            if key == "name":
                if self.scalar(value_node) != name:
                    raise self.fail(
                        value_node,
                        f"operator {name} has name: {self.scalar(value_node)!r}",
                        "make `name` equal the key or remove it",
                    )
            elif key == "debug_info":
                if not self.is_null(value_node):
                    fields[key] = tuple(
                        self.string_list(value_node, f"{name}.debug_info", '["model.ptl"]', coerce=True)
                    )
            else:
                fields[key] = self.boolean(value_node, f"{name}.{key}")
        return Operator(name, **fields)

    def kernel_metadata(self, node: yaml.Node) -> dict[str, tuple[str, ...]]:
        # PyTorch's tracer writes `kernel_metadata: []` when it recorded no tag.
        if isinstance(node, yaml.SequenceNode) and not node.value:
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node,
                f"kernel_metadata must map kernel tags to dtype lists, got {_describe(self, node)}",
                "write `kernel_metadata:` then `  add_kernel: [Float]` lines",
            )
        out: dict[str, tuple[str, ...]] = {}
        for key_node, _, value_node in self.mapping(node):
            tag = self.string(key_node, "a kernel tag")
            for item in value_node.value if isinstance(value_node, yaml.SequenceNode) else ():
                number = self.scalar(item) if isinstance(item, yaml.ScalarNode) else None
                if isinstance(number, int) and not isinstance(number, bool):
                    # A ScalarType code (6) where its name (Float) belongs.
                    named = next((d for d in DTYPES_BY_NAME.values() if d.value == number), None)
                    hint = f"did you mean {named.name}? " if named else ""
                    raise self.fail(
                        item,
                        f"dtype {number} in kernel_metadata.{tag} is a number",
                        f"{hint}write PyTorch ScalarType names: {' '.join(PARE_DTYPE_NAMES)}",
                    )
            dtypes = self.string_list(value_node, f"kernel_metadata.{tag}", "[Float, Long]")
            for item, dtype in zip(value_node.value if isinstance(value_node, yaml.SequenceNode) else (), dtypes):
                if dtype not in PYTORCH_SCALAR_TYPE_NAMES:
                    raise ManifestError(_bad_dtype_message(self.source, item.start_mark.line + 1, tag, dtype))
            out[tag] = tuple(dtypes)
        return out

    def et_kernel_metadata(self, node: yaml.Node) -> dict[str, tuple[str, ...]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node,
                f"et_kernel_metadata must map operator names to kernel-key lists, got {_describe(self, node)}",
                "write it as ExecuTorch does, or remove it (Pare ignores it)",
            )
        return {
            self.string(k, "an et_kernel_metadata key"): tuple(
                self.string_list(v, f"et_kernel_metadata.{key}", '["v1/6;0,1|6;0,1"]')
            )
            for k, key, v in self.mapping(node)
        }


def _describe(parser: _Parser, node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = parser.scalar(node)
    return "nothing" if value is None else f"{type(value).__name__} {value!r}"


def _suggest_op_name(name: str) -> str | None:
    """`relu` -> aten::relu, `aten:relu` / `aten.relu` / `torch.ops.aten.relu` -> aten::relu."""
    s = name.strip()
    if s.startswith("torch.ops."):
        s = s[len("torch.ops.") :]
    if "::" not in s:
        parts = s.split(".")
        if ":" in s:
            s = s.replace(":", "::", 1)
        elif len(parts) >= 2 and parts[0] in _KNOWN_NAMESPACES:
            s = f"{parts[0]}::{'.'.join(parts[1:])}"
        else:
            # Ops without a namespace are almost always ATen's.
            s = f"aten::{s}"
    s = re.sub(r"\.{2,}", ".", re.sub(r":{3,}", "::", s))
    return s if _OP_NAME.fullmatch(s) and s != name else None


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _bad_dtype_message(source: str, line: int | None, tag: str, dtype: str) -> str:
    where = f"{source}:{line}" if line is not None else source
    suggestion = suggest_dtype(dtype)
    fix = f"did you mean {suggestion}? " if suggestion else ""
    return (
        f"{where}: unknown dtype {dtype!r} in kernel_metadata.{tag}; {fix}"
        f"dtypes are PyTorch ScalarType names: {' '.join(PARE_DTYPE_NAMES)}"
    )
