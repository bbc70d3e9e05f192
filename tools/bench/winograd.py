"""3x3 convolutions: Winograd F(2x2, 3x3) and F(4x4, 3x3) against im2col, layer by layer.

The claim behind the exporter's `winograd` pass (pare.packing.winograd_tile):
on a 3x3, stride-1 layer with at least 8 input channels and 9 2x2 output
tiles, Winograd's small GEMMs beat im2col's one GEMM 9x deeper, and from 9
4x4 output tiles F(4x4, 3x3)'s 36 GEMMs (4x fewer multiplies than im2col)
beat F(2x2, 3x3)'s 16 (2.25x fewer); below that the transforms and the
shallow products cost more than they save. This runs each layer the three
ways on the same runtime, side by side: pinned to one CPU, interleaved
round by round (alternating the order), and reports each one's median
time per call, the speed-ups over im2col and each one's largest error
against float64.

    .venv/bin/python -m tools.bench.winograd [--runtime LIB] [--cpu N] [--layers CxHxW[:O],...]

The runtime defaults to $PARE_RUNTIME_LIB, else Bazel's shipped build
(tools/bazel build //runtime:full); pass Bazel's //runtime:full_v3 for
AVX2+FMA. The test suite checks the numerics (tests/runtime/kernels/
test_prepacked.py); it never times them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

from pare import packing
from pare.program import ProgramBuilder
from pare.runtime import Runtime
from tools.bench.runtimes import add_layer_bench_arguments, print_report
from tools.bench.timing import BenchError, measure, pin_to_cpus

# The variants and the output tile each packs for (0: im2col).
VARIANTS = {"im2col": 0, "F(2x2,3x3)": 2, "F(4x4,3x3)": 4}

# ResNet-18's 3x3 stride-1 stages at 224x224 and at the zoo's 64x64, and
# layers at the edges of where the exporter chooses Winograd.
DEFAULT_LAYERS = "64x56x56,128x28x28,256x14x14,512x7x7,64x16x16,512x2x2,8x6x6,4x32x32:64,16x4x4"


def parse_layers(text: str) -> list[tuple[int, int, int, int]]:
    """`CxHxW[:O],...` as (in channels, height, width, out channels); O
    defaults to C. Padding is 1, so the output is H x W."""
    layers = []
    for item in text.split(","):
        shape, _, out = item.strip().partition(":")
        try:
            c, h, w = (int(v) for v in shape.split("x"))
            o = int(out) if out else c
        except ValueError:
            raise BenchError(f"--layers: {item.strip()!r} is not CxHxW or CxHxW:O (e.g. 64x56x56:128)") from None
        if min(c, h, w, o) < 1:
            raise BenchError(f"--layers: {item.strip()!r} has a size below 1")
        layers.append((c, h, w, o))
    return layers


def programs(c: int, h: int, w: int, o: int, seed: int = 0) -> tuple[dict[str, bytes], np.ndarray, np.ndarray]:
    """The layer packed each way, an input, and its float64 output."""
    rng = np.random.default_rng(seed)
    weight = (rng.uniform(-1, 1, (o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    x = rng.uniform(-1, 1, (1, c, h, w)).astype(np.float32)
    data = {}
    for name, tile in VARIANTS.items():
        pb = ProgramBuilder()
        m = pb.method()
        packed = m.conv2d_prepack(weight, None, (1, 1), (1, 1), (1, 1), 1, winograd=tile)
        m.output(m.op("pare::conv2d_prepacked", m.input("Float", [1, c, h, w]), packed))
        data[name] = pb.to_bytes()
    padded = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))  # c h w 3 3
    exact = np.einsum("chwij,ocij->ohw", windows, weight.astype(np.float64))
    return data, x, exact[None]


def run(runtime_path: Path, layers: list[tuple[int, int, int, int]], rounds: int, cpu: int | None) -> str:
    if not runtime_path.is_file():
        raise BenchError(f"no runtime at {runtime_path}: run `tools/bazel build //runtime:full` or pass --runtime")
    (pinned,) = pin_to_cpus(1, cpu)
    runtime = Runtime(runtime_path)
    lines = [
        f"3x3 convolutions, stride 1, padding 1, batch 1, float32; runtime {runtime_path}",
        f"pinned to CPU {pinned}; {rounds} interleaved rounds per layer",
        f"{'layer':<18} {'chosen':>10} {'im2col µs':>11} {'F2 µs':>10} {'F4 µs':>10} {'F2 speed-up':>12} "
        f"{'F4 speed-up':>12} {'im2col err':>11} {'F2 err':>9} {'F4 err':>9}",
    ]
    for c, h, w, o in layers:
        data, x, exact = programs(c, h, w, o)
        methods = {name: runtime.load(data[name]).method() for name in VARIANTS}
        errors = [float(np.abs(m.run(x)[0] - exact).max()) for m in methods.values()]
        # About 2 ms of calls per sample, at least one.
        flops = 2 * 9 * c * o * h * w
        calls = max(1, int(2e-3 * 20e9 / flops))
        samples = measure({name: m.execute for name, m in methods.items()}, rounds, {name: calls for name in methods})
        im2col, f2, f4 = (statistics.median(samples[name]) * 1e6 for name in VARIANTS)
        tile = packing.winograd_tile((o, c, 3, 3), (1, 1), (1, 1), 1, (h, w))
        chosen = next(name for name, t in VARIANTS.items() if t == tile)
        lines.append(
            f"{f'{c}x{h}x{w} -> {o}':<18} {chosen:>10} {im2col:>11.1f} {f2:>10.1f} {f4:>10.1f} "
            f"{im2col / f2:>11.2f}x {im2col / f4:>11.2f}x {errors[0]:>11.2e} {errors[1]:>9.2e} {errors[2]:>9.2e}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.winograd", description=__doc__.split("\n")[0])
    add_layer_bench_arguments(parser, rounds=11)
    parser.add_argument(
        "--layers",
        default=DEFAULT_LAYERS,
        help=f"comma list of CxHxW[:O] layers, padding 1 (default {DEFAULT_LAYERS})",
    )
    args = parser.parse_args(argv)
    return print_report("winograd", lambda: run(args.runtime, parse_layers(args.layers), args.rounds, args.cpu))


if __name__ == "__main__":
    sys.exit(main())
