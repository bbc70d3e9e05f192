"""Build times of the selective-build architecture: cold builds, a second app, a one-op manifest edit.

The claims behind docs/bazel.md's "Kernels compiled once" and issue 14's
targets, measured on this machine rather than remembered from another one.
Each revision is checked out into its own `git worktree` with its own Bazel
output base, and the revisions take turns, round by round (alternating the
order), so a slow minute of a shared machine falls on both. Every build runs
with `--disk_cache=` (nothing served from a cache) and is timed on the
wall clock around `tools/bazel build`, the server already running.

In each round, for each revision:

  cold     `bazel clean`, then the demo's runtime for its three platforms
  second   then the text classifier's runtime: what a second app adds
  edit     then the demo again after adding `aten::sigmoid`
           (`sigmoid_kernel: [Float]`) to its manifest, the edit loop
  four     `bazel clean`, then four apps' runtimes together

and the report gives each one's median seconds, its actions and compile
actions (from Bazel's profile), and the time ratio of each revision to the
first. The worktrees and output bases are deleted afterwards (--keep
keeps them).

    .venv/bin/python -m tools.bench.build_time [--rev HEAD] [--rev ed17dfc] [--rounds 2] [--scenarios cold,...]

ed17dfc is the last revision that compiled every kernel per app (docs/bazel.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codegen import manifest as codegen_manifest
from tools import REPO_ROOT
from tools.bazel_build import build as bazel_build
from tools.bench.runtimes import print_report
from tools.bench.timing import BenchError

DEMO = "//apps/demo:runtime"
SECOND = "//apps/text_classifier:runtime"
FOUR = (DEMO, SECOND, "//apps/demo/all_dtypes:runtime", "//rules/tests:fixture")
SCENARIOS = ("cold", "second", "edit", "four")
DEMO_MANIFEST = "apps/demo/manifest.yaml"
# The edit: one operator and its one (kernel tag, dtype), as a trace of a
# model that gained a sigmoid would add them.
EDIT_OPERATOR = "aten::sigmoid"
EDIT_KERNEL = ("sigmoid_kernel", "Float")
# Files setup writes for this machine (not checked in) that a worktree needs.
MACHINE_FILES = (".bazeliskrc", ".bazelrc.local")


@dataclass(frozen=True)
class Build:
    seconds: float
    actions: int
    compiles: int


def count_actions(profile: Path) -> tuple[int, int]:
    """(actions, compile actions) that ran in a build, from its
    `--profile` (Bazel's JSON trace: one `action processing` event per
    action executed; a compile is named `Compiling <source>`)."""
    try:
        events = json.loads(profile.read_text())["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BenchError(f"cannot read Bazel's profile {profile}: {e}") from None
    actions = [e for e in events if e.get("cat") == "action processing"]
    compiles = [e for e in actions if str(e.get("name", "")).startswith("Compiling ")]
    return len(actions), len(compiles)


def add_sigmoid(text: str, source: str = DEMO_MANIFEST) -> str:
    """The manifest text with aten::sigmoid and sigmoid_kernel: [Float]
    added, written as the tracer writes manifests."""
    try:
        manifest = codegen_manifest.loads(text, source=source)
    except codegen_manifest.ManifestError as e:
        raise BenchError(str(e)) from None
    if manifest.is_operator_selected(EDIT_OPERATOR):
        raise BenchError(f"{source} already selects {EDIT_OPERATOR}: the edit would change nothing")
    tag, dtype = EDIT_KERNEL
    edited = dataclasses.replace(
        manifest,
        operators=[
            *manifest.operators.values(),
            codegen_manifest.Operator(EDIT_OPERATOR, is_used_for_training=False, include_all_overloads=False),
        ],
        kernel_metadata={**manifest.kernel_metadata, tag: (*manifest.kernel_metadata.get(tag, ()), dtype)},
    )
    return edited.dump()


class Checkout:
    """One revision in its own worktree and Bazel output base."""

    def __init__(self, rev: str, commit: str, scratch: Path) -> None:
        self.label = f"{rev} ({commit[:7]})" if commit[:7] not in rev else rev
        self.root = scratch / commit[:12] / "src"
        self.output_base = scratch / commit[:12] / "output_base"
        self.profile = scratch / commit[:12] / "profile.json"
        git("worktree", "add", "--detach", "--quiet", str(self.root), commit)
        (self.root / "node_modules").symlink_to(REPO_ROOT / "node_modules")
        for name in MACHINE_FILES:
            shutil.copy(REPO_ROOT / name, self.root / name)

    def bazel(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.root / "tools/bazel"), f"--output_base={self.output_base}", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BenchError(f"{self.label}: bazel {' '.join(args)} failed: {result.stderr.strip()[-500:]}")

    def build(self, targets: tuple[str, ...] | list[str]) -> Build:
        def info(line: str) -> None:
            print(f"  {self.label}:{line}", file=sys.stderr, flush=True)

        start = time.perf_counter()
        result = bazel_build(
            list(targets),
            info,
            flags=["--disk_cache=", f"--profile={self.profile}"],
            startup=[f"--output_base={self.output_base}"],
            root=self.root,
            quiet_progress=True,
        )
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            raise BenchError(f"{self.label}: tools/bazel build {' '.join(targets)} failed: {result.first_error()}")
        return Build(seconds, *count_actions(self.profile))

    def platforms(self) -> int:
        bundle = self.root / "bazel-bin/apps/demo/runtime/bundle.json"
        try:
            return len(json.loads(bundle.read_text())["platforms"])
        except (OSError, ValueError, KeyError) as e:
            raise BenchError(f"{self.label}: cannot read {bundle}: {e}") from None

    def round(self, scenarios: tuple[str, ...]) -> dict[str, Build]:
        """One round of `scenarios`, in SCENARIOS' order."""
        out = {}
        if {"cold", "second", "edit"} & set(scenarios):
            self.bazel("clean")
            cold = self.build([DEMO])
            if "cold" in scenarios:
                out["cold"] = cold
        if "second" in scenarios:
            out["second"] = self.build([SECOND])
        if "edit" in scenarios:
            manifest = self.root / DEMO_MANIFEST
            original = manifest.read_text()
            manifest.write_text(add_sigmoid(original))
            try:
                out["edit"] = self.build([DEMO])
            finally:
                manifest.write_text(original)
            self.build([DEMO])  # back to the checked-in manifest, untimed
        if "four" in scenarios:
            self.bazel("clean")
            out["four"] = self.build(list(FOUR))
        return out

    def close(self, keep: bool) -> None:
        subprocess.run(
            [str(self.root / "tools/bazel"), f"--output_base={self.output_base}", "shutdown"],
            cwd=self.root,
            capture_output=True,
        )
        if not keep:
            git("worktree", "remove", "--force", str(self.root), check=False)
            # Bazel makes its output base read-only in places.
            subprocess.run(["chmod", "-R", "u+w", str(self.output_base)], capture_output=True)
            shutil.rmtree(self.output_base, ignore_errors=True)


