"""The model zoo runner: trace, build, check and report every zoo model.

For each model spec under models/zoo/ (docs/model_zoo.md):

1. trace it on the instrumentation runtime (tools.tracer: torch.export, run
   every representative input, compare with torch eager) and write its
   manifest to models/zoo/manifests/<model>.yaml when it changed;
2. build its selective runtime, //models/zoo:<model>, for the three shipped
   platforms (all models in one Bazel invocation, --keep_going);
3. check the program on the x86_64 runtime natively and on the
   android_arm64 runtime under the qemu harness, against torch eager;
4. time execute() on the x86_64 runtime (median, pinned to one CPU).

Every model gets a row whatever fails; a failure names the step, the op or
kernel, and the fix, in the tracer's words. Manifests are merged with
nothing: each model's runtime holds exactly what that model runs.
"""

from __future__ import annotations

import ast
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import codegen
from pare.runtime import PareError
from tools import bazel_build
from tools.bench.timing import measure, median, pin_to_cpus
from tools.bundle import load_bundle
from tools.platforms import SHIPPED_PLATFORMS
from tools.tracer import paths
from tools.tracer.errors import TracerError
from tools.tracer.exporter import group_inputs
from tools.tracer.model_spec import load_model_spec
from tools.tracer.progress import Progress
from tools.tracer.runner import NativeRunner, set_inputs
from tools.tracer.tracing import check_model, trace_model

PLATFORMS = SHIPPED_PLATFORMS
CHECKED_PLATFORMS = ("linux_x86_64", "android_arm64")  # ios_arm64 has no emulator here: built and verified only
ZOO_PACKAGE = "models/zoo"
TIMING_RUNS = 7


class ZooError(Exception):
    """A user error (unknown model, bad flag): one line, exit status 2."""


@dataclass
class ModelResult:
    model: str
    kind: str
    description: str
    status: str = "ok"  # "ok", or "<step> failed"
    error: str | None = None
    operators: int | None = None
    kernel_tags: int | None = None
    manifest_changed: bool = False
    sizes: dict[str, int] = field(default_factory=dict)  # platform -> bytes (stripped; ios: dylib)
    checked: list[str] = field(default_factory=list)  # platforms whose check passed
    median_ms: float | None = None  # execute() on linux_x86_64
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def fail(self, step: str, error: str) -> None:
        if self.ok:
            self.status, self.error = f"{step} failed", error


@dataclass
class _Traced:
    result: ModelResult
    spec: object
    program: bytes


def zoo_dir(root: Path | None = None) -> Path:
    return (root or paths.repo_root()) / ZOO_PACKAGE


def discover(root: Path | None = None) -> list[Path]:
    """Every model spec of the zoo: models/zoo/*.py but the helpers (_*.py)."""
    return sorted(p for p in zoo_dir(root).glob("*.py") if not p.name.startswith("_"))


def select(specs: list[Path], only: list[str] | None) -> list[Path]:
    if not only:
        return specs
    by_name = {p.stem: p for p in specs}
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise ZooError(
            f"--only: no zoo model {', '.join(unknown)}; the zoo has {', '.join(sorted(by_name))} ({ZOO_PACKAGE}/*.py)"
        )
    return [by_name[n] for n in only]


