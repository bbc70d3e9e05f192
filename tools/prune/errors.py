"""tools.prune's user-facing error: printed as one line after `error: `, exit status 2."""


class PruneError(Exception):
    """A problem the user can fix (a bad argument, a model that cannot be pruned as asked)."""
