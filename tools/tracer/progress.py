"""Progress lines for steps that can take more than a couple of seconds.

One line on stderr when a step starts and, if it took over two seconds, one
when it ends, so logs from CI read the same as a terminal.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Iterator, TextIO

SLOW_STEP_SECONDS = 2.0


_STDERR = object()  # sys.stderr as it is when printing (tests replace it)


class Progress:
    def __init__(self, stream: TextIO | None | object = _STDERR, prefix: str = "tracer: "):
        self.stream = stream
        self.prefix = prefix

    @classmethod
    def silent(cls) -> "Progress":
        return cls(stream=None)

    def info(self, message: str) -> None:
        if self.stream is not None:
            stream = sys.stderr if self.stream is _STDERR else self.stream
            print(self.prefix + message, file=stream, flush=True)

    @contextlib.contextmanager
    def step(self, message: str) -> Iterator[None]:
        self.info(message + " ...")
        start = time.monotonic()
        yield
        elapsed = time.monotonic() - start
        if elapsed > SLOW_STEP_SECONDS:
            self.info(f"{message}: done in {elapsed:.1f}s")


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 input", "2 inputs"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
