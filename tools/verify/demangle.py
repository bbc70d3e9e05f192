"""C++ demangling through LLVM's demangler, in one batch per binary.

LIEF demangles only in its "extended" build, so names go through
`llvm-cxxfilt` in a single subprocess (one line in, one line out). LLVM's
demangler is the reference: expected_symbols.json's `match` patterns are
written against its output (clang's lambda names `$_0`, `long long` on Apple
targets), and codegen's own tests use it (llvm-nm -C).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from tools.verify.errors import VerifyError

CXXFILT_ENV = "PARE_CXXFILT"
_LLVM_VERSION = "16"
# Searched on PATH in this order; `c++filt` last (on macOS it is LLVM's).
_PATH_NAMES = (f"llvm-cxxfilt-{_LLVM_VERSION}", "llvm-cxxfilt", "c++filt")
_WELL_KNOWN = (
    f"/usr/lib/llvm-{_LLVM_VERSION}/bin/llvm-cxxfilt",
    "/opt/homebrew/opt/llvm/bin/llvm-cxxfilt",
    "/usr/local/opt/llvm/bin/llvm-cxxfilt",
)


def find_cxxfilt(explicit: str | os.PathLike[str] | None = None) -> str:
    """The demangler to run: `explicit`, $PARE_CXXFILT, $PARE_LLVM_ROOT/bin, PATH, then well-known installs."""
    if explicit:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise VerifyError(f"--cxxfilt {explicit}: not an executable file; point it at llvm-cxxfilt")
        return str(path)
    env = os.environ.get(CXXFILT_ENV)
    if env:
        if not (Path(env).is_file() and os.access(env, os.X_OK)):
            raise VerifyError(f"{CXXFILT_ENV}={env}: not an executable file; point it at llvm-cxxfilt or unset it")
        return env
    llvm_root = os.environ.get("PARE_LLVM_ROOT")
    candidates = [str(Path(llvm_root) / "bin" / "llvm-cxxfilt")] if llvm_root else []
    for name in _PATH_NAMES:
        found = shutil.which(name)
        if found:
            candidates.append(found)
    candidates += list(_WELL_KNOWN)
    for c in candidates:
        if Path(c).is_file() and os.access(c, os.X_OK):
            return c
    raise VerifyError(
        f"no C++ demangler found (llvm-cxxfilt-{_LLVM_VERSION}, llvm-cxxfilt or c++filt): "
        f"install llvm-{_LLVM_VERSION} (tools/setup.sh does) or set {CXXFILT_ENV}=/path/to/llvm-cxxfilt"
    )


def is_mangled(name: str) -> bool:
    """Itanium C++ names start with _Z (after Mach-O's leading underscore is removed)."""
    return name.startswith("_Z")


def demangle_all(names: Sequence[str], cxxfilt: str | None = None) -> list[str]:
    """Demangles `names` (Itanium, no Mach-O underscore) in one subprocess; others pass through."""
    todo = sorted({n for n in names if is_mangled(n) and "\n" not in n})
    if not todo:
        return list(names)
    table = _run(tuple(todo), cxxfilt or find_cxxfilt())
    return [table.get(n, n) for n in names]


@lru_cache(maxsize=8)
def _run(todo: tuple[str, ...], tool: str) -> dict[str, str]:
    # -n: never strip a leading underscore ourselves; callers already did it
    # for Mach-O, and Apple's c++filt strips one by default.
    try:
        proc = subprocess.run(
            [tool, "-n"],
            input="\n".join(todo) + "\n",
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    except OSError as e:
        raise VerifyError(
            f"could not run the demangler {tool}: {e.strerror}; set {CXXFILT_ENV} to llvm-cxxfilt"
        ) from None
    out = proc.stdout.splitlines()
    if proc.returncode != 0 or len(out) != len(todo):
        detail = proc.stderr.strip().splitlines()[-1:] or [f"{len(out)} lines for {len(todo)} names"]
        raise VerifyError(f"the demangler {tool} failed ({detail[0]}); set {CXXFILT_ENV} to an LLVM llvm-cxxfilt")
    return dict(zip(todo, out))


def demangle(name: str, cxxfilt: str | None = None) -> str:
    return demangle_all([name], cxxfilt)[0]


def macho_c_name(name: str) -> str:
    """Mach-O prefixes every C-level name with `_`; names without it (ltmp0, dyld_stub_binder) are kept."""
    return name[1:] if name.startswith("_") else name


def strip_macho_underscore(names: Iterable[str]) -> list[str]:
    return [macho_c_name(n) for n in names]
