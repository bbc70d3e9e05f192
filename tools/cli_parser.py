"""argparse parsers whose usage errors are one line.

Pare's CLIs report a user error as one `error:` line that names the fix,
with exit status 2, never argparse's usage block. A parser class from
one_line_parser() raises the CLI's own error type instead of printing, and
the CLI's main() prints it like any other user error:

    p = one_line_parser(PruneError, see="python -m tools.prune --help")(prog=PROG, ...)
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable


def one_line_parser(error_type: type[Exception], see: str) -> type[argparse.ArgumentParser]:
    """An ArgumentParser class (its subcommand parsers too) whose error(message)
    raises error_type("<message> (see <see>)")."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # one line, not usage + error
            raise error_type(f"{message} (see {see})")

    return OneLineParser


def tool_parser(
    error_type: type[Exception], prog: str, description: str, examples: tuple[str, ...]
) -> argparse.ArgumentParser:
    """A tool's one_line_parser (its errors say `see <prog> --help`) whose
    help ends with the `examples` command lines, as written."""
    return one_line_parser(error_type, see=f"{prog} --help")(
        prog=prog,
        description=description,
        epilog="examples:\n" + "".join(f"\n  {e}" for e in examples)[1:],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def one_line_errors(
    *errors: type[Exception], prefix: str = "error: "
) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorates a CLI's main(): an exception of `errors` that it raises is
    printed on stderr as one line, `<prefix><message>`, and main returns 2."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def main_with_errors(*args, **kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except errors as e:
                print(f"{prefix}{e}", file=sys.stderr)
                return 2

        return main_with_errors

    return decorate


def name_list(what: str):
    """An argparse `type` for NAME[,NAME...]: the names, stripped; an empty
    one is a one-line error naming `what` ("build feature", "backend")."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n.strip() for n in text.split(","))
        if not all(names):
            raise argparse.ArgumentTypeError(f"a comma-separated list of {what} names, got {text!r}")
        return names

    return parse


def add_delegate_arguments(p: argparse.ArgumentParser, delegate_help: str, spec_help: str) -> None:
    """--delegate NAME[,NAME] and --delegate-spec KEY=VALUE (docs/delegates.md),
    as tools.tracer and tools.bench both take them."""
    p.add_argument("--delegate", type=name_list("backend"), default=(), metavar="NAME[,NAME]", help=delegate_help)
    p.add_argument(
        "--delegate-spec", type=compile_spec, action="append", default=[], metavar="KEY=VALUE", help=spec_help
    )


def compile_spec(text: str) -> tuple[str, str]:
    """An argparse `type` for a delegate's KEY=VALUE compile spec."""
    from tools.tracer.delegation import parse_spec  # torch: only when the option is given

    try:
        return parse_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
