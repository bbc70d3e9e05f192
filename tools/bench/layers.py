"""Where a model's time goes: `python -m tools.bench MODEL.py --profile-layers [RUNS]`.

After a model's timed rounds, the bench turns on the method's per-instruction
profile (`Method.set_profiling()`; the runtime must select build feature
op_profiling, as //runtime:full does) and runs it RUNS more times. Each
instruction's time in one run is the difference of its `profile()` seconds
before and after that run; its row is the minimum over the runs (on a shared
core the minima are what two builds or two runs can compare, not the sums)
and its share of the sum of the minima. The sum is printed beside Pare's
median from the timed rounds: the profile's clock reads around each
instruction, so the sum falls short of a whole run by the dispatch between
instructions and exceeds it where a run was slowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pare.runtime import Method, PareError
from tools.bench.timing import BenchError

DEFAULT_RUNS = 20


@dataclass(frozen=True)
class LayerTime:
    instruction: int
    op: str
    calls: int  # per run
    min_us: float  # the minimum over the runs of its time in one run
    share: float  # of the sum of every instruction's min_us


def profile_layers(method: Method, runs: int) -> tuple[LayerTime, ...]:
    """Each instruction's minimum time per run over `runs` runs of
    `method` (its inputs already set), one row per instruction in program
    order; profiling is off again after."""
    try:
        method.set_profiling(True)
    except PareError as e:
        raise BenchError(
            f"--profile-layers: the runtime cannot profile ({e.status_name}: {e}); use one that selects build "
            "feature op_profiling, such as //runtime:full"
        ) from None
    try:
        before = method.profile()
        best: list[float | None] = [None] * len(before)
        calls = [0] * len(before)
        for _ in range(runs):
            method.execute()
            after = method.profile()
            for i, (a, b) in enumerate(zip(before, after, strict=True)):
                seconds = b.seconds - a.seconds
                best[i] = seconds if best[i] is None else min(best[i], seconds)
                calls[i] = b.calls - a.calls
            before = after
    finally:
        method.set_profiling(False)
    total = sum(s for s in best if s is not None)
    return tuple(
        LayerTime(
            e.instruction,
            e.op,
            calls[i],
            round((best[i] or 0.0) * 1e6, 2),
            round((best[i] or 0.0) / total, 4) if total > 0 else 0.0,
        )
        for i, e in enumerate(before)
    )


def layers_table(model: str, layers: tuple[LayerTime, ...], median_us: float, runs: int) -> str:
    """Markdown: one row per instruction, then the sum of the minima against Pare's median."""
    lines = [
        f"{model}: per instruction, the minimum over {runs} profiled runs",
        "",
        "| # | op | calls | min µs | share |",
        "|---:|---|---:|---:|---:|",
    ]
    lines += [f"| {r.instruction} | {r.op} | {r.calls} | {r.min_us:,.1f} | {r.share:.1%} |" for r in layers]
    total = sum(r.min_us for r in layers)
    lines.append(f"| | sum of the minima | | {total:,.1f} | {total / median_us:.0%} of Pare's median |")
    return "\n".join(lines)
