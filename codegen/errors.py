"""Errors a user can cause. The CLI prints them as one line and exits 2."""

from __future__ import annotations


class CodegenError(Exception):
    """A user error: bad manifest, bad inventory, missing file.

    The message is one line naming the file, the problem and the fix.
    """


class ManifestError(CodegenError):
    """The manifest cannot be read, or selects what the runtime cannot provide."""


class InventoryError(CodegenError):
    """A runtime `.def` file breaks the format in docs/selection.md."""
