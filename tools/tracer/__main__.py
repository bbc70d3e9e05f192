"""`python -m tools.tracer`: see tools/tracer/cli.py and docs/tracer.md."""

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (Bazel's py_binary launcher)
    sys.path.insert(0, str(Path(__file__).absolute().parents[2]))
    # pare/ (the Python SDK) is not a Bazel package yet: take it from the
    # workspace `bazel run` was started in. Appended, so everything the
    # runfiles do hold wins.
    if os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        sys.path.append(os.environ["BUILD_WORKSPACE_DIRECTORY"])

from tools.tracer.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
