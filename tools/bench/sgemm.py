"""Float32 GEMM throughput of a Pare runtime against one core's peak.

    .venv/bin/python -m tools.bench.sgemm [--isa auto|baseline|v3 | --runtime LIB]
                                          [--sizes 256,512,768,1024] [--rounds N] [--cpu N] [--json FILE]

Runs `aten::mm` (an [n, n] input times an [n, n] constant, both packed by
the kernel on every call, as BLAS does) on the runtime, pinned to one CPU,
checks the product against a float64 one, and prints GFLOP/s (2 n^3 per
call, median of the rounds) next to the core's peak, measured on the same
CPU by //tools/bench:cpu_peak:

  clock        from a dependent integer-add chain (the clock the core ran at);
  peak         clock x float32 FLOP per cycle of the ISA the runtime's
               kernels run (pare_kernel_isa: an auto runtime's is v4 on a
               CPU with AVX-512, v3 on one with AVX2 and FMA)
               (AVX2+FMA: 2 FMA units x 8 lanes x 2 on Zen 2+ and Intel
               Haswell+; SSE2: 4-lane multiply + add), the FLOP per cycle
               taken from cpu_peak's register-only loop, which reaches it.

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
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tools.bench.runtimes import ISA_LEVELS, REPO_ROOT, best_isa, build, full_runtime
from tools.bench.timing import BenchError, calls_for, measure, median, pin_to_cpus
from tools.cli_parser import one_line_parser

PROG = "python -m tools.bench.sgemm"
CPU_PEAK = REPO_ROOT / "bazel-bin" / "tools" / "bench" / "cpu_peak"
# Relative error bound of a float32 dot product of length n against float64
# (|error| <= n * eps * sum |a_i b_i|, here with inputs in [-1, 1]).
EPS32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class Peak:
    clock_ghz: float
    fma_gflops: float  # measured, register-only, 8-lane FMA (0: no AVX2+FMA)
    sse_gflops: float  # measured, register-only, 4-lane multiply + add
    avx512_gflops: float = 0.0  # measured, register-only, 16-lane FMA (0: no AVX-512)

    def for_isa(self, isa: str) -> tuple[int, float]:
        """(FLOP per cycle, computed peak GFLOP/s) for the ISA the runtime's
        kernels run: the measured ratio rounded to a power of two, at most
        what the ISA's widest core does (2 FMA units x 16 lanes x 2 for
        AVX-512, x 8 for AVX2; SSE2: 2 x 4 x 2)."""
        measured, widest = {
            "x86_64_v4": (self.avx512_gflops, 64),
            "x86_64_v3": (self.fma_gflops, 32),
        }.get(isa, (self.sse_gflops, 16))
        per_cycle = min(1 << max(0, round(np.log2(max(measured / self.clock_ghz, 1.0)))), widest)
        return per_cycle, self.clock_ghz * per_cycle


@dataclass(frozen=True)
class SgemmResult:
    n: int
    median_us: float
    gflops: float
    peak_gflops: float
    fraction_of_peak: float
    max_relative_error: float


def measure_peak(seconds: float = 1.0) -> Peak:
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


def mm_program(n: int, seed: int = 0) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    builder = ProgramBuilder()
    m = builder.method()
    m.output(m.op("aten::mm", m.input("Float", [n, n]), b))
    return builder.to_bytes(), a, b


def bench_size(runtime: Runtime, n: int, rounds: int, peak_gflops: float) -> SgemmResult:
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
    return SgemmResult(
        n, round(seconds * 1e6, 1), round(gflops, 2), round(peak_gflops, 2), round(gflops / peak_gflops, 4), error
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
    p.add_argument(
        "--sizes", type=_sizes, default=[256, 512, 768, 1024], help="square sizes n (default 256,512,768,1024)"
    )
    p.add_argument("--rounds", type=int, default=7, help="samples per size (default 7)")
    p.add_argument("--cpu", type=int, help="the CPU to pin to (default 1, as taskset -c 1)")
    p.add_argument("--json", metavar="FILE", help="also write the results and the peak as JSON")
    try:
        args = p.parse_args(argv)
        (cpu,) = pin_to_cpus(1, args.cpu)
        build(["//tools/bench:cpu_peak"])
        runtime_path = args.runtime or full_runtime(args.isa or best_isa())
        if not runtime_path.is_file():
            raise BenchError(f"no runtime at {runtime_path}")
        runtime = Runtime(runtime_path)
        peak = measure_peak()
        per_cycle, peak_gflops = peak.for_isa(runtime.kernel_isa)
        print(
            f"runtime {runtime_path} ({runtime.isa}, kernels {runtime.kernel_isa}); pinned to CPU {cpu}\n"
            f"clock {peak.clock_ghz:.2f} GHz x {per_cycle} FLOP/cycle = peak {peak_gflops:.1f} GFLOP/s "
            f"(measured register-only: AVX-512 FMA {peak.avx512_gflops:.1f}, FMA {peak.fma_gflops:.1f}, "
            f"SSE2 mul+add {peak.sse_gflops:.1f})"
        )
        results = []
        print(f"{'n':>6} {'median ms':>10} {'GFLOP/s':>9} {'of peak':>8}")
        for n in args.sizes:
            r = bench_size(runtime, n, args.rounds, peak_gflops)
            results.append(r)
            print(f"{n:>6} {r.median_us / 1e3:>10.3f} {r.gflops:>9.1f} {r.fraction_of_peak:>8.1%}", flush=True)
        if args.json:
            record = {
                "runtime": str(runtime_path),
                "isa": runtime.isa,
                "cpu": cpu,
                **asdict(peak),
                "flop_per_cycle": per_cycle,
                "peak_gflops": round(peak_gflops, 2),
                "results": [asdict(r) for r in results],
            }
            Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    except (BenchError, PareError, OSError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
