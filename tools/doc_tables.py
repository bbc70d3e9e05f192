"""A generated table in a docs file: what stands between two marker comments, rewritten by the tool that writes it."""

from __future__ import annotations

from pathlib import Path


def replace_between(doc: Path, begin: str, end: str, body: str, error: type[Exception]) -> None:
    """Rewrites what stands between the markers `begin` and `end` in
    `doc` with `body`; a file it cannot read or without the markers raises
    `error` (the calling tool's one-line error) naming the fix."""
    try:
        text = doc.read_text(encoding="utf-8")
    except OSError as e:
        raise error(f"{doc}: cannot read ({e.strerror}); run from the repository root") from None
    if begin not in text or end not in text:
        raise error(f"{doc}: the markers {begin!r} and {end!r} are missing; put them back around the table")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{body}\n{end}{tail}", encoding="utf-8")
