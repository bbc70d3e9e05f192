"""llvm-mca estimates of the float kernels' hot loops on arm64 cores: cycles per iteration, FMA use against the core's peak, the bottleneck.

    .venv/bin/python -m tools.bench.arm64_mca [--cpus cortex-a55,neoverse-n2] [--kernels NAME,...]

There is no arm64 phone here, and qemu's timings say nothing about a real
core. So each hot loop is estimated statically: the runtime's own source
file is compiled for aarch64 as the Android build compiles it (clang-16,
-O2, the house flags, the default selection), the function is found in the
assembly by its demangled name, its innermost loop that does the work
(the one with the most FMLAs, or for a copy loop the most loads and
stores) is cut out, and `llvm-mca-16 -mcpu=CORE` runs it:

- cycles per iteration of that loop;
- of peak: the loop's 4-lane float arithmetic (FMLA, FADD, FSUB, FMUL) per
  cycle against the core's peak, llvm-mca's own throughput for independent
  FMLAs (FADDs for the Winograd transforms, which mostly add) on that core:
  what the scheduling model allows at most; "-" for a loop that only moves
  data (packing);
- the bottleneck: the busiest execution unit and its cycles per iteration,
  or "latency" when no unit is busy for most of the loop's cycles (a
  dependency chain sets the pace: on an in-order core such as Cortex-A55,
  every instruction waits for its operands).

A static estimate of a core model, not a measurement: no cache misses, no
front-end stalls beyond the model's. llvm-16 has scheduling models of a
little core (cortex-a55, in order) and big ones (neoverse-n2,
cortex-a710; none of its own for Cortex-A76 or Neoverse-N1).
docs/performance.md quotes the table; tools/bench/int8_mca.py does the same
for the int8 micro-kernels with this module's helpers.
"""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tools import REPO_ROOT
from tools.cli_parser import one_line_errors

CLANG = "clang++-16"
CXXFILT = "llvm-cxxfilt-16"
LLVM_MCA = "llvm-mca-16"
TARGET = "aarch64-linux-android24"
DEFAULT_CPUS = ("cortex-a55", "neoverse-n2")
ITERATIONS = 200
# tests/runtime/runtime_build.py's HOUSE_FLAGS, as rules/ compile the runtime for Android (speed: -O2).
FLAGS = ["-std=c++17", "-O2", "-DNDEBUG", "-ffreestanding", "-fno-exceptions", "-fno-rtti", "-fPIC"]
FLAGS += ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fno-stack-protector"]
SELECTION = REPO_ROOT / "runtime" / "selection" / "default"


@dataclass(frozen=True)
class Kernel:
    """A hot loop: the source file that holds it, a regular expression
    its function's demangled name matches, and its work's mnemonics."""

    source: str  # relative to the repository
    function: str
    work: tuple[str, ...] = ("fmla",)  # mnemonics counted to pick the loop
    # The vector instruction whose peak rate the loop's arithmetic is held
    # against (a key of PEAKS), or None for a loop that only moves data.
    peak: str | None = "fmla"


# The Winograd transforms are inlined into winograd::run's chunk lambdas:
# the second (lambda0) is input_transform, the fourth (lambda2) output_transform.
_WINOGRAD_CHUNK = r"winograd::run<4>\(.*'{}'\(unsigned int, long, long\)::operator\(\)"
_FLOPS = ("fadd", "fsub", "fmla", "fmul")
_COPIES = ("ldr", "ldur", "ldp", "str", "stur", "stp")
KERNELS = {
    "gemm 6x8 tile": Kernel("runtime/kernels/common/gemm_kernels.cc", r"gemm::arm64_neon::tile\("),
    "depthwise 3x3 stride 1": Kernel("runtime/kernels/common/depthwise.cc", r"plane<3, 1>"),
    "depthwise 3x3 stride 2": Kernel("runtime/kernels/common/depthwise.cc", r"plane<3, 2>"),
    "winograd 4x4 input": Kernel(
        "runtime/kernels/prepacked/winograd.cc", _WINOGRAD_CHUNK.format("lambda0"), _FLOPS, "fadd"
    ),
    "winograd 4x4 output": Kernel(
        "runtime/kernels/prepacked/winograd.cc", _WINOGRAD_CHUNK.format("lambda2"), _FLOPS, "fadd"
    ),
    "im2col rows": Kernel("runtime/kernels/common/im2col.cc", r"im2col_matrix\(", _COPIES, None),
    "gemm pack_b": Kernel("runtime/kernels/common/gemm.cc", r"gemm::pack_b\(", _COPIES, None),
}


class McaError(Exception):
    """A compiler or llvm-mca failure, or a function or loop the script cannot find."""


def run(cmd: list[str], stdin: str | None = None) -> str:
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    except OSError as e:
        raise McaError(f"cannot run {cmd[0]} ({e.strerror}); install llvm-16 and clang-16 (tools/setup.sh)") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise McaError(f"{cmd[0]} failed (exit {proc.returncode}): {first}")
    return proc.stdout


