"""The records a runtime reports (pare/runtime.py): memory, its build's
inventory, an instrumentation build's trace, an input's declared dtype and
shape, and a profile's rows. Plain frozen dataclasses, importable without
loading a runtime."""

from __future__ import annotations

import dataclasses

__all__ = ["InputInfo", "Inventory", "MemoryStats", "OpUse", "ProfileEntry", "Trace"]


@dataclasses.dataclass(frozen=True)
class MemoryStats:
    arena_bytes: int
    planned_arena_bytes: int
    persistent_bytes: int
    num_plans: int
    temporary_blocks: int
    first_fit_arena_bytes: int  # the last plan's arena laid out first fit ...
    greedy_arena_bytes: int  # ... and greedy by size (0 when the planner is "first_fit")


@dataclasses.dataclass(frozen=True)
class Inventory:
    """What a runtime build contains."""

    ops: tuple[str, ...]
    kernel_dtypes: dict[str, tuple[str, ...]]  # tag -> dtype names
    classes: tuple[str, ...]
    features: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class OpUse:
    root: bool  # called by a method's instruction list
    non_root: bool  # called from inside another kernel


@dataclasses.dataclass(frozen=True)
class Trace:
    """What programs used on an instrumentation build."""

    ops: dict[str, OpUse]
    kernel_dtypes: dict[str, tuple[str, ...]]
    classes: tuple[str, ...]
    features: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class InputInfo:
    dtype: str | None  # None: any
    shape: tuple[int | None, ...] | None  # None entries: any size; None: any rank


@dataclasses.dataclass(frozen=True)
class ProfileEntry:
    instruction: int
    op: str
    calls: int
    seconds: float
