"""`python -m tools.size_diff`: see tools/size_diff/cli.py and docs/size.md."""

import sys

from tools.size_diff.cli import main

if __name__ == "__main__":
    sys.exit(main())