def compile_to_assembly(source: Path, extra: list[str] = ()) -> str:
    """AArch64 assembly of `source` (a runtime file, or a driver including one)."""
    return run(
        [CLANG, f"--target={TARGET}", *FLAGS, f"-I{REPO_ROOT}", f"-I{SELECTION}", *extra, "-S", "-o", "-", str(source)]
    )


@functools.cache
def source_functions(source: Path) -> dict[str, str]:
    """functions(compile_to_assembly(source)), compiled once per process: a
    table or a cost model asks for several loops of one file on each core,
    and one compile of a kernel file takes seconds."""
    return functions(compile_to_assembly(source))


def functions(assembly: str) -> dict[str, str]:
    """Demangled function name -> its assembly (from its label to .Lfunc_end)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in assembly.splitlines():
        m = re.match(r"^([A-Za-z_][\w$.]*):", line)
        if m and not line.startswith(".L"):
            current = m.group(1)
            out[current] = []
        elif current is not None:
            if line.startswith(".Lfunc_end"):
                current = None
            else:
                out[current].append(line)
    names = list(out)
    demangled = run([CXXFILT], stdin="\n".join(names) + "\n").splitlines() if names else []
    return {d: "\n".join(out[n]) for n, d in zip(names, demangled)}


def _mnemonic(line: str) -> str:
    return line.split()[0] if line.split() else ""


def inner_loop(assembly: str, work: tuple[str, ...]) -> str:
    """The instructions of the loop doing the most work: among the blocks a
    backward branch closes, the one with the most `work` mnemonics (ties:
    the shortest), without labels and directives."""
    lines = [line.split("//")[0].rstrip() for line in assembly.splitlines()]
    labels = {line.rstrip(":").strip(): i for i, line in enumerate(lines) if re.match(r"^\.?L\w+:$", line.strip())}
    best: list[str] = []
    best_work = 0
    for i, line in enumerate(lines):
        m = re.match(r"^\s*b(?:\.\w+)?\s+(\.?L\w+)\s*$", line) or re.match(
            r"^\s*(?:cbn?z|tbn?z)\s+[^,]+,\s*(?:#\d+,\s*)?(\.?L\w+)\s*$", line
        )
        if not m or m.group(1) not in labels or labels[m.group(1)] > i:
            continue
        body = [
            ln.strip()
            for ln in lines[labels[m.group(1)] + 1 : i + 1]
            if ln.strip() and not ln.strip().startswith((".", "//", "#")) and not ln.strip().endswith(":")
        ]
        count = sum(_mnemonic(ln) in work for ln in body)
        if count > best_work or (count == best_work and count > 0 and len(body) < len(best)):
            best, best_work = body, count
    if not best:
        raise McaError(f"no loop with {'/'.join(work)} in the function's assembly")
    return "\n".join(best) + "\n"


def innermost_loop(assembly: str, work: tuple[str, ...]) -> str:
    """The loop doing the most `work` among the innermost ones: a label
    and the backward branch to it with no label between (no nested loop,
    no branch target inside). For a function whose loops nest the one that
    does the work in others that also hold its tails (inner_loop would
    take the outer loop)."""
    lines = [line.split("//")[0].rstrip() for line in assembly.splitlines()]
    loops, start = [], None
    for i, line in enumerate(lines):
        if re.match(r"^\.?L\w+:$", line.strip()):
            start = i
            continue
        m = re.match(r"^\s*b(?:\.\w+)?\s+(\.?L\w+)\s*$", line) or re.match(
            r"^\s*(?:cbn?z|tbn?z)\s+[^,]+,\s*(?:#\d+,\s*)?(\.?L\w+)\s*$", line
        )
        if m and start is not None and lines[start].strip().rstrip(":") == m.group(1):
            body = [ln.strip() for ln in lines[start + 1 : i + 1] if ln.strip() and not ln.strip().startswith(".")]
            if any(_mnemonic(ln) in work for ln in body):
                loops.append(body)
    if not loops:
        raise McaError(f"no innermost loop with {'/'.join(work)} in the function's assembly")
    best = max(loops, key=lambda body: (sum(_mnemonic(ln) in work for ln in body), -len(body)))
    return "\n".join(best) + "\n"


@dataclass(frozen=True)
class Mca:
    cycles_per_iteration: float
    busiest_unit: str
    busiest_cycles: float  # that unit's cycles per iteration


def mca(block: str, cpu: str, mattr: str = "") -> Mca:
    """llvm-mca's view of `block` on `cpu`."""
    cmd = [LLVM_MCA, f"-mtriple={TARGET}", f"-mcpu={cpu}", f"-iterations={ITERATIONS}"]
    out = run(cmd + ([f"-mattr={mattr}"] if mattr else []), stdin=block)
    total = re.search(r"Total Cycles:\s+(\d+)", out)
    if not total:
        raise McaError(f"llvm-mca printed no 'Total Cycles' for -mcpu={cpu}")
    units = dict(re.findall(r"^\[([\d.]+)\]\s+- (\w+)$", out, re.M))
    pressure = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    busiest, cycles = "-", 0.0
    if pressure:
        for key, value in zip(re.findall(r"\[([\d.]+)\]", pressure.group(1)), pressure.group(2).split()):
            if value != "-" and float(value) > cycles:
                busiest, cycles = units.get(key, key), float(value)
    return Mca(int(total.group(1)) / ITERATIONS, busiest, cycles)


