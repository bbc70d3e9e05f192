"""llvm-mca estimates of the int8 GEMM micro-kernels' inner loops: MACs per cycle against the core's peak.

    .venv/bin/python -m tools.bench.int8_mca [--cpus cortex-a55,neoverse-n2]

Compiles each arm64 micro-kernel of runtime/kernels/quantized/
qgemm_arm64_tile.inc (the 4x4 tile's steady state: 16 bytes of k for 4
output channels x 4 pixels, 256 multiply-adds) for aarch64 with clang-16,
takes its inner loop from the assembly, and runs `llvm-mca-16 -mcpu=CPU` on
it; likewise the convolutions' columns tiles (qgemm_arm64_columns.inc, cut
out of qgemm.cc: per quad of k, 8 channels x 12 pixels with SDOT, 8 x 4
with NEON), the depthwise rows (qgemm_arm64_depthwise.inc: one filter
row of a 16-output block, 3x3 and 5x5, stride 1 and 2) and the dynamic
linear's blocks (qgemm_arm64_dynamic.inc: 16 channels x 4 rows with SDOT,
x 2 rows with NEON). The peak is
llvm-mca's own throughput for the core's widest int8 multiply-add, 16
independent SDOTs (4 x 16 bytes -> int32 lanes, 16 MACs each): what the scheduling model says the core can do at most. A static
estimate of a core model, not a measurement: no cache misses, no front-end
stalls beyond the model's. docs/quantization.md quotes the table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools import REPO_ROOT
from tools.bench import arm64_mca
from tools.bench.arm64_mca import CLANG, DEFAULT_CPUS, TARGET, McaError, run
from tools.cli_parser import one_line_errors

# Multiply-adds per iteration of the tile's inner loop: 4 channels x 4
# pixels x 16 bytes of k.
TILE_MACS = 4 * 4 * 16

# name -> (the copy's namespace and macro value, its target attribute).
KERNELS = {
    "neon (smull/smull2/sadalp)": ("neon", 0, ""),
    "dotprod (sdot)": ("dotprod", 1, "dotprod"),
}

_DRIVER = """
#include <arm_neon.h>
#include <stdint.h>
#include "runtime/core/compiler.h"

namespace mca {{
constexpr int kTileChannels = 4;
constexpr int kTilePixels = 4;
constexpr int kStep = 16;
{attribute_push}
namespace {namespace} {{
#define PARE_QGEMM_ARM64_DOTPROD {macro}
#include "runtime/kernels/quantized/qgemm_arm64_tile.inc"
}}
void kernel(int64_t k, const int8_t* w, const int8_t* x, int32_t (&out)[4][4]) {{
  {namespace}::dot_tile<4, 4>(k, w, x, out);
}}
{attribute_pop}
}}  // namespace mca
"""

_PEAK = "\n".join(f"sdot v{i}.4s, v{16 + i % 8}.16b, v{24 + i % 8}.16b" for i in range(16)) + "\n"
_PEAK_MACS = 16 * 16


@dataclass(frozen=True)
class Estimate:
    kernel: str
    cpu: str
    cycles_per_iteration: float
    macs_per_cycle: float
    peak_macs_per_cycle: float

    @property
    def share_of_peak(self) -> float:
        return self.macs_per_cycle / self.peak_macs_per_cycle


def kernel_assembly(name: str) -> str:
    """The AArch64 assembly of micro-kernel `name` (a key of KERNELS), -O2."""
    namespace, macro, attribute = KERNELS[name]
    push = f'#pragma clang attribute push(__attribute__((target("{attribute}"))), apply_to = function)'
    source = _DRIVER.format(
        namespace=namespace,
        macro=macro,
        attribute_push=push if attribute else "",
        attribute_pop="#pragma clang attribute pop" if attribute else "",
    )
    with tempfile.TemporaryDirectory(prefix="pare-mca-") as tmp:
        src = Path(tmp) / "kernel.cc"
        src.write_text(source)
        return run(
            [CLANG, f"--target={TARGET}", "-std=c++17", "-O2", "-ffreestanding", "-fno-exceptions", "-fno-rtti"]
            + [f"-I{REPO_ROOT}", "-S", "-o", "-", str(src)]
        )


def inner_loop(assembly: str) -> str:
    """The instructions of the innermost loop that multiplies (sdot, or
    smull/smull2 with sadalp), without labels and directives."""
    return arm64_mca.inner_loop(assembly, ("sdot", "smull", "smull2"))


def mca_cycles_per_iteration(block: str, cpu: str) -> float:
    """llvm-mca's cycles per iteration of `block` on `cpu`."""
    # +dotprod: the sdot kernel's code is built for it, whatever the core's
    # default extensions.
    return arm64_mca.mca(block, cpu, mattr="+dotprod").cycles_per_iteration


