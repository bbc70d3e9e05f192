"""Run Android arm64 shared libraries under qemu-aarch64 (an emulated device stand-in).

See README.md beside this file for what the emulation does and does not prove.
The harness binary and liblog shim are Bazel outputs of
//tools/android_harness:harness; `paths()` finds them under bazel-bin (or
`$PARE_HARNESS_DIR`), and `ensure_built()` first brings them up to date with
`tools/bazel build` (Bazel knows whether they are stale: a harness left in
bazel-bin by an older checkout is rebuilt, not run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from tools import REPO_ROOT, bazel_build
from tools.cli_parser import one_line_errors

HARNESS_TARGET = "//tools/android_harness:harness"
HARNESS_OUTPUT = "tools/android_harness/harness/linux_arm64"


class HarnessError(Exception):
    """The emulator harness is missing or could not run the library."""


@dataclass(frozen=True)
class HarnessPaths:
    harness: Path
    liblog: Path
    sysroot: Path
    qemu: str


def _outputs() -> tuple[Path, Path]:
    out_dir = Path(os.environ.get("PARE_HARNESS_DIR") or REPO_ROOT / "bazel-bin" / HARNESS_OUTPUT)
    return out_dir / "harness_bin", out_dir / "liblog.so"


def paths() -> HarnessPaths:
    harness, liblog = _outputs()
    if not harness.exists() or not liblog.exists():
        raise HarnessError(f"harness not built: {harness} is missing; run `tools/bazel build {HARNESS_TARGET}`")
    sysroot = Path(os.environ.get("PARE_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu"))
    if not (sysroot / "lib" / "libc.so.6").exists():
        raise HarnessError(f"no aarch64 glibc at {sysroot}; run tools/setup.sh (apt: libc6-dev-arm64-cross)")
    qemu = shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")
    if not qemu:
        raise HarnessError("qemu-aarch64 not found; run tools/setup.sh (apt: qemu-user)")
    return HarnessPaths(harness, liblog, sysroot, qemu)


def _stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_built(info: Callable[[str], None] = _stderr_line) -> HarnessPaths:
    """paths(), after `tools/bazel build //tools/android_harness:harness` in
    this checkout: every time, as the tracer does for the instrumentation
    runtime, since only Bazel knows whether the harness in bazel-bin is
    current (an up-to-date build costs a second). A directory named by
    $PARE_HARNESS_DIR is used as it is. Bazel's progress lines go to `info`;
    a failed build raises HarnessError naming the command and Bazel's first
    error."""
    if os.environ.get("PARE_HARNESS_DIR"):
        return paths()
    info(f"bringing the emulator harness up to date: tools/bazel build {HARNESS_TARGET} ...")
    try:
        result = bazel_build.build([HARNESS_TARGET], info, root=REPO_ROOT, quiet_progress=True)
    except OSError as e:
        raise HarnessError(f"cannot run tools/bazel ({e.strerror}); run tools/setup.sh first") from None
    if result.returncode != 0:
        raise HarnessError(
            f"building the emulator harness failed (tools/bazel build {HARNESS_TARGET}, exit "
            f"{result.returncode}): {result.first_error()}"
        )
    return paths()


def _shim_dir(p: HarnessPaths, root: Path) -> Path:
    """Bionic's sonames mapped onto glibc: libc.so, libm.so and liblog.so,
    and libdl.so (a runtime with the Vulkan backend needs it; glibc has
    dlopen in libc since 2.34)."""
    shim = root / "shim"
    shim.mkdir()
    (shim / "libc.so").symlink_to(p.sysroot / "lib" / "libc.so.6")
    (shim / "libdl.so").symlink_to(p.sysroot / "lib" / "libc.so.6")
    (shim / "libm.so").symlink_to(p.sysroot / "lib" / "libm.so.6")
    shutil.copy(p.liblog, shim / "liblog.so")
    return shim


# Dynamic tags (bionic/libc/include/elf.h): Bionic's relocation forms that
# the harness applies after glibc's dlopen (harness.c), and the initializers
# glibc would run before it could.
_ANDROID_RELOCATION_TAGS = {0x60000011, 0x6000000F, 0x6FFFE000}
_INITIALIZER_TAGS = {12, 25}  # DT_INIT, DT_INIT_ARRAY


def _dynamic_tags(library: Path) -> set[int]:
    """The DT_* tags of a little-endian ELF64 file (empty if it is not one)."""
    data = Path(library).read_bytes()
    if data[:6] != b"\x7fELF\x02\x01":
        return set()
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 2:  # PT_DYNAMIC
            entries = data[p_offset : p_offset + p_filesz]
            return {tag for tag, _ in struct.iter_unpack("<qQ", entries[: len(entries) // 16 * 16])}
    return set()


def check_loadable(library: Path) -> None:
    """Refuses a library whose initializers glibc would run before the
    harness applied its Android-form relocations (a Pare runtime has none)."""
    tags = _dynamic_tags(library)
    if tags & _ANDROID_RELOCATION_TAGS and tags & _INITIALIZER_TAGS:
        raise HarnessError(
            f"{library}: has initializers (DT_INIT/DT_INIT_ARRAY) and Android-packed relocations, which the "
            "harness applies only after glibc's loader has run them; remove the static initializers "
            "(docs/portable_cpp.md) or build with --//toolchains:android_api=22 to keep plain RELA"
        )


def run(
    args: list[str],
    timeout: float = 300,
    cpu: str | None = None,
    max_isa: str | None = None,
    threads: int | None = None,
    **kwargs,
) -> subprocess.CompletedProcess:
    """Runs the harness with ARGS (a mode, then the library) under qemu-aarch64;
    returns the completed process. `cpu` is qemu's CPU model (`-cpu`; its
    default, max, has every extension qemu emulates, the ARMv8.2 dot product
    among them; cortex-a57 is an ARMv8.0 core without it); `max_isa` caps the
    runtime's kernels (pare_set_max_isa, through $PARE_MAX_ISA); `threads`
    runs the method on that many (pare_method_set_num_threads, through
    $PARE_NUM_THREADS)."""
    check_loadable(Path(args[1]))
    p = paths()
    with tempfile.TemporaryDirectory(prefix="pare-harness-") as tmp:
        shim = _shim_dir(p, Path(tmp))
        cmd = [p.qemu, "-L", str(p.sysroot), "-E", f"LD_LIBRARY_PATH={shim}"]
        if cpu:
            cmd += ["-cpu", cpu]
        if max_isa:
            cmd += ["-E", f"PARE_MAX_ISA={max_isa}"]
        if threads:
            cmd += ["-E", f"PARE_NUM_THREADS={threads}"]
        cmd += [str(p.harness), *args]
        return subprocess.run(cmd, capture_output=True, timeout=timeout, **kwargs)


def call_i32(library: Path, symbol: str, arg: int) -> int:
    """Calls int32_t SYMBOL(int32_t) in an Android .so under emulation."""
    proc = run(["call-i32", str(library), symbol, str(arg)], text=True)
    if proc.returncode != 0:
        raise HarnessError(f"harness failed ({proc.returncode}): {proc.stderr.strip()}")
    return int(proc.stdout.strip())


def _failed(proc: subprocess.CompletedProcess) -> HarnessError:
    """The harness's last stderr line (its one-line reason) as an error."""
    message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return HarnessError(f"harness failed ({proc.returncode}): {message.removeprefix('harness: ')}")


