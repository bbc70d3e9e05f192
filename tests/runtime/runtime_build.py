"""Compiles runtime/ into a shared library for tests, the way the Bazel
pare_cc_library macro does (same flags), with a chosen selection directory
and PAL. Outputs are cached by a hash of every input.

What it compiles and with which flags is Bazel's: the runtime's layers and
their files, the house flags, the ISA levels' flags and the kernels' ISA
copies come from //tests:runtime_compile_info (compile_info()), never from
lists of its own.

The full selection (runtime/selection/default) is compiled to machine code
throughout: everything is selected, so there is nothing to delete. Any
other selection is built as selective_runtime builds an app: the layers
above the core to bitcode (shared by every selection), the selection unit
against the selection's headers, then rules/private/select_link.sh, which
folds the selection and deletes what it leaves out (docs/bazel.md).

With PARE_SANITIZE set (e.g. "address,undefined", as tools/sanitize.sh does)
every library is built with those sanitizers on top of the house flags, so
the same fixtures give sanitized runtimes. The process that loads them must
have the ASan runtime preloaded (see sanitizer_env)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).absolute().parents[2]
DEFAULT_SELECTION = REPO / "runtime" / "selection" / "default"
CXX = os.environ.get("PARE_CXX", "clang++-16")
SANITIZE_ENV = "PARE_SANITIZE"
SELECT_LINK = REPO / "rules" / "private" / "select_link.sh"
# Where Bazel's //runtime:bitcode is (tools/run_tests.sh sets it).
BITCODE_DIR_ENV = "PARE_RUNTIME_BITCODE_DIR"
# --//runtime:x86_64_isa=baseline: the compiler's default x86_64 target,
# spelled out so that the runtime is compiled here from its sources (with
# no ISA define) rather than folded from Bazel's bitcode, which is at the
# default level, auto.
X86_64_BASELINE_FLAGS = ("-march=x86-64",)

# What to compile and how comes from Bazel: //tests:runtime_compile_info
# (rules/private/compile_info.bzl) writes the runtime's layers and files,
# the house flags pare_cc_library applies, and the flags of the x86_64 ISA
# levels and of the kernel copies, so these builds cannot drift from the
# shipped ones. In a Bazel test it is a data dep; tools/run_tests.sh and
# tools/sanitize.sh build it once and name it in COMPILE_INFO_ENV; otherwise
# the first build here builds it.
COMPILE_INFO_TARGET = "//tests:runtime_compile_info"
COMPILE_INFO_FILE = Path("tests") / "runtime_compile_info.json"
COMPILE_INFO_ENV = "PARE_RUNTIME_COMPILE_INFO"
# tests/pytest_main.py: a Bazel test's runfiles tree, where its data deps are.
BAZEL_OUTPUTS_ENV = "PARE_BAZEL_OUTPUTS"


def compile_info_path() -> Path:
    """runtime_compile_info.json: COMPILE_INFO_ENV's, a Bazel test's data
    dep, or else built with tools/bazel (the path is then put in
    COMPILE_INFO_ENV, for the processes started from this one)."""
    value = os.environ.get(COMPILE_INFO_ENV)
    if value:
        if not Path(value).is_file():
            raise RuntimeError(f"{COMPILE_INFO_ENV}={value} does not exist: build {COMPILE_INFO_TARGET}")
        return Path(value)
    outputs = os.environ.get(BAZEL_OUTPUTS_ENV)
    if outputs:
        path = Path(outputs) / COMPILE_INFO_FILE
        if not path.is_file():
            raise RuntimeError(f"this Bazel test lacks {COMPILE_INFO_FILE}: add {COMPILE_INFO_TARGET} to its data")
        return path
    result = subprocess.run(
        [str(REPO / "tools" / "bazel"), "build", COMPILE_INFO_TARGET],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=compiler_env(),
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"tools/bazel build {COMPILE_INFO_TARGET} failed (or build it first and set {COMPILE_INFO_ENV} "
            f"to bazel-bin/{COMPILE_INFO_FILE}, as tools/run_tests.sh does):\n{result.stderr[-4000:]}"
        )
    # The file itself, not bazel-bin's link, which a build in another configuration repoints.
    path = (REPO / "bazel-bin" / COMPILE_INFO_FILE).resolve()
    os.environ[COMPILE_INFO_ENV] = str(path)
    return path


@functools.cache
def compile_info() -> dict:
    """The runtime's layers, files and flags as Bazel has them (rules/private/compile_info.bzl)."""
    return json.loads(compile_info_path().read_text())


