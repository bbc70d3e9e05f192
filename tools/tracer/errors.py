"""The tracer's user-facing error types.

Every problem a user can fix is a `TracerError`: the CLI prints its message
after `error: ` (no traceback) and exits with status 2. The first line of the
message says what is wrong and how to fix it; a few reports (missing
operators, numeric mismatches) add one indented line per item after it.
"""

from __future__ import annotations

from dataclasses import dataclass


class TracerError(Exception):
    """A problem the user can fix: printed without a traceback, exit status 2."""


@dataclass(frozen=True)
class OpUse:
    """Where a program calls an operator: the model's source line, if known."""

    location: str | None  # "model.py:12" (the last frame in the model's file)
    code: str | None  # that line's source text
    module: str | None = None  # the innermost submodule: "stem.0 (Conv2d)"


class MissingOpsError(TracerError):
    """The exported program needs operators the runtime does not implement."""

    def __init__(self, model: str, missing: dict[str, list[OpUse]], inventory_dir: str):
        self.model = model
        self.missing = missing  # op name -> every use, in program order
        total = len(missing)
        lines = [
            f"{model}: the runtime ({inventory_dir}) lacks {total} operator{'' if total == 1 else 's'} this model "
            "needs; add kernels for them to the runtime (runtime/inventory/**/*.def lists what exists) or change the "
            "model to avoid them:"
        ]
        for name in sorted(missing):
            uses = missing[name]
            sites: dict[str, list[str]] = {}  # source line -> submodules, first-seen order
            for use in uses:
                modules = sites.setdefault(_line(use), [])
                if use.module and use.module not in modules:
                    modules.append(use.module)
            shown = [f"{line} in {', '.join(mods)}" if mods else line for line, mods in sites.items()]
            more = f"; +{len(shown) - 3} more" if len(shown) > 3 else ""
            lines.append(f"  {name}  x{len(uses)}  at {'; '.join(shown[:3])}{more}")
        super().__init__("\n".join(lines))


def _line(use: OpUse) -> str:
    if use.location is None:
        return "(no source line: inserted by torch.export)"
    return f"{use.location} `{use.code}`" if use.code else use.location


class NumericMismatchError(TracerError):
    """Outputs differ from torch eager beyond tolerance; `checks` holds every
    input's InputCheck (tools/tracer/tracing.py). Exit status 1."""

    def __init__(self, model: str, runtime, checks: list):
        self.checks = checks
        self.result = None  # trace: the TraceResult (its manifest is still built)
        bad = [c for c in checks if not c.ok]
        lines = [
            f"{model}: the runtime's outputs differ from torch eager beyond tolerance for {len(bad)} of "
            f"{len(checks)} inputs on {runtime}; if the difference is expected, loosen the tolerance "
            "(--rtol/--atol, or TOLERANCE in the model spec), otherwise a kernel or the export is wrong:"
        ]
        for c in bad:
            for o in c.outputs:
                lines.append(f"  inputs[{c.index}] ({c.method}) {o.line()}")
        super().__init__("\n".join(lines))
