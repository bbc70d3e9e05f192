"""Model benchmarks: Pare's execute() against torch eager, ExecuTorch and ONNX Runtime, side by side.

For each model spec: export it (tools.tracer, with the selected graph passes:
the default ones unless told otherwise), load the program on a Pare
runtime, check one run against torch eager (a benchmark of wrong output is
worthless), then time Pare's `execute()`, torch eager's `module(*inputs)`
and, when asked, ExecuTorch's portable and XNNPACK programs and ONNX
Runtime's CPU execution provider on the spec's first representative input,
interleaved round by round on the same pinned CPUs. Reports median and p90
µs, the arena Pare planned, and the ratios of Pare to the others.

ExecuTorch runs in its own venv, in a worker process that checks its output
against torch eager too and times its own calls (tools/bench/executorch_peer.py);
a system it cannot export, lower, run or match is not timed, and its one-line
reason is reported in place of the numbers. ONNX Runtime runs in this
process, on a model exported with torch.onnx.export and checked against
torch eager too (tools/bench/onnxruntime_peer.py), with the same kind of
reason when it cannot.

`--threads N` pins the process to N CPUs and gives Pare (pare_method_set_num_threads;
the runtime must select build feature threads) and torch N threads; Pare
with one thread is then timed in the same rounds, for the speed-up, and
torch eager in rounds of its own (its OpenMP workers spin after each call
and would take the CPUs Pare's threads need). ExecuTorch runs one thread;
ONNX Runtime N intra-op threads, in rounds of its own too (its pool's
threads spin after each run, as torch's do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from pare.runtime import PareError, Runtime
from tools.bench.executorch_worker import PORTABLE, SYSTEMS, XNNPACK
from tools.bench.layers import LayerTime, profile_layers
from tools.bench.onnxruntime_peer import SYSTEM as ORT
from tools.bench.timing import (
    BenchError,
    calls_for,
    calls_for_sampler,
    measure,
    median,
    p90,
)
from tools.tracer import passes as graph_passes
from tools.tracer.delegation import DelegateOptions
from tools.tracer.exporter import export_model
from tools.tracer.model_spec import load_model_spec
from tools.tracer.numerics import compare, quantized_output_steps
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
    # The arena of each planner's layout (the runtime keeps the smaller).
    first_fit_arena_bytes: int
    greedy_arena_bytes: int
    torch_eager_median_us: float
    torch_eager_p90_us: float
    passes: tuple[str, ...]  # the graph passes the program was exported with
    # ExecuTorch: None when not timed, either not asked for (bench_model's
    # executorch=False) or, with the reason in executorch_unavailable, not able.
    executorch_portable_median_us: float | None = None
    executorch_portable_p90_us: float | None = None
    executorch_xnnpack_median_us: float | None = None
    executorch_xnnpack_p90_us: float | None = None
    executorch_unavailable: tuple[tuple[str, str], ...] = ()  # (system, one-line reason)
    # ONNX Runtime: None when not timed, either not asked for or, with the
    # reason in onnxruntime_unavailable, not able.
    onnxruntime_median_us: float | None = None
    onnxruntime_p90_us: float | None = None
    onnxruntime_unavailable: str | None = None
    # With threads > 1: Pare on one thread, in the same rounds.
    pare_1_thread_median_us: float | None = None
    pare_1_thread_p90_us: float | None = None
    # A quantized model's FLOAT_TWIN (docs/model_spec.md) on Pare, in the same rounds.
    float_twin: str | None = None
    pare_float_twin_median_us: float | None = None
    pare_float_twin_p90_us: float | None = None
    # --delegate: the program exported with these backends (docs/delegates.md), in the same rounds.
    delegates: tuple[str, ...] = ()
    delegated_ops: int | None = None  # operators the backends took
    pare_delegated_median_us: float | None = None
    pare_delegated_p90_us: float | None = None
    # --profile-layers RUNS: each instruction's minimum time over RUNS profiled runs (tools/bench/layers.py).
    profile_runs: int | None = None
    layers: tuple[LayerTime, ...] = ()

    @property
    def ratio_delegated(self) -> float | None:
        """The delegated program's median over the CPU program's."""
        return None if self.pare_delegated_median_us is None else self.pare_delegated_median_us / self.median_us

    @property
    def ratio_float_twin(self) -> float | None:
        return None if self.pare_float_twin_median_us is None else self.median_us / self.pare_float_twin_median_us

    @property
    def thread_speedup(self) -> float | None:
        return None if self.pare_1_thread_median_us is None else self.pare_1_thread_median_us / self.median_us

    @property
    def ratio_torch(self) -> float:
        return self.median_us / self.torch_eager_median_us

    def peer_median_us(self, system: str) -> float | None:
        return getattr(self, f"{system}_median_us")

    def ratio(self, system: str) -> float | None:
        """Pare's median over `system`'s (an ExecuTorch one or onnxruntime), or None when it was not timed."""
        peer = self.peer_median_us(system)
        return None if peer is None else self.median_us / peer

    def to_json(self) -> dict:
        row = {**dataclasses.asdict(self), "pare_over_torch_eager": round(self.ratio_torch, 4)}
        for system in (XNNPACK, PORTABLE, ORT):
            ratio = self.ratio(system)
            row[f"pare_over_{system}"] = None if ratio is None else round(ratio, 4)
        row["executorch_unavailable"] = dict(self.executorch_unavailable)
        speedup = self.thread_speedup
        row["thread_speedup"] = None if speedup is None else round(speedup, 4)
        twin = self.ratio_float_twin
        row["pare_over_pare_float_twin"] = None if twin is None else round(twin, 4)
        delegated = self.ratio_delegated
        row["pare_delegated_over_pare"] = None if delegated is None else round(delegated, 4)
        return row


def bench_model(
    path: str | Path,
    runtime: Runtime,
    runtime_path: Path,
    *,
    rounds: int,
    threads: int,
    passes: str | Sequence[str] = graph_passes.DEFAULT,
    executorch: bool = False,
    onnxruntime: bool = False,
    progress: Callable[[str, str], None] | None = None,
    delegates: DelegateOptions | None = None,
    profile_runs: int | None = None,
) -> ModelBench:
    """Benchmarks one model spec (module docstring); `executorch` adds the
    ExecuTorch peers, `onnxruntime` ONNX Runtime; their one-line progress
    while they prepare (10-120 s) goes to `progress("ExecuTorch" or "ONNX
    Runtime", what)`. `delegates` (with backends) also times the program
    exported with them, beside the CPU's. `profile_runs`: after the rounds,
    profile Pare's method per instruction over that many runs (layers.py)."""
    spec = load_model_spec(path)
    exported, method, inputs = _checked_method(spec, runtime, runtime_path, passes, threads)
    if threads > 1:
        serial = method.program.method(exported.groups[0].name)  # one thread, for the speed-up
        set_inputs(serial, inputs)
        serial.execute()

    delegated = delegated_export = None
    if delegates is not None and delegates.backends:
        delegated_export, delegated = _checked_method(
            spec, runtime, runtime_path, passes, threads, delegates=delegates
        )[:2]

    twin = None
    if spec.float_twin is not None:
        twin = _checked_method(load_model_spec(spec.float_twin), runtime, runtime_path, passes, twin=True)[1]

    def eager() -> None:
        with torch.no_grad():
            spec.module(*inputs)

    def progress_of(system: str) -> Callable[[str], None] | None:
        return None if progress is None else lambda doing: progress(system, doing)

    # The peers only now: a model Pare gets wrong never waits for their export or lowering.
    ort = None
    if onnxruntime:
        from tools.bench.onnxruntime_peer import OnnxRuntimePeer

        ort = OnnxRuntimePeer.start(spec, inputs, threads=threads, progress=progress_of("ONNX Runtime"))
    peer = None
    try:
        if executorch:
            from tools.bench.executorch_peer import ExecuTorchPeer

            peer = ExecuTorchPeer.start(path, progress=progress_of("ExecuTorch"))  # on this process's (pinned) CPUs
        peers = peer.systems() if peer else {}
        systems = {"pare": method.execute, "torch_eager": eager}
        if threads > 1:
            # torch's OpenMP workers keep running after its calls and take
            # the CPUs Pare's workers need (Pare's 2-thread demo measured 77
            # and 236 µs in two runs interleaved with torch, 42 µs without):
            # with several threads, torch eager is not called before Pare's
            # rounds end, and then gets rounds of its own (tools.bench also
            # sets OMP_WAIT_POLICY=PASSIVE).
            systems = {"pare": method.execute, "pare_1_thread": serial.execute}
        if twin is not None:
            systems["pare_float_twin"] = twin.execute
        if delegated is not None:
            systems["pare_delegated"] = delegated.execute
        apart = {"torch_eager": eager} if threads > 1 else {}  # timed after, in rounds of their own
        if ort is not None and ort.run is not None:
            # Its intra-op pool spins after each run too (session option
            # session.intra_op.allow_spinning, on by default, as shipped).
            (apart if threads > 1 else systems)[ORT] = ort.run
        calls = {name: calls_for(fn) for name, fn in systems.items()}
        calls.update({name: calls_for_sampler(sample) for name, sample in peers.items()})
        torch.set_num_threads(threads)
        samples = measure(systems, rounds, calls, samplers=peers)
        for name, fn in apart.items():
            samples.update(measure({name: fn}, rounds, {name: calls_for(fn)}))
        unavailable = peer.unavailable() if peer else {}
    finally:
        if peer:
            peer.close()
    memory = method.memory_stats()
    try:
        layers = profile_layers(method, profile_runs) if profile_runs else ()
    finally:
        method.close()
    if twin is not None:
        twin.close()
    if threads > 1:
        serial.close()

    def us(system: str, stat: Callable[[list[float]], float]) -> float | None:
        return round(stat(samples[system]) * 1e6, 2) if system in samples else None

    return ModelBench(
        model=str(path),
        runtime=str(runtime_path),
        threads=threads,
        rounds=rounds,
        median_us=us("pare", median),
        p90_us=us("pare", p90),
        arena_bytes=memory.arena_bytes,
        first_fit_arena_bytes=memory.first_fit_arena_bytes,
        greedy_arena_bytes=memory.greedy_arena_bytes,
        torch_eager_median_us=us("torch_eager", median),
        torch_eager_p90_us=us("torch_eager", p90),
        passes=tuple(r.name for r in exported.passes),
        executorch_portable_median_us=us(PORTABLE, median),
        executorch_portable_p90_us=us(PORTABLE, p90),
        executorch_xnnpack_median_us=us(XNNPACK, median),
        executorch_xnnpack_p90_us=us(XNNPACK, p90),
        executorch_unavailable=tuple((system, unavailable[system]) for system in SYSTEMS if system in unavailable),
        onnxruntime_median_us=us(ORT, median),
        onnxruntime_p90_us=us(ORT, p90),
        onnxruntime_unavailable=None if ort is None else ort.unavailable,
        pare_1_thread_median_us=us("pare_1_thread", median),
        pare_1_thread_p90_us=us("pare_1_thread", p90),
        float_twin=None if spec.float_twin is None else str(spec.float_twin),
        pare_float_twin_median_us=us("pare_float_twin", median),
        pare_float_twin_p90_us=us("pare_float_twin", p90),
        delegates=tuple(delegates.backends) if delegated is not None else (),
        delegated_ops=delegated_export.delegation.delegated_ops() if delegated is not None else None,
        pare_delegated_median_us=us("pare_delegated", median),
        pare_delegated_p90_us=us("pare_delegated", p90),
        profile_runs=profile_runs,
        layers=layers,
    )


