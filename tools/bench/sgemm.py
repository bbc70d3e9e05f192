"""Float32 GEMM throughput of a Pare runtime against one core's peak.

    .venv/bin/python -m tools.bench.sgemm [--isa auto|baseline|v3 | --runtime LIB]
                                          [--sizes 256,512,768,1024 | --mobilenet-v2]
                                          [--rounds N] [--cpu N] [--json FILE]

Runs `aten::mm` (an [n, n] input times an [n, n] constant, both packed by
the kernel on every call, as BLAS does) on the runtime, pinned to one CPU,
checks the product against a float64 one, and prints GFLOP/s (2 n^3 per
call, median of the rounds) next to the peak of the ISA the runtime's
kernels run (pare_kernel_isa: an auto runtime's is v4 on a CPU with
AVX-512, v3 on one with AVX2 and FMA, at most PARE_MAX_ISA), measured on
the same CPU by //tools/bench:cpu_peak's register-only loop of that ISA's
instructions (peak_for_isa):

  x86_64_v4        16-lane FMA (AVX-512 F)
  x86_64_v3        8-lane FMA (AVX2 + FMA), also on a CPU with AVX-512
  x86_64_baseline  4-lane multiply + add (SSE2)

Each size's peak is the best of the cpu_peak runs just before and after it.

--mobilenet-v2 times MobileNetV2's 1x1 convolutions at 224x224 instead
(MOBILENET_V2_1X1: each distinct (plane side, in, out channels), a
one-layer model of it exported with the prepack_weights pass only, so as
the model runs it: the weights packed ahead of time into the GEMM's A,
the image [in, side^2] packed per call as its B; 2 side^2 in out FLOP per
call, bias included), each checked against float64.

The clock cpu_peak estimates is printed for information only: a clock
times FLOP per cycle misses what the core does (cpu_peak.c's clock_ghz
says why: it read 15 GHz on an AVX-512 Xeon, Pare issue 47).

Without --runtime, builds Bazel's full x86_64 runtime at --isa
(//runtime:full, //runtime:full_baseline or //runtime:full_v3; default: v3
when this CPU has AVX2 and FMA, else baseline). docs/performance.md
gives this machine's numbers. A benchmark, never a test: tests check the
GEMM's numerics (tests/runtime/kernels/test_linalg.py, test_isa.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, astuple, dataclass, replace
from pathlib import Path

import numpy as np

from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tools.bench.runtimes import ISA_LEVELS, REPO_ROOT, best_isa, build, full_runtime
from tools.bench.timing import BenchError, calls_for, measure, median, pin_to_cpus
from tools.cli_parser import one_line_errors, one_line_parser

PROG = "python -m tools.bench.sgemm"
CPU_PEAK = REPO_ROOT / "bazel-bin" / "tools" / "bench" / "cpu_peak"
# Relative error bound of a float32 dot product of length n against float64
# (|error| <= n * eps * sum |a_i b_i|, here with inputs in [-1, 1]).
EPS32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class Peak:
    """What cpu_peak measured on one core, GFLOP/s of register-only loops (0: the CPU lacks the ISA)."""

    clock_ghz: float  # an estimate, for information (cpu_peak.c's clock_ghz)
    fma_gflops: float  # 8-lane FMA (AVX2 + FMA)
    sse_gflops: float  # 4-lane multiply + add (SSE2)
    avx512_gflops: float = 0.0  # 16-lane FMA (AVX-512 F)


# A kernel ISA (Runtime.kernel_isa) -> the Peak field of its instructions' loop, and their name.
PEAK_OF_KERNEL_ISA = {
    "x86_64_v4": ("avx512_gflops", "AVX-512 FMA"),
    "x86_64_v3": ("fma_gflops", "AVX2 FMA"),
    "x86_64_baseline": ("sse_gflops", "SSE2 mul+add"),
}


def peak_for_isa(peak: Peak, kernel_isa: str) -> tuple[float | None, str]:
    """(peak GFLOP/s, where it comes from) for kernels running `kernel_isa`:
    cpu_peak's register-only measurement of that ISA's instructions, so a v3
    copy on an AVX-512 CPU is held to the AVX2 FMA loop, not the AVX-512 one.
    None and an "n/a: ..." reason when there is none (an ISA cpu_peak has no
    loop for, such as arm64's, or one it measured as 0)."""
    if kernel_isa not in PEAK_OF_KERNEL_ISA:
        return None, f"n/a: cpu_peak measures x86_64 only, not {kernel_isa}"
    field, name = PEAK_OF_KERNEL_ISA[kernel_isa]
    measured = getattr(peak, field)
    if not measured > 0:
        return None, f"n/a: cpu_peak measured no {name} on this CPU ({field} = {measured})"
    return measured, f"measured register-only {name} ({field})"


@dataclass(frozen=True)
class SgemmResult:
    n: int
    median_us: float
    gflops: float
    peak_gflops: float | None  # None: no measured peak for the kernels' ISA
    fraction_of_peak: float | None
    max_relative_error: float


def measure_peak(seconds: float = 0.25) -> Peak:
    """cpu_peak's figures; each the best of five windows of seconds / 5, by
    default 50 ms like the GEMM's samples (calls_for 0.05): on a shared core
    longer windows catch fewer quiet moments than the GEMM's do."""
    out = subprocess.run([str(CPU_PEAK), str(seconds)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise BenchError(f"{CPU_PEAK} failed: {out.stderr.strip() or out.returncode}")
    fields = dict(item.split("=") for item in out.stdout.split())
    return Peak(
        float(fields["clock_ghz"]),
        float(fields["fma_gflops"]),
        float(fields["sse_gflops"]),
        float(fields.get("avx512_gflops", 0.0)),
    )


def best_of(a: Peak, b: Peak) -> Peak:
    """Each figure's best of two measurements (sharing the core only slows one down)."""
    return Peak(*(max(x, y) for x, y in zip(astuple(a), astuple(b), strict=True)))


def with_peak(result: SgemmResult, peak_gflops: float | None) -> SgemmResult:
    if peak_gflops is None:
        return replace(result, peak_gflops=None, fraction_of_peak=None)
    return replace(result, peak_gflops=round(peak_gflops, 2), fraction_of_peak=round(result.gflops / peak_gflops, 4))


def mm_program(n: int, seed: int = 0) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    builder = ProgramBuilder()
    m = builder.method()
    m.output(m.op("aten::mm", m.input("Float", [n, n]), b))
    return builder.to_bytes(), a, b


def bench_size(runtime: Runtime, n: int, rounds: int, peak_gflops: float | None) -> SgemmResult:
    data, a, b = mm_program(n)
    method = runtime.load(data).method()
    (c,) = method.run(a)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    error = float(np.max(np.abs(c - exact) / scale))
    if error > n * EPS32:
        raise BenchError(
            f"aten::mm {n}x{n}: relative error {error:.3g} exceeds the bound n*eps = {n * EPS32:.3g}; "
            "run tests/runtime/kernels/test_linalg.py"
        )
    samples = measure({"mm": method.execute}, rounds, {"mm": calls_for(method.execute, 0.05)})
    seconds = median(samples["mm"])
    gflops = 2 * n**3 / seconds * 1e-9
    method.close()
    return with_peak(SgemmResult(n, round(seconds * 1e6, 1), round(gflops, 2), None, None, error), peak_gflops)


# MobileNetV2's 1x1 convolutions at 224x224, each distinct (plane side,
# in channels, out channels) in the order the model first runs it: M = out
# channels, K = in channels, N = side^2 pixels of Pare's NCHW GEMM
# (tests/bench/test_sgemm_bench.py checks the list against torchvision's).
MOBILENET_V2_1X1 = (
    (112, 32, 16),
    (112, 16, 96),
    (56, 96, 24),
    (56, 24, 144),
    (56, 144, 24),
    (28, 144, 32),
    (28, 32, 192),
    (28, 192, 32),
    (14, 192, 64),
    (14, 64, 384),
    (14, 384, 64),
    (14, 384, 96),
    (14, 96, 576),
    (14, 576, 96),
    (7, 576, 160),
    (7, 160, 960),
    (7, 960, 160),
    (7, 960, 320),
    (7, 320, 1280),
)


@dataclass(frozen=True)
class Conv1x1Result:
    side: int
    in_channels: int
    out_channels: int
    median_us: float
    gflops: float
    peak_gflops: float | None
    fraction_of_peak: float | None
    max_relative_error: float


def bench_conv1x1(
    runtime: Runtime, side: int, cin: int, cout: int, rounds: int, peak_gflops: float | None
) -> Conv1x1Result:
    """One 1x1 convolution cin -> cout over side x side, as an exported model runs it (prepacked weights)."""
    import torch

    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import ModelSpec
    from tools.tracer.runner import set_inputs

    torch.manual_seed(0)
    conv = torch.nn.Conv2d(cin, cout, 1).eval()
    x = torch.rand(1, cin, side, side) * 2 - 1
    spec = ModelSpec(path=Path(f"conv1x1_{cin}_{cout}_{side}.py"), module=conv, inputs=((x,),))
    exported = export_model(spec, passes=("prepack_weights",))
    method = runtime.load(exported.program).method(exported.groups[0].name)
    set_inputs(method, (x,))
    method.execute()
    actual = method.output(0).astype(np.float64)
    w = conv.weight.detach().double().reshape(cout, cin).numpy()
    b = conv.bias.detach().double().numpy()
    xs = x.double().reshape(cin, side * side).numpy()
    exact = (w @ xs + b[:, None]).reshape(1, cout, side, side)
    scale = ((np.abs(w) @ np.abs(xs)) + np.abs(b)[:, None]).reshape(1, cout, side, side)
    error = float(np.max(np.abs(actual - exact) / scale))
    if error > (cin + 1) * EPS32:
        raise BenchError(
            f"1x1 convolution {cin} -> {cout} over {side}x{side}: relative error {error:.3g} exceeds the bound "
            f"(in + 1) * eps = {(cin + 1) * EPS32:.3g}; run tests/runtime/kernels/test_prepacked.py"
        )
    samples = measure({"conv": method.execute}, rounds, {"conv": calls_for(method.execute, 0.05)})
    seconds = median(samples["conv"])
    method.close()
    gflops = 2 * side * side * cin * cout / seconds * 1e-9
    fraction = None if peak_gflops is None else round(gflops / peak_gflops, 4)
    return Conv1x1Result(
        side,
        cin,
        cout,
        round(seconds * 1e6, 1),
        round(gflops, 2),
        None if peak_gflops is None else round(peak_gflops, 2),
        fraction,
        error,
    )


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1 or max(sizes) > 8192:
        raise argparse.ArgumentTypeError(f"sizes must be in 1..8192, got {text!r}")
    return sizes


_Parser = one_line_parser(BenchError, see=f"{PROG} --help")


@one_line_errors(BenchError, PareError, OSError, prefix=f"{PROG}: ")
def main(argv: Sequence[str] | None = None) -> int:
    p = _Parser(prog=PROG, description=__doc__.split("\n")[0])
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--isa",
        choices=ISA_LEVELS,
        help="build and measure the full runtime at this x86_64 ISA "
        "level: //runtime:full (auto), //runtime:full_baseline or //runtime:full_v3 (default: v3 when "
        "this CPU has AVX2 and FMA, else baseline)",
    )
    source.add_argument("--runtime", type=Path, help="a linux_x86_64 Pare runtime to measure instead")
    shapes = p.add_mutually_exclusive_group()
    shapes.add_argument(
        "--sizes", type=_sizes, default=[256, 512, 768, 1024], help="square sizes n (default 256,512,768,1024)"
    )
    shapes.add_argument(
        "--mobilenet-v2",
        action="store_true",
        help="time MobileNetV2's 1x1 convolutions at 224x224 (prepacked weights, as the model runs them) instead",
    )
    p.add_argument("--rounds", type=int, default=7, help="samples per size (default 7)")
    p.add_argument("--cpu", type=int, help="the CPU to pin to (default 1, as taskset -c 1)")
    p.add_argument("--json", metavar="FILE", help="also write the results and the peak as JSON")
    args = p.parse_args(argv)
    (cpu,) = pin_to_cpus(1, args.cpu)
    build(["//tools/bench:cpu_peak"])
    runtime_path = args.runtime or full_runtime(args.isa or best_isa())
    if not runtime_path.is_file():
        raise BenchError(f"no runtime at {runtime_path}")
    runtime = Runtime(runtime_path)
    # A size's peak is the best of the measurements just before and just
    # after it: on a shared core one measurement alone can be slowed
    # more than the GEMM beside it, and "of peak" pass 100%.
    before = best = measure_peak()
    _, peak_source = peak_for_isa(best, runtime.kernel_isa)
    print(
        f"runtime {runtime_path} ({runtime.isa}, kernels {runtime.kernel_isa}); pinned to CPU {cpu}\n"
        f"peak: {peak_source}, the best of cpu_peak runs before and after each size"
    )
    results = []
    if args.mobilenet_v2:
        print(f"{'side':>5} {'in':>5} {'out':>5} {'median µs':>10} {'GFLOP/s':>9} {'peak':>7} {'of peak':>8}")
    for side, cin, cout in MOBILENET_V2_1X1 if args.mobilenet_v2 else ():
        r = bench_conv1x1(runtime, side, cin, cout, args.rounds, None)
        after = measure_peak()
        peak, _ = peak_for_isa(best_of(before, after), runtime.kernel_isa)
        r = replace(
            r,
            peak_gflops=None if peak is None else round(peak, 2),
            fraction_of_peak=None if peak is None else round(r.gflops / peak, 4),
        )
        before, best = after, best_of(best, after)
        results.append(r)
        peak_text, of_peak = (
            ("n/a", "n/a") if r.peak_gflops is None else (f"{r.peak_gflops:.1f}", f"{r.fraction_of_peak:.1%}")
        )
        print(
            f"{side:>5} {cin:>5} {cout:>5} {r.median_us:>10.1f} {r.gflops:>9.1f} {peak_text:>7} {of_peak:>8}",
            flush=True,
        )
    if not args.mobilenet_v2:
        print(f"{'n':>6} {'median ms':>10} {'GFLOP/s':>9} {'peak':>7} {'of peak':>8}")
    for n in [] if args.mobilenet_v2 else args.sizes:
        r = bench_size(runtime, n, args.rounds, None)
        after = measure_peak()
        r = with_peak(r, peak_for_isa(best_of(before, after), runtime.kernel_isa)[0])
        before, best = after, best_of(best, after)
        results.append(r)
        peak_text, of_peak = (
            ("n/a", "n/a") if r.peak_gflops is None else (f"{r.peak_gflops:.1f}", f"{r.fraction_of_peak:.1%}")
        )
        print(f"{n:>6} {r.median_us / 1e3:>10.3f} {r.gflops:>9.1f} {peak_text:>7} {of_peak:>8}", flush=True)
    peak_gflops, _ = peak_for_isa(best, runtime.kernel_isa)
    print(
        f"best measured register-only: AVX-512 FMA {best.avx512_gflops:.1f}, AVX2 FMA {best.fma_gflops:.1f}, "
        f"SSE2 mul+add {best.sse_gflops:.1f} GFLOP/s; clock estimate {best.clock_ghz:.2f} GHz (information only)"
    )
    if args.json:
        record = {
            "runtime": str(runtime_path),
            "isa": runtime.isa,
            "kernel_isa": runtime.kernel_isa,
            "cpu": cpu,
            **asdict(best),  # each figure's best over the run; a result's peak_gflops is its own
            # The FLOP per cycle the peak and the clock estimate imply (information, like the clock).
            "flop_per_cycle": round(peak_gflops / best.clock_ghz, 2) if peak_gflops and best.clock_ghz else None,
            "peak_gflops": None if peak_gflops is None else round(peak_gflops, 2),
            "peak_source": peak_source,
            "results": [asdict(r) for r in results],
        }
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
