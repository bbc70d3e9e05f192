"""A manifest resolved against the runtime's inventory.

This is where manifest names become runtime names: overload-less entries and
`include_all_overloads` expand to the overloads the runtime implements, tags
and dtypes the runtime cannot reach are dropped, and anything a program would
need that the runtime lacks (operators, custom classes) is an error unless the
caller opts out. Generators read only the resulting `Selection`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Mapping

from codegen.dtypes import KERNEL_DTYPE_NAMES
from codegen.errors import ManifestError
from codegen.inventory import Inventory
from codegen.manifest import Manifest, Operator

ALLOW_UNKNOWN_OPS_FLAG = "--allow-unknown-ops"


@dataclass(frozen=True)
class Selection:
    manifest: Manifest
    inventory: Inventory
    include_all_operators: bool
    operators: tuple[str, ...]  # selected runtime operators (all of them if include_all)
    include_all_kernel_dtypes: bool
    # tag -> selected dtypes, runtime tags only, alphabetical; tags with none omitted
    kernel_dtypes: Mapping[str, tuple[str, ...]]
    include_all_custom_classes: bool
    custom_classes: tuple[str, ...]
    include_all_build_features: bool
    build_features: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    # Manifest entries dropped because of allow_unknown_ops.
    dropped_operators: tuple[str, ...] = ()
    dropped_custom_classes: tuple[str, ...] = ()

    def is_operator_selected(self, name: str) -> bool:
        return name in self._operator_set

    def is_kernel_dtype_selected(self, tag: str, dtype: str) -> bool:
        if tag not in self.inventory.tags or dtype not in self.inventory.tags[tag].dtypes:
            return False
        return self.include_all_kernel_dtypes or dtype in self.kernel_dtypes.get(tag, ())

    def is_kernel_dtype_listed(self, tag: str, dtype: str) -> bool:
        """Selected by name in kernel_metadata, not only through an include_all flag."""
        return dtype in self.kernel_dtypes.get(tag, ())

    def is_custom_class_selected(self, name: str) -> bool:
        return name in self.inventory.classes and (self.include_all_custom_classes or name in self.custom_classes)

    def is_build_feature_selected(self, name: str) -> bool:
        return name in self.inventory.build_features and (
            self.include_all_build_features or name in self.build_features
        )

    @property
    def _operator_set(self) -> frozenset[str]:
        cached = self.__dict__.get("_ops_cache")
        if cached is None:
            cached = frozenset(self.operators)
            object.__setattr__(self, "_ops_cache", cached)
        return cached


def resolve(manifest: Manifest, inventory: Inventory, *, allow_unknown_ops: bool = False) -> Selection:
    """Check `manifest` against `inventory` and expand it to runtime names.

    Raises ManifestError listing every operator and custom class the runtime
    does not provide, unless `allow_unknown_ops`, which drops them with a
    warning. Unknown kernel tags, unreachable dtypes and unknown build
    features are always warnings: they name code the runtime does not have,
    so no program built on this runtime can ask for them.
    """
    warnings: list[str] = []
    src = manifest.source

    unknown_ops = [op for op in manifest.operators.values() if not inventory.ops_selected_by(op)]
    unknown_classes = sorted(c for c in manifest.custom_classes if c not in inventory.classes)
    if unknown_ops or unknown_classes:
        listing = _unknown_listing(unknown_ops, unknown_classes, inventory)
        if not allow_unknown_ops:
            raise ManifestError(
                f"{src}: not provided by the runtime ({inventory.root}): {listing}; "
                f"remove them from the manifest, implement them in the runtime, "
                f"or pass {ALLOW_UNKNOWN_OPS_FLAG} (allow_unknown_ops=True) to drop them"
            )
        warnings.append(f"{src}: dropped, not provided by the runtime ({inventory.root}): {listing}")

    if manifest.include_all_operators:
        operators = tuple(inventory.ops)
    else:
        operators = tuple(n for n in inventory.ops if manifest.is_operator_selected(n))

    include_all_non_ops = manifest.include_all_operators or manifest.include_all_non_op_selectives

    kernel_dtypes: dict[str, tuple[str, ...]] = {}
    unknown_tags = sorted(t for t in manifest.kernel_metadata if t not in inventory.tags)
    if unknown_tags:
        warnings.append(
            f"{src}: ignored kernel tags the runtime does not have ({inventory.root}): {', '.join(unknown_tags)}"
        )
    for tag, dtypes in manifest.kernel_metadata.items():
        if tag not in inventory.tags:
            continue
        reachable = inventory.tags[tag].dtypes
        unreachable = [d for d in dtypes if d not in reachable]
        if unreachable:
            renamed = [f"{d} as {inventory.tags[tag].manifest_name(d)}" for d in unreachable]
            renamed = [r for r, d in zip(renamed, unreachable, strict=True) if not r.endswith(f" as {d}")]
            if renamed:  # e.g. Char for a tag of int8 layers, which PyTorch's quantized kernels record as QInt8
                why = f" (this tag records {', '.join(renamed)}, PyTorch's quantized name)"
            elif all(d in KERNEL_DTYPE_NAMES for d in unreachable):
                why = ""
            else:
                why = " (Pare kernels have no such dtype)"
            warnings.append(
                f"{src}: ignored dtypes that the runtime's {tag} dispatch cannot reach: {', '.join(unreachable)}{why}"
            )
        kept = tuple(d for d in dtypes if d in reachable)
        if kept:
            kernel_dtypes[tag] = kept

    unknown_features = sorted(f for f in manifest.build_features if f not in inventory.build_features)
    if unknown_features:
        warnings.append(
            f"{src}: ignored build features the runtime does not have ({inventory.root}): {', '.join(unknown_features)}"
        )

    return Selection(
        manifest=manifest,
        inventory=inventory,
        include_all_operators=manifest.include_all_operators,
        operators=operators,
        include_all_kernel_dtypes=include_all_non_ops,
        kernel_dtypes=kernel_dtypes,
        include_all_custom_classes=include_all_non_ops,
        custom_classes=tuple(sorted(c for c in manifest.custom_classes if c in inventory.classes)),
        include_all_build_features=include_all_non_ops,
        build_features=tuple(sorted(f for f in manifest.build_features if f in inventory.build_features)),
        warnings=tuple(warnings),
        dropped_operators=tuple(op.name for op in unknown_ops) if allow_unknown_ops else (),
        dropped_custom_classes=tuple(unknown_classes) if allow_unknown_ops else (),
    )


def _unknown_listing(ops: list[Operator], classes: list[str], inventory: Inventory) -> str:
    parts = []
    if ops:
        parts.append(
            f"{len(ops)} operator{'s' if len(ops) != 1 else ''} " + ", ".join(_explain_op(op, inventory) for op in ops)
        )
    if classes:
        parts.append(
            f"{len(classes)} custom class{'es' if len(classes) != 1 else ''} "
            + ", ".join(_with_hint(c, inventory.classes) for c in classes)
        )
    return "; ".join(parts)


def _explain_op(op: Operator, inventory: Inventory) -> str:
    if not op.has_overload:
        overloads = inventory.overloads_of(op.name)
        if overloads:
            # torchgen: an overload-less name with include_all_overloads: false
            # selects only the default overload, which the runtime lacks here.
            return (
                f"{op.name} (include_all_overloads is false and the runtime has no default overload; "
                f"name one of {' '.join(overloads)} or set include_all_overloads: true)"
            )
    return _with_hint(op.name, inventory.ops)


def _with_hint(name: str, known: Mapping[str, object]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f"{name} (did you mean {close[0]}?)" if close else name
