"""`python -m tools.size_diff`: see tools/size_diff/cli.py and docs/size.md."""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (Bazel's py_binary launcher)
    sys.path.insert(0, str(Path(__file__).absolute().parents[2]))

from tools.size_diff.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