def _layer_files(layers, suffixes: tuple[str, ...]) -> list[Path]:
    """The files of `layers` (names of runtime/'s folders) whose suffix is in `suffixes`, sorted."""
    info = compile_info()["layers"]
    return sorted(
        {REPO / f for name in layers for f in info[name]["srcs"] + info[name]["hdrs"] if Path(f).suffix in suffixes}
    )


def _house_flags() -> list[str]:
    return list(compile_info()["house_copts"])


def _isa_flags(level: str) -> tuple[str, ...]:
    """--//runtime:x86_64_isa=`level`'s flags (rules/private/isa.bzl)."""
    return tuple(compile_info()["x86_64_isa_levels"][level])


def _x86_64_copies() -> tuple[tuple[str, Path, tuple[str, ...]], ...]:
    """(level, source, flags) of each copy of the dispatched kernels that a
    runtime at level auto compiles once more for a higher level (the v3
    kernels with -march=x86-64-v3, the AVX-512 tile with -march=x86-64-v4)."""
    copies = compile_info()["x86_64_copies"]
    return tuple(
        (level, REPO / src, tuple(copies[level]["copts"])) for level in sorted(copies) for src in copies[level]["srcs"]
    )


def _selection_unit() -> Path:
    """The unit that holds a selection's link-time constants."""
    return REPO / compile_info()["selection_unit"]


def _pal_sources() -> dict[str, str]:
    return {name: srcs[0] for name, srcs in compile_info()["pals"].items()}


def __getattr__(name: str):
    """The names tests and tools read, from compile_info(), built on first use
    (importing this module never runs Bazel): HOUSE_FLAGS (the house flags),
    BITCODE_FLAGS (the layers selective_runtime compiles to bitcode),
    X86_64_V3_FLAGS and X86_64_AUTO_FLAGS (--//runtime:x86_64_isa=v3's and
    auto's: the flags every unit gets at auto), X86_64_COPIES
    (_x86_64_copies), SELECTION_UNIT and PAL_SOURCES (a PAL's name, as
    build(pal=...) takes it, to its source)."""
    values = {
        "HOUSE_FLAGS": _house_flags,
        "BITCODE_FLAGS": lambda: list(compile_info()["bitcode_copts"]),
        "X86_64_V3_FLAGS": lambda: _isa_flags("v3"),
        "X86_64_AUTO_FLAGS": lambda: _isa_flags("auto"),
        "X86_64_COPIES": _x86_64_copies,
        "SELECTION_UNIT": _selection_unit,
        "PAL_SOURCES": _pal_sources,
    }
    if name not in values:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return values[name]()


def _x86_64_auto(extra_flags) -> bool:
    """Whether a build on this host is at level auto: x86_64, no -march of its own."""
    return platform.machine() in ("x86_64", "AMD64") and not any(f.startswith("-march") for f in extra_flags)


def level_flags(extra_flags=()) -> list[str]:
    """The defines library_objects() adds for the x86-64 level `extra_flags`
    give: X86_64_AUTO_FLAGS at level auto, none otherwise (fuzz/build.py
    compiles its coverage-instrumented layers with them)."""
    return list(_isa_flags("auto")) if _x86_64_auto(extra_flags) else []


def sanitizers() -> tuple[str, ...]:
    """The sanitizers PARE_SANITIZE asks for ("" or unset: none)."""
    return tuple(s for s in os.environ.get(SANITIZE_ENV, "").replace(" ", "").split(",") if s)


def sanitizer_compile_flags(names: tuple[str, ...]) -> list[str]:
    if not names:
        return []
    # No recovery: the first UBSan finding aborts like an ASan one, so a
    # report can never scroll past in a passing run. Frame pointers and
    # line tables make the reports' stacks readable at little build cost.
    return [
        f"-fsanitize={','.join(names)}",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
        "-gline-tables-only",
    ]


