"""Model benchmarks: Pare's execute() against torch eager, side by side.

For each model spec: export it (tools.tracer, with the selected graph passes:
the default ones unless told otherwise), load the program on a Pare
runtime, check one run against torch eager (a benchmark of wrong output is
worthless), then time Pare's `execute()` and torch eager's `module(*inputs)`
on the spec's first representative input, interleaved round by round on the
same pinned CPUs. Reports median and p90 µs, the arena Pare planned, and the
ratio Pare / torch.

Pare runs one thread (threads are issue 12); `--threads N` gives torch N
threads and pins the process to N CPUs. ExecuTorch is not measured by this
version; the numbers for it in issue 11 come from a separate venv.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from pare.runtime import PareError, Runtime
from tools.bench.timing import BenchError, calls_for, measure, median, p90
from tools.tracer import passes as graph_passes
from tools.tracer.exporter import export_model
from tools.tracer.model_spec import load_model_spec
from tools.tracer.numerics import compare
from tools.tracer.runner import set_inputs
from tools.tracer.tracing import eager_outputs, spec_tolerance


@dataclass(frozen=True)
class ModelBench:
    model: str
    runtime: str
    threads: int
    rounds: int
    median_us: float
    p90_us: float
    arena_bytes: int
    torch_eager_median_us: float
    torch_eager_p90_us: float
    passes: tuple[str, ...]  # the graph passes the program was exported with

    @property
    def ratio_torch(self) -> float:
        return self.median_us / self.torch_eager_median_us

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "pare_over_torch_eager": round(self.ratio_torch, 4)}


def bench_model(path: str | Path, runtime: Runtime, runtime_path: Path, *, rounds: int, threads: int,
                passes: str | Sequence[str] = graph_passes.DEFAULT) -> ModelBench:
    spec = load_model_spec(path)
    exported = export_model(spec, passes=passes)
    group = exported.groups[0]
    inputs = spec.inputs[group.indices[0]]
    try:
        method = runtime.load(exported.program).method(group.name)
        set_inputs(method, inputs)
        method.execute()
        actual = [method.output(i) for i in range(method.num_outputs)]
    except PareError as e:
        raise BenchError(f"{path}: the runtime {runtime_path} failed: {e.status_name}: {e}") from None
    checks = compare(actual, eager_outputs(spec, group.indices[0]), spec_tolerance(spec, None))
    bad = [c.line() for c in checks if not c.ok]
    if bad:
        raise BenchError(f"{path}: Pare's output differs from torch eager ({bad[0]}); run python -m tools.tracer "
                         f"check {path} --runtime {runtime_path}")

    torch.set_num_threads(threads)

    def eager() -> None:
        with torch.no_grad():
            spec.module(*inputs)

    systems = {"pare": method.execute, "torch_eager": eager}
    calls = {name: calls_for(fn) for name, fn in systems.items()}
    samples = measure(systems, rounds, calls)
    arena = method.memory_stats().arena_bytes
    method.close()
    return ModelBench(
        model=str(path), runtime=str(runtime_path), threads=threads, rounds=rounds,
        median_us=round(median(samples["pare"]) * 1e6, 2), p90_us=round(p90(samples["pare"]) * 1e6, 2),
        arena_bytes=arena, torch_eager_median_us=round(median(samples["torch_eager"]) * 1e6, 2),
        torch_eager_p90_us=round(p90(samples["torch_eager"]) * 1e6, 2), passes=tuple(r.name for r in exported.passes))


def load_runtime(path: Path) -> Runtime:
    if not path.is_file():
        raise BenchError(f"no runtime at {path}: run `tools/bazel build //runtime:full` or pass --runtime LIB")
    try:
        return Runtime(path)
    except (PareError, OSError, AttributeError) as e:
        raise BenchError(f"{path}: not a loadable x86_64 Pare runtime ({e}); pass a linux_x86_64 .so") from None


def table(results: list[ModelBench]) -> str:
    lines = ["| model | Pare median µs | Pare p90 µs | arena B | torch eager median µs | Pare / torch |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.model} | {r.median_us:,.1f} | {r.p90_us:,.1f} | {r.arena_bytes:,} | "
                     f"{r.torch_eager_median_us:,.1f} | {r.ratio_torch:.2f}x |")
    return "\n".join(lines)