def eager_mismatches(spec, actual, expected) -> list[str]:
    """The lines of `actual` that differ from torch eager's `expected`
    (tools.tracer.tracing.eager_outputs): a float output within the spec's
    tolerance, a quantized one in whole steps, as tools.tracer check
    compares them."""
    checks = compare(actual, expected, spec_tolerance(spec, None), quantized_output_steps(spec.module))
    return [c.line() for c in checks if not c.ok]


def _checked_method(
    spec,
    runtime: Runtime,
    runtime_path: Path,
    passes,
    threads: int = 1,
    twin: bool = False,
    delegates: DelegateOptions | None = None,
):
    """(the export, the method of its first group on `runtime` with
    `threads`, that group's first input): the method run once on it and
    checked against torch eager (a benchmark of wrong output is worthless).
    `twin`: the spec is another's float twin, for the messages; `delegates`:
    export it with those backends."""
    what = f"{spec.path} (a float twin)" if twin else str(spec.path)
    if delegates is not None:
        what += f" (--delegate {','.join(delegates.backends)})"
    exported = export_model(spec, passes=passes, delegates=delegates)
    group = exported.groups[0]
    inputs = spec.inputs[group.indices[0]]
    try:
        method = runtime.load(exported.program).method(group.name)
        if threads > 1:
            method.set_num_threads(threads)
        set_inputs(method, inputs)
        method.execute()
        actual = [method.output(i) for i in range(method.num_outputs)]
    except PareError as e:
        raise BenchError(f"{what}: the runtime {runtime_path} failed: {e.status_name}: {e}") from None
    bad = eager_mismatches(spec, actual, eager_outputs(spec, group.indices[0]))
    if bad:
        raise BenchError(
            f"{what}: Pare's output differs from torch eager ({bad[0]}); run python -m tools.tracer "
            f"check {spec.path} --runtime {runtime_path}"
        )
    return exported, method, inputs


