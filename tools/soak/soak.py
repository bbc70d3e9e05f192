"""The soak: many method instances on a few threads for many calls, every
output checked, memory flat after warm-up (docs/testing.md, "Soak").

A run is one process of tools/soak/driver.c, a C program linked against one
runtime library: no Python in the process, so its resident set is the
runtime's, the driver's and libc's. The driver loads each case's program
twice (borrowed in place and copied), runs THREADS threads each driving
INSTANCES / THREADS method instances in turn, and checks every output bit for
bit against the case's reference, the PAL's live blocks and bytes after
warm-up against the end, and the growth of its anonymous resident memory
against a bound.

The soak is four runs sharing the calls: each model alone on the runtime its
app ships (the demo's //apps/demo:runtime, a zoo model's //models/zoo:<name>),
which gives each model's calls per second and resident set; then the three
models in one process on //runtime:full, where one thread alternates
instances of different models. A case is written here: the model's program
(tools.tracer), its input sets (the spec's inputs, each also reversed, and
for the transformer more sequence lengths than a method keeps plans for),
and each set's reference outputs, computed once on the run's runtime library
and checked against torch eager within the spec's tolerance.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from pare import dtypes as pare_dtypes
from tools import REPO_ROOT
from tools.tracer.progress import Progress

DRIVER_SOURCE = Path(__file__).absolute().with_name("driver.c")
# The driver's translation units: main and the threads, the case-file reader, the PAL and resident-set record.
DRIVER_SOURCES = tuple(DRIVER_SOURCE.with_name(name) for name in ("driver.c", "case_file.c", "memory_record.c"))
CC = "clang-16"
THREADS = 4
INSTANCES = 8  # over THREADS threads: each drives 2 in turn
CALLS = 100_000  # in all, over the runs
WARMUP_ROUNDS = 2  # every instance runs every input set this many times first
# Anonymous resident memory (RssAnon: heap, arenas, stacks, where a leak
# lands) may grow this much from warm-up to the end. The PAL balance is
# checked exactly besides, so this bounds what the PAL does not see: the
# driver's and libc's own memory (glibc's per-thread heaps, thread stacks,
# page tables). A leak of L bytes a call exceeds it after 1 MiB / L calls: 42
# bytes a call over a full run's 25,000. Measured: 0 to 8 KiB of growth.
RSS_BOUND_KIB = 1024
FULL_RUNTIME = "//runtime:full"
CASE_MAGIC = b"PARESOAK"
CASE_VERSION = 1


class SoakError(Exception):
    """A problem that stops the soak (a model that does not match torch, a
    missing compiler, a driver that could not run): one line."""


@dataclass(frozen=True)
class SoakModel:
    name: str
    spec: Path  # a model spec (docs/model_spec.md)
    runtime: str  # the Bazel target of the runtime its app ships
    # More input sets: input 0 cut to these lengths along dim 1. With the
    # spec's two shapes, more signatures than a method keeps plans for
    # (docs/c_api.md): its instances plan again on most calls.
    sequence_lengths: tuple[int, ...] = ()


MODELS = (
    SoakModel("demo", REPO_ROOT / "apps/demo/model.py", "//apps/demo:runtime"),
    SoakModel("mobilenet_v3_small", REPO_ROOT / "models/zoo/mobilenet_v3_small.py", "//models/zoo:mobilenet_v3_small"),
    SoakModel(
        "transformer_encoder_classifier",
        REPO_ROOT / "models/zoo/transformer_encoder_classifier.py",
        "//models/zoo:transformer_encoder_classifier",
        sequence_lengths=(5, 8, 10),
    ),
)


@dataclass(frozen=True)
class Exported:
    """A model exported once, its input sets and torch's outputs for them."""

    model: SoakModel
    program: bytes
    method: str
    sets: tuple[tuple[np.ndarray, ...], ...]
    expected: tuple[list, ...]  # torch eager's outputs per set
    tolerance: object  # tools.tracer.numerics.Tolerance


@dataclass(frozen=True)
class Run:
    name: str
    runtime: str  # a Bazel label, or the library's path when given one
    library: Path
    models: tuple[SoakModel, ...]
    calls: int


