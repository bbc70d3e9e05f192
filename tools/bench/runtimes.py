"""The full x86_64 runtimes the benchmarks load, per ISA level
(--//runtime:x86_64_isa, rules/private/isa.bzl): //runtime:full (auto, the
default: SSE2 code and x86-64-v3 GEMM kernels it runs on a CPU with AVX2 and
FMA), //runtime:full_baseline (SSE2 only) and //runtime:full_v3 (AVX2+FMA
throughout)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from pare.runtime import cpu_runs
from tools import REPO_ROOT
from tools.bench.timing import BenchError

ISA_LEVELS = ("auto", "baseline", "v3")
FULL_RUNTIMES = {
    "auto": ("//runtime:full", REPO_ROOT / "bazel-bin/runtime/full/linux_x86_64/libpare_full.so"),
    "baseline": (
        "//runtime:full_baseline",
        REPO_ROOT / "bazel-bin/runtime/full_baseline/linux_x86_64/libpare_full_baseline.so",
    ),
    "v3": ("//runtime:full_v3", REPO_ROOT / "bazel-bin/runtime/full_v3/linux_x86_64/libpare_full_v3.so"),
}


def best_isa() -> str:
    """v3 when this CPU runs x86-64-v3 code (AVX2, FMA, ...), else baseline."""
    return "v3" if cpu_runs("x86_64_v3") else "baseline"


def default_runtime() -> Path:
    """$PARE_RUNTIME_LIB, else Bazel's //runtime:full (level auto)."""
    return Path(os.environ.get("PARE_RUNTIME_LIB") or FULL_RUNTIMES["auto"][1])


def add_layer_bench_arguments(parser: argparse.ArgumentParser, rounds: int) -> None:
    """--runtime, --rounds and --cpu, as the one-layer benchmarks
    (tools.bench.winograd, tools.bench.prepacked_linear) take them."""
    parser.add_argument(
        "--runtime",
        type=Path,
        default=default_runtime(),
        help="runtime library (default: $PARE_RUNTIME_LIB, else Bazel's //runtime:full)",
    )
    parser.add_argument("--rounds", type=int, default=rounds, help=f"interleaved rounds (default {rounds})")
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default 1)")


def print_report(name: str, report: Callable[[], str]) -> int:
    """Prints what `report` returns: 0; a BenchError or PareError it raises
    is one line on stderr after `name`: 2."""
    from pare.runtime import PareError

    try:
        print(report())
    except (BenchError, PareError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    return 0


def build(targets: list[str], flags: list[str] = ()) -> None:
    """tools/bazel build, its progress on stderr; a failure is a BenchError."""
    from tools.bazel_build import build as bazel_build

    def info(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    result = bazel_build(targets, info, flags=list(flags), quiet_progress=True)
    if result.returncode != 0:
        raise BenchError(f"tools/bazel build {' '.join([*flags, *targets])} failed: {result.first_error()}")


def full_runtime(isa: str) -> Path:
    """Builds (or finds up to date) the full runtime at `isa`; its path."""
    target, path = FULL_RUNTIMES[isa]
    build([target])
    return path
