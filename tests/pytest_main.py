"""Runs one pytest suite as a Bazel test: `bazel test //tests:codegen_test`.

tests/BUILD.bazel declares each converted suite as a py_test whose main is
this file and whose first arguments are the suite's paths. Bazel runs it in
the test's runfiles tree, where the suite sees only its declared inputs, and
caches the result until one of them changes. The exit code is pytest's, with
5 ("no tests collected") made a failure, as tools/run_tests.sh does.

    pytest_main.py SUITE [SUITE...] [--bundle-env VAR=BUNDLE_DIR | --dir-env VAR=DIR ...] [PYTEST_ARGS...]

SUITE is a directory or test file, from the repository root; a target may
run several. PARE_BAZEL_OUTPUTS is set to the runfiles tree, so that
tests/conftest.py's bazel_build returns the test's data deps there instead
of running Bazel.

--bundle-env sets VAR to the linux_x86_64 shared library of the runtime
bundle at BUNDLE_DIR (a `data` dep such as //runtime:full, found through its
bundle.json), the way tools/run_tests.sh sets PARE_RUNTIME_LIB. --dir-env
sets VAR to DIR in the runfiles tree (a `data` dep's folder, such as
runtime/bitcode/linux_x86_64 for //runtime:bitcode's PARE_RUNTIME_BITCODE_DIR).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tools.bundle import load_bundle

# runfiles/<workspace>/tests/pytest_main.py -> runfiles/<workspace>
ROOT = Path(__file__).absolute().parents[1]

# Bazel's launcher runs this file as a script, so Python put the folder the
# file really lives in (tests/ of the source tree: symlinks resolved) first
# on sys.path. There the package tests/fuzz shadowed the fuzz package of the
# runfiles tree (`from fuzz import codegen_checks` failed in
# //tests:fuzz_test), and any import could read the source tree instead of
# the test's declared inputs. Imports resolve from the runfiles root.
if sys.path and sys.path[0] == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]


def main(argv: list[str]) -> int:
    if not argv:
        print(
            "usage: pytest_main.py SUITE [SUITE...] [--bundle-env VAR=BUNDLE_DIR | --dir-env VAR=DIR ...] [PYTEST_ARGS...]",
            file=sys.stderr,
        )
        return 2
    suites = []
    rest = list(argv)
    while rest and not rest[0].startswith("-"):
        suites.append(rest.pop(0))
    if not suites:
        print("pytest_main.py: name at least one SUITE (a directory or test file) before the flags", file=sys.stderr)
        return 2
    while rest[:1] in (["--bundle-env"], ["--dir-env"]) and len(rest) >= 2:
        flag, (var, eq, path) = rest[0], rest[1].partition("=")
        if not (var and eq and path):
            what = "BUNDLE_DIR" if flag == "--bundle-env" else "DIR"
            print(f"pytest_main.py: {flag} {rest[1]!r}: expected VAR={what}", file=sys.stderr)
            return 2
        if flag == "--bundle-env":
            os.environ[var] = str(load_bundle(ROOT / path).platform("linux_x86_64").shared)
        elif (ROOT / path).is_dir():
            os.environ[var] = str(ROOT / path)
        else:
            print(
                f"pytest_main.py: --dir-env {var}={path}: no such folder in the runfiles; add its target to data",
                file=sys.stderr,
            )
            return 2
        rest = rest[2:]
    # tests/conftest.py's bazel_build: the data deps are built; nothing runs Bazel.
    os.environ["PARE_BAZEL_OUTPUTS"] = str(ROOT)
    args = [*(str(ROOT / suite) for suite in suites), f"--rootdir={ROOT}", "-p", "no:cacheprovider", "-q", *rest]
    xml = os.environ.get("XML_OUTPUT_FILE")  # Bazel's test.xml: per-test results in the test log's summary
    if xml:
        args.append(f"--junitxml={xml}")
    code = pytest.main(args)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(f"pytest collected no tests in {' '.join(suites)}: that is a failure", file=sys.stderr)
        return 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
