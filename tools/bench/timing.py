"""Side-by-side timing for the benchmarks: pinning, interleaved rounds, medians.

This machine class is noisy (shared cores, frequency changes), so systems are
never timed one after the other: each round times every system once, in an
order that alternates between rounds, and the report is per-system medians
and their ratios, not absolute single runs.

A system is either a function of no arguments, called in this process, or a
Sampler: sampler(n) makes n back-to-back calls wherever the system lives (a
child process, for ExecuTorch: tools/bench/executorch_peer.py) and returns
the seconds per call it measured there. measure() interleaves both kinds.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

Sampler = Callable[[int], float]  # times n back-to-back calls; seconds per call


class BenchError(Exception):
    """A user error: printed as one line, exit status 2."""


def pin_to_cpus(count: int = 1, cpu: int | None = None) -> list[int]:
    """Pins this process to `count` CPUs (default: CPU 1 when allowed, as
    `taskset -c 1` would, else the last allowed ones); returns them."""
    allowed = sorted(os.sched_getaffinity(0))
    if count > len(allowed):
        raise BenchError(f"{count} CPUs asked for, but this process may run on {len(allowed)} ({allowed})")
    if cpu is not None:
        if cpu not in allowed:
            raise BenchError(f"--cpu {cpu} is not one this process may run on; allowed: {allowed}")
        chosen = [cpu]
    elif count == 1:
        chosen = [1 if 1 in allowed else allowed[-1]]
    else:
        chosen = allowed[-count:]
    os.sched_setaffinity(0, set(chosen))
    return chosen


def seconds_per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def calls_for_sampler(sample: Sampler, target_seconds: float = 0.02) -> int:
    """How many back-to-back calls make one sample of about `target_seconds`."""
    once = sample(1)
    return max(1, min(1000, int(target_seconds / max(once, 1e-7))))


def sampler(fn: Callable[[], object]) -> Sampler:
    """The Sampler of an in-process function."""
    return lambda calls: seconds_per_call(fn, calls)


def calls_for(fn: Callable[[], object], target_seconds: float = 0.02) -> int:
    """calls_for_sampler for an in-process function."""
    return calls_for_sampler(sampler(fn), target_seconds)


def measure(
    systems: dict[str, Callable[[], object]],
    rounds: int,
    calls: dict[str, int],
    samplers: dict[str, Sampler] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call, one sample per system per round, the functions in
    `systems` and the `samplers` interleaved alike (alternating order), after
    one warm-up sample each. `calls` has a count for every name of both."""
    both = {name: sampler(fn) for name, fn in systems.items()}
    clash = set(both) & set(samplers or {})
    if clash:
        raise ValueError(f"systems and samplers share the names {sorted(clash)}")
    both.update(samplers or {})
    samples: dict[str, list[float]] = {name: [] for name in both}
    names = list(both)
    for name in names:  # warm up: first-touch of arenas, caches, branch predictors
        both[name](calls[name])
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            samples[name].append(both[name](calls[name]))
    return samples


def median(values: list[float]) -> float:
    return statistics.median(values)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