def spec_metadata(path: Path) -> tuple[str, str]:
    """(KIND, first docstring line) read from the spec's source without
    importing it, so a spec that fails to import still gets its row."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return "?", path.stem
    kind = next(
        (
            node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "KIND" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ),
        "?",
    )
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    return kind, doc[0].rstrip(".") if doc else path.stem


def trace_one(
    path: Path, progress: Progress, manifests: Path, frozen: bool, runtime: Path | None = None
) -> _Traced | ModelResult:
    """Traces one model and writes its manifest (frozen: a manifest that
    differs from the checked-in one fails instead); returns the failed row
    on failure."""
    result = ModelResult(path.stem, *spec_metadata(path))
    start = time.monotonic()
    try:
        spec = load_model_spec(path)
        traced = trace_model(spec, runtime=runtime, progress=progress)
    except (TracerError, codegen.CodegenError) as e:
        result.fail("trace", str(e))
        return result
    except PareError as e:
        result.fail("trace", f"the instrumentation runtime failed: {e.status_name}: {e}")
        return result
    finally:
        result.seconds["trace"] = round(time.monotonic() - start, 1)
    manifest = traced.manifest
    result.operators = len(manifest.operators)
    result.kernel_tags = len(manifest.kernel_metadata)
    text = manifest.dump()
    target = manifests / f"{path.stem}.yaml"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        if frozen:
            result.fail(
                "trace",
                f"{paths.display(target)} is out of date: the model now runs a different set of "
                f"operators or dtypes; run `python -m tools.zoo --only {path.stem}` and commit the manifest",
            )
            return result
        manifests.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        result.manifest_changed = True
    return _Traced(result, spec, traced.exported.program)


def build(models: list[str], root: Path, info: Callable[[str], None]) -> dict[str, str]:
    """Builds //models/zoo:<model> for every model in one Bazel invocation
    (--keep_going). Returns {model: Bazel's first error about it} for the
    models that failed."""
    if not models:
        return {}
    targets = [f"//{ZOO_PACKAGE}:{m}" for m in models]
    info(
        f"building {len(targets)} selective runtimes for {', '.join(PLATFORMS)}: tools/bazel build --keep_going "
        f"//{ZOO_PACKAGE}:<model> ..."
    )
    try:
        result = bazel_build.build(targets, info, flags=["--keep_going"], root=root, quiet_progress=True)
    except OSError as e:
        raise ZooError(f"cannot run tools/bazel ({e.strerror}); run tools/setup.sh first") from None
    return failed_models(models, result.errors, result.returncode)


def failed_models(models: list[str], errors: list[str], returncode: int) -> dict[str, str]:
    """{model: its first error line} from a --keep_going build's ERROR lines."""
    if returncode == 0:
        return {}
    failed = {}
    for m in models:  # Bazel names the failing target: the bundle or one of the macro's parts
        label = re.compile(rf"//{ZOO_PACKAGE}:{re.escape(m)}(_selection|_selection_unit|_code|_library)?(?![a-z0-9_])")
        mine = [e for e in errors if label.search(e)]
        if mine:
            failed[m] = mine[0]
    if not failed:  # not attributable (the Bazel server, a shared dependency): every model failed
        failed = {m: errors[0] if errors else f"tools/bazel exited with {returncode}" for m in models}
    return failed


def _bundle_dir(root: Path, model: str) -> Path:
    return root / "bazel-bin" / ZOO_PACKAGE / model


def library(root: Path, model: str, platform: str) -> Path:
    return load_bundle(_bundle_dir(root, model)).platform(platform).shared


def sizes(root: Path, model: str, platforms: tuple[str, ...]) -> dict[str, int]:
    """Bytes per platform an app pays (Bundle.shipped_bytes)."""
    shipped = load_bundle(_bundle_dir(root, model)).shipped_bytes()
    return {p: shipped[p] for p in platforms if p in shipped}


def time_execute(lib: Path, program: bytes, spec, runs: int = TIMING_RUNS) -> float:
    """Median ms of execute() on the first representative input, pinned to one CPU."""
    runner = NativeRunner(lib)
    runner.load(program)
    group = group_inputs(spec)[0]
    inputs = spec.inputs[group.indices[0]]
    method = runner.program.method(group.name)
    set_inputs(method, inputs)
    affinity = os.sched_getaffinity(0)
    try:
        pin_to_cpus(1)
        samples = measure({"pare": method.execute}, runs, {"pare": 1})["pare"]  # after a warm-up call
    finally:
        os.sched_setaffinity(0, affinity)
        method.close()
        runner.close()
    return median(samples) * 1000.0


def run(
    only: list[str] | None = None,
    platforms: tuple[str, ...] = PLATFORMS,
    *,
    root: Path | None = None,
    progress: Progress | None = None,
    timing: bool = True,
    frozen: bool = False,
) -> list[ModelResult]:
    root = root or paths.repo_root()
    progress = progress or Progress(prefix="zoo: ")
    specs = select(discover(root), only)
    if not specs:
        raise ZooError(f"no model specs in {ZOO_PACKAGE}/")
    manifests = zoo_dir(root) / "manifests"
    try:  # once, with its progress (built, or rebuilt when runtime/ changed)
        runtime = paths.instrumentation_runtime(None, progress)
    except TracerError as e:
        raise ZooError(str(e)) from None
    traced: list[_Traced] = []
    results: list[ModelResult] = []
    for n, path in enumerate(specs, 1):
        with progress.step(f"[{n}/{len(specs)}] tracing {path.stem}"):
            t = trace_one(path, Progress.silent(), manifests, frozen, runtime)
        r = t if isinstance(t, ModelResult) else t.result
        results.append(r)
        if isinstance(t, _Traced):
            traced.append(t)
        else:
            progress.info(f"{path.stem}: {r.status}: {r.error}")

    start = time.monotonic()
    failed = build([t.result.model for t in traced], root, progress.info)
    build_seconds = round(time.monotonic() - start, 1)
    for t in traced:
        r = t.result
        r.seconds["build (all models)"] = build_seconds
        if r.model in failed:
            r.fail("build", failed[r.model])
            progress.info(f"{r.model}: {r.status}: {r.error}")
            continue
        r.sizes = sizes(root, r.model, platforms)
        for platform in (p for p in CHECKED_PLATFORMS if p in platforms):
            lib = library(root, r.model, platform)
            begin = time.monotonic()
            with progress.step(f"checking {r.model} on {platform}"):
                try:
                    check_model(t.spec, lib, program=t.program, progress=Progress.silent())
                    r.checked.append(platform)
                except TracerError as e:
                    r.fail(f"check on {platform}", str(e))
                except PareError as e:
                    r.fail(f"check on {platform}", f"{lib}: {e.status_name}: {e}")
            r.seconds[f"check {platform}"] = round(time.monotonic() - begin, 1)
        if timing and r.ok and "linux_x86_64" in platforms:
            try:
                r.median_ms = round(time_execute(library(root, r.model, "linux_x86_64"), t.program, t.spec), 3)
            except (TracerError, PareError) as e:
                r.fail("timing", str(e))
        if not r.ok:
            progress.info(f"{r.model}: {r.status}: {r.error}")
    return results


def to_json(results: list[ModelResult]) -> str:
    return json.dumps([asdict(r) for r in results], indent=2, sort_keys=True) + "\n"
