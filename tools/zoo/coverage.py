"""Which core ATen operators Pare runs, and in which dtypes (docs/coverage.md).

The inference opset is every `aten` operator with an overload tagged
`torch.Tag.core`, less what an inference graph exported with torch.export
never holds (`EXCLUDED_BY_NAME` and `excluded_reason`: gradients, random
numbers, symbolic-size queries, ...). Of each operator the report lists the
functional core overloads (out= and in-place ones never reach an exported
graph) and for each one how Pare runs it:

* kernel: the runtime's inventory (runtime/inventory/**/*.def) has it; its
  dtypes are those of the kernel tags it dispatches on
  (tools/zoo/kernel_sources.py), or any dtype when it has no dtype dispatch
  (views and copies); a tracer rewrite (tools/tracer/lowering.py, REWRITES
  and IDENTITY_OPS) is noted beside it;
* decomposition: torch.export decomposes it into other core operators
  (the tracer's table: tools/tracer/exporter.py, decomposition_table);
* missing: export leaves it in the graph and the runtime has no kernel, so
  the tracer stops with MissingOpsError naming it.

`build_report()` computes it; `markdown()` and `to_json()` render it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import codegen
from codegen.dtypes import storage_dtype
from tools.doc_tables import replace_between
from tools.zoo.kernel_sources import op_kernel_tags
from tools.zoo.zoo import ZooError

KERNEL = "kernel"
DECOMPOSITION = "decomposition"
MISSING = "missing"

BEGIN = "<!-- coverage-table:begin (written by python -m tools.zoo --coverage) -->"
END = "<!-- coverage-table:end -->"

# Core operators an inference graph never holds, and why (checked before the
# rules of excluded_reason).
EXCLUDED_BY_NAME = {
    "native_dropout": "dropout: training only (an eval-mode export has no dropout)",
    "empty_strided": "an uninitialised tensor with explicit strides: functional inference graphs allocate "
    "through empty.memory_format",
    "_local_scalar_dense": "Tensor.item(): a data-dependent Python scalar, not a tensor",
}


@dataclass(frozen=True)
class OverloadCoverage:
    name: str  # full name, default overload without a dot: aten::add.Tensor, aten::relu
    overload: str  # "Tensor", "default"
    how: str  # KERNEL, DECOMPOSITION or MISSING
    kernel_tags: tuple[str, ...]  # the tags its kernel dispatches on
    dtypes: tuple[str, ...] | None  # PyTorch ScalarType names; None: any dtype (no dtype dispatch)
    note: str = ""  # a tracer rewrite, or why it is missing


@dataclass(frozen=True)
class OpCoverage:
    name: str  # base name: add
    overloads: tuple[OverloadCoverage, ...]

    @property
    def implemented(self) -> bool:
        return any(o.how != MISSING for o in self.overloads)

    @property
    def missing_overloads(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.overloads if o.how == MISSING)


@dataclass(frozen=True)
class Excluded:
    name: str
    reason: str


@dataclass(frozen=True)
class CoverageReport:
    torch_version: str  # major.minor: the opset is torch's
    ops: tuple[OpCoverage, ...]
    excluded: tuple[Excluded, ...]

    @property
    def implemented(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if o.implemented)

    @property
    def missing(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if not o.implemented)

    @property
    def missing_overloads(self) -> tuple[str, ...]:
        return tuple(n for o in self.ops if o.implemented for n in o.missing_overloads)


def core_overloads() -> dict[str, list]:
    """{base name: its OpOverloads tagged core}, over every aten schema
    (not dir(torch.ops.aten), which lists only the packets loaded so far)."""
    import torch

    found: dict[str, list] = {}
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        base = schema.name.removeprefix("aten::")
        op = getattr(getattr(torch.ops.aten, base), schema.overload_name or "default")
        if torch.Tag.core in op.tags:
            found.setdefault(base, []).append(op)
    return dict(sorted(found.items()))


def excluded_reason(base: str, overloads: list) -> str | None:
    """Why `base` is not in the inference opset, or None."""
    import torch

    if base in EXCLUDED_BY_NAME:
        return EXCLUDED_BY_NAME[base]
    if base.endswith("_backward"):
        return "a gradient: training only"
    if any(torch.Tag.nondeterministic_seeded in op.tags for op in overloads):
        return "random numbers (Pare programs are deterministic)"
    if base.startswith("sym_"):
        return "a symbolic-size query (a SymInt, not a tensor)"
    if not any(_functional(op) for op in overloads):
        return "in place or out= only: an exported graph is functional"
    return None


def inference_opset() -> tuple[dict[str, list], tuple[Excluded, ...]]:
    """({base name: its functional core overloads}, what is left out and why)."""
    kept: dict[str, list] = {}
    excluded: list[Excluded] = []
    for base, overloads in core_overloads().items():
        reason = excluded_reason(base, overloads)
        if reason is None:
            kept[base] = [op for op in overloads if _functional(op)]
        else:
            excluded.append(Excluded(base, reason))
    return kept, tuple(excluded)


def build_report(inventory: codegen.Inventory | None = None, kernels_dir: Path | None = None) -> CoverageReport:
    import torch

    from tools.tracer.exporter import decomposition_table
    from tools.tracer.lowering import IDENTITY_OPS, REWRITES, op_name

    inventory = inventory or codegen.load_inventory()
    tags_of = op_kernel_tags(inventory, *([kernels_dir] if kernels_dir else []))
    decomposed = decomposition_table(inventory)
    opset, excluded = inference_opset()
    ops = []
    for base, overloads in opset.items():
        rows = []
        for op in overloads:
            name = op_name(op)
            rewrite = REWRITES.get(op) or (
                "the tracer passes its input on where it changes nothing" if op in IDENTITY_OPS else ""
            )
            if name in inventory.ops:
                tags = tags_of.get(name, ())
                rows.append(OverloadCoverage(name, op._overloadname, KERNEL, tags, _dtypes(inventory, tags), rewrite))
            elif op in decomposed:
                rows.append(OverloadCoverage(name, op._overloadname, DECOMPOSITION, (), None, rewrite))
            else:
                siblings = inventory.overloads_of(f"aten::{base}")
                has = ", ".join(f"`{s}`" for s in sorted(siblings))
                why = f"no kernel; the runtime has {has}" if siblings else "no kernel"
                rows.append(OverloadCoverage(name, op._overloadname, MISSING, (), None, why))
        ops.append(OpCoverage(base, tuple(rows)))
    excluded = tuple(Excluded(e.name, e.reason + _also_in_runtime(inventory, e.name)) for e in excluded)
    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    return CoverageReport(version, tuple(ops), excluded)


def _functional(op) -> bool:
    return not op._schema.is_mutable


def _also_in_runtime(inventory: codegen.Inventory, base: str) -> str:
    names = inventory.overloads_of(f"aten::{base}")
    return f"; the runtime has {', '.join(f'`{n}`' for n in sorted(names))} all the same" if names else ""


def _dtypes(inventory: codegen.Inventory, tags: tuple[str, ...]) -> tuple[str, ...] | None:
    if not tags:
        return None
    names = {d for t in tags for d in inventory.tags[t].dtypes}
    return tuple(sorted(names, key=lambda d: storage_dtype(d).value))


# -- rendering -----------------------------------------------------------------


def summary(report: CoverageReport) -> str:
    complete = [o for o in report.implemented if not o.missing_overloads]
    missing = ", ".join(f"`{o.name}`" for o in report.missing) or "none"
    partial = ", ".join(f"`{n}`" for n in report.missing_overloads) or "none"
    return (
        f"torch {report.torch_version}: Pare runs {len(report.implemented)} of the {len(report.ops)} inference "
        f"core ATen operators ({len(complete)} in every overload torch.export emits). "
        f"Missing operators: {missing}. Missing overloads of the others: {partial}."
    )


def markdown(report: CoverageReport) -> str:
    """The doc table: summary, one row per operator, then what is left out."""
    lines = [
        summary(report),
        "",
        "| operator | overloads | how Pare runs it | dtypes |",
        "|---|---|---|---|",
    ]
    for op in report.ops:
        lines.append(
            f"| `{op.name}` | {', '.join(f'`{o.overload}`' for o in op.overloads)} | {_how(op)} | {_dtype_cell(op)} |"
        )
    lines += [
        "",
        f"Left out of the inference opset ({len(report.excluded)} core operators):",
        "",
        "| operator | why |",
        "|---|---|",
    ]
    lines += [f"| `{e.name}` | {e.reason} |" for e in report.excluded]
    return "\n".join(lines)


def _per_overload(op: OpCoverage, cell) -> str:
    values = [cell(o) for o in op.overloads]
    if len(set(values)) == 1:
        return values[0]
    return "; ".join(f"`{o.overload}`: {v}" for o, v in zip(op.overloads, values))


def _how(op: OpCoverage) -> str:
    def cell(o: OverloadCoverage) -> str:
        text = {KERNEL: "kernel", DECOMPOSITION: "torch.export decomposes it", MISSING: "**missing**"}[o.how]
        return f"{text} ({o.note})" if o.note else text

    return _per_overload(op, cell)


def _dtype_cell(op: OpCoverage) -> str:
    def cell(o: OverloadCoverage) -> str:
        if o.how == DECOMPOSITION:
            return "those of what it decomposes into"
        if o.how == MISSING:
            return "–"
        return "any (no dtype dispatch)" if o.dtypes is None else ", ".join(o.dtypes)

    return _per_overload(op, cell)


def to_json(report: CoverageReport) -> str:
    data = {
        "torch": report.torch_version,
        "summary": {
            "operators": len(report.ops),
            "implemented": len(report.implemented),
            "missing": [o.name for o in report.missing],
            "missing_overloads": list(report.missing_overloads),
        },
        "operators": [
            {"name": o.name, "implemented": o.implemented, "overloads": [asdict(x) for x in o.overloads]}
            for o in report.ops
        ],
        "excluded": [asdict(e) for e in report.excluded],
    }
    return json.dumps(data, indent=2) + "\n"


def update_doc(doc: Path, report: CoverageReport) -> None:
    """Rewrites the table between BEGIN and END in `doc`."""
    replace_between(doc, BEGIN, END, markdown(report), ZooError)