def load(library: Path) -> str:
    """Loads a Pare runtime .so under emulation and resolves its C API (the
    harness's `load` mode); returns the harness's line."""
    proc = run(["load", str(library)], text=True)
    if proc.returncode != 0:
        raise _failed(proc)
    return proc.stdout.strip()


@dataclass(frozen=True)
class TensorData:
    """A contiguous tensor crossing the harness boundary: ScalarType code,
    sizes, and its little-endian element bytes."""

    dtype: int
    sizes: tuple[int, ...]
    data: bytes


def run_program(
    library: Path,
    program: bytes,
    method: str,
    inputs: list[TensorData],
    timeout: float = 600,
    earlier: Sequence[list[TensorData]] = (),
) -> list:
    """Runs METHOD of a Pare program on an Android runtime .so under emulation
    (the harness's `run` mode). Returns one entry per output: TensorData,
    int, float, bool, or None for other value kinds. `earlier`: the inputs of
    calls run first, in order, on the same method instance (a program with
    state sees what they left)."""
    return run_program_on(library, program, method, inputs, timeout=timeout, earlier=earlier)[0]


def run_program_on(
    library: Path,
    program: bytes,
    method: str,
    inputs: list[TensorData],
    timeout: float = 600,
    cpu: str | None = None,
    max_isa: str | None = None,
    earlier: Sequence[list[TensorData]] = (),
    threads: int | None = None,
) -> tuple[list, str]:
    """run_program on qemu's CPU model `cpu`, with the runtime's kernels
    capped at `max_isa` and the method on `threads` threads (run());
    returns the outputs and the ISA the kernels ran (pare_kernel_isa after
    the call)."""
    with tempfile.TemporaryDirectory(prefix="pare-run-") as tmp:
        root = Path(tmp)
        (root / "program.pare").write_bytes(program)
        out_dir = root / "out"
        out_dir.mkdir()
        specs: list[str] = []
        for c, call in enumerate([*earlier, inputs]):
            if c > 0:
                specs.append("--")  # the harness's next execute
            for i, t in enumerate(call):
                path = root / f"call{c}_input{i}.bin"
                path.write_bytes(t.data)
                specs.append(f"{t.dtype}:{'x'.join(str(s) for s in t.sizes)}:{path}")
        proc = run(
            ["run", str(Path(library).resolve()), str(root / "program.pare"), method, str(out_dir), *specs],
            timeout=timeout,
            text=True,
            cpu=cpu,
            max_isa=max_isa,
            threads=threads,
        )
        if proc.returncode != 0:
            raise _failed(proc)
        outputs: list = []
        kernel_isa = ""
        for line in proc.stdout.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "kernel_isa":
                kernel_isa = fields[1]
            if len(fields) < 3 or fields[0] != "output":
                continue
            index, kind = int(fields[1]), fields[2]
            if kind == "tensor":
                dtype, ndim = int(fields[3]), int(fields[4])
                sizes = tuple(int(s) for s in fields[5 : 5 + ndim])
                outputs.append(TensorData(dtype, sizes, (out_dir / f"output{index}.bin").read_bytes()))
            elif kind == "int":
                outputs.append(int(fields[3]))
            elif kind == "double":
                outputs.append(float(fields[3]))
            elif kind == "bool":
                outputs.append(fields[3] != "0")
            else:
                outputs.append(None)
        return outputs, kernel_isa