@dataclass
class RunReport:
    run: Run
    directory: Path  # its cases, library copy and driver (soak_driver)
    returncode: int
    report: dict  # the driver's JSON
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems


def export(model: SoakModel, progress: Progress) -> Exported:
    """Exports `model` (its spec's first method) and makes its input sets."""
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec
    from tools.tracer.numerics import flatten_outputs
    from tools.tracer.tracing import spec_tolerance

    with progress.step(f"{model.name}: exporting {model.spec.relative_to(REPO_ROOT)}"):
        spec = load_model_spec(model.spec)
        exported = export_model(spec)
    group = exported.groups[0]
    base = [tuple(spec.inputs[i]) for i in group.indices]
    sets = base + [tuple(torch.flip(t, tuple(range(t.ndim))) for t in inputs) for inputs in base]
    for n in model.sequence_lengths:
        first = base[0]
        if first[0].ndim < 2 or n > first[0].shape[1]:
            raise SoakError(f"{model.name}: cannot cut input 0 {list(first[0].shape)} to length {n} along dim 1")
        sets.append((first[0][:, :n], *first[1:]))
    with torch.no_grad():
        expected = [flatten_outputs(spec.module(*inputs)) for inputs in sets]
    arrays = tuple(tuple(np.ascontiguousarray(t.detach().numpy()) for t in inputs) for inputs in sets)
    return Exported(model, exported.program, group.name, arrays, tuple(expected), spec_tolerance(spec, None))


def reference_outputs(exported: Exported, library: Path) -> list[list[np.ndarray]]:
    """Every set's outputs on `library` (one instance, one thread), each
    checked against torch eager within the spec's tolerance."""
    from pare.runtime import PareError, Runtime
    from tools.tracer.numerics import compare

    name = exported.model.name
    try:
        runtime = Runtime(library)
        program = runtime.load(exported.program)
        method = program.method(exported.method)
        outputs = []
        for k, (inputs, expected) in enumerate(zip(exported.sets, exported.expected)):
            got = method.run(*inputs)
            for check in compare(got, expected, exported.tolerance):
                if not check.ok:
                    shapes = ", ".join(str(list(x.shape)) for x in inputs)
                    raise SoakError(
                        f"{name} input set {k} ({shapes}) on {library}: {check.line()}; the reference "
                        "must match torch before the soak compares with it"
                    )
            for i, out in enumerate(got):
                if not isinstance(out, np.ndarray) or pare_dtypes.get(out.dtype) is pare_dtypes.BFloat16:
                    raise SoakError(f"{name}: output {i} is not a tensor of a numpy dtype; the soak compares tensors")
            outputs.append([np.ascontiguousarray(o) for o in got])
        method.close()
        program.close()
    except PareError as e:
        raise SoakError(f"{name} on {library}: {e}") from None
    return outputs


def _tensor_bytes(a: np.ndarray) -> bytes:
    dtype = pare_dtypes.get(a.dtype)
    header = struct.pack(f"<iII{a.ndim}qQ", dtype.code, dtype.itemsize, a.ndim, *a.shape, a.nbytes)
    return header + a.tobytes()


def case_bytes(
    name: str, method: str, program: bytes, sets: Sequence[tuple[Sequence[np.ndarray], Sequence[np.ndarray]]]
) -> bytes:
    """A case file (tools/soak/driver.c's format): the program, and per set
    its inputs and reference outputs."""
    parts = [CASE_MAGIC, struct.pack("<I", CASE_VERSION)]
    for text in (name, method):
        raw = text.encode()
        parts.append(struct.pack("<I", len(raw)) + raw)
    parts.append(struct.pack("<Q", len(program)) + program)
    parts.append(struct.pack("<I", len(sets)))
    for inputs, outputs in sets:
        parts.append(struct.pack("<II", len(inputs), len(outputs)))
        parts.extend(_tensor_bytes(np.ascontiguousarray(a)) for a in (*inputs, *outputs))
    return b"".join(parts)