def asan_runtime() -> Path:
    """clang's shared ASan runtime (it carries UBSan's handlers too): the
    library to LD_PRELOAD into a process that dlopens a sanitized runtime."""
    clang = CXX.replace("clang++", "clang")
    out = subprocess.run(
        [clang, "-print-file-name=libclang_rt.asan-x86_64.so"], capture_output=True, text=True, env=compiler_env()
    ).stdout.strip()
    if not out or not Path(out).is_file():
        raise RuntimeError(f"{clang} has no shared ASan runtime: install libclang-rt-16-dev (make setup does)")
    return Path(out)


# halt_on_error and exitcode: the first report ends the process with a
# status pytest cannot turn into a pass. detect_leaks=0: CPython and torch
# keep allocations alive at exit by design. alloc_dealloc_mismatch=0 and
# the ODR check: torch's own libraries trip them, not Pare's code.
# allocator_may_return_null: an impossible allocation fails as with libc
# (the runtime reports OutOfMemory) instead of being an ASan report.
ASAN_OPTIONS = (
    "halt_on_error=1:exitcode=86:detect_leaks=0:alloc_dealloc_mismatch=0:detect_odr_violation=0:"
    "allocator_may_return_null=1"
)
UBSAN_OPTIONS = "halt_on_error=1:exitcode=86:print_stacktrace=1"


def sanitizer_env(log_dir: Path | None = None) -> dict[str, str]:
    """Environment for a Python process that loads sanitized runtimes."""
    env = {"LD_PRELOAD": str(asan_runtime()), "ASAN_OPTIONS": ASAN_OPTIONS, "UBSAN_OPTIONS": UBSAN_OPTIONS}
    if log_dir is not None:
        env["ASAN_OPTIONS"] += f":log_path={log_dir}/asan"
        env["UBSAN_OPTIONS"] += f":log_path={log_dir}/ubsan"
    return env


def check_sanitizer_runtime_loaded() -> None:
    """Raises with the fix when PARE_SANITIZE is set but this process lacks
    the ASan runtime (dlopen of a sanitized runtime would abort it)."""
    if not sanitizers():
        return
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").is_file() else ""
    if "libclang_rt.asan" not in maps:
        raise RuntimeError(
            f"{SANITIZE_ENV}={os.environ[SANITIZE_ENV]} needs clang's ASan runtime preloaded: "
            "run `make sanitize` (tools/sanitize.sh), or set LD_PRELOAD=$(clang-16 "
            "-print-file-name=libclang_rt.asan-x86_64.so) and ASAN_OPTIONS=detect_leaks=0"
        )


# Fixtures that need a runtime other than the full one (the instrumentation
# and selective builds: each one more complete compile under sanitizers).
OTHER_BUILD_FIXTURES = frozenset({"tracing_runtime", "selective_runtime", "selective_lib", "selection_cache"})
FULL_ONLY_ENV = "PARE_SANITIZE_FULL_ONLY"


# Tests that assert unselected code is absent from a selective runtime's
# binary (its symbols). Under the sanitizers they are deselected: ASan
# registers every instrumented global at start-up, so a sanitized selective
# runtime keeps data the selection leaves out (a conv3d stride table in a
# conv2d-only runtime, seen). `make test` runs them on the plain builds.
ABSENCE_MARK = "absent_code"


# Tests that need the whole runtime built at one ISA level (the v3 and SSE2
# runtimes: runtime_v3_lib, runtime_baseline_lib, or the mark on a parameter
# that takes one through getfixturevalue). Under the sanitizers they are
# deselected: each is one more complete compile under ASan (about 6 minutes
# of the 2-core CI machine's), for kernels the sanitized auto runtime already
# runs capped at those levels (tests/runtime/test_isa.py's auto_v3 and
# auto_sse2 copies, pare_set_max_isa). `make test` runs them plainly.
ISA_BUILD_MARK = "isa_level_build"
ISA_BUILD_FIXTURES = frozenset({"runtime_v3_lib", "runtime_baseline_lib"})


def _needs_isa_build(item) -> bool:
    return bool(ISA_BUILD_FIXTURES & set(getattr(item, "fixturenames", ()))) or bool(
        item.get_closest_marker(ISA_BUILD_MARK)
    )


