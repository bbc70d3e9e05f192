"""`export`: a model spec -> one Pare program (docs/tracer.md).

Representative inputs are grouped by dtype signature (the dtypes of an
input tuple, in order). Each group becomes one method of the program:

* the group of `inputs[0]` is `forward`; every other group is named
  `forward_` + its dtypes joined by `_` (torch names: `forward_int64_bool`),
  so a caller can compute the method name from its inputs;
* a dim whose size differs across the group's inputs is exported dynamic
  (`Dim.AUTO`, so torch.export infers which dynamic dims are equal); a dim
  that is the same everywhere stays static. The example torch.export traces
  with is the group's input with the most dynamic dims of size >= 2, as
  torch specialises sizes 0 and 1.

The graph is decomposed to core ATen (`run_decompositions()`), except ops
the runtime implements directly, rewritten by the selected graph passes
(tools/tracer/passes/: batch-norm folding, prepacking, ...) and lowered by
tools/tracer/lowering.py.
Every operator the program calls must be in the runtime's inventory
(runtime/inventory/**/*.def), else MissingOpsError lists them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch.export import Dim, ExportedProgram
from torch.fx.experimental.symbolic_shapes import is_concrete_int

import codegen
from pare.program import ProgramBuilder, ProgramError
from tools.tracer import delegation, paths, torchao_weights
from tools.tracer import passes as graph_passes
from tools.tracer.errors import MissingOpsError, TracerError
from tools.tracer.lowering import LoweringReport, MethodLowering, op_name
from tools.tracer.model_spec import ModelSpec
from tools.tracer.progress import Progress, plural

DEFAULT_METHOD = "forward"


@dataclass(frozen=True)
class MethodGroup:
    """Representative inputs sharing a dtype signature: one program method."""

    name: str
    indices: tuple[int, ...]  # into ModelSpec.inputs
    dtypes: tuple[torch.dtype, ...]
    dynamic_dims: tuple[tuple[int, ...], ...]  # per input tensor: the dims whose size varies

    def describe_dynamic(self) -> str:
        dims = [f"input {i} dim {d}" for i, ds in enumerate(self.dynamic_dims) for d in ds]
        return ", ".join(dims) if dims else "none"


@dataclass(frozen=True)
class ExportedModel:
    spec: ModelSpec
    program: bytes
    groups: tuple[MethodGroup, ...]
    exported: tuple[ExportedProgram, ...]  # per group
    op_counts: dict[str, int]  # operator -> instructions calling it, over every method
    prepack: bool
    passes: tuple[graph_passes.PassRun, ...] = ()  # the graph passes that ran, in order, and what they changed
    delegation: delegation.DelegationReport | None = None  # what went to which backend (--delegate)

    def method_of(self, input_index: int) -> str:
        for g in self.groups:
            if input_index in g.indices:
                return g.name
        raise KeyError(input_index)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def group_inputs(spec: ModelSpec) -> tuple[MethodGroup, ...]:
    """Groups the representative inputs into methods (see the module doc)."""
    by_signature: dict[tuple[torch.dtype, ...], list[int]] = {}
    for i, example in enumerate(spec.inputs):
        by_signature.setdefault(tuple(t.dtype for t in example), []).append(i)
    groups = []
    for n, (signature, indices) in enumerate(by_signature.items()):
        name = DEFAULT_METHOD if n == 0 else "_".join([DEFAULT_METHOD, *map(dtype_name, signature)])
        examples = [spec.inputs[i] for i in indices]
        dynamic = []
        for pos in range(len(signature)):
            ranks = {ex[pos].dim() for ex in examples}
            if len(ranks) > 1:
                shown = ", ".join(f"inputs[{i}][{pos}] has {spec.inputs[i][pos].dim()}" for i in indices)
                raise TracerError(
                    f"{spec.path}: input {pos} has different ranks across representative inputs of the same dtypes "
                    f"({shown} dims); torch.export cannot make a rank dynamic: give every input tuple of these "
                    "dtypes the same rank, or trace the variants as separate model specs"
                )
            dims = tuple(d for d in range(examples[0][pos].dim()) if len({ex[pos].shape[d] for ex in examples}) > 1)
            dynamic.append(dims)
        groups.append(MethodGroup(name, tuple(indices), signature, tuple(dynamic)))
    return tuple(groups)


def _example_for(spec: ModelSpec, group: MethodGroup) -> tuple[torch.Tensor, ...]:
    def score(i: int) -> int:
        return sum(spec.inputs[i][pos].shape[d] >= 2 for pos, dims in enumerate(group.dynamic_dims) for d in dims)

    best = max(group.indices, key=lambda i: (score(i), -i))
    return spec.inputs[best]


@contextlib.contextmanager
def _quiet_torch():
    """torch.export logs warnings (specialisations, deprecations) that the
    tracer reports in its own words."""
    loggers = [logging.getLogger(name) for name in ("torch", "torch._export", "torch.export", "torch.fx")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def decomposition_table(inventory: codegen.Inventory):
    """torch.export's core-ATen decompositions, minus the ops the runtime
    implements itself: one `hardswish` kernel beats the five ops it
    decomposes into, and `upsample_nearest2d` beats `index` with None."""
    return _decomposition_table(frozenset(inventory.ops)).copy()  # run_decompositions may materialise it


@functools.lru_cache(maxsize=4)
def _decomposition_table(runtime_ops: frozenset[str]):
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if isinstance(op, torch._ops.OpOverload) and op_name(op) in runtime_ops:
            del table[op]
    return table


def export_group(spec: ModelSpec, group: MethodGroup, decompositions=None) -> ExportedProgram:
    """torch.export of one method group, decomposed to core ATen (except
    what `decompositions` leaves out; default: every core decomposition)."""
    example = _example_for(spec, group)
    dynamic_shapes = tuple({d: Dim.AUTO for d in dims} if dims else None for dims in group.dynamic_dims)
    try:
        with _quiet_torch():
            ep = torch.export.export(spec.module, example, dynamic_shapes=dynamic_shapes or None)
            torchao_weights.rewrite(ep, spec.path)
            ep = ep.run_decompositions(decompositions) if decompositions is not None else ep.run_decompositions()
    except TracerError:  # torchao_weights': a weight the kernel does not run
        raise
    except Exception as e:  # torch.export's many error types: summarise, the model is the user's
        raise TracerError(
            f"{spec.path}: torch.export failed for method {group.name}: {_first_line(e)}; make the "
            "model exportable (https://pytorch.org/docs/stable/export.html), or rerun with "
            "--traceback for torch's full message"
        ) from e
    _check_dynamic_dims(spec, group, ep)
    return ep


def _lower(builder, name: str, ep, spec: ModelSpec, report: LoweringReport, method_passes) -> None:
    try:
        MethodLowering(builder.method(name), ep, model_file=spec.path, report=report, passes=method_passes).lower()
    except ProgramError as e:
        raise TracerError(f"{spec.path}: cannot lower method {name}: {e}") from None


def _check_dynamic_dims(spec: ModelSpec, group: MethodGroup, ep: ExportedProgram) -> None:
    user_inputs = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for pos, dims in enumerate(group.dynamic_dims):
        if pos >= len(user_inputs):
            break
        shape = nodes[user_inputs[pos]].meta["val"].shape
        for d in dims:
            if is_concrete_int(shape[d]):
                sizes = sorted({spec.inputs[i][pos].shape[d] for i in group.indices})
                raise TracerError(
                    f"{spec.path}: input {pos} dim {d} varies across the representative inputs (sizes "
                    f"{', '.join(map(str, sizes))}) but torch.export specialised it to {int(shape[d])}: the model only "
                    "works for one size there; make forward() size-generic in that dim, or give every input the "
                    "same size in it"
                )


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    line = text.splitlines()[0].strip()
    return (line[:400] + "...") if len(line) > 400 else line


def export_model(
    spec: ModelSpec,
    *,
    passes: str | Iterable[str] = graph_passes.DEFAULT,
    inventory: codegen.Inventory | None = None,
    progress: Progress | None = None,
    delegates: delegation.DelegateOptions | None = None,
) -> ExportedModel:
    """Exports every method group, runs the graph passes on it and lowers
    it into one program. `passes`: "default" (every pass), "none", or the
    names of passes, as a comma list or an iterable (tools/tracer/passes/);
    they run in the passes' own order. `delegates`: the backends that take
    the parts of each graph they support (tools/tracer/delegation.py),
    after the graph passes and before lowering."""
    progress = progress or Progress.silent()
    selected = graph_passes.resolve(passes)
    if inventory is None:
        inventory = paths.load_inventory()
    groups = group_inputs(spec)
    builder = ProgramBuilder()
    report = LoweringReport()
    exported = []
    runs = []
    backends = delegates.resolve() if delegates is not None and delegates.backends else []
    delegated = delegation.DelegationReport() if backends else None
    for group in groups:
        with progress.step(
            f"exporting {group.name} with torch.export ({plural(len(group.indices), 'input')}; "
            f"dynamic: {group.describe_dynamic()})"
        ):
            ep = export_group(spec, group, decomposition_table(inventory))
        method_passes = graph_passes.MethodPasses(selected)
        method_passes.rewrite(ep)
        before = delegated.delegated_ops() if delegated is not None else 0
        if backends:
            with progress.step(f"partitioning {group.name} for {', '.join(b.name for b, _ in backends)}"):
                delegation.partition(ep, backends, delegated, where=f"{spec.path}: method {group.name}: ")
        exported.append(ep)
        _lower(builder, group.name, ep, spec, report, method_passes)
        runs.append(method_passes.runs())
        if delegates is not None and delegates.fallback and delegated.delegated_ops() > before:
            # The method again, all on the CPU, for a device without the backends.
            with progress.step(f"exporting {group.name}'s CPU fallback ({group.name}{delegation.FALLBACK_SUFFIX})"):
                cpu = export_group(spec, group, decomposition_table(inventory))
                cpu_passes = graph_passes.MethodPasses(selected)
                cpu_passes.rewrite(cpu)
                _lower(builder, group.name + delegation.FALLBACK_SUFFIX, cpu, spec, report, cpu_passes)
    missing = {name: uses for name, uses in report.uses.items() if name not in inventory.ops}
    missing.update(report.unsupported)
    if missing:
        raise MissingOpsError(paths.display(spec.path), missing, paths.display(paths.inventory_dir()))
    try:
        program = builder.to_bytes()
    except ProgramError as e:
        raise TracerError(f"{spec.path}: cannot write the program: {e}") from None
    counts = {name: len(uses) for name, uses in sorted(report.uses.items())}
    prepack = graph_passes.PREPACK in selected
    return ExportedModel(spec, program, groups, tuple(exported), counts, prepack, graph_passes.combine(runs), delegated)