def peak_macs_per_cycle(cpu: str) -> float:
    """The core's int8 multiply-add peak in llvm-mca's model: independent SDOTs."""
    return _PEAK_MACS / mca_cycles_per_iteration(_PEAK, cpu)


def estimates(cpus=DEFAULT_CPUS, kernels=tuple(KERNELS)) -> list[Estimate]:
    loops = {name: inner_loop(kernel_assembly(name)) for name in kernels}
    result = []
    for cpu in cpus:
        peak = peak_macs_per_cycle(cpu)
        for name, loop in loops.items():
            cycles = mca_cycles_per_iteration(loop, cpu)
            result.append(Estimate(name, cpu, cycles, TILE_MACS / cycles, peak))
    return result


# The int8 convolutions' loops on arm64 (tools/bench/arm64_cost.py):
# qconv.cc runs gemm_columns, qgemm_arm64_columns.inc's 8-channel x
# 12-pixel tile over the quads layout, cut out of qgemm.cc's arm64 build
# (their columns<> instances, inlined with the tile). The SDOT copy's
# loop: one quad of k of the whole tile (384 multiply-adds, 24 SDOTs by
# element); the NEON copy's: one quad of k of one vector of 4 pixels (the
# tile runs its 3 vectors one after another; 128 multiply-adds, 16
# SMULL(2) and 16 SADALP).
COLUMNS = "int8 columns sdot 8x12"
COLUMNS_NEON = "int8 columns neon 8x4"
COLUMNS_SOURCE = "runtime/kernels/quantized/qgemm.cc"
# name -> (the function name's part, the multiply, MACs per iteration).
COLUMNS_LOOPS = {
    COLUMNS: ("qgemm::arm64::dotprod::columns<", "sdot", 8 * 12 * 4),
    COLUMNS_NEON: ("qgemm::arm64::neon::columns<", "smull", 8 * 4 * 4),
}
COLUMNS_MACS = COLUMNS_LOOPS[COLUMNS][2]

