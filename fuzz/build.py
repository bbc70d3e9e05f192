"""Builds the libFuzzer targets into build/fuzz/ (cached: rebuilt only when
the runtime's sources, the selection or a harness change).

    .venv/bin/python -m fuzz.build            # prints the binaries' paths

The runtime is the full runtime with the default selection, compiled with
the house flags as tests/runtime/runtime_build.py compiles it:
- the loader's code (every layer but the kernels: runtime/core, registry,
  executor, c_api, pal) with
  -fsanitize=fuzzer-no-link,address,undefined, so libFuzzer's coverage
  guides the mutations through every check the loader makes;
- the kernels with -fsanitize=address,undefined only: they are exactly the
  objects of `make sanitize`'s full runtime (shared through pytest's cache,
  so one compile serves both). Coverage instrumentation of the template-heavy
  kernels would multiply their compile time for little guidance.
Each harness is linked statically with -fsanitize=fuzzer,address,undefined.
At level auto (x86_64, tests/runtime/runtime_build.py), every layer is
compiled with the x86-64 dispatch define, as the kernels are, so the
harness's pare_set_max_isa choices reach the x86-64-v3 (and v4) kernels.

`replay()` links the same harness with replay_main.cc against a shared
runtime (the one tests/fuzz tests, sanitized under PARE_SANITIZE), to run
saved inputs without libFuzzer.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from tests.runtime import runtime_build

REPO = Path(__file__).absolute().parents[1]

OUT = REPO / "build" / "fuzz"
PYTEST_RUNTIME_CACHE = REPO / ".pytest_cache" / "d" / "pare_runtime"  # tests/runtime/conftest.py's
LOADER_HARNESS = REPO / "fuzz" / "loader_fuzzer.cc"
# Each libFuzzer binary's sources: the harness first.
HARNESSES = {"loader_fuzzer": [LOADER_HARNESS, REPO / "fuzz" / "memory_budget.cc"]}
REPLAY_MAIN = REPO / "fuzz" / "replay_main.cc"
SANITIZE = ("address", "undefined")
COVERED_DIRS = ("core", "registry", "executor", "c_api", "pal")
HARNESS_FLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO}"]


def _compile(sources: list[Path], flags: list[str]) -> list[Path]:
    objects = []
    for src in sources:
        key = hashlib.sha256(repr((runtime_build.CXX, flags)).encode())
        for dep in [src, *runtime_build.runtime_files((".h", ".def", ".inc"))]:
            key.update(dep.read_bytes())
        obj = OUT / "obj" / f"{src.stem}-{key.hexdigest()[:16]}.o"
        if not obj.is_file():
            obj.parent.mkdir(parents=True, exist_ok=True)
            tmp = obj.with_suffix(f".{os.getpid()}.tmp")
            result = subprocess.run(
                [runtime_build.CXX, *flags, "-c", str(src), "-o", str(tmp)],
                capture_output=True,
                text=True,
                env=runtime_build.compiler_env(),
            )
            if result.returncode != 0:
                raise SystemExit(f"compiling {src.relative_to(REPO)} failed:\n{result.stderr}")
            os.replace(tmp, obj)
        objects.append(obj)
    return objects


def runtime_objects() -> list[Path]:
    covered = [
        p for p in runtime_build.runtime_sources("posix") if p.relative_to(REPO / "runtime").parts[0] in COVERED_DIRS
    ]
    flags = runtime_build.HOUSE_FLAGS + ["-O2", f"-I{REPO}", f"-I{runtime_build.DEFAULT_SELECTION}"]
    flags += runtime_build.sanitizer_compile_flags(("fuzzer-no-link", *SANITIZE))
    # As the kernels below are compiled: core's cpu.cc then picks their ISA.
    flags += runtime_build.level_flags()
    objects = _compile(covered, flags)
    return objects + [
        p
        for p in runtime_build.library_objects(
            PYTEST_RUNTIME_CACHE, "full", selection_dir=runtime_build.DEFAULT_SELECTION, sanitize=SANITIZE
        )
        if p.name.startswith("runtime_kernels_")
    ]


def build(name: str) -> Path:
    sources = HARNESSES[name]
    sanitize = runtime_build.sanitizer_compile_flags(("fuzzer", *SANITIZE))
    link = [
        runtime_build.CXX,
        *HARNESS_FLAGS,
        *sanitize,
        "-fuse-ld=lld",
        "-Wl,--wrap=pare_pal_malloc,--wrap=pare_pal_free",
        *map(str, sources),
        *map(str, runtime_objects()),
        "-lm",
    ]
    # Object names carry hashes of their inputs, so the key covers the
    # runtime, the selection, the harness and the command.
    key = hashlib.sha256(repr(link).encode() + b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    binary = OUT / name
    stamp = OUT / f".{name}.key"
    if binary.is_file() and stamp.is_file() and stamp.read_text() == key:
        return binary
    tmp = OUT / f".{name}.{os.getpid()}.tmp"
    result = subprocess.run([*link, "-o", str(tmp)], capture_output=True, text=True, env=runtime_build.compiler_env())
    if result.returncode != 0:
        raise SystemExit(f"building {name} failed:\n{result.stderr}")
    os.replace(tmp, binary)
    stamp.write_text(key)
    return binary


def replay(runtime_lib: Path, out_dir: Path, sanitize: tuple[str, ...] = ()) -> Path:
    """The loader harness with replay_main.cc, linked against `runtime_lib`
    (a shared full runtime; built with `sanitize`, so linked with clang's
    shared sanitizer runtime, as the library was): `out_dir/loader_replay
    FILE...` runs each saved input once. No memory budget (memory_budget.cc
    cannot wrap a shared library's own calls)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / "loader_replay"
    cmd = [runtime_build.CXX, *HARNESS_FLAGS, str(LOADER_HARNESS), str(REPLAY_MAIN), "-o", str(binary)]
    if sanitize:
        cmd += [*runtime_build.sanitizer_compile_flags(sanitize), "-shared-libsan"]
        cmd += [f"-Wl,-rpath,{runtime_build.asan_runtime().parent}"]
    cmd += [str(runtime_lib), f"-Wl,-rpath,{Path(runtime_lib).parent}"]
    result = subprocess.run(cmd, capture_output=True, text=True, env=runtime_build.compiler_env())
    if result.returncode != 0:
        raise RuntimeError(f"building the loader replay failed:\n{result.stderr}")
    return binary


def main() -> int:
    import argparse

    argparse.ArgumentParser(
        prog="python -m fuzz.build",
        description="Build the libFuzzer targets into build/fuzz/ (cached) and print their paths.",
    ).parse_args()
    for name in HARNESSES:
        print(build(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