def peak_per_cycle(instruction: str, cpu: str, mattr: str = "") -> float:
    """How many independent `instruction`s (an assembly template with {d}
    for the destination, 16 registers) the core's model issues per cycle."""
    block = "\n".join(instruction.format(d=i) for i in range(16)) + "\n"
    return 16 / mca(block, cpu, mattr).cycles_per_iteration


# The peak rates: independent 4-lane float instructions.
PEAKS = {"fmla": "fmla v{d}.4s, v16.4s, v17.4s", "fadd": "fadd v{d}.4s, v16.4s, v17.4s"}


@dataclass(frozen=True)
class Estimate:
    kernel: str
    cpu: str
    cycles_per_iteration: float
    ops: int  # the loop's 4-lane float arithmetic per iteration (FMLA, FADD, FSUB, FMUL)
    peak_ops_per_cycle: float  # of the kernel's peak instruction; 0 for a copy loop
    bottleneck: str

    @property
    def use(self) -> float | None:
        """The arithmetic's share of the core's peak rate (None: a copy loop)."""
        if not self.peak_ops_per_cycle:
            return None
        return self.ops / self.cycles_per_iteration / self.peak_ops_per_cycle


def kernel_loop(name: str) -> str:
    kernel = KERNELS[name]
    fns = source_functions(REPO_ROOT / kernel.source)
    matches = [f for f in fns if re.search(kernel.function, f)]
    if not matches:
        raise McaError(f"no function named like {kernel.function!r} in {kernel.source} for {TARGET}")
    # A template or an overload may appear more than once: the loop doing the most work among them.
    loops = []
    for f in matches:
        try:
            loops.append(inner_loop(fns[f], kernel.work))
        except McaError:
            continue
    if not loops:
        raise McaError(f"{kernel.function!r} in {kernel.source}: no loop with {'/'.join(kernel.work)}")
    return max(loops, key=lambda loop: sum(_mnemonic(ln) in kernel.work for ln in loop.splitlines()))


def bottleneck(m: Mca) -> str:
    # A unit busy for under 3/4 of the loop's cycles is not what sets its pace.
    if m.busiest_cycles < 0.75 * m.cycles_per_iteration:
        return f"latency (busiest: {m.busiest_unit} {m.busiest_cycles:.1f})"
    return f"{m.busiest_unit} ({m.busiest_cycles:.1f})"


def estimates(cpus=DEFAULT_CPUS, kernels=tuple(KERNELS)) -> list[Estimate]:
    loops = {name: kernel_loop(name) for name in kernels}
    result = []
    for cpu in cpus:
        peaks = {name: peak_per_cycle(template, cpu) for name, template in PEAKS.items()}
        for name, loop in loops.items():
            m = mca(loop, cpu)
            ops = sum(_mnemonic(ln) in _FLOPS and ".4s" in ln for ln in loop.splitlines())
            peak = peaks[KERNELS[name].peak] if KERNELS[name].peak else 0.0
            result.append(Estimate(name, cpu, m.cycles_per_iteration, ops, peak, bottleneck(m)))
    return result


def table(rows: list[Estimate]) -> str:
    head = "| kernel | core | cycles/iter | vector flops/iter | of peak | bottleneck (cycles/iter) |"
    lines = [head, "|---|---|---:|---:|---:|---|"]
    for r in rows:
        use = "-" if r.use is None else f"{r.use:.0%}"
        lines.append(f"| {r.kernel} | {r.cpu} | {r.cycles_per_iteration:.2f} | {r.ops} | {use} | {r.bottleneck} |")
    return "\n".join(lines)


@one_line_errors(McaError)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.arm64_mca", description=__doc__.split("\n")[0])
    parser.add_argument("--cpus", default=",".join(DEFAULT_CPUS), help="llvm-mca -mcpu values, comma-separated")
    parser.add_argument("--kernels", default=",".join(KERNELS), help="kernels to estimate, comma-separated")
    args = parser.parse_args(argv)
    kernels = [k for k in args.kernels.split(",") if k]
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        print(f"error: unknown kernel {unknown[0]!r}; the kernels are {', '.join(KERNELS)}", file=sys.stderr)
        return 2
    print(table(estimates([c for c in args.cpus.split(",") if c], kernels)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
