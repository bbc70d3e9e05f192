"""`python -m tools.verify`: see tools/verify/cli.py and docs/verify.md."""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (Bazel's py_binary launcher)
    sys.path.insert(0, str(Path(__file__).absolute().parents[2]))

from tools.verify.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
