"""Comparing a Pare runtime's outputs with torch eager.

An element passes when |pare - torch| <= atol + rtol * |torch| (as
torch.allclose), NaN matching NaN. Floating outputs use the tolerance of
their dtype (below) unless the CLI or the model spec overrides it; integer
and bool outputs must match exactly, as must shapes and dtypes. Each output
reports its max abs and max rel error (rel over elements where torch's value
is non-zero).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pare import dtypes as pare_dtypes

# (rtol, atol) per floating dtype. Pare's kernels accumulate in a different
# order than torch's (blocked GEMM, im2col, per-line reductions), so float32
# sits well above one ulp; a wrong kernel is off by far more.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "Float": (1e-4, 1e-4),
    "ComplexFloat": (1e-4, 1e-4),  # on the real and imaginary parts
    "Double": (1e-7, 1e-7),
    "Half": (1e-2, 1e-2),
    "BFloat16": (5e-2, 5e-2),
}


@dataclass(frozen=True)
class Tolerance:
    """Overrides of the per-dtype defaults (None: the dtype's default)."""

    rtol: float | None = None
    atol: float | None = None

    def for_dtype(self, dtype: str) -> tuple[float, float]:
        rtol, atol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        return (rtol if self.rtol is None else self.rtol), (atol if self.atol is None else self.atol)


@dataclass(frozen=True)
class OutputCheck:
    index: int
    description: str  # "Float[4, 10]"
    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    problem: str | None = None  # shape, dtype, kind or NaN mismatch; or None
    rtol: float = 0.0
    atol: float = 0.0

    def line(self) -> str:
        status = "ok" if self.ok else "MISMATCH"
        text = f"output {self.index} {self.description}: {status}"
        if self.problem:
            return f"{text}, {self.problem}"
        if self.rtol == 0 and self.atol == 0:
            return f"{text}, exact" if self.ok else f"{text}, max abs err {self.max_abs:.3g} (must be exact)"
        return (
            f"{text}, max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g} "
            f"(atol {self.atol:g}, rtol {self.rtol:g})"
        )


def flatten_outputs(result: Any) -> list[Any]:
    """torch eager outputs in the order the exported program returns them."""
    leaves, _ = torch.utils._pytree.tree_flatten(result)
    return leaves


def compare(actual: list[Any], expected: list[Any], tolerance: Tolerance) -> list[OutputCheck]:
    checks = []
    if len(actual) != len(expected):
        return [
            OutputCheck(
                0,
                f"{len(expected)} outputs",
                False,
                problem=f"the program returned {len(actual)} outputs, torch {len(expected)}",
            )
        ]
    for i, (a, e) in enumerate(zip(actual, expected)):
        checks.append(_compare_one(i, a, e, tolerance))
    return checks


def _describe(e: Any) -> str:
    if isinstance(e, torch.Tensor):
        return f"{pare_dtypes.get(e.dtype).name}{list(e.shape)}"
    return type(e).__name__


def _compare_one(i: int, a: Any, e: Any, tolerance: Tolerance) -> OutputCheck:
    desc = _describe(e)
    if e is None:
        return OutputCheck(i, desc, a is None, problem=None if a is None else f"the program returned {a!r}")
    if isinstance(e, torch.Tensor):
        if not isinstance(a, np.ndarray):
            return OutputCheck(i, desc, False, problem=f"the program returned a {type(a).__name__}, not a tensor")
        dtype = pare_dtypes.get(e.dtype)
        got_dtype = _numpy_dtype_name(a, dtype)
        if got_dtype != dtype.name:
            return OutputCheck(i, desc, False, problem=f"dtype {got_dtype}, torch gives {dtype.name}")
        if tuple(a.shape) != tuple(e.shape):
            return OutputCheck(i, desc, False, problem=f"shape {list(a.shape)}, torch gives {list(e.shape)}")
        if dtype.is_complex:  # compared as (real, imaginary) pairs
            expected = torch.view_as_real(e.detach().resolve_conj()).to(torch.float64).numpy()
            actual = np.ascontiguousarray(a).view(np.float32).reshape(expected.shape).astype(np.float64)
        else:
            expected = (
                e.detach()
                .to(torch.float64 if dtype.is_floating else torch.int64 if dtype.name != "Bool" else torch.bool)
                .numpy()
            )
            actual = a.astype(expected.dtype)
        rtol, atol = tolerance.for_dtype(dtype.name)
        return _close(i, desc, actual, expected, rtol, atol)
    if isinstance(e, (bool, int, float)) or isinstance(e, (torch.SymInt, torch.SymFloat)):
        if isinstance(a, np.ndarray) or a is None:
            return OutputCheck(i, desc, False, problem=f"the program returned {type(a).__name__}, torch {desc}")
        if isinstance(e, float):
            rtol, atol = tolerance.for_dtype("Double")
            return _close(i, desc, np.array([float(a)]), np.array([e]), rtol, atol)
        ok = a == e
        return OutputCheck(i, desc, ok, problem=None if ok else f"the program returned {a!r}, torch {e!r}")
    return OutputCheck(i, desc, False, problem=f"torch returned a {type(e).__name__}, which cannot be compared")


def _numpy_dtype_name(a: np.ndarray, expected: pare_dtypes.DType) -> str:
    # The runtime binding returns BFloat16 as float32 values.
    if expected.name == "BFloat16" and a.dtype == np.float32:
        return "BFloat16"
    try:
        return pare_dtypes.get(a.dtype).name
    except (TypeError, ValueError):
        return str(a.dtype)


def _close(i: int, desc: str, actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> OutputCheck:
    if expected.dtype == np.bool_:
        bad = int(np.count_nonzero(actual != expected))
        return OutputCheck(
            i, desc, bad == 0, float(bad > 0), float(bad > 0), problem=None if bad == 0 else f"{bad} elements differ"
        )
    a_nan, e_nan = (
        np.isnan(actual) if actual.dtype.kind == "f" else False,
        np.isnan(expected) if expected.dtype.kind == "f" else False,
    )
    nan_mismatch = int(np.count_nonzero(a_nan != e_nan))
    both = ~(a_nan | e_nan) if expected.dtype.kind == "f" else np.ones(expected.shape, bool)
    a, e = actual[both].astype(np.float64), expected[both].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        diff = np.where(a == e, 0.0, diff)  # inf == inf
        max_abs = float(diff.max()) if diff.size else 0.0
        nonzero = e != 0
        rel = diff[nonzero] / np.abs(e[nonzero])
        max_rel = float(rel.max()) if rel.size else (0.0 if max_abs == 0 else math.inf)
        ok = bool(np.all(diff <= atol + rtol * np.abs(e))) and nan_mismatch == 0
    problem = f"NaN in {nan_mismatch} elements where the other side has a number" if nan_mismatch else None
    return OutputCheck(i, desc, ok, max_abs, max_rel, problem, rtol, atol)
