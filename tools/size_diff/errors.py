"""The error users of tools/size_diff can hit: printed as one line, never a traceback."""

from __future__ import annotations

from tools.verify.errors import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, VerifyError


class SizeDiffError(VerifyError):
    """A user error (missing file, bad report or budgets JSON): the message says what and how to fix it.

    A VerifyError, because size_diff reads binaries and expected_symbols.json
    through tools/verify and reports those errors the same way.
    """


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USER_ERROR", "SizeDiffError", "VerifyError"]
