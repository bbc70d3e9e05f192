"""The selective runtime before and after pruning: trace both, build, compare.

Both models are traced with tools.tracer on the instrumentation runtime
(which also checks every representative input against torch), into
OUT/original_manifest.yaml and OUT/manifest.yaml. Pruning changes channel
counts, not operators or dtypes, so the two manifests normally select the
same runtime, and the report says so. When OUT is inside this workspace,
OUT/BUILD.bazel declares a selective_runtime for each manifest and the
runtime is built for every shipped platform (one build when the selections
are equal: Pare's builds are deterministic, so the same selection is the
same bytes); outside it, the manifests are written and the report says how
to build them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import codegen
from pare.runtime import PareError
from tools import REPO_ROOT, bazel_build
from tools.bundle import BundleError, load_bundle
from tools.prune.errors import PruneError
from tools.tracer.errors import TracerError
from tools.tracer.model_spec import ModelSpec, load_model_spec
from tools.tracer.progress import Progress
from tools.tracer.tracing import trace_model

_BUILD = """# Written by tools.prune (docs/prune.md): the selective runtimes of the
# pruned model and of the original, from the manifests next to this file.
#   tools/bazel build //{package}:runtime
load("//rules:defs.bzl", "selective_runtime")

selective_runtime(
    name = "runtime",
    manifest = "manifest.yaml",
    tags = ["manual"],
)

selective_runtime(
    name = "original_runtime",
    manifest = "original_manifest.yaml",
    tags = ["manual"],
)
"""


def _trace(spec: ModelSpec, what: str, info: Callable[[str], None]) -> codegen.Manifest:
    info(f"tracing the {what} model on the instrumentation runtime (checks it against torch)")
    try:
        return trace_model(spec, progress=Progress.silent()).manifest
    except (TracerError, codegen.CodegenError) as e:
        raise PruneError(f"tracing the {what} model failed: {e}") from None
    except PareError as e:
        raise PruneError(f"the instrumentation runtime failed on the {what} model: {e.status_name}: {e}") from None


def runtime_sizes(original: ModelSpec, out: Path, info: Callable[[str], None], build: bool = True) -> dict:
    """Traces the original and OUT/model.py, writes their manifests (and
    OUT/BUILD.bazel inside the workspace), builds, and returns the report's
    `selective_runtime` entry."""
    out = out.resolve()
    before = _trace(original, "original", info)
    try:
        pruned = load_model_spec(out / "model.py")
    except TracerError as e:
        raise PruneError(f"the pruned model spec does not load: {e}") from None
    after = _trace(pruned, "pruned", info)
    (out / "original_manifest.yaml").write_text(before.dump(), encoding="utf-8")
    (out / "manifest.yaml").write_text(after.dump(), encoding="utf-8")
    same = codegen.diff(before, after).is_empty() and codegen.diff(after, before).is_empty()
    entry = {
        "operators": {"before": len(before.operators), "after": len(after.operators)},
        "same_selection": same,
    }
    if not out.is_relative_to(REPO_ROOT):
        entry["bytes"] = None
        entry["not_built"] = (
            f"{out} is outside the Pare workspace; give -o a directory inside it to build the runtimes, or "
            "build OUT/manifest.yaml with a selective_runtime in your repository"
        )
        return entry
    package = out.relative_to(REPO_ROOT).as_posix()
    (out / "BUILD.bazel").write_text(_BUILD.format(package=package), encoding="utf-8")
    if not build:
        entry["bytes"] = None
        entry["not_built"] = f"--no-size; build with tools/bazel build //{package}:runtime"
        return entry
    targets = ["runtime"] if same else ["runtime", "original_runtime"]
    info(
        f"building the selective runtime{'' if same else 's'}: tools/bazel build "
        + " ".join(f"//{package}:{t}" for t in targets)
    )
    try:
        result = bazel_build.build([f"//{package}:{t}" for t in targets], info, root=REPO_ROOT, quiet_progress=True)
    except OSError as e:
        raise PruneError(f"cannot run tools/bazel ({e.strerror}); run tools/setup.sh first") from None
    if result.returncode != 0:
        raise PruneError(f"building the selective runtime failed: {result.first_error()}")
    try:
        after_bytes = load_bundle(REPO_ROOT / "bazel-bin" / package / "runtime").shipped_bytes()
        before_bytes = (
            after_bytes if same else load_bundle(REPO_ROOT / "bazel-bin" / package / "original_runtime").shipped_bytes()
        )
    except (BundleError, OSError, KeyError, ValueError) as e:
        raise PruneError(f"cannot read the built runtime's size report: {e}") from None
    entry["bytes"] = {"before": before_bytes, "after": after_bytes}
    return entry