def git(*args: str, check: bool = True) -> str:
    try:
        result = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
    except OSError as e:
        raise BenchError(f"cannot run git ({e.strerror}): the benchmark checks revisions out with it") from None
    if check and result.returncode != 0:
        raise BenchError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip() if result.returncode == 0 else ""


WHAT = {
    "cold": f"{DEMO}, cold",
    "second": f"{SECOND} after the demo",
    "edit": f"the demo after adding {EDIT_OPERATOR}",
    "four": "four apps, cold",
}


def report(checkouts: list[Checkout], results: dict[str, dict[str, list[Build]]], platforms: int) -> str:
    first = checkouts[0].label
    lines = [f"{'scenario':<46} {'revision':<22} {'median s':>9} {'min-max s':>13} {'actions':>8} {'compiles':>9}"]
    for scenario in SCENARIOS:
        for c in checkouts:
            builds = results[c.label].get(scenario)
            if not builds:
                continue
            seconds = [b.seconds for b in builds]
            median = statistics.median(seconds)
            ratio = ""
            if c.label != first:
                baseline = statistics.median(b.seconds for b in results[first][scenario])
                ratio = f"  {median / baseline:.2f}x the time of {first}"
            lines.append(
                f"{WHAT[scenario]:<46} {c.label:<22} {median:>9.1f} {f'{min(seconds):.1f}-{max(seconds):.1f}':>13} "
                f"{builds[-1].actions:>8} {builds[-1].compiles:>9}{ratio}"
            )
    lines.append(f"(the demo's runtime builds {platforms} platforms; actions and compiles are the last round's)")
    return "\n".join(lines)


def run(revs: list[str], rounds: int, scenarios: tuple[str, ...], keep: bool) -> str:
    if rounds < 1:
        raise BenchError(f"--rounds {rounds}: at least 1")
    commits: dict[str, str] = {}
    for rev in revs:
        commit = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if not commit:
            raise BenchError(f"--rev {rev}: not a commit in {REPO_ROOT}")
        if commit in commits.values():
            raise BenchError(f"--rev {rev}: the same commit as an earlier --rev")
        commits[rev] = commit
    missing = [name for name in MACHINE_FILES if not (REPO_ROOT / name).is_file()]
    if missing or not (REPO_ROOT / "node_modules/.bin/bazelisk").exists():
        raise BenchError(f"{', '.join(missing) or 'node_modules'} missing in {REPO_ROOT}: run tools/setup.sh first")
    scratch = Path(tempfile.mkdtemp(prefix="pare-build-time-"))
    checkouts: list[Checkout] = []
    try:
        for rev, commit in commits.items():
            checkouts.append(Checkout(rev, commit, scratch))
        results: dict[str, dict[str, list[Build]]] = {c.label: {} for c in checkouts}
        for r in range(rounds):
            order = checkouts if r % 2 == 0 else checkouts[::-1]
            for c in order:
                print(f"build_time: round {r + 1} of {rounds}: {c.label}", file=sys.stderr, flush=True)
                for scenario, build in c.round(scenarios).items():
                    results[c.label].setdefault(scenario, []).append(build)
        header = (
            f"Bazel build times, {os.cpu_count()} CPUs, {rounds} rounds, revisions interleaved; "
            f"--disk_cache=, server running"
        )
        platforms = checkouts[0].platforms() if {"cold", "second", "edit"} & set(scenarios) else 0
        return header + "\n" + report(checkouts, results, platforms)
    finally:
        for c in checkouts:
            c.close(keep)
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
            git("worktree", "prune", check=False)
        else:
            print(f"build_time: kept {scratch}", file=sys.stderr)


def parse_scenarios(text: str) -> tuple[str, ...]:
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown or not chosen:
        raise BenchError(f"--scenarios {text!r}: choose from {', '.join(SCENARIOS)}")
    return tuple(s for s in SCENARIOS if s in chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.build_time", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rev",
        action="append",
        dest="revs",
        help="a revision to measure, repeatable; ratios are against the first (default: HEAD)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help=f"comma list of {', '.join(SCENARIOS)} (default all)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the worktrees and output bases")
    args = parser.parse_args(argv)
    return print_report(
        "build_time", lambda: run(args.revs or ["HEAD"], args.rounds, parse_scenarios(args.scenarios), args.keep)
    )


if __name__ == "__main__":
    sys.exit(main())
