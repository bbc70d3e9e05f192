"""Comparing a Pare runtime's outputs with torch eager.

An element passes when |pare - torch| <= atol + rtol * |torch| (as
torch.allclose), NaN matching NaN. Floating outputs use the tolerance of
their dtype (below) unless the CLI or the model spec overrides it; integer
and bool outputs must match exactly, as must shapes and dtypes. Each output
reports its max abs and max rel error (rel over elements where torch's value
is non-zero).

Quantized outputs are the one exception, and only them: an output that a
PT2E model's graph (what `convert_pt2e` returns, docs/quantization.md)
produces with `quantize_per_tensor` (an integer tensor) or with a
`dequantize_per_tensor` of a `quantize_per_tensor` output (a float tensor
on a grid of `scale`) is compared in quantization steps, as the step is
what an int8 model can resolve: a float product that lands near a rounding
boundary in torch may land on the other side in Pare, and one step there
can move the layers after it by a step or two. Such an output passes when
at least QUANTIZED_MIN_FRACTION of its elements are within
QUANTIZED_MAX_STEPS steps of torch's (issue 44's target for whole models).
Every other output, float outputs of quantized models included, keeps the
float tolerances.
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


# A quantized output's tolerance, in steps of its quantization (module doc).
QUANTIZED_MAX_STEPS = 3
QUANTIZED_MIN_FRACTION = 0.999


def quantized_output_steps(module: Any) -> tuple[float | None, ...]:
    """Per output of `module` (flattened as its results are): the size of
    one quantization step if the output comes out of a per-tensor quantize
    (1 for the integer tensor a quantize returns, the static `scale` for a
    dequantize of one), else None. Only a torch.fx GraphModule (a converted
    PT2E model) has any; a dequantize whose scale is computed at run time
    (dynamic quantization) is not a static grid and keeps float tolerances."""
    graph = getattr(module, "graph", None)
    if not isinstance(graph, torch.fx.Graph):
        return ()
    output = next((n for n in graph.nodes if n.op == "output"), None)
    if output is None:
        return ()
    leaves, _ = torch.utils._pytree.tree_flatten(output.args[0] if len(output.args) == 1 else output.args)
    return tuple(_step_of(leaf) for leaf in leaves)


def _is_quantized_op(node: Any, name: str) -> bool:
    target = getattr(node, "target", None)
    return (
        isinstance(node, torch.fx.Node)
        and isinstance(target, torch._ops.OpOverload)
        and target.namespace == "quantized_decomposed"
        and target._schema.name == f"quantized_decomposed::{name}"
    )


def _step_of(node: Any) -> float | None:
    if _is_quantized_op(node, "quantize_per_tensor"):
        return 1.0
    if (
        _is_quantized_op(node, "dequantize_per_tensor")
        and _is_quantized_op(node.args[0], "quantize_per_tensor")
        and isinstance(node.args[1], float)
    ):
        return abs(node.args[1]) or None
    return None


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
    step: float | None = None  # a quantized output's step (module doc), else None
    max_steps: int = 0  # the largest difference, in steps
    within: float = 1.0  # the fraction of elements within QUANTIZED_MAX_STEPS steps

    def line(self) -> str:
        status = "ok" if self.ok else "MISMATCH"
        text = f"output {self.index} {self.description}: {status}"
        if self.problem:
            return f"{text}, {self.problem}"
        if self.step is not None:
            return (
                f"{text}, quantized (step {self.step:.3g}): max {self.max_steps} steps apart, "
                f"{100 * self.within:.2f}% of elements within {QUANTIZED_MAX_STEPS} steps "
                f"(needs {100 * QUANTIZED_MIN_FRACTION:g}%)"
            )
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


def compare(
    actual: list[Any], expected: list[Any], tolerance: Tolerance, steps: tuple[float | None, ...] = ()
) -> list[OutputCheck]:
    """`steps`: quantized_output_steps of the module (empty: none quantized)."""
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
        checks.append(_compare_one(i, a, e, tolerance, steps[i] if i < len(steps) else None))
    return checks


def _describe(e: Any) -> str:
    if isinstance(e, torch.Tensor):
        return f"{pare_dtypes.get(e.dtype).name}{list(e.shape)}"
    return type(e).__name__


def _compare_one(i: int, a: Any, e: Any, tolerance: Tolerance, step: float | None = None) -> OutputCheck:
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
        if step is not None:
            return within_steps(i, desc, actual, expected, step)
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


def within_steps(i: int, desc: str, actual: np.ndarray, expected: np.ndarray, step: float) -> OutputCheck:
    """A quantized output (module doc): both sides are on the grid of `step`
    (up to the float rounding of a dequantize), so differences are counted
    in whole steps. The peers' checks (tools/bench) use it too."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    nan_mismatch = int(np.count_nonzero(a_nan != e_nan))
    both = ~(a_nan | e_nan)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(a[both] == e[both], 0.0, np.abs(a[both] - e[both]))
        steps = np.rint(diff / step)
    max_steps = float(steps.max()) if steps.size else 0.0
    within = float(np.count_nonzero(steps <= QUANTIZED_MAX_STEPS)) / steps.size if steps.size else 1.0
    ok = nan_mismatch == 0 and within >= QUANTIZED_MIN_FRACTION
    problem = f"NaN in {nan_mismatch} elements where the other side has a number" if nan_mismatch else None
    max_abs = float(diff.max()) if diff.size else 0.0
    return OutputCheck(
        i,
        desc,
        ok,
        max_abs,
        0.0,
        problem,
        step=step,
        max_steps=int(max_steps) if math.isfinite(max_steps) else 2**31,
        within=within,
    )