# The int8 depthwise layers' loops on arm64: qgemm_arm64_depthwise.inc's
# rows (one ARMv8.0 copy), cut out of qgemm.cc's arm64 build like the
# columns loops (their depthwise_rows<stride, taps> instances). One
# iteration: one filter row of a 16-output block, 16 x taps multiply-adds
# in 4 x taps SMLAL(2) by element.
DEPTHWISE_3X3 = "int8 depthwise neon 3x3 s1"
DEPTHWISE_3X3_S2 = "int8 depthwise neon 3x3 s2"
DEPTHWISE_5X5 = "int8 depthwise neon 5x5 s1"
DEPTHWISE_5X5_S2 = "int8 depthwise neon 5x5 s2"
DEPTHWISE_LOOPS = {
    DEPTHWISE_3X3: ("qgemm::arm64::depthwise_rows<1, 3>", "smlal", 16 * 3),
    DEPTHWISE_3X3_S2: ("qgemm::arm64::depthwise_rows<2, 3>", "smlal", 16 * 3),
    DEPTHWISE_5X5: ("qgemm::arm64::depthwise_rows<1, 5>", "smlal", 16 * 5),
    DEPTHWISE_5X5_S2: ("qgemm::arm64::depthwise_rows<2, 5>", "smlal", 16 * 5),
}
# pare::qlinear_dynamic's loops on arm64: qgemm_arm64_dynamic.inc's
# blocks of 16 channels, cut out of qgemm.cc likewise (their
# dynamic_block<rows> instances). The SDOT copy's iteration: 4 quads of k
# of 4 rows (1,024 multiply-adds, 64 SDOTs by element); the NEON copy's:
# one quad of 2 rows (128 multiply-adds, 16 SMULL(2) and 16 SADALP).
DYNAMIC = "int8 dynamic linear sdot 16x4"
DYNAMIC_NEON = "int8 dynamic linear neon 16x2"
DYNAMIC_LOOPS = {
    DYNAMIC: ("qgemm::arm64::dotprod::dynamic_block<4>", "sdot", 16 * 4 * 16),
    DYNAMIC_NEON: ("qgemm::arm64::neon::dynamic_block<2>", "smull", 16 * 2 * 4),
}
# Every loop cut out of qgemm.cc: name -> (function, multiply, MACs per iteration).
RUNTIME_LOOPS = {**COLUMNS_LOOPS, **DEPTHWISE_LOOPS, **DYNAMIC_LOOPS}


def columns_loop(name: str = COLUMNS) -> str:
    """The innermost loop of arm64's gemm_columns copy or depthwise rows
    `name` (a key of RUNTIME_LOOPS) with the most multiplies: the full
    tile's (block's)."""
    function, multiply, _ = RUNTIME_LOOPS[name]
    fns = arm64_mca.source_functions(REPO_ROOT / COLUMNS_SOURCE)
    matches = [f for f in fns if function in f]
    if not matches:
        raise McaError(f"no function {function!r} in {COLUMNS_SOURCE} for {TARGET}")
    return arm64_mca.innermost_loop(fns[matches[0]], (multiply,))


def loop_cycles_per_iteration(kernel: str, cpu: str) -> float:
    """llvm-mca's cycles per iteration of `kernel` (a key of KERNELS or RUNTIME_LOOPS) on `cpu`."""
    loop = columns_loop(kernel) if kernel in RUNTIME_LOOPS else inner_loop(kernel_assembly(kernel))
    return mca_cycles_per_iteration(loop, cpu)


def columns_estimates(cpus=DEFAULT_CPUS, names=tuple(RUNTIME_LOOPS)) -> list[Estimate]:
    """The columns and depthwise loops' estimates, in the units of the table."""
    loops = {name: columns_loop(name) for name in names}
    result = []
    for cpu in cpus:
        peak = peak_macs_per_cycle(cpu)
        for name, loop in loops.items():
            cycles = mca_cycles_per_iteration(loop, cpu)
            result.append(Estimate(name, cpu, cycles, RUNTIME_LOOPS[name][2] / cycles, peak))
    return result


def table(rows: list[Estimate]) -> str:
    head = f"| {'kernel (one iteration)':<30} | {'core':<12} | cycles/iter | MACs/cycle | peak | of peak |"
    lines = [head, "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"]
    for r in rows:
        lines.append(
            f"| {r.kernel:<30} | {r.cpu:<12} | {r.cycles_per_iteration:11.2f} | {r.macs_per_cycle:10.1f} | "
            f"{r.peak_macs_per_cycle:4.0f} | {r.share_of_peak:7.0%} |"
        )
    return "\n".join(lines)


@one_line_errors(McaError)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.int8_mca", description=__doc__.split("\n")[0])
    parser.add_argument("--cpus", default=",".join(DEFAULT_CPUS), help="llvm-mca -mcpu values, comma-separated")
    args = parser.parse_args(argv)
    cpus = [c for c in args.cpus.split(",") if c]
    print(table(estimates(cpus) + columns_estimates(cpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
