"""Merging and diffing manifests (docs/manifest.md, "Merge and diff").

`merge` is torchgen's `combine_selective_builders`; `diff` says what one
manifest selects that another does not, in manifest names or, given the
runtime's inventory, in what the runtime has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codegen.manifest import Manifest, Operator, combine_operators, ordered_union, strip_overload


@dataclass(frozen=True)
class MergeResult:
    manifest: Manifest
    # One line each: where the inputs disagree and how the union resolved it.
    diagnostics: tuple[str, ...]


def merge(manifests: Sequence[Manifest], source: str = "<merged>") -> MergeResult:
    """Union of manifests, as torchgen's combine_selective_builders.

    Deterministic: the result does not depend on set iteration order, and
    merging the same inputs in any order gives the same `dump()` except for
    debug_info order (first occurrence wins).
    """
    diagnostics: list[str] = []
    names = [m.source for m in manifests]

    for flag, consequence in (
        ("include_all_operators", "every operator (and every dtype, class and feature) is selected"),
        ("include_all_non_op_selectives", "every kernel dtype, custom class and build feature is selected"),
    ):
        setters = [m.source for m in manifests if getattr(m, flag)]
        if setters and len(setters) < len(manifests):
            others = [n for n, m in zip(names, manifests) if not getattr(m, flag)]
            diagnostics.append(
                f"{', '.join(setters)} set {flag}: true, so in the merge {consequence}; "
                f"the narrower lists of {', '.join(others)} no longer restrict it"
            )

    operators: dict[str, Operator] = {}
    first_seen: dict[str, str] = {}
    for m in manifests:
        for name, op in m.operators.items():
            if name in operators:
                prev = operators[name]
                if not op.has_overload and prev.include_all_overloads != op.include_all_overloads:
                    yes, no = (m.source, first_seen[name]) if op.include_all_overloads else (first_seen[name], m.source)
                    diagnostics.append(
                        f"{name}: include_all_overloads is true in {yes} but false in {no}; "
                        f"merged as true, selecting every overload of {name}"
                    )
                operators[name] = combine_operators(prev, op)
            else:
                operators[name] = op
                first_seen[name] = m.source
    for name, op in operators.items():
        if op.selects_all_overloads:
            covered = sorted(n for n in operators if n != name and strip_overload(n) == name)
            if covered:
                diagnostics.append(
                    f"{name} selects all its overloads (include_all_overloads: true), "
                    f"which subsumes {', '.join(covered)}"
                )

    kernel_metadata: dict[str, set[str]] = {}
    et_kernel_metadata: dict[str, set[str]] = {}
    debug_info: tuple[str, ...] | None = None
    for m in manifests:
        for tag, dtypes in m.kernel_metadata.items():
            kernel_metadata.setdefault(tag, set()).update(dtypes)
        for op, keys in m.et_kernel_metadata.items():
            et_kernel_metadata.setdefault(op, set()).update(keys)
        debug_info = ordered_union(debug_info, m.debug_info)

    merged = Manifest(
        operators=operators,
        kernel_metadata={t: tuple(d) for t, d in kernel_metadata.items()},
        custom_classes=frozenset().union(*(m.custom_classes for m in manifests)),
        build_features=frozenset().union(*(m.build_features for m in manifests)),
        include_all_operators=any(m.include_all_operators for m in manifests),
        include_all_non_op_selectives=any(m.include_all_non_op_selectives for m in manifests),
        debug_info=debug_info,
        et_kernel_metadata={k: tuple(sorted(v)) for k, v in et_kernel_metadata.items()},
        source=source,
    )
    return MergeResult(merged, tuple(diagnostics))


@dataclass(frozen=True)
class ManifestDiff:
    """What manifest `a` selects that manifest `b` does not."""

    # include_all_* flags set in a but not in b.
    flags: tuple[str, ...] = ()
    # Operator names (full runtime names when diffed with an inventory; else
    # a's entries, an overload-less name meaning all its overloads).
    operators: tuple[str, ...] = ()
    kernel_dtypes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    custom_classes: tuple[str, ...] = ()
    build_features: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.flags or self.operators or self.kernel_dtypes or self.custom_classes or self.build_features)

    def to_dict(self) -> dict[str, Any]:
        return {
            "flags": list(self.flags),
            "operators": list(self.operators),
            "kernel_dtypes": {t: list(d) for t, d in self.kernel_dtypes.items()},
            "custom_classes": list(self.custom_classes),
            "build_features": list(self.build_features),
        }

    def to_text(self) -> str:
        """Human-readable, one item per line, '+' marking what a adds."""
        lines = [f"+ {flag}: true" for flag in self.flags]
        lines += [f"+ operator {name}" for name in self.operators]
        lines += [f"+ kernel dtype {tag}: {' '.join(d)}" for tag, d in self.kernel_dtypes.items()]
        lines += [f"+ custom class {name}" for name in self.custom_classes]
        lines += [f"+ build feature {name}" for name in self.build_features]
        return "".join(line + "\n" for line in lines)


def diff(a: Manifest, b: Manifest, inventory: Any = None) -> ManifestDiff:
    """What `a` selects that `b` does not.

    Without an inventory the answer is in manifest names (an include_all_*
    flag is reported as a flag, since its extent is the runtime's). With an
    `Inventory` (codegen.inventory), selections are expanded against the
    runtime first, so overload-less names and include_all_* flags become the
    concrete operators, (tag, dtype) pairs and classes they select; entries the
    runtime does not implement are still compared by name.
    """
    flags = tuple(
        f for f in ("include_all_operators", "include_all_non_op_selectives") if getattr(a, f) and not getattr(b, f)
    )

    ops: set[str] = set()
    for name, op in a.operators.items():
        if op.selects_all_overloads:
            base = b.operators.get(name)
            if not (b.include_all_operators or (base is not None and base.include_all_overloads)):
                ops.add(name)
        elif not b.is_operator_selected(name):
            ops.add(name)
    dtypes: dict[str, set[str]] = {}
    for tag, names in a.kernel_metadata.items():
        for dtype in names:
            if not b.is_kernel_dtype_selected(tag, dtype):
                dtypes.setdefault(tag, set()).add(dtype)
    classes = {c for c in a.custom_classes if not b.is_custom_class_selected(c)}
    features = {f for f in a.build_features if not b.is_build_feature_selected(f)}

    if inventory is not None:
        # Entries that select something in the runtime are replaced by what
        # they select; the others can only be reported by name.
        ops = {n for n in ops if not inventory.ops_selected_by(a.operators[n])}
        ops |= {n for n in inventory.ops if a.is_operator_selected(n) and not b.is_operator_selected(n)}
        for tag in inventory.tags.values():
            for dtype in tag.dtypes:
                if a.is_kernel_dtype_selected(tag.name, dtype) and not b.is_kernel_dtype_selected(tag.name, dtype):
                    dtypes.setdefault(tag.name, set()).add(dtype)
        classes |= {c for c in inventory.classes if a.is_custom_class_selected(c) and not b.is_custom_class_selected(c)}
        features |= {
            f for f in inventory.build_features if a.is_build_feature_selected(f) and not b.is_build_feature_selected(f)
        }

    return ManifestDiff(
        flags=flags,
        operators=tuple(sorted(ops)),
        kernel_dtypes={t: tuple(sorted(d)) for t, d in sorted(dtypes.items())},
        custom_classes=tuple(sorted(classes)),
        build_features=tuple(sorted(features)),
    )
