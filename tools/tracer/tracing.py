"""`trace` and `check`: run a model's program on a Pare runtime over every
representative input, compare with torch eager, and (trace) turn what the
instrumentation build recorded into a manifest.

The manifest (PyTorch's selected-operators schema, docs/manifest.md) holds
exactly what the runtime executed: the root operators the program's
instructions call, the non-root operators kernels call internally, every
(kernel tag, dtype) the dispatch reached, the custom classes created and the
build features used. Its debug_info names the model file (relative to the
repository, else its file name, so the bytes do not depend on where the
checkout lives), the graph passes the program was exported with and what
each changed, and, per operator, the model methods that reached it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import codegen
from pare.program import read as read_program
from tools.tracer import passes as graph_passes
from tools.tracer import paths
from tools.tracer.delegation import FALLBACK_SUFFIX, DelegateOptions, DelegationReport
from tools.tracer.errors import NumericMismatchError, TracerError
from tools.tracer.exporter import ExportedModel, MethodGroup, export_model, group_inputs
from tools.tracer.model_spec import ModelSpec
from tools.tracer.numerics import OutputCheck, Tolerance, compare, flatten_outputs, quantized_output_steps
from tools.tracer.progress import Progress, plural
from tools.tracer.runner import NativeRunner, has_state, library_kind, runner_for


@dataclass(frozen=True)
class InputCheck:
    """The numeric check of one representative input."""

    index: int
    method: str
    outputs: tuple[OutputCheck, ...]

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)


@dataclass
class TraceResult:
    manifest: codegen.Manifest
    exported: ExportedModel
    checks: list[InputCheck]
    seconds: dict[str, float] = field(default_factory=dict)


def model_label(spec: ModelSpec) -> str:
    """How manifests name the model: its path in the repository, else its
    file name (never an absolute path, so the bytes are portable)."""
    root = paths.repo_root()
    # As given (a runfiles tree links to the checkout), then both resolved.
    for path, under in ((spec.path, root), (spec.path.resolve(), root.resolve())):
        if path.is_relative_to(under):
            return str(path.relative_to(under))
    return spec.path.name


def eager_outputs(spec: ModelSpec, index: int, module: torch.nn.Module | None = None) -> list[Any]:
    """torch eager's outputs for inputs[index], from `module` (default: the spec's)."""
    with torch.no_grad():
        try:
            result = (spec.module if module is None else module)(*spec.inputs[index])
        except Exception as e:  # the user's model
            raise TracerError(
                f"{spec.path}: running the model in torch eager on inputs[{index}] raised "
                f"{type(e).__name__}: {e}; fix the model or that input"
            ) from None
    return flatten_outputs(result)


def spec_tolerance(spec: ModelSpec, override: Tolerance | None) -> Tolerance:
    """The CLI's --rtol/--atol over the model spec's TOLERANCE over the defaults."""
    base = spec.tolerance or Tolerance()
    if override is None:
        return base
    return Tolerance(
        rtol=base.rtol if override.rtol is None else override.rtol,
        atol=base.atol if override.atol is None else override.atol,
    )


def run_and_compare(
    spec: ModelSpec,
    groups: tuple[MethodGroup, ...],
    runner,
    tolerance: Tolerance,
    progress: Progress,
    after_method=None,
    stateful: bool = False,
) -> list[InputCheck]:
    """Runs every representative input on `runner` (program loaded), grouped
    by method, and compares with torch eager. `after_method(name)` is called
    after each method's inputs ran (trace reads the per-method trace there).
    A program with state runs its inputs as one sequence, each call seeing
    the buffers the previous ones left, and so does torch: on a copy of the
    module, so the spec's keeps its initial buffers for the next run."""
    checks = []
    steps = quantized_output_steps(spec.module)
    module = copy.deepcopy(spec.module) if stateful else spec.module
    for group in groups:
        for index in group.indices:
            expected = eager_outputs(spec, index, module)
            actual = runner.run(group.name, spec.inputs[index])
            checks.append(InputCheck(index, group.name, tuple(compare(actual, expected, tolerance, steps))))
            shapes = ", ".join(f"{list(t.shape)}" for t in spec.inputs[index])
            status = "ok" if checks[-1].ok else "MISMATCH"
            worst = max((o.max_abs for o in checks[-1].outputs), default=0.0)
            progress.info(f"inputs[{index}] {group.name}({shapes}): {status} (max abs err {worst:.3g})")
        if after_method is not None:
            after_method(group.name)
    return sorted(checks, key=lambda c: c.index)


