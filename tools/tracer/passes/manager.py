"""The pass manager: the passes in the order they run (PASSES), the
selection (`--passes` / `--skip-passes`, `resolve`), and MethodPasses,
which runs the selected passes on one method in that order (their graph
stage, then their lowering-time hooks as lowering asks) and keeps each
pass's counts (docs/tracer.md, "Graph passes")."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tools.tracer.errors import TracerError
from tools.tracer.passes import (
    channels_last,
    fold_conv_bn,
    fold_linear_bn,
    fuse_activation,
    fuse_add,
    fuse_attention,
    fuse_clamp,
    fuse_norms,
    prepack_weights,
    quantize,
    winograd,
)
from tools.tracer.passes.base import GraphPass, LoweringState, PassContext, PassRun

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import Node

    from tools.tracer.plans import Plan

DEFAULT = "default"
NONE = "none"

# Every pass, in the order passes run (the canonical order). A new pass is
# a module of this package and its place in this tuple.
PASSES: tuple[GraphPass, ...] = (
    fold_conv_bn.PASS,
    fold_linear_bn.PASS,
    quantize.PASS,
    prepack_weights.PASS,
    fuse_attention.PASS,
    fuse_norms.PASS,
    winograd.PASS,
    fuse_add.PASS,
    fuse_clamp.PASS,
    fuse_activation.PASS,
    channels_last.PASS,
)


class UnknownPassError(TracerError):
    """A pass selection names a pass that does not exist."""


# -- selection --------------------------------------------------------------------


def names() -> tuple[str, ...]:
    """Every pass, in the order passes run."""
    return tuple(p.name for p in PASSES)


def _known(what: str = "--passes") -> str:
    alone = f" (or {DEFAULT} or {NONE} alone)" if what == "--passes" else ""
    return f"the passes are {', '.join(names())}{alone}"


def parse_list(text: str, what: str = "--passes") -> tuple[str, ...]:
    """A comma list of pass names, checked (`default` and `none` are
    selections, only accepted alone, by resolve)."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise UnknownPassError(f"{what} {text!r}: empty pass name in the list; {_known(what)}")
    unknown = [item for item in items if item not in names()]
    if unknown:
        raise UnknownPassError(f"{what}: unknown pass {', '.join(map(repr, unknown))}; {_known(what)}")
    return tuple(items)


def resolve(passes: str | Iterable[str] = DEFAULT, skip: str | Iterable[str] = ()) -> tuple[str, ...]:
    """The names of the passes a selection runs, in canonical order.

    `passes`: "default", "none", a comma list ("fold_conv_bn,fold_linear_bn")
    or an iterable of names. `skip`: names (or a comma list) to leave out of
    it. Raises UnknownPassError for a name no pass has."""
    if isinstance(passes, str) and passes.strip() in (DEFAULT, NONE):
        chosen = names() if passes.strip() == DEFAULT else ()
    else:
        chosen = _listed(passes, "--passes")
    skipped = _listed(skip, "--skip-passes")
    return tuple(name for name in names() if name in chosen and name not in skipped)


def _listed(value: str | Iterable[str], what: str) -> tuple[str, ...]:
    text = value if isinstance(value, str) else ",".join(value)
    return parse_list(text, what) if text.strip() else ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--passes and --skip-passes, as `export`, `trace`, `check` and
    tools.bench take them. Read them back with `from_arguments`; `epilog()`
    describes the passes for the parser's help."""
    parser.add_argument(
        "--passes",
        default=DEFAULT,
        type=_selection_argument,
        metavar="LIST",
        help=f"graph passes to run on the exported graph before it is written: {DEFAULT} (every "
        f"pass, the default), {NONE}, or a comma list of {', '.join(names())} (they run in that "
        "order; see below)",
    )
    parser.add_argument(
        "--skip-passes",
        default=(),
        type=_skip_argument,
        metavar="LIST",
        help="comma list of passes to leave out (a blocklist, like optimize_for_mobile's optimization_blocklist)",
    )


def epilog() -> str:
    """The passes, one line each, for a --help epilog."""
    width = max(len(p.name) for p in PASSES)
    return "graph passes, in the order they run:\n" + "\n".join(f"  {p.name:<{width}}  {p.description}" for p in PASSES)


def from_arguments(args: argparse.Namespace) -> tuple[str, ...]:
    return resolve(args.passes, args.skip_passes)


def _selection_argument(text: str) -> str:
    if text.strip() not in (DEFAULT, NONE):
        _checked_argument(text, "--passes")
    return text


def _skip_argument(text: str) -> tuple[str, ...]:
    return _checked_argument(text, "--skip-passes")


def _checked_argument(text: str, flag: str) -> tuple[str, ...]:
    try:
        return parse_list(text, flag)
    except UnknownPassError as e:  # argparse words it "argument --passes: <message>"
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ").removeprefix(f"{flag} ")) from None


# -- running --------------------------------------------------------------------


class MethodPasses:
    """The selected passes (names from `resolve`) at work on one method: a
    pass runs when the passes it requires are selected too. `rewrite` runs
    their graph stage; lowering (tools/tracer/lowering.py) asks `plan` for
    each node and tallies what the plans count; `runs` reports each pass's
    counts."""

    def __init__(self, selected: Sequence[str]):
        unknown = [n for n in selected if n not in names()]
        if unknown:
            raise UnknownPassError(f"unknown pass {', '.join(map(repr, unknown))}; {_known()}")
        self.passes = tuple(
            p for p in PASSES if p.name in selected and all(required in selected for required in p.requires)
        )
        self._counts = {p.name: dict.fromkeys(p.counters, 0) for p in self.passes}

    def rewrite(self, program: ExportedProgram) -> tuple[PassRun, ...]:
        """Runs the passes' graph stage on the method's program, in order;
        returns what each pass that has one changed."""
        context = PassContext(program)
        runs = []
        for graph_pass in self.passes:
            changes = graph_pass.rewrite(context)
            if changes is not None:
                self._counts[graph_pass.name] = {**changes, **self._counts[graph_pass.name]}
                runs.append(PassRun(graph_pass.name, tuple(changes.items())))
        if context.changed:
            program.graph.lint()
            program.graph_module.recompile()
        return tuple(runs)

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        """The first pass's plan for `node`, refined by every pass in
        order; None when no pass plans it."""
        for graph_pass in self.passes:
            plan = graph_pass.plan(node, lowering)
            if plan is not None:
                for refining in self.passes:
                    plan = refining.refine(plan, node, lowering)
                return plan
        return None

    def count(self, name: str, what: str, n: int = 1) -> None:
        self._counts[name][what] += n

    def runs(self) -> tuple[PassRun, ...]:
        """What each pass changed in the method: its graph stage's counts,
        then what lowering counted for it."""
        return tuple(PassRun(name, tuple(counts.items())) for name, counts in self._counts.items())


def run_passes(program: ExportedProgram, selected: Sequence[str]) -> tuple[PassRun, ...]:
    """Runs the graph stage of the selected passes (names from `resolve`)
    on one method's program, in canonical order; returns what each changed."""
    return MethodPasses(selected).rewrite(program)


def combine(per_method: Sequence[Sequence[PassRun]]) -> tuple[PassRun, ...]:
    """One PassRun per pass, its counts summed over the methods."""
    totals: dict[str, dict[str, int]] = {}
    for runs in per_method:
        for run in runs:
            counts = totals.setdefault(run.name, {})
            for what, n in run.changes:
                counts[what] = counts.get(what, 0) + n
    return tuple(PassRun(name, tuple(counts.items())) for name, counts in totals.items())
