"""`python -m tools.tracer`: see tools/tracer/cli.py and docs/tracer.md."""

import sys

from tools.tracer.cli import main

if __name__ == "__main__":
    sys.exit(main())