def trace_model(
    spec: ModelSpec,
    *,
    runtime: str | Path | None = None,
    passes: str | Iterable[str] = graph_passes.DEFAULT,
    tolerance: Tolerance | None = None,
    features: Iterable[str] = (),
    progress: Progress | None = None,
    delegates: DelegateOptions | None = None,
) -> TraceResult:
    """Exports (with `passes`, as export_model), runs every input on the
    instrumentation runtime, checks the numerics and builds the manifest,
    which also selects build `features` (the runtime's, or TracerError).
    Raises NumericMismatchError after the manifest is built (it is on the
    error's `result`). With `delegates`, the program delegates what its
    backends support and the manifest selects them (their
    pare::delegate_init.<name> operators); with `delegates.fallback` it also
    selects what the delegated parts need on the CPU, traced by running the
    program exported without delegates too."""
    progress = progress or Progress.silent()
    seconds: dict[str, float] = {}
    start = time.monotonic()
    exported = export_model(spec, passes=passes, progress=progress, delegates=delegates)
    seconds["export"] = time.monotonic() - start

    library = paths.instrumentation_runtime(runtime, progress)
    if library_kind(library) != "x86_64":
        raise TracerError(
            f"{library}: trace needs the host (x86_64) instrumentation runtime; Android runtimes "
            "can be checked (check --runtime) but not traced"
        )
    runner = NativeRunner(library)
    if not runner.runtime.is_tracing_build:
        raise TracerError(
            f"{library}: not an instrumentation build (compiled without PARE_TRACING=1), so it "
            f"records nothing; use bazel-bin/{paths.INSTRUMENTATION_OUTPUT} "
            f"(tools/bazel build {paths.INSTRUMENTATION_TARGET})"
        )
    start = time.monotonic()
    features = tuple(features)
    unknown = sorted(set(features) - set(runner.runtime.inventory().features))
    if unknown:
        raise TracerError(
            f"--features {','.join(unknown)}: not a build feature of {paths.display(library)}; "
            f"its features: {', '.join(runner.runtime.inventory().features) or 'none'}"
        )
    runner.load(exported.program)
    per_method: dict[str, Any] = {}

    def read_trace(method: str) -> None:
        per_method[method] = runner.program.trace()
        runner.program.reset_trace()

    with progress.step(
        f"running {plural(len(spec.inputs), 'input')} on the instrumentation runtime {paths.display(library)}"
    ):
        # Method creation runs the init section (prepacking): trace it with
        # the method's first input.
        checks = run_and_compare(
            spec,
            exported.groups,
            runner,
            spec_tolerance(spec, tolerance),
            progress,
            read_trace,
            stateful=has_state(exported.program),
        )
    extra: list[dict[str, Any]] = []
    fallbacks = [
        dataclasses.replace(g, name=g.name + FALLBACK_SUFFIX)
        for g in exported.groups
        if g.name + FALLBACK_SUFFIX in {m.name for m in read_program(exported.program).methods}
    ]
    if fallbacks:
        extra.append({})

        def read_fallback(method: str) -> None:
            extra[0][method.removesuffix(FALLBACK_SUFFIX)] = runner.program.trace()
            runner.program.reset_trace()

        with progress.step("running the methods' CPU fallbacks (--delegate-fallback) on the instrumentation runtime"):
            fallback_checks = run_and_compare(
                spec,
                tuple(fallbacks),
                runner,
                spec_tolerance(spec, tolerance),
                progress,
                read_fallback,
                stateful=has_state(exported.program),
            )
        if not all(c.ok for c in fallback_checks):  # the CPU path must match torch too
            checks = fallback_checks
    seconds["run"] = time.monotonic() - start
    manifest = build_manifest(spec, exported, per_method, features, extra_traces=extra)
    runner.close()
    result = TraceResult(manifest, exported, checks, seconds)
    if not all(c.ok for c in checks):
        error = NumericMismatchError(paths.display(spec.path), library, checks)
        error.result = result
        raise error
    return result


