"""What Method.run() adds over execute(): setting the inputs from numpy and
copying the outputs out (issue 11's budget: 10 µs for a model with a few
inputs).

    .venv/bin/python -m tools.bench.run_overhead [MODEL.py ...] [--runtime LIB] [--rounds N] [--cpu N]

Per model spec (default: apps/text_classifier and apps/demo), interleaved on
one pinned CPU: execute() alone, and run(*inputs) on the spec's first
input; prints both medians and their difference. A benchmark, never a test:
tests/runtime/test_interpreter.py checks what run() returns.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pare.runtime import PareError, Runtime
from tools.bench.runtimes import REPO_ROOT, default_runtime
from tools.bench.timing import BenchError, measure, median, pin_to_cpus
from tools.cli_parser import one_line_errors
from tools.tracer.errors import TracerError

PROG = "python -m tools.bench.run_overhead"
DEFAULT_MODELS = (REPO_ROOT / "apps/text_classifier/model.py", REPO_ROOT / "apps/demo/model.py")


def overhead(runtime: Runtime, path: Path, rounds: int) -> tuple[float, float]:
    """(execute median µs, run median µs) for the model spec at `path`."""
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec

    spec = load_model_spec(path)
    exported = export_model(spec)
    group = exported.groups[0]
    inputs = [t.numpy() for t in spec.inputs[group.indices[0]]]
    method = runtime.load(exported.program).method(group.name)
    method.run(*inputs)
    samples = measure(
        {"execute": method.execute, "run": lambda: method.run(*inputs)}, rounds, {"execute": 2000, "run": 2000}
    )
    return median(samples["execute"]) * 1e6, median(samples["run"]) * 1e6


@one_line_errors(BenchError, PareError, TracerError, OSError, prefix=f"{PROG}: ")
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS), metavar="MODEL")
    p.add_argument(
        "--runtime",
        type=Path,
        default=default_runtime(),
        help="linux_x86_64 Pare runtime (default: $PARE_RUNTIME_LIB, else Bazel's //runtime:full)",
    )
    p.add_argument("--rounds", type=int, default=11, help="samples per system (default 11)")
    p.add_argument("--cpu", type=int, help="the CPU to pin to (default 1, as taskset -c 1)")
    args = p.parse_args(argv)
    (cpu,) = pin_to_cpus(1, args.cpu)
    if not args.runtime.is_file():
        raise BenchError(f"no runtime at {args.runtime}: run `tools/bazel build //runtime:full` or pass --runtime")
    runtime = Runtime(args.runtime)
    print(f"runtime {args.runtime}; pinned to CPU {cpu}; {args.rounds} interleaved rounds of 2000 calls")
    print(f"{'model':<40} {'execute µs':>11} {'run µs':>9} {'run - execute':>14}")
    for path in args.models:
        execute_us, run_us = overhead(runtime, path, args.rounds)
        print(
            f"{path.relative_to(REPO_ROOT) if path.is_absolute() else path!s:<40} {execute_us:>11.2f} "
            f"{run_us:>9.2f} {run_us - execute_us:>14.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