def deselect_other_builds(config, items) -> None:
    """Under PARE_SANITIZE, deselects the tests marked ABSENCE_MARK and those
    that need a runtime built at one ISA level (ISA_BUILD_MARK); with
    PARE_SANITIZE_FULL_ONLY=1 too, the tests that need another runtime build
    than the full one."""
    if sanitizers():
        dropped = [i for i in items if i.get_closest_marker(ABSENCE_MARK) or _needs_isa_build(i)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i not in dropped]
    if os.environ.get(FULL_ONLY_ENV) != "1":
        return
    keep = [i for i in items if not OTHER_BUILD_FIXTURES & set(getattr(i, "fixturenames", ()))]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def cache_root(config) -> Path:
    """Where a pytest session keeps the runtimes it builds: pytest's cache
    (.pytest_cache/d/pare_runtime), or, in a Bazel test (tests/pytest_main.py
    runs without the cache plugin), the test's own TEST_TMPDIR."""
    cache = getattr(config, "cache", None)
    if cache is None:
        root = Path(os.environ.get("TEST_TMPDIR") or tempfile.gettempdir()) / "pare_runtime"
        root.mkdir(parents=True, exist_ok=True)
        return root
    return Path(cache.mkdir("pare_runtime"))


def compiler_env() -> dict[str, str]:
    """The environment for compiler runs: never the sanitizer preload of a
    sanitized test process (clang itself is not instrumented)."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def runtime_files(suffixes: tuple[str, ...]) -> list[Path]:
    """The files of every layer of the runtime library (every folder of
    runtime/README.md; other folders under runtime/, such as jni/, are
    separate targets built on the C API) whose suffix is in `suffixes`."""
    return _layer_files(compile_info()["layers"], suffixes)


def runtime_sources(pal: str = "posix") -> list[Path]:
    """Every runtime library source except the PALs not chosen."""
    excluded = {REPO / p for name, p in _pal_sources().items() if name != pal}
    return [p for p in runtime_files((".cc", ".c")) if p not in excluded]


def _inputs_hash(flags: list[str], selection_dir: Path | None, sources: list[Path] | None = None) -> str:
    h = hashlib.sha256()
    h.update(repr((CXX, flags, [str(p) for p in sources or ()])).encode())
    files = runtime_files((".cc", ".c", ".h", ".def", ".inc"))
    if selection_dir is not None:
        files += sorted(p for p in Path(selection_dir).rglob("*.h"))
    for p in files:
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(
    cache_root: Path,
    name: str,
    *,
    selection_dir: Path,
    defines=(),
    pal: str = "posix",
    opt: str = "-O2",
    extra_flags=(),
    kernels: bool | Sequence[str] = True,
) -> Path:
    """Builds (or reuses) the runtime library `name` with the chosen PAL.
    `kernels=False` leaves the kernels out of a selection that selects no
    operator (nothing would reach them); a list of globs under
    runtime/kernels compiles only those kernel sources, for a selection whose
    operators they hold (a cheaper compile with flags Bazel's bitcode lacks).

    Objects are compiled once per (sources, flags, selection) for every PAL
    and shared by the per-PAL libraries linked from them. Safe when several
    pytest sessions share the cache: objects are compiled in a private
    directory renamed into place, and libraries are linked to a private file
    renamed into place, so no session sees another's half-built output."""
    sanitize = sanitizers()
    select = Path(selection_dir).resolve() != DEFAULT_SELECTION.resolve()
    options = _Options(selection_dir, defines, pal, opt, sanitize, extra_flags)
    if select:
        objects = selected_objects(cache_root, name, options, kernels)
        objects_dir = objects[-1].parents[1]
    else:
        objects, objects_dir = _library_objects(cache_root, name, **options._asdict())
    if sanitize:
        name = "_".join((name, *sanitize))
    lib = objects_dir / (f"libpare_{name}.so" if pal == "posix" else f"libpare_{name}_{pal}.so")
    if lib.is_file():
        return lib
    tmp = objects_dir / f".{lib.name}.{os.getpid()}.tmp"
    link = [
        CXX,
        "-shared",
        "-nostdlib++",
        "-fuse-ld=lld",
        "-Wl,--gc-sections",
        "-Wl,-z,defs",
        "-o",
        str(tmp),
        *(
            a
            for o in objects
            for a in (["-Wl,--whole-archive", str(o), "-Wl,--no-whole-archive"] if o.suffix == ".a" else [str(o)])
        ),
        "-lm",
        "-lc",
    ]
    if sanitize:
        # The shared sanitizer runtime: one copy per process, the preloaded one.
        link[1:1] = [f"-fsanitize={','.join(sanitize)}", "-shared-libsan"]
    result = subprocess.run(link, capture_output=True, text=True, env=compiler_env())
    if result.returncode != 0:
        raise RuntimeError(f"linking {lib.name} failed:\n{result.stderr}")
    os.replace(tmp, lib)
    return lib


class _Options(NamedTuple):
    """What a runtime is compiled with: library_objects' keyword arguments,
    which build() gives selected_objects too."""

    selection_dir: Path
    defines: Sequence[str] = ()
    pal: str = "posix"
    opt: str = "-O2"
    sanitize: tuple[str, ...] = ()
    extra_flags: Sequence[str] = ()


# Defines only the root layers read (runtime/registry/observer.h): the
# kernels are compiled without them, so the instrumentation build links the
# plain build's kernel objects, as Bazel's does (rules/private/transitions.bzl,
# plain_kernels_transition; tests/runtime/test_portability.py keeps the
# kernels blind to them).
ROOT_ONLY_DEFINES = frozenset({"PARE_TRACING"})


def library_objects(cache_root: Path, name: str, **options) -> list[Path]:
    """The objects build() links for `options` (_Options' fields; fuzz/build.py
    reuses the sanitized full runtime's kernels from here): the runtime's
    objects (one PAL's) compiled with the house flags, plus `sanitize` (e.g.
    ("address", "undefined")) and `extra_flags` such as X86_64_V3_FLAGS; at
    level auto (no -march in `extra_flags`, on x86_64), with the v3 and v4
    copies of the dispatched kernels."""
    return _library_objects(cache_root, name, **options)[0]


def _library_objects(cache_root: Path, name: str, **options) -> tuple[list[Path], Path]:
    """library_objects(), and the directory a library linked from them goes
    in (keyed by every source and flag of the build)."""
    selection_dir, defines, pal, opt, sanitize, extra_flags = _Options(**options)
    if sanitize:  # its own cache name, so plain and sanitized builds never prune each other
        name = "_".join((name, *sanitize))
    kernel_defines = [d for d in defines if d.split("=")[0] not in ROOT_ONLY_DEFINES]
    flags = _compile_flags(opt, defines, sanitize, extra_flags) + [f"-I{selection_dir}"]
    kernel_flags = _compile_flags(opt, kernel_defines, sanitize, extra_flags) + [f"-I{selection_dir}"]
    # One cache name for every build's kernels: builds whose flags differ
    # only in ROOT_ONLY_DEFINES share one directory.
    kernels_name = "_".join(("kernels", *sanitize))
    copies = []
    if _x86_64_auto(extra_flags):
        flags += _isa_flags("auto")
        kernel_flags += _isa_flags("auto")
        copies = _x86_64_copy_objects(Path(cache_root), kernels_name, kernel_flags, selection_dir)
    info = compile_info()
    kernel_sources = _layer_files(info["kernel_layers"], (".cc",))
    kernel_set = set(kernel_sources)
    other_sources = [p for p in runtime_files((".cc", ".c")) if p not in kernel_set]
    kernels_dir = _objects(Path(cache_root), kernels_name, kernel_flags, selection_dir, kernel_sources)
    objects_dir = _objects(Path(cache_root), name, flags, selection_dir, other_sources)
    excluded = {_object_name(REPO / p) for other, p in _pal_sources().items() if other != pal}
    # The copies last, so that the linker keeps the baseline copy of an
    # inline function several compiled.
    objects = sorted(
        (p for d in (kernels_dir, objects_dir) for p in (d / "obj").glob("*.o") if p.name not in excluded),
        key=lambda p: p.name,
    )
    return objects + copies, objects_dir


def selected_objects(cache_root: Path, name: str, options: _Options, kernels: bool | Sequence[str]) -> list[Path]:
    """What build() links for a selection other than the full one, built as
    selective_runtime builds an app's runtime: the PAL as machine code, the
    layers above as bitcode with every kernel (compiled once, whatever the
    selection), the selection unit against `selection_dir`, folded together
    by rules/private/select_link.sh into one archive that holds only what
    the selection keeps.

    With the house flags only (no defines, sanitizers or extra flags) and
    PARE_RUNTIME_BITCODE_DIR set (tools/run_tests.sh: Bazel's
    //runtime:bitcode, the full runtime's own), the layers' bitcode is
    Bazel's, and only the selection unit is compiled here."""
    selection_dir, defines, pal, opt, sanitize, extra_flags = options
    if opt == "-O0":
        # optnone functions are never folded, so nothing would be deleted.
        raise ValueError("a selected runtime is built optimised (the selection is folded by LLVM's passes)")
    if sanitize:
        name = "_".join((name, *sanitize))
    flags = _compile_flags(opt, defines, sanitize, extra_flags)
    auto = _x86_64_auto(extra_flags)
    if auto:
        flags += _isa_flags("auto")
    info = compile_info()
    bitcode_flags = list(info["bitcode_copts"])
    machine = _layer_files(info["machine_code_layers"], (".cc",))
    excluded = {REPO / p for other, p in _pal_sources().items() if other != pal}
    base = _objects(Path(cache_root), f"{name}_base", flags, None, machine)
    selection_unit = _selection_unit()
    unit = _objects(
        Path(cache_root),
        f"{name}_selection",
        flags + bitcode_flags + [f"-I{selection_dir}"],
        selection_dir,
        [selection_unit],
    )
    prebuilt = os.environ.get(BITCODE_DIR_ENV)
    if prebuilt and not (defines or sanitize or extra_flags) and opt == "-O2":
        root_objects = [Path(prebuilt) / "api_bitcode.bc"]
        lazy = [Path(prebuilt) / "kernels_bitcode.bc"]
        missing = [str(p) for p in root_objects + lazy if not p.is_file()]
        if missing:
            raise RuntimeError(f"{BITCODE_DIR_ENV}={prebuilt} lacks {', '.join(missing)}: build //runtime:bitcode")
    else:
        # The roots layer by layer, dependencies first.
        roots = [p for d in info["root_layers"] for p in _layer_files([d], (".cc",)) if p != selection_unit]
        every_kernel = _layer_files(info["kernel_layers"], (".cc",))
        if isinstance(kernels, bool):
            kernel_sources = every_kernel if kernels else []
        else:
            dirs = [REPO / info["layers"][d]["package"] for d in info["kernel_layers"]]
            matched = {p for d in dirs for pattern in kernels for p in d.glob(pattern)}
            kernel_sources = [p for p in every_kernel if p in matched]
        bitcode_name = "_".join(("bitcode", *sanitize))
        bitcode = _objects(Path(cache_root), bitcode_name, flags + bitcode_flags, None, roots + kernel_sources)
        kernel_objects = {_object_name(p) for p in kernel_sources}
        lazy = sorted(p for p in (bitcode / "obj").glob("*.o") if p.name in kernel_objects)
        if auto and kernels is True:
            # Last, as in //runtime/kernels:kernels_bitcode: an inline
            # function both copies compiled is the baseline one.
            lazy += _x86_64_copy_objects(Path(cache_root), bitcode_name, flags + bitcode_flags, None)
        root_objects = sorted(p for p in (bitcode / "obj").glob("*.o") if p.name not in kernel_objects)
    if not kernels:
        lazy = []
    root_objects += sorted((unit / "obj").glob("*.o"))
    # Keyed by the machine-code objects too: build() links the library beside the archive.
    archive = _select_link(Path(cache_root), name, root_objects, lazy, flags, key=base.name)
    return [p for p in sorted((base / "obj").glob("*.o")) if not any(p.name == _object_name(e) for e in excluded)] + [
        archive
    ]


def _x86_64_copy_objects(cache_root: Path, name: str, flags: list[str], selection_dir: Path | None) -> list[Path]:
    """The objects of the dispatched kernels' x86-64 level copies (v3, v4), each compiled with its -march."""
    objects = []
    for level, source, march in _x86_64_copies():
        copy = _objects(cache_root, f"{name}_{level}", flags + list(march), selection_dir, [source])
        objects += sorted((copy / "obj").glob("*.o"))
    return objects


def _select_link(cache_root: Path, name: str, roots: list[Path], lazy: list[Path], flags: list[str], key: str) -> Path:
    """rules/private/select_link.sh over `roots` and `lazy`, cached by their bytes (and `key`)."""
    h = hashlib.sha256(repr((flags, key, [p.name for p in roots])).encode() + SELECT_LINK.read_bytes())
    for p in roots + lazy:
        h.update(p.read_bytes())
    out_dir = cache_root / f"{name}_selected-{h.hexdigest()[:16]}"
    archive = out_dir / "obj" / f"lib{name}_selected.a"
    if archive.is_file():
        return archive
    tools = [shutil.which(t) for t in ("llvm-link-16", "opt-16", "llvm-nm-16", "llvm-ar-16")]
    if None in tools:
        raise RuntimeError(
            "llvm-link-16, opt-16, llvm-nm-16 and llvm-ar-16 are needed: install llvm-16 (make setup does)"
        )
    (out_dir / "obj").mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "obj" / f".{archive.name}.{os.getpid()}.a"
    # Code generation with the compile's target flags; the rest of `flags`
    # (warnings, -std) means nothing for bitcode input.
    codegen = [f for f in flags if f.startswith(("-O", "-f", "-m", "--target"))]
    result = subprocess.run(
        ["sh", str(SELECT_LINK), str(tmp), *tools, "gnu", CXX, *codegen, "--", *map(str, roots), "--", *map(str, lazy)],
        capture_output=True,
        text=True,
        env=compiler_env(),
    )
    if result.returncode != 0:
        raise RuntimeError(f"rules/private/select_link.sh for {name} failed:\n{result.stderr}")
    os.replace(tmp, archive)
    _prune(cache_root, f"{name}_selected", keep=out_dir)
    return archive


def _compile_flags(opt: str, defines, sanitize: tuple[str, ...], extra_flags) -> list[str]:
    """The house flags at `opt`, with `defines`, the sanitizers and `extra_flags`."""
    # UBSan's function check needs the C++ ABI library's type_info, which a
    # freestanding runtime (-fno-rtti, linked -nostdlib++) does not link.
    no_function_check = ["-fno-sanitize=function"] if "undefined" in sanitize else []
    flags = _house_flags() + [opt, "-fPIC", f"-I{REPO}"] + [f"-D{d}" for d in defines]
    return flags + sanitizer_compile_flags(tuple(sanitize)) + no_function_check + list(extra_flags)


def _object_name(src: Path) -> str:
    return str(src.relative_to(REPO)).replace("/", "_") + ".o"


def _objects(
    cache_root: Path, name: str, flags: list[str], selection_dir: Path | None, sources: list[Path] | None = None
) -> Path:
    """The directory holding `sources` (default: every runtime source, all
    PALs) compiled with `flags`."""
    out_dir = cache_root / f"{name}-{_inputs_hash(flags, selection_dir, sources)}"
    if (out_dir / "objects.complete").is_file():
        _touch(out_dir)  # in use: _prune leaves it for another hour
        return out_dir
    if shutil.which(CXX) is None:
        raise RuntimeError(f"{CXX} not found: install clang-16 or set PARE_RUNTIME_LIB to a prebuilt runtime")
    cache_root.mkdir(parents=True, exist_ok=True)
    # One compiler per build at a time: a concurrent session (a pytest -n
    # worker) that asks for the same objects waits here, then reuses them.
    with _locked(cache_root / f".{out_dir.name}.lock"):
        if not (out_dir / "objects.complete").is_file():
            _compile_objects(cache_root, out_dir, flags, sources)
    _prune(cache_root, name, keep=out_dir)
    return out_dir


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except FileNotFoundError:  # pruned by another session a moment ago: it compiles again
        pass


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _compile_objects(cache_root: Path, out_dir: Path, flags: list[str], sources: list[Path] | None = None) -> None:
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=cache_root))
    try:
        (work / "obj").mkdir()
        sources = sources if sources is not None else runtime_files((".cc", ".c"))

        def compile_one(src: Path) -> None:
            result = subprocess.run(
                [CXX, *flags, "-c", str(src), "-o", str(work / "obj" / _object_name(src))],
                capture_output=True,
                text=True,
                env=compiler_env(),
            )
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


