"""`python -m tools.verify`: see tools/verify/cli.py and docs/verify.md."""

import sys

from tools.verify.cli import main

if __name__ == "__main__":
    sys.exit(main())