def build_manifest(
    spec: ModelSpec,
    exported: ExportedModel,
    per_method: dict[str, Any],
    features: Iterable[str] = (),
    extra_traces: Iterable[dict[str, Any]] = (),
) -> codegen.Manifest:
    """A manifest from per-method traces (pare.runtime.Trace), also
    selecting build `features` and what `extra_traces` (more per-method
    traces: the delegated operators' CPU fallback) recorded."""
    label = model_label(spec)
    inventory = paths.load_inventory()
    ops: dict[str, dict[str, Any]] = {}
    kernel_metadata: dict[str, set[str]] = {}
    classes: set[str] = set()
    features = set(features)
    for traces, method in ((t, g.name) for t in (per_method, *extra_traces) for g in exported.groups):
        trace = traces.get(method)
        if trace is None:
            continue
        for name, use in trace.ops.items():
            entry = ops.setdefault(name, {"root": False, "methods": []})
            entry["root"] = entry["root"] or use.root
            entry["methods"].append(f"{label}:{method}")
        for tag, dtypes in trace.kernel_dtypes.items():
            # The tag's own names: QInt8 where an int8 layer dispatched on Char.
            named = inventory.tags[tag].manifest_name if tag in inventory.tags else str
            kernel_metadata.setdefault(tag, set()).update(named(d) for d in dtypes)
        classes.update(trace.classes)
        features.update(trace.features)
    operators = [
        codegen.Operator(
            name,
            is_root_operator=e["root"],
            is_used_for_training=False,
            include_all_overloads=False,
            debug_info=tuple(e["methods"]),
        )
        for name, e in sorted(ops.items())
    ]
    debug = json.dumps(
        {
            "model": label,
            "methods": {
                g.name: {
                    "inputs": list(g.indices),
                    "dtypes": [str(d).removeprefix("torch.") for d in g.dtypes],
                    "dynamic_dims": [list(d) for d in g.dynamic_dims],
                }
                for g in exported.groups
            },
            "passes": [run.to_json() for run in exported.passes],
            "tracer": "pare tools/tracer",
            **_delegation_debug(exported, bool(tuple(extra_traces))),
        },
        sort_keys=True,
    )
    return codegen.Manifest(
        operators=operators,
        kernel_metadata={t: tuple(sorted(d)) for t, d in kernel_metadata.items()},
        custom_classes=frozenset(classes),
        build_features=frozenset(features),
        include_all_operators=False,
        include_all_non_op_selectives=False,
        debug_info=(debug,),
        source=label,
    )


def _delegation_debug(exported: ExportedModel, fallback: bool) -> dict[str, Any]:
    report = exported.delegation
    if report is None:
        return {}
    return {
        "delegates": {
            "fallback": fallback,
            "partitions": dict(sorted(report.partitions.items())),
            "delegated_ops": {b: dict(sorted(ops.items())) for b, ops in sorted(report.delegated.items())},
        }
    }


def check_model(spec: ModelSpec, runtime: str | Path, **options: Any) -> list[InputCheck]:
    """check_model_report's checks (`options`: its keyword arguments)."""
    return check_model_report(spec, runtime, **options)[0]


def check_model_report(
    spec: ModelSpec,
    runtime: str | Path,
    *,
    passes: str | Iterable[str] = graph_passes.DEFAULT,
    program: bytes | None = None,
    tolerance: Tolerance | None = None,
    progress: Progress | None = None,
    delegates: DelegateOptions | None = None,
) -> tuple[list[InputCheck], DelegationReport | None]:
    """Runs every representative input on a built runtime (x86_64 natively,
    Android arm64 under the emulator harness) and compares with torch.
    The program is exported with `passes` as trace_model
    exports it (so a runtime built from the default trace's manifest runs
    the default export, with `delegates` as trace_model), or `program`:
    run these bytes instead. Also returns what the export delegated (None
    without delegates or with `program`)."""
    progress = progress or Progress.silent()
    library = Path(runtime)
    if not library.is_file():
        raise TracerError(f"--runtime {runtime}: no such runtime library; pass a built Pare runtime .so")
    runner = runner_for(library, progress)
    report = None
    if program is None:
        exported = export_model(spec, passes=passes, progress=progress, delegates=delegates)
        groups, program, report = exported.groups, exported.program, exported.delegation
    else:
        groups = group_inputs(spec)
        _check_program_methods(program, groups)
    runner.load(program)
    where = "under the qemu-aarch64 harness" if not isinstance(runner, NativeRunner) else "natively"
    with progress.step(f"running {plural(len(spec.inputs), 'input')} on {paths.display(library)} ({where})"):
        checks = run_and_compare(
            spec, groups, runner, spec_tolerance(spec, tolerance), progress, stateful=has_state(program)
        )
    runner.close()
    if not all(c.ok for c in checks):
        raise NumericMismatchError(paths.display(spec.path), library, checks)
    return checks, report


def _check_program_methods(program: bytes, groups: tuple[MethodGroup, ...]) -> None:
    from pare.program import ProgramError, read

    try:
        names = {m.name for m in read(program).methods}
    except ProgramError as e:
        raise TracerError(f"--program: {e}; pass a file written by python -m tools.tracer export") from None
    missing = [g.name for g in groups if g.name not in names]
    if missing:
        raise TracerError(
            f"--program has no method {', '.join(missing)} for this model's inputs (it has "
            f"{', '.join(sorted(names))}); export it again from this model spec"
        )