def _prune(cache_root: Path, name: str, keep: Path, idle_seconds: float = 3600) -> None:
    """Removes older builds of `name` nobody has touched for an hour, and their locks.

    Removing a lock another session still holds is harmless: both sessions
    then compile into temporary directories and the first rename wins
    (_compile_objects).
    """
    now = time.time()

    def idle(path: Path) -> bool:
        try:  # another session pruning at the same moment may have removed it
            return now - path.stat().st_mtime > idle_seconds
        except FileNotFoundError:
            return False

    for old in cache_root.glob(f"{name}-*"):
        if old != keep and idle(old):
            shutil.rmtree(old, ignore_errors=True)
    for lock in cache_root.glob(f".{name}-*.lock"):
        if lock.name != f".{keep.name}.lock" and idle(lock):
            lock.unlink(missing_ok=True)


def write_selection(
    directory: Path, ops: list[str], kernel_dtypes: dict[str, list[str]], classes: list[str], features: list[str]
) -> Path:
    """Writes a pare_selection/ directory in the docs/selection.md format."""
    sel = Path(directory) / "pare_selection"
    sel.mkdir(parents=True, exist_ok=True)
    (sel / "selected_ops.h").write_text(
        '#pragma once\n#define TORCH_OPERATOR_ALLOWLIST "' + "".join(f"{o};" for o in ops) + '"\n'
        '#define PARE_MANIFEST_NAME "tests/runtime custom selection"\n'
    )
    terms = []
    for tag, dts in kernel_dtypes.items():
        alts = " || ".join(f"t == ScalarType::{d}" for d in dts)
        terms.append(f'(detail::str_eq(tag, "{tag}") && ({alts}))')
    (sel / "selected_kernel_dtypes.h").write_text(
        '#pragma once\n#include "runtime/core/scalar_type.h"\nnamespace pare {\n'
        "constexpr bool should_include_kernel_dtype(const char* tag, ScalarType t) {\n  return "
        # An empty selection must still use both parameters (-Werror).
        + ("\n      || ".join(terms) if terms else "(void)tag, (void)t, false")
        + ";\n}\n}  // namespace pare\n"
    )
    (sel / "selected_classes.h").write_text(
        '#pragma once\n#define TORCH_CUSTOM_CLASS_ALLOWLIST "' + "".join(f"{c};" for c in classes) + '"\n'
        '#define TORCH_BUILD_FEATURE_ALLOWLIST "' + "".join(f"{f};" for f in features) + '"\n'
    )
    return Path(directory)


if __name__ == "__main__":
    # `runtime_build.py sanitizer-env [LOG_DIR]`: shell exports for a process
    # that loads sanitized runtimes; `runtime_build.py compile-info`: the
    # path of runtime_compile_info.json, built if need be (tools/sanitize.sh
    # runs both).
    import shlex
    import sys

    usage = "usage: python -m tests.runtime.runtime_build {sanitizer-env [LOG_DIR] | compile-info}"
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(
            f"{usage}\nsanitizer-env prints the shell exports that load sanitized runtimes; compile-info builds "
            f"{COMPILE_INFO_TARGET} if {COMPILE_INFO_ENV} is unset and prints its path (tools/sanitize.sh runs both)"
        )
        sys.exit(0)
    if sys.argv[1:] == ["compile-info"]:
        try:
            print(compile_info_path())
        except RuntimeError as e:
            sys.exit(f"runtime_build compile-info: {e}")
        sys.exit(0)
    if len(sys.argv) < 2 or sys.argv[1] != "sanitizer-env":
        sys.exit(usage)
    for key, value in sanitizer_env(Path(sys.argv[2]) if len(sys.argv) > 2 else None).items():
        print(f"export {key}={shlex.quote(value)}")
