"""Runs one pytest suite as a Bazel test: `bazel test //tests:codegen_test`.

tests/BUILD.bazel declares each converted suite as a py_test whose main is
this file and whose first argument is the suite's directory. Bazel runs it in
the test's runfiles tree, where the suite sees only its declared inputs, and
caches the result until one of them changes. The exit code is pytest's, with
5 ("no tests collected") made a failure, as tools/run_tests.sh does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# runfiles/<workspace>/tests/pytest_main.py -> runfiles/<workspace>
ROOT = Path(__file__).absolute().parents[1]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: pytest_main.py SUITE_DIR [PYTEST_ARGS...]", file=sys.stderr)
        return 2
    args = [str(ROOT / argv[0]), f"--rootdir={ROOT}", "-p", "no:cacheprovider", "-q", *argv[1:]]
    xml = os.environ.get("XML_OUTPUT_FILE")  # Bazel's test.xml: per-test results in the test log's summary
    if xml:
        args.append(f"--junitxml={xml}")
    code = pytest.main(args)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(f"pytest collected no tests in {argv[0]}: that is a failure", file=sys.stderr)
        return 1
    return int(code)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
