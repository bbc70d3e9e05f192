"""The error users of tools/verify can hit: printed as one line, never a traceback."""

from __future__ import annotations


class VerifyError(Exception):
    """A user error (missing file, bad JSON, wrong binary): the message says what and how to fix it."""


# Exit statuses of `python -m tools.verify` (and tools.size_diff).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USER_ERROR = 2
