"""Compiles runtime/ into a shared library for tests, the way the Bazel
pare_cc_library macro does (same flags), with a chosen selection directory
and PAL. Outputs are cached by a hash of every input."""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SELECTION = REPO / "runtime" / "selection" / "default"
CXX = os.environ.get("PARE_CXX", "clang++-16")
HOUSE_FLAGS = [
    "-std=c++17", "-ffreestanding", "-fno-exceptions", "-fno-rtti", "-fvisibility=hidden",
    "-ffunction-sections", "-fdata-sections", "-Wall", "-Wextra", "-Werror",
]
PAL_SOURCES = {"posix": "runtime/pal/pal_posix.cc", "test_double": "runtime/pal/pal_test_double.cc"}
# The runtime library proper, as runtime/BUILD.bazel's :srcs (other folders
# under runtime/, such as jni/, are separate targets built on the C API).
RUNTIME_DIRS = ("core", "kernels", "c_api", "pal")


def runtime_files(suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for d in RUNTIME_DIRS for p in (REPO / "runtime" / d).rglob("*") if p.suffix in suffixes)


def runtime_sources(pal: str = "posix") -> list[Path]:
    """Every runtime library source except the PALs not chosen."""
    excluded = {REPO / p for name, p in PAL_SOURCES.items() if name != pal}
    return [p for p in runtime_files((".cc", ".c")) if p not in excluded]


def _inputs_hash(flags: list[str], selection_dir: Path) -> str:
    h = hashlib.sha256()
    h.update(repr((CXX, flags)).encode())
    files = runtime_files((".cc", ".c", ".h", ".def", ".inc"))
    files += sorted(p for p in Path(selection_dir).rglob("*.h"))
    for p in files:
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(cache_root: Path, name: str, *, selection_dir: Path, defines=(), pal: str = "posix",
          opt: str = "-O2") -> Path:
    """Builds (or reuses) the runtime library `name` with the chosen PAL.

    Objects are compiled once per (sources, flags, selection) for every PAL
    and shared by the per-PAL libraries linked from them. Safe when several
    pytest sessions share the cache: objects are compiled in a private
    directory renamed into place, and libraries are linked to a private file
    renamed into place, so no session sees another's half-built output."""
    flags = HOUSE_FLAGS + [opt, "-fPIC", f"-I{REPO}", f"-I{selection_dir}"] + [f"-D{d}" for d in defines]
    objects_dir = _objects(Path(cache_root), name, flags, selection_dir)
    lib = objects_dir / (f"libpare_{name}.so" if pal == "posix" else f"libpare_{name}_{pal}.so")
    if lib.is_file():
        return lib
    excluded = {_object_name(REPO / p) for other, p in PAL_SOURCES.items() if other != pal}
    objects = sorted(p for p in (objects_dir / "obj").glob("*.o") if p.name not in excluded)
    tmp = objects_dir / f".{lib.name}.{os.getpid()}.tmp"
    link = [CXX, "-shared", "-nostdlib++", "-fuse-ld=lld", "-Wl,--gc-sections", "-Wl,-z,defs",
            "-o", str(tmp), *map(str, objects), "-lm", "-lc"]
    result = subprocess.run(link, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"linking {lib.name} failed:\n{result.stderr}")
    os.replace(tmp, lib)
    return lib


def _object_name(src: Path) -> str:
    return str(src.relative_to(REPO)).replace("/", "_") + ".o"


def _objects(cache_root: Path, name: str, flags: list[str], selection_dir: Path) -> Path:
    """The directory holding every runtime source (all PALs) compiled with `flags`."""
    out_dir = cache_root / f"{name}-{_inputs_hash(flags, selection_dir)}"
    if (out_dir / "objects.complete").is_file():
        return out_dir
    if shutil.which(CXX) is None:
        raise RuntimeError(f"{CXX} not found: install clang-16 or set PARE_RUNTIME_LIB to a prebuilt runtime")
    cache_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=cache_root))
    try:
        (work / "obj").mkdir()
        sources = runtime_files((".cc", ".c"))

        def compile_one(src: Path) -> None:
            result = subprocess.run([CXX, *flags, "-c", str(src), "-o", str(work / "obj" / _object_name(src))],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"compiling {src.relative_to(REPO)} failed:\n{result.stderr}")

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(compile_one, sources))
        (work / "objects.complete").touch()
        try:
            os.rename(work, out_dir)
        except OSError:
            if not (out_dir / "objects.complete").is_file():  # a leftover: replace it
                shutil.rmtree(out_dir, ignore_errors=True)
                os.rename(work, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # another session won the race
    _prune(cache_root, name, keep=out_dir)
    return out_dir


def _prune(cache_root: Path, name: str, keep: Path, idle_seconds: float = 3600) -> None:
    """Removes older builds of `name` nobody has touched for an hour."""
    now = time.time()
    for old in cache_root.glob(f"{name}-*"):
        if old != keep and now - old.stat().st_mtime > idle_seconds:
            shutil.rmtree(old, ignore_errors=True)


def write_selection(directory: Path, ops: list[str], kernel_dtypes: dict[str, list[str]], classes: list[str],
                    features: list[str]) -> Path:
    """Writes a pare_selection/ directory in the docs/selection.md format."""
    sel = Path(directory) / "pare_selection"
    sel.mkdir(parents=True, exist_ok=True)
    (sel / "selected_ops.h").write_text(
        "#pragma once\n#define TORCH_OPERATOR_ALLOWLIST \"" + "".join(f"{o};" for o in ops) + "\"\n"
        '#define PARE_MANIFEST_NAME "tests/runtime custom selection"\n')
    terms = []
    for tag, dts in kernel_dtypes.items():
        alts = " || ".join(f"t == ScalarType::{d}" for d in dts)
        terms.append(f"(detail::str_eq(tag, \"{tag}\") && ({alts}))")
    (sel / "selected_kernel_dtypes.h").write_text(
        "#pragma once\n#include \"runtime/core/scalar_type.h\"\nnamespace pare {\n"
        "constexpr bool should_include_kernel_dtype(const char* tag, ScalarType t) {\n  return "
        # An empty selection must still use both parameters (-Werror).
        + ("\n      || ".join(terms) if terms else "(void)tag, (void)t, false") + ";\n}\n}  // namespace pare\n")
    (sel / "selected_classes.h").write_text(
        "#pragma once\n#define TORCH_CUSTOM_CLASS_ALLOWLIST \"" + "".join(f"{c};" for c in classes) + "\"\n"
        "#define TORCH_BUILD_FEATURE_ALLOWLIST \"" + "".join(f"{f};" for f in features) + "\"\n")
    return Path(directory)
