"""The runtime stays freestanding (docs/portable_cpp.md): every source
compiles for Android and iOS arm64 with no libc headers at all, with no
static constructors or exit-time destructors; no forbidden C++ constructs;
and the linked library needs nothing but libc and libm."""

import concurrent.futures
import os
import re
import subprocess
from pathlib import Path

import pytest
import runtime_build

from tests.conftest import require_tool

REPO = runtime_build.REPO
# The host build already compiles everything for x86_64; these two prove the
# cross builds need no SDK headers.
TARGETS = ["aarch64-linux-android24", "arm64-apple-ios14.0"]


@pytest.mark.parametrize("target", TARGETS)
def test_sources_compile_for_target_without_libc_headers(target):
    cxx = require_tool(runtime_build.CXX, package="clang-16")
    flags = runtime_build.HOUSE_FLAGS + [
        f"--target={target}",
        "-nostdlibinc",
        "-fsyntax-only",
        "-Wglobal-constructors",
        "-Wexit-time-destructors",
        f"-I{REPO}",
        f"-I{runtime_build.DEFAULT_SELECTION}",
        "-DPARE_TRACING=1",
    ]
    sources = runtime_build.runtime_sources("posix") + [REPO / runtime_build.PAL_SOURCES["test_double"]]

    def check(src: Path):
        r = subprocess.run([cxx, *flags, str(src)], capture_output=True, text=True)
        return src, r.returncode, r.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [(s, err) for s, rc, err in pool.map(check, sources) if rc != 0]
    assert not failures, "\n".join(f"{s.relative_to(REPO)}:\n{err}" for s, err in failures)


FORBIDDEN = [
    (
        r"#include <(c[a-z]+|new|utility|vector|string|map|memory|functional|algorithm|iostream|atomic|mutex|thread)>",
        "C++ standard library header",
    ),
    (r"#include <(stdio|stdlib|string|math|time|unistd|pthread)\.h>", "libc header (declare in runtime/pal/libc.h)"),
    (r"\bstd::", "std:: name"),
    (r"\bthread_local\b", "thread_local"),
    (r"\bthrow\b|\btry\s*\{|\bcatch\s*\(", "exceptions"),
    (r"\bdynamic_cast\b|\btypeid\b", "RTTI"),
    (r"\bnew\s+[A-Za-z_:]+\s*[\(\[{;]|\bdelete\s+[A-Za-z_]", "operator new/delete (use the PAL and placement new)"),
    (
        r'"[^"]*%[-+ #0-9.]*[fge][^"]*"',
        'a real in a message format (pass it as "%s", real_to_string(x).text: runtime/core/format.h)',
    ),
]


def test_no_forbidden_constructs():
    problems = []
    for path in runtime_build.runtime_files((".h", ".cc", ".c", ".inc", ".def")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            for pattern, what in FORBIDDEN:
                if re.search(pattern, code):
                    problems.append(f"{path.relative_to(REPO)}:{n}: {what}: {line.strip()}")
    assert not problems, "\n".join(problems)


def test_no_function_local_statics():
    # Function bodies are indented; namespace-scope statics are not.
    problems = []
    for path in runtime_build.runtime_files((".cc", ".h")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            # An indented `static` data declaration (no parenthesis before its
            # `=` or `;`) other than a constexpr member.
            if re.match(r"^\s+static\s+(?!constexpr\b)[^(]*[=;]", line):
                problems.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not problems, "\n".join(problems)


def test_kernels_never_see_the_instrumentation_build():
    # The instrumentation build links the plain build's kernels (the
    # kernels_transition of rules/private/select_link.bzl, and
    # runtime_build.library_objects), which is sound only while no kernel's
    # code depends on PARE_TRACING: no file a kernel includes, directly or
    # not, reads it (compiler.h only gives it its default) or includes the
    # observer, whose class it changes (comments may name it).
    include = re.compile(r'^\s*#\s*include\s+"(runtime/[^"]+)"', re.M)
    seen: set[Path] = set()
    todo = [p for p in runtime_build.runtime_files((".cc", ".h", ".inc")) if "kernels" in p.relative_to(REPO).parts]
    assert todo, "no kernel sources found"
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():  # generated inventory headers live in bazel-bin
            continue
        seen.add(path)
        todo += [REPO / name for name in include.findall(path.read_text())]
    observer = REPO / "runtime" / "registry" / "observer.h"
    readers = sorted(
        str(p.relative_to(REPO))
        for p in seen
        if p == observer or (p.name != "compiler.h" and "PARE_TRACING" in re.sub(r"//.*", "", p.read_text()))
    )
    assert not readers, (
        f"kernels include {', '.join(readers)}, which read PARE_TRACING: keep the instrumentation build's "
        "differences in the root layers (runtime/executor, the observer), out of the kernels' include closure"
    )


def libm_functions() -> set[str]:
    """The libm functions runtime/pal/libm.def lists, float and double (expf, exp, ...)."""
    text = (REPO / "runtime" / "pal" / "libm.def").read_text()
    names = re.findall(r"^PARE_LIBM_\w+\((\w+)\)$", text, flags=re.M)
    assert names, "runtime/pal/libm.def lists no function"
    return {n for name in names for n in (name, name + "f")}


ALLOWED_UNDEFINED = {
    # libc
    "posix_memalign",
    "free",
    "abort",
    "open",
    "read",
    "write",
    "lseek",
    "close",
    "clock_gettime",
    "memcpy",
    "memmove",
    "memset",
    "__cxa_finalize",
    "__stack_chk_fail",
    # Only with a delegate backend that reads a setting (the example backend,
    # runtime/kernels/delegate/example_backend.cc, through pare_pal_getenv;
    # the full runtime selects it): an app's runtime without one imports none
    "getenv",
    # Only with a delegate backend whose driver is a system library, loaded at
    # run time (the Vulkan backend's libvulkan, through pare_pal_library_open;
    # the full runtime selects it): libc's since glibc 2.34
    "dlopen",
    "dlsym",
    "dlclose",
    # POSIX threads: only with build feature threads (runtime/pal/pal_threads.cc;
    # tools/verify proves a runtime without it imports none)
    "pthread_create",
    "pthread_join",
    "pthread_mutex_init",
    "pthread_mutex_destroy",
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "pthread_cond_init",
    "pthread_cond_destroy",
    "pthread_cond_wait",
    "pthread_cond_broadcast",
} | libm_functions()


def test_library_needs_only_libc_and_libm(runtime_lib):
    nm = require_tool("llvm-nm-16", "llvm-nm", package="llvm-16")
    out = subprocess.run(
        [nm, "-D", "--undefined-only", str(runtime_lib)], capture_output=True, text=True, check=True
    ).stdout
    undefined = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip().startswith("U ")}
    assert undefined <= ALLOWED_UNDEFINED, f"unexpected dependencies: {sorted(undefined - ALLOWED_UNDEFINED)}"