def write_case(exported: Exported, library: Path, path: Path) -> Path:
    """The case of `exported` with references computed on `library`."""
    references = reference_outputs(exported, library)
    path.write_bytes(
        case_bytes(exported.model.name, exported.method, exported.program, list(zip(exported.sets, references)))
    )
    return path


def compile_driver(library: Path, out: Path) -> Path:
    """The driver (DRIVER_SOURCES) linked against `library` (found beside it at run time)."""
    if shutil.which(CC) is None:
        raise SoakError(f"{CC} is not on PATH; run `make setup` (it installs clang-16)")
    command = [
        CC, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO_ROOT}", *map(str, DRIVER_SOURCES),
        "-o", str(out), str(library), f"-Wl,-rpath,{library.parent}", "-lpthread",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        first = next((line for line in result.stderr.splitlines() if "error" in line), result.stderr.strip())
        raise SoakError(f"compiling {DRIVER_SOURCE.name} against {library} failed: {first}")
    return out


@dataclass(frozen=True)
class DriverResult:
    returncode: int
    report: dict | None  # the driver's JSON (exit 0 or 1)
    stderr: list[str]  # its lines: progress, or the error of exit 2


def run_driver(
    driver: Path,
    cases: Sequence[Path],
    *,
    calls: int,
    threads: int = THREADS,
    instances: int = INSTANCES,
    warmup_rounds: int = WARMUP_ROUNDS,
    rss_bound_kib: int = RSS_BOUND_KIB,
    plant_leak: int = 0,
    progress: Progress | None = None,
) -> DriverResult:
    """Runs the driver; its progress lines go to `progress` as they come."""
    command = [
        str(driver), "--threads", str(threads), "--instances", str(instances), "--calls", str(calls),
        "--warmup-rounds", str(warmup_rounds), "--rss-bound-kib", str(rss_bound_kib),
        *(["--plant-leak", str(plant_leak)] if plant_leak else []), *map(str, cases),
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if progress is not None:
            progress.info(lines[-1].removeprefix("soak_driver: "))
    out = proc.stdout.read()
    code = proc.wait()
    report = json.loads(out) if code in (0, 1) and out.strip() else None
    return DriverResult(code, report, lines)


def plan_runs(models: Sequence[SoakModel], calls: int, libraries: dict[str, Path], labels: dict[str, str]) -> list[Run]:
    """Each model alone on its runtime, then all of them on the full one;
    `calls` shared out evenly (the first runs take the remainder)."""
    runs = [(m.name, m.runtime, (m,)) for m in models]
    if len(models) > 1:
        runs.append(("all models", FULL_RUNTIME, tuple(models)))
    share, extra = divmod(calls, len(runs))
    return [
        Run(name, labels[target], libraries[target], ms, share + (i < extra))
        for i, (name, target, ms) in enumerate(runs)
    ]


def build_runtimes(models: Sequence[SoakModel], progress: Progress) -> dict[str, Path]:
    """tools/bazel build of every model's shipped runtime and the full one;
    each linux_x86_64 library by target."""
    from tools.bazel_build import build
    from tools.bundle import BundleError, load_bundle

    targets = sorted({m.runtime for m in models} | {FULL_RUNTIME})
    with progress.step(f"building {', '.join(targets)}"):
        try:
            result = build(targets, progress.info, quiet_progress=True)
        except OSError as e:
            raise SoakError(f"cannot run tools/bazel: {e}") from None
    if result.returncode != 0:
        raise SoakError(f"tools/bazel build {' '.join(targets)} failed: {result.first_error()}")
    libraries = {}
    for target in targets:
        package, name = target.removeprefix("//").split(":")
        try:
            libraries[target] = load_bundle(REPO_ROOT / "bazel-bin" / package / name).platform("linux_x86_64").shared
        except BundleError as e:
            raise SoakError(str(e)) from None
    return libraries


def soak(
    work_dir: Path,
    *,
    models: Sequence[SoakModel] = MODELS,
    calls: int = CALLS,
    runtime: Path | None = None,
    threads: int = THREADS,
    instances: int = INSTANCES,
    rss_bound_kib: int = RSS_BOUND_KIB,
    progress: Progress | None = None,
) -> list[RunReport]:
    """The soak's runs (plan_runs) in `work_dir`. `runtime`: one library
    for every run instead of building the shipped ones. Raises SoakError
    when a run could not be made; a failed check is in its report."""
    progress = progress or Progress(prefix="soak: ")
    if runtime is not None:
        if not runtime.is_file():
            raise SoakError(f"runtime library {runtime} does not exist; build it (tools/bazel build //runtime:full)")
        targets = {m.runtime for m in models} | {FULL_RUNTIME}
        built = {t: runtime for t in targets}
        labels = {t: str(runtime) for t in targets}
    else:
        built = build_runtimes(models, progress)
        labels = {t: t for t in built}
    runs = plan_runs(models, calls, built, labels)
    exported = {m.name: export(m, progress) for m in models}
    reports = []
    for i, run in enumerate(runs):
        run_dir = work_dir / f"run{i}"
        run_dir.mkdir(parents=True, exist_ok=True)
        # A copy: a Bazel build in another configuration repoints bazel-bin.
        library = Path(shutil.copy2(run.library, run_dir / run.library.name))
        with progress.step(f"{run.name}: references on {run.runtime}, checked against torch"):
            cases = [write_case(exported[m.name], library, run_dir / f"{m.name}.soak") for m in run.models]
        driver = compile_driver(library, run_dir / "soak_driver")
        progress.info(f"{run.name}: {run.calls} calls, {instances} instances on {threads} threads ({run.runtime})")
        result = run_driver(
            driver, cases, calls=run.calls, threads=threads, instances=instances, rss_bound_kib=rss_bound_kib,
            progress=progress,
        )  # fmt: skip
        if result.report is None:
            error = next((line for line in reversed(result.stderr) if line), f"exit status {result.returncode}")
            raise SoakError(f"{run.name}: the soak driver failed: {error.removeprefix('soak_driver: ')}")
        reports.append(RunReport(run, run_dir, result.returncode, result.report, list(result.report["problems"])))
    return reports


def format_report(reports: Sequence[RunReport]) -> str:
    """Per run: calls per second (wall) and per CPU second per model, the
    resident set and anonymous memory after warm-up and at the end, the
    PAL's live bytes, and any problem."""
    lines = []
    for r in reports:
        rep = r.report
        rss, anon, pal = rep["rss_kib"], rep["rss_anon_kib"], rep["pal"]
        lines += [
            f"{r.run.name} ({r.run.runtime}): {'ok' if r.ok else 'FAILED'}",
            f"  {rep['calls']:,} calls in {rep['seconds']:.1f} s: {rep['calls_per_second']:,.0f} calls/s "
            f"({rep['cpu_seconds']:.1f} CPU s), {rep['instances']} instances on {rep['threads']} threads",
            f"  resident {rss['warm']:,} KiB after warm-up, {rss['end']:,} KiB at the end (peak {rss['peak']:,}); "
            f"anonymous {anon['warm']:,} -> {anon['end']:,} KiB (allowed growth {anon['bound']:,})",
            f"  PAL: {pal['warm_bytes']:,} -> {pal['end_bytes']:,} bytes live ({pal['warm_blocks']} -> "
            f"{pal['end_blocks']} blocks); {pal['measured_allocs']:,} allocations, {pal['measured_frees']:,} frees "
            "in the measured calls",
        ]
        for m in rep["models"]:
            plans = f", {m['measured_plans']:,} plans made" if m["measured_plans"] else ""
            lines.append(
                f"  {m['name']}: {m['calls']:,} calls, {m['calls_per_cpu_second']:,.0f} per CPU second, "
                f"{m['mismatches']} mismatches ({m['instances']} instances, {m['sets']} input sets, "
                f"{m['signatures']} shapes{plans})"
            )
        lines.extend(f"  problem: {p}" for p in r.problems)
    total = sum(r.report["calls"] for r in reports)
    lines.append(
        f"{total:,} calls in {len(reports)} runs, every output checked bit for bit: "
        + ("ok" if all(r.ok for r in reports) else "FAILED")
    )
    return "\n".join(lines)
