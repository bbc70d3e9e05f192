"""Convolutions over few output pixels: pixel rows against the register tile, layer by layer.

The claim behind pare.packing.pixel_rows_pays for kernels other than a
plain 1x1 (3x3, strided, padded): over 1 to PIXEL_ROWS_MAX_PIXELS
output pixels, the product with the pixels as the GEMM's rows and the
weights packed as B (`pixel rows`, on the layer's im2col matrix) beats the
usual one, the weights packed as A and the pixels as the register tile's
columns (`im2col`), which computes a whole tile of columns (16 or 32 on
x86_64) for a handful of pixels. This runs each layer both ways on the same
runtime, side by side, at each ISA the runtime can be capped to
(pare_set_max_isa): pinned to one CPU, interleaved round by round, and
reports each one's median time per call, the speed-up of pixel rows, each
one's largest error against float64, and which one the exporter chooses.

    .venv/bin/python -m tools.bench.pixel_rows [--runtime LIB] [--cpu N] [--isa LIST] [--layers SPEC,...]

A layer is `CxHxW:O/KsS` (in channels, input height and width, out
channels, a K x K kernel at stride S, padding K // 2). The runtime defaults
to $PARE_RUNTIME_LIB, else Bazel's shipped build (tools/bazel build
//runtime:full). The test suite checks the numerics
(tests/runtime/kernels/test_prepacked.py); it never times them.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

import numpy as np

from pare import packing
from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tools.bench.runtimes import add_layer_bench_arguments, print_report
from tools.bench.timing import BenchError, measure, pin_to_cpus

VARIANTS = {"im2col": False, "pixel rows": True}

# ResNet-18's last stages at the zoo's 64x64 input (2x2 and 4x4 outputs),
# the same over a 1x1 and a 3x3 output, and a strided 1x1 (a downsample).
DEFAULT_LAYERS = (
    "512x2x2:512/3s1,256x4x4:512/3s2,256x4x4:256/3s1,512x1x1:512/3s1,128x3x3:128/3s1,"
    "256x6x6:256/3s2,256x4x4:512/1s2,64x3x4:96/3s1"
)
_LAYER = re.compile(r"^(\d+)x(\d+)x(\d+):(\d+)/(\d+)s(\d+)$")


def parse_layers(text: str) -> list[tuple[int, int, int, int, int, int]]:
    """`CxHxW:O/KsS,...` as (in channels, height, width, out channels, kernel, stride)."""
    layers = []
    for item in text.split(","):
        match = _LAYER.match(item.strip())
        if match is None:
            raise BenchError(f"--layers: {item.strip()!r} is not CxHxW:O/KsS (e.g. 512x2x2:512/3s1)")
        layer = tuple(int(v) for v in match.groups())
        if min(layer) < 1:
            raise BenchError(f"--layers: {item.strip()!r} has a size below 1")
        layers.append(layer)
    return layers


def programs(c: int, h: int, w: int, o: int, k: int, s: int, seed: int = 0):
    """The layer packed each way, an input, and its float64 output."""
    rng = np.random.default_rng(seed)
    weight = (rng.uniform(-1, 1, (o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32)
    x = rng.uniform(-1, 1, (1, c, h, w)).astype(np.float32)
    pad = k // 2
    data = {}
    for name, pixel_rows in VARIANTS.items():
        pb = ProgramBuilder()
        m = pb.method()
        packed = m.conv2d_prepack(weight, None, (s, s), (pad, pad), (1, 1), 1, pixel_rows=pixel_rows)
        m.output(m.op("pare::conv2d_prepacked", m.input("Float", [1, c, h, w]), packed))
        data[name] = pb.to_bytes()
    padded = np.pad(x[0].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(1, 2))[:, ::s, ::s]
    exact = np.einsum("chwij,ocij->ohw", windows, weight.astype(np.float64))
    return data, x, exact[None]


def run(runtime_path: Path, layers, isas: list[str], rounds: int, cpu: int | None) -> str:
    if not runtime_path.is_file():
        raise BenchError(f"no runtime at {runtime_path}: run `tools/bazel build //runtime:full` or pass --runtime")
    (pinned,) = pin_to_cpus(1, cpu)
    runtime = Runtime(runtime_path)
    top = runtime.kernel_isa
    lines = [
        f"convolutions over few pixels, batch 1, float32; runtime {runtime_path}",
        f"pinned to CPU {pinned}; {rounds} interleaved rounds per layer and ISA",
        f"{'layer':<22} {'pixels':>6} {'chosen':>10} {'isa':>16} {'im2col µs':>10} {'rows µs':>9} {'speed-up':>9} "
        f"{'im2col err':>11} {'rows err':>9}",
    ]
    try:
        for c, h, w, o, k, s in layers:
            data, x, exact = programs(c, h, w, o, k, s)
            methods = {name: runtime.load(data[name]).method() for name in VARIANTS}
            pixels = exact.shape[2] * exact.shape[3]
            pad = k // 2
            pays = packing.pixel_rows_pays((o, c, k, k), (s, s), (pad, pad), (1, 1), 1, exact.shape[2:])
            chosen = "pixel rows" if pays else "im2col"
            flops = 2 * k * k * c * o * pixels
            calls = max(1, int(2e-3 * 20e9 / flops))  # about 2 ms of calls per sample
            for isa in isas:
                try:
                    runtime.set_max_isa(isa)
                except PareError as e:
                    raise BenchError(f"--isa {isa}: {e}") from None
                errors = [float(np.abs(m.run(x)[0] - exact).max()) for m in methods.values()]
                samples = measure({n: m.execute for n, m in methods.items()}, rounds, dict.fromkeys(methods, calls))
                im2col, rows = (statistics.median(samples[name]) * 1e6 for name in VARIANTS)
                lines.append(
                    f"{f'{c}x{h}x{w}->{o} {k}x{k}/{s}':<22} {pixels:>6} {chosen:>10} {runtime.kernel_isa:>16} "
                    f"{im2col:>10.1f} "
                    f"{rows:>9.1f} {im2col / rows:>8.2f}x {errors[0]:>11.2e} {errors[1]:>9.2e}"
                )
    finally:
        runtime.set_max_isa(top)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.pixel_rows", description=__doc__.split("\n")[0])
    add_layer_bench_arguments(parser, rounds=9)
    parser.add_argument(
        "--layers", default=DEFAULT_LAYERS, help=f"comma list of CxHxW:O/KsS layers (default {DEFAULT_LAYERS})"
    )
    parser.add_argument(
        "--isa",
        default="x86_64_v4,x86_64_v3,x86_64_baseline",
        help="comma list of ISAs to cap the runtime to, in turn (pare_set_max_isa; a cap above the CPU's "
        "runs the CPU's best; default x86_64_v4,x86_64_v3,x86_64_baseline)",
    )
    args = parser.parse_args(argv)
    isas = [i.strip() for i in args.isa.split(",") if i.strip()]
    return print_report("pixel_rows", lambda: run(args.runtime, parse_layers(args.layers), isas, args.rounds, args.cpu))


if __name__ == "__main__":
    sys.exit(main())