@one_line_errors(HarnessError, OSError, ValueError)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.android_harness.run", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    call = sub.add_parser("call-i32", help="call int32_t SYMBOL(int32_t) in an Android .so")
    call.add_argument("library", type=Path)
    call.add_argument("symbol")
    call.add_argument("arg", type=int)
    loads = sub.add_parser("load", help="load a Pare runtime .so and resolve its C API (what tools.verify --load runs)")
    loads.add_argument("library", type=Path)
    prog = sub.add_parser(
        "run",
        help="run a method of a Pare program on an Android runtime .so; prints the "
        "harness's output lines (tensor data stays in its temporary directory)",
    )
    prog.add_argument("library", type=Path)
    prog.add_argument("program", type=Path)
    prog.add_argument("method")
    prog.add_argument(
        "inputs",
        nargs="*",
        metavar="DTYPE:SIZES:FILE",
        help="ScalarType code, sizes joined by 'x', raw little-endian element file",
    )
    args = parser.parse_args(argv)
    if args.cmd == "call-i32":
        print(call_i32(args.library, args.symbol, args.arg))
    elif args.cmd == "load":
        print(load(args.library))
    else:
        inputs = []
        for spec in args.inputs:
            dtype, sizes, path = spec.split(":", 2)
            inputs.append(TensorData(int(dtype), tuple(int(s) for s in sizes.split("x") if s), Path(path).read_bytes()))
        for i, out in enumerate(run_program(args.library, args.program.read_bytes(), args.method, inputs)):
            if isinstance(out, TensorData):
                print(f"output {i} tensor dtype={out.dtype} sizes={list(out.sizes)} bytes={len(out.data)}")
            else:
                print(f"output {i} {out!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