def load_runtime(path: Path) -> Runtime:
    if not path.is_file():
        raise BenchError(f"no runtime at {path}: run `tools/bazel build //runtime:full` or pass --runtime LIB")
    try:
        return Runtime(path)
    except (PareError, OSError, AttributeError) as e:
        raise BenchError(f"{path}: not a loadable x86_64 Pare runtime ({e}); pass a linux_x86_64 .so") from None


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # a reason must not end its table cell


def table(results: list[ModelBench]) -> str:
    """Markdown; the ExecuTorch and ONNX Runtime columns only when some model was benched with them."""
    with_executorch = any(r.executorch_unavailable or r.peer_median_us(s) is not None for r in results for s in SYSTEMS)
    with_onnxruntime = any(r.onnxruntime_unavailable or r.onnxruntime_median_us is not None for r in results)
    with_threads = any(r.thread_speedup is not None for r in results)
    with_twins = any(r.float_twin is not None for r in results)
    with_delegates = any(r.delegates for r in results)
    head = (
        "| model | Pare median µs | Pare p90 µs | arena B | arena B first fit / greedy | torch eager median µs "
        "| Pare / torch |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    if with_threads:
        head += " Pare 1 thread median µs | speed-up |"
        rule += "---:|---:|"
    if with_twins:
        head += " Pare float twin median µs | Pare / float twin |"
        rule += "---:|---:|"
    if with_delegates:
        head += " Pare delegated median µs (backends, ops) | delegated / CPU |"
        rule += "---:|---:|"
    if with_executorch:
        head += " ET portable median µs | ET+XNNPACK median µs | Pare / ET+XNNPACK |"
        rule += "---:|---:|---:|"
    if with_onnxruntime:
        head += " ORT median µs | Pare / ORT |"
        rule += "---:|---:|"
    lines = [head, rule]
    for r in results:
        line = (
            f"| {r.model} | {r.median_us:,.1f} | {r.p90_us:,.1f} | {r.arena_bytes:,} | "
            f"{r.first_fit_arena_bytes:,} / {r.greedy_arena_bytes:,} | "
            f"{r.torch_eager_median_us:,.1f} | {r.ratio_torch:.2f}x |"
        )
        if with_threads:
            line += (
                f" {r.pare_1_thread_median_us:,.1f} | {r.thread_speedup:.2f}x |"
                if r.thread_speedup is not None
                else " n/a | n/a |"
            )
        if with_twins:
            twin = r.ratio_float_twin
            line += f" {r.pare_float_twin_median_us:,.1f} | {twin:.2f}x |" if twin is not None else " n/a | n/a |"
        if with_delegates:
            ratio = r.ratio_delegated
            line += (
                f" {r.pare_delegated_median_us:,.1f} ({','.join(r.delegates)}, {r.delegated_ops} ops) | {ratio:.2f}x |"
                if ratio is not None
                else " n/a | n/a |"
            )
        if with_executorch:
            reasons = dict(r.executorch_unavailable)
            for system in SYSTEMS:
                peer = r.peer_median_us(system)
                why = _cell(reasons.get(system, "not measured"))
                line += f" {peer:,.1f} |" if peer is not None else f" n/a ({why}) |"
            ratio = r.ratio(XNNPACK)
            line += f" {ratio:.2f}x |" if ratio is not None else " n/a |"
        if with_onnxruntime:
            peer = r.onnxruntime_median_us
            if peer is None:
                line += f" n/a ({_cell(r.onnxruntime_unavailable or 'not measured')}) | n/a |"
            else:
                line += f" {peer:,.1f} | {r.ratio(ORT):.2f}x |"
        lines.append(line)
    return "\n".join(lines)
