"""Latency measured on the app's own runtime, not estimated from FLOPs.

A candidate model is exported exactly as the tracer exports it (default graph
passes: batch-norm folding, prepacked weights, fusions), loaded on the Pare
runtime given (default: the x86_64 full runtime), checked once against torch
eager (a latency of wrong output is worthless), and timed with
tools/bench/timing.py: pinned to one CPU, candidates interleaved round by
round with the reference they are compared with, medians.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from pare.runtime import PareError
from tools.bench.models import load_runtime
from tools.bench.runtimes import default_runtime
from tools.bench.timing import BenchError, calls_for, measure, median, pin_to_cpus
from tools.prune.errors import PruneError
from tools.tracer.errors import TracerError
from tools.tracer.exporter import export_model, group_inputs
from tools.tracer.model_spec import ModelSpec
from tools.tracer.numerics import compare
from tools.tracer.runner import set_inputs
from tools.tracer.tracing import eager_outputs, spec_tolerance


class PareTimer:
    """Times models on one Pare runtime, on `example` (one input tuple)."""

    def __init__(self, runtime_path: Path | None, spec: ModelSpec, rounds: int = 7):
        self.path = Path(runtime_path) if runtime_path else default_runtime()
        if not self.path.is_file():
            raise PruneError(
                f"no Pare runtime at {self.path}: run `tools/bazel build //runtime:full` or pass --runtime LIB"
            )
        try:
            self.runtime = load_runtime(self.path)  # tools.bench's loading and its message
        except BenchError as e:
            raise PruneError(str(e)) from None
        self.spec = spec
        self.index = group_inputs(spec)[0].indices[0]
        self.rounds = rounds

    def _method(self, module: nn.Module):
        spec = ModelSpec(self.spec.path, module.eval(), self.spec.inputs, self.spec.tolerance)
        try:
            exported = export_model(spec)
        except TracerError as e:
            raise PruneError(f"the pruned model does not export for Pare: {e}") from None
        group = exported.groups[0]
        try:
            program = self.runtime.load(exported.program)
            method = program.method(group.name)
            set_inputs(method, self.spec.inputs[self.index])
            method.execute()
            actual = [method.output(i) for i in range(method.num_outputs)]
        except PareError as e:
            raise PruneError(f"{self.path} failed on the pruned model: {e.status_name}: {e}") from None
        checks = compare(actual, eager_outputs(spec, self.index), spec_tolerance(spec, None))
        bad = [c.line() for c in checks if not c.ok]
        if bad:
            raise PruneError(f"Pare's output of the pruned model differs from torch eager: {bad[0]}")
        return program, method

    def median_us(self, modules: dict[str, nn.Module]) -> dict[str, float]:
        """Median µs per execute() of each model, interleaved in the same rounds on one pinned CPU."""
        loaded = {name: self._method(m) for name, m in modules.items()}
        affinity = os.sched_getaffinity(0)
        torch_threads = torch.get_num_threads()
        try:
            pin_to_cpus(1)
            systems: dict[str, Callable[[], object]] = {name: method.execute for name, (_, method) in loaded.items()}
            calls = {name: calls_for(fn) for name, fn in systems.items()}
            samples = measure(systems, self.rounds, calls)
        finally:
            os.sched_setaffinity(0, affinity)
            torch.set_num_threads(torch_threads)
            for program, method in loaded.values():
                method.close()
                program.close()
        return {name: median(values) * 1e6 for name, values in samples.items()}
