"""pare::linear_prepacked vs aten::addmm on a batch-1 linear layer.

The claim: for the common mobile case (one input row), addmm must pack W on
every call, which is as much work as the product itself, while the prepacked
op reads W packed ahead of time. This measures both side by side: pinned to
one CPU, the two variants interleaved round by round (alternating which goes
first, so neither always runs on a warmer cache or a quieter moment), many
rounds, and reports each variant's median time per call and their ratio.

    .venv/bin/python -m tools.bench.prepacked_linear [--runtime LIB] [--cpu N]

The runtime defaults to $PARE_RUNTIME_LIB, else Bazel's shipped build
(tools/bazel build //runtime:full). The test suite checks the two agree
(tests/runtime/kernels/test_prepacked.py); it never times them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

from pare.program import ProgramBuilder
from pare.runtime import Runtime
from tools.bench.runtimes import add_layer_bench_arguments, print_report
from tools.bench.timing import BenchError, measure, pin_to_cpus

VARIANTS = ("prepacked", "addmm")


def programs(in_features: int, out_features: int, seed: int = 0) -> tuple[dict[str, bytes], np.ndarray]:
    """The two programs computing x @ W^T + b, and an input row x."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1, 1, (out_features, in_features)).astype(np.float32)
    b = rng.uniform(-1, 1, out_features).astype(np.float32)
    x = rng.uniform(-1, 1, (1, in_features)).astype(np.float32)

    prepacked = ProgramBuilder()
    m = prepacked.method()
    packed = m.linear_prepack(w, b)
    m.output(m.op("pare::linear_prepacked", m.input("Float", [1, in_features]), packed))

    addmm = ProgramBuilder()
    m = addmm.method()
    # W^T stored row-major: addmm's most favourable layout (contiguous panels).
    m.output(m.op("aten::addmm", b, m.input("Float", [1, in_features]), np.ascontiguousarray(w.T)))
    return {"prepacked": prepacked.to_bytes(), "addmm": addmm.to_bytes()}, x


def report(samples: dict[str, list[float]]) -> str:
    lines = [f"{'variant':<10} {'median ms':>10} {'min ms':>9} {'max ms':>9}"]
    for name, times in samples.items():
        lines.append(
            f"{name:<10} {statistics.median(times) * 1e3:>10.4f} {min(times) * 1e3:>9.4f} {max(times) * 1e3:>9.4f}"
        )
    ratio = statistics.median(samples["addmm"]) / statistics.median(samples["prepacked"])
    lines.append(f"addmm / prepacked (medians): {ratio:.2f}x")
    return "\n".join(lines)


def run(runtime_path: Path, features: int, rounds: int, calls: int, cpu: int | None) -> str:
    if not runtime_path.is_file():
        raise BenchError(f"no runtime at {runtime_path}: run `tools/bazel build //runtime:full` or pass --runtime")
    (pinned,) = pin_to_cpus(1, cpu)
    runtime = Runtime(runtime_path)
    data, x = programs(features, features)
    methods = {name: runtime.load(data[name]).method() for name in VARIANTS}
    outputs = {name: method.run(x)[0] for name, method in methods.items()}  # also sets the input for execute()
    if not np.allclose(outputs["prepacked"], outputs["addmm"], rtol=1e-4, atol=1e-3):
        raise BenchError("prepacked and addmm disagree; run tests/runtime/kernels/test_prepacked.py")
    samples = measure({name: m.execute for name, m in methods.items()}, rounds, {name: calls for name in methods})
    header = (
        f"linear 1x{features} -> {features} float32, runtime {runtime_path}\n"
        f"pinned to CPU {pinned}; {rounds} rounds x {calls} calls per variant, interleaved"
    )
    return header + "\n" + report(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.prepacked_linear", description=__doc__.split("\n")[0])
    add_layer_bench_arguments(parser, rounds=31)
    parser.add_argument("--features", type=int, default=1024, help="in = out features (default 1024)")
    parser.add_argument("--calls", type=int, default=20, help="calls timed together per round (default 20)")
    args = parser.parse_args(argv)
    return print_report("prepacked_linear", lambda: run(args.runtime, args.features, args.rounds, args.calls, args.cpu))


if __name__ == "__main__":
    sys.exit(main())
