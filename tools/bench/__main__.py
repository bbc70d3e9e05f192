"""`python -m tools.bench MODEL.py [MODEL.py ...]`: Pare vs torch eager, ExecuTorch and ONNX Runtime per model
(tools/bench/models.py).

Exit status: 0 measured, 2 a user error (one line on stderr: a missing
runtime, a model that does not export, output that differs from torch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import add_delegate_arguments, one_line_parser

PROG = "python -m tools.bench"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    from tools.bench.layers import DEFAULT_RUNS
    from tools.bench.runtimes import ISA_LEVELS
    from tools.bench.timing import BenchError
    from tools.tracer import passes

    p = one_line_parser(BenchError, see=f"{PROG} --help")(
        prog=PROG,
        description="Time Pare's execute(), torch eager, ExecuTorch (portable and XNNPACK, "
        "from .venv-executorch) and ONNX Runtime (CPU execution provider) side by side on each model spec's "
        "first input (interleaved rounds, pinned CPUs); print median and p90 µs, Pare's arena bytes and the "
        "ratios. Other benchmarks: python -m tools.bench.prepacked_linear.",
        epilog=f"example:\n  {PROG} apps/demo/model.py models/zoo/mobilenet_v2.py --json /tmp/bench.json\n\n"
        f"{passes.epilog()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("models", nargs="+", metavar="MODEL", help="model specs (docs/model_spec.md)")
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--runtime",
        type=Path,
        help="linux_x86_64 Pare runtime (default: $PARE_RUNTIME_LIB, else Bazel's //runtime:full)",
    )
    source.add_argument(
        "--isa",
        choices=ISA_LEVELS,
        help="build and run the full runtime at this x86_64 ISA level: //runtime:full (auto, the default: "
        "SSE2 with AVX2+FMA GEMM kernels chosen at run time), //runtime:full_baseline (SSE2) or "
        "//runtime:full_v3 (AVX2+FMA)",
    )
    p.add_argument(
        "--threads",
        type=_positive,
        default=1,
        help="Pare, torch and ONNX Runtime (intra-op) threads, and CPUs pinned (default "
        "1); above 1, Pare on one thread is timed alongside for the speed-up, and the runtime must select "
        "build feature threads (//runtime:full does)",
    )
    p.add_argument("--rounds", type=_positive, default=21, help="interleaved rounds per model (default 21)")
    p.add_argument("--cpu", type=int, help="with --threads 1: the CPU to pin to (default 1, as taskset -c 1)")
    p.add_argument("--json", metavar="FILE", help="also write one JSON object per model to FILE")
    p.add_argument(
        "--no-executorch",
        dest="executorch",
        action="store_false",
        help="do not time ExecuTorch "
        "(by default it is, when tools/setup_executorch.sh has made .venv-executorch; its worker takes "
        "10-120 s per model to lower and check the model)",
    )
    p.add_argument(
        "--no-onnxruntime",
        dest="onnxruntime",
        action="store_false",
        help="do not time ONNX Runtime (by default it is: each model is exported with torch.onnx.export, "
        "which takes 2-60 s, and run on its CPU execution provider)",
    )
    p.add_argument(
        "--profile-layers",
        nargs="?",
        type=_positive,
        const=DEFAULT_RUNS,
        metavar="RUNS",
        help=f"after each model's rounds, profile Pare per instruction over RUNS runs (default {DEFAULT_RUNS}) and "
        "print each instruction's minimum µs and share of their sum (the runtime must select build feature "
        "op_profiling; --json: layers)",
    )
    passes.add_arguments(p)  # as python -m tools.tracer export takes them
    add_delegate_arguments(
        p,
        "also time the program exported with these backends (docs/delegates.md) beside the CPU's, "
        "interleaved in the same rounds; the runtime must have them (//runtime:full has every backend)",
        "a compile spec for the backends that take KEY (repeatable), as tools.tracer export takes it",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from tools.bench.timing import BenchError  # no torch: the environment below is still open

    try:
        args = _parser().parse_args(argv)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.threads > 1:
        # torch's OpenMP workers otherwise keep running after each call and
        # take the CPUs Pare's threads need, even across models (ResNet-18's
        # speed-up measured 1.2x right after MobileNetV2's torch rounds,
        # 1.7x alone). Read when torch loads OpenMP, so set before the
        # imports below; an explicit setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from pare.runtime import PareError
    from tools.bench.executorch_peer import available
    from tools.bench.layers import layers_table
    from tools.bench.models import bench_model, load_runtime, table
    from tools.bench.onnxruntime_peer import available as onnxruntime_available
    from tools.bench.runtimes import default_runtime, full_runtime
    from tools.bench.timing import pin_to_cpus
    from tools.tracer import passes
    from tools.tracer.delegation import DelegateOptions
    from tools.tracer.errors import TracerError

    try:
        selected = passes.from_arguments(args)
        delegates = DelegateOptions(tuple(args.delegate), tuple(args.delegate_spec))
        delegates.resolve()  # an unknown backend or spec fails before any model is timed
        runtime_path = args.runtime or (full_runtime(args.isa) if args.isa else default_runtime())
        runtime = load_runtime(runtime_path)
        cpus = pin_to_cpus(args.threads, args.cpu)
        executorch = None
        if args.executorch:  # checked after pinning: each model's worker inherits the pinned CPUs
            executorch = available()
            if not executorch:
                print(f"ExecuTorch: not measured: {executorch.detail}", file=sys.stderr)
        onnxruntime = None
        if args.onnxruntime:
            onnxruntime = onnxruntime_available()
            if not onnxruntime:
                print(f"ONNX Runtime: not measured: {onnxruntime.detail}", file=sys.stderr)
        print(
            f"runtime {runtime_path}; pinned to CPU {','.join(map(str, cpus))}; "
            f"Pare and torch threads {args.threads}; "
            f"{args.rounds} interleaved rounds per model; graph passes {','.join(selected) or passes.NONE}"
            + (f"; {executorch.detail} (portable, XNNPACK; 1 thread)" if executorch else "")
            + (
                f"; {onnxruntime.detail} (CPU execution provider; {args.threads} intra-op "
                f"thread{'s' if args.threads > 1 else ''}, all graph optimisations)"
                if onnxruntime
                else ""
            ),
            file=sys.stderr,
        )
        results = []
        for model in args.models:
            print(f"bench: {model} ...", file=sys.stderr, flush=True)

            def progress(system: str, doing: str, model: str = model) -> None:
                print(f"bench: {model}: {system}: {doing}", file=sys.stderr, flush=True)

            results.append(
                bench_model(
                    model,
                    runtime,
                    runtime_path,
                    rounds=args.rounds,
                    threads=args.threads,
                    passes=selected,
                    executorch=bool(executorch),
                    onnxruntime=bool(onnxruntime),
                    progress=progress,
                    delegates=delegates,
                    profile_runs=args.profile_layers,
                )
            )
        if args.json:
            try:
                Path(args.json).write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n")
            except OSError as e:
                raise BenchError(f"--json {args.json}: cannot write ({e.strerror})") from None
    except (BenchError, TracerError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except PareError as e:
        print(f"error: the Pare runtime failed: {e.status_name}: {e}", file=sys.stderr)
        return 2
    print(table(results))
    for r in results:
        if r.profile_runs:
            print()
            print(layers_table(r.model, r.layers, r.median_us, r.profile_runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
