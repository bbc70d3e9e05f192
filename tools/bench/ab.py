"""Two builds of Pare side by side: is a change free of speed cost?

    .venv/bin/python -m tools.bench.ab BASE_LIB HEAD_LIB MODEL.py [MODEL.py ...] [--rounds N] [--cpu N]

BASE_LIB and HEAD_LIB are two linux_x86_64 Pare runtimes (say //runtime:full
built before and after a change, copied out of bazel-bin). Each model spec is
exported once, with the default graph passes; both runtimes load the same
program bytes, each run is checked against torch eager, then `execute()` on
the spec's first input is timed on one pinned CPU, the two runtimes
interleaved round by round (tools/bench/timing.py). Per model: both medians,
head / base, and the spread of the per-round ratios (p10-p90), which says
how far apart two identical builds would land on this machine. A benchmark,
never a test.

When the change is to the program format (a base runtime cannot load the
head's programs), `--base-tree DIR` names a checkout of the base (with its
.venv): the base runtime then runs the program that checkout's exporter
writes (`python -m tools.tracer export`), the head runtime this one's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pare.runtime import PareError
from tools.bench.models import eager_mismatches, load_runtime
from tools.bench.timing import BenchError, calls_for, measure, median, pin_to_cpus
from tools.cli_parser import one_line_errors
from tools.tracer.errors import TracerError

PROG = "python -m tools.bench.ab"


def export_in_tree(tree: Path, path: Path) -> bytes:
    """The program the exporter of the checkout `tree` writes for model spec `path`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "base.pare"
        cmd = [
            str(tree / ".venv/bin/python"),
            "-m",
            "tools.tracer",
            "export",
            "-q",
            "-o",
            str(out),
            str(path.absolute()),
        ]
        result = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
        if result.returncode != 0:
            raise BenchError(f"{path}: the base tree {tree} could not export it: {result.stderr.strip()[-300:]}")
        return out.read_bytes()


def compare_model(runtimes: dict, path: Path, rounds: int, base_tree: Path | None = None) -> dict:
    """{"base": µs, "head": µs, "ratio": head / base, "p10": .., "p90": ..} for one model spec."""
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec
    from tools.tracer.runner import set_inputs
    from tools.tracer.tracing import eager_outputs

    spec = load_model_spec(path)
    exported = export_model(spec)
    programs = {"base": export_in_tree(base_tree, path) if base_tree else exported.program, "head": exported.program}
    group = exported.groups[0]
    inputs = spec.inputs[group.indices[0]]
    expected = eager_outputs(spec, group.indices[0])
    methods = {}
    for name, (runtime, lib) in runtimes.items():
        try:
            method = runtime.load(programs[name]).method(group.name)
            set_inputs(method, inputs)
            method.execute()
            actual = [method.output(i) for i in range(method.num_outputs)]
        except PareError as e:
            raise BenchError(f"{path}: the {name} runtime {lib} failed: {e.status_name}: {e}") from None
        bad = eager_mismatches(spec, actual, expected)
        if bad:
            raise BenchError(f"{path}: the {name} runtime's output differs from torch eager ({bad[0]})")
        methods[name] = method
    systems = {name: m.execute for name, m in methods.items()}
    calls = {name: calls_for(fn) for name, fn in systems.items()}
    calls = dict.fromkeys(calls, max(calls.values()))  # the same count per sample for both
    samples = measure(systems, rounds, calls)
    for m in methods.values():
        m.close()
    p10, p90 = ratio_spread(samples["base"], samples["head"])
    base, head = median(samples["base"]) * 1e6, median(samples["head"]) * 1e6
    # The ratio of the reported figures themselves, so the table's columns agree to the last bit.
    return {"base": base, "head": head, "ratio": head / base, "p10": p10, "p90": p90}


def ratio_spread(base: Sequence[float], head: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentiles of the per-round ratios head / base."""
    per_round = sorted(h / b for h, b in zip(head, base, strict=True))
    if len(per_round) == 1:
        return per_round[0], per_round[0]
    # "inclusive": the deciles stay within the measured ratios. The default
    # ("exclusive") extrapolates past them; with three rounds and one noisy
    # round it reported a negative p10.
    deciles = statistics.quantiles(per_round, n=10, method="inclusive")
    return deciles[0], deciles[-1]


@one_line_errors(BenchError, TracerError)
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("base", type=Path, metavar="BASE_LIB", help="the runtime before the change")
    p.add_argument("head", type=Path, metavar="HEAD_LIB", help="the runtime after it")
    p.add_argument("models", nargs="+", type=Path, metavar="MODEL", help="model specs (docs/model_spec.md)")
    p.add_argument("--rounds", type=int, default=31, help="interleaved rounds per model (default 31)")
    p.add_argument("--cpu", type=int, help="the CPU to pin to (default 1, as taskset -c 1)")
    p.add_argument(
        "--base-tree", type=Path, metavar="DIR", help="a checkout of the base whose exporter writes the base's programs"
    )
    args = p.parse_args(argv)
    if args.base_tree and not (args.base_tree / ".venv/bin/python").exists():
        raise BenchError(f"--base-tree {args.base_tree}: no .venv/bin/python there; give a checkout set up by make")
    if args.rounds < 2:
        raise BenchError(f"--rounds {args.rounds}: give at least 2, for the spread")
    (cpu,) = pin_to_cpus(1, args.cpu)
    runtimes = {"base": (load_runtime(args.base), args.base), "head": (load_runtime(args.head), args.head)}
    print(f"base {args.base}\nhead {args.head}\npinned to CPU {cpu}; {args.rounds} interleaved rounds per model")
    print("| model | base µs | head µs | head / base | per-round p10-p90 |")
    print("|---|---:|---:|---:|---|")
    for path in args.models:
        r = compare_model(runtimes, path, args.rounds, args.base_tree)
        print(
            f"| {path.stem if path.name != 'model.py' else path.parent.name} | {r['base']:,.1f} | "
            f"{r['head']:,.1f} | {r['ratio']:.3f} | {r['p10']:.3f}-{r['p90']:.3f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
