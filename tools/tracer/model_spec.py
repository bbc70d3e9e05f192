"""Loading a model spec: a Python file whose `build()` returns (module, inputs).

`inputs` is a list of representative input tuples; each tuple is one call of
`module(*inputs[i])`. A bare tensor in place of a 1-tuple is accepted. An
optional module-level `TOLERANCE = {"rtol": ..., "atol": ...}` overrides the
numeric check's defaults for floating outputs. See docs/model_spec.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from tools.eval_mode import to_eval
from tools.tracer.errors import TracerError
from tools.tracer.numerics import Tolerance

MAX_RANK = 8  # the program format's limit (pare.program.MAX_DIM)


@dataclass(frozen=True)
class ModelSpec:
    path: Path  # resolved
    module: torch.nn.Module  # in eval mode
    inputs: tuple[tuple[torch.Tensor, ...], ...]
    tolerance: Tolerance | None = None
    float_twin: Path | None = None  # FLOAT_TWIN: the float model a quantized one was made from (tools.bench)

    def tolerance_override(self) -> dict[str, float] | None:
        """The spec's TOLERANCE as written (only the keys it sets), or None."""
        if self.tolerance is None:
            return None
        return {k: v for k, v in (("rtol", self.tolerance.rtol), ("atol", self.tolerance.atol)) if v is not None}


def _import(path: Path):
    # A name unique per file, so two specs called model.py do not collide.
    name = "pare_model_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TracerError(f"{path}: not a Python file; a model spec is a .py file defining build()")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    sys.path.insert(0, str(path.parent))  # the spec may import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's code: report, don't crash
        sys.modules.pop(name, None)
        raise TracerError(f"{path}: importing the model spec raised {type(e).__name__}: {e}; fix the file") from None
    finally:
        sys.path.remove(str(path.parent))
    return module


def _tolerance(path: Path, value) -> Tolerance | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not set(value) <= {"rtol", "atol"}:
        raise TracerError(f"{path}: TOLERANCE must be a dict with keys rtol and/or atol, got {value!r}")
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise TracerError(f"{path}: TOLERANCE[{key!r}] must be a non-negative number, got {v!r}")
    return Tolerance(rtol=value.get("rtol"), atol=value.get("atol"))


def load_model_spec(path: str | Path) -> ModelSpec:
    """Imports the spec, calls build() and validates what it returns."""
    # Absolute, not resolved: a spec reached through a symlink (a Bazel
    # runfiles tree) keeps its path there, so model_label names it relative
    # to the tree it was given in.
    path = Path(os.path.abspath(path))
    if not path.is_file():
        raise TracerError(f"{path}: no such model spec; pass the path of a .py file defining build()")
    mod = _import(path)
    build = getattr(mod, "build", None)
    if not callable(build):
        raise TracerError(
            f"{path}: defines no build(); add `def build(): return module, [input_tuple, ...]` (docs/model_spec.md)"
        )
    try:
        result = build()
    except Exception as e:
        raise TracerError(f"{path}: build() raised {type(e).__name__}: {e}; fix build()") from None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TracerError(f"{path}: build() must return (module, inputs), got {_describe(result)}")
    module, inputs = result
    if not isinstance(module, torch.nn.Module):
        raise TracerError(
            f"{path}: build()'s module is a {type(module).__name__}, not a torch.nn.Module; return (module, inputs)"
        )
    if isinstance(inputs, torch.Tensor) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise TracerError(
            f"{path}: build()'s inputs must be a non-empty list of input tuples, e.g. "
            "[(torch.rand(1, 3, 32, 32),)], got " + _describe(inputs)
        )
    normalized = []
    for i, example in enumerate(inputs):
        if isinstance(example, torch.Tensor):
            example = (example,)
        if not isinstance(example, (tuple, list)):
            raise TracerError(
                f"{path}: inputs[{i}] is a {type(example).__name__}; each entry is a tuple of tensors "
                "(one positional argument of forward() each)"
            )
        for j, t in enumerate(example):
            if not isinstance(t, torch.Tensor):
                raise TracerError(
                    f"{path}: inputs[{i}][{j}] is a {type(t).__name__}; Pare programs take tensors "
                    "only (wrap scalars with torch.tensor, or make them constants of the module)"
                )
            if t.is_sparse or t.device.type != "cpu" or t.is_quantized:
                raise TracerError(
                    f"{path}: inputs[{i}][{j}] is not a dense CPU tensor; move it to the CPU (.cpu()) and make it dense"
                )
            if t.dim() > MAX_RANK:
                raise TracerError(f"{path}: inputs[{i}][{j}] has {t.dim()} dims; Pare tensors have at most {MAX_RANK}")
        normalized.append(tuple(t.detach() for t in example))
    if len({len(e) for e in normalized}) > 1:
        counts = ", ".join(f"inputs[{i}] has {len(e)}" for i, e in enumerate(normalized))
        raise TracerError(
            f"{path}: the input tuples have different lengths ({counts}); every tuple is one call of "
            "forward() with the same arguments"
        )
    to_eval(module)  # batch norm and dropout as deployed
    return ModelSpec(
        path=path,
        module=module,
        inputs=tuple(normalized),
        tolerance=_tolerance(path, getattr(mod, "TOLERANCE", None)),
        float_twin=_float_twin(path, getattr(mod, "FLOAT_TWIN", None)),
    )


def _float_twin(path: Path, value) -> Path | None:
    """FLOAT_TWIN, a model spec's file name relative to this one's directory."""
    if value is None:
        return None
    twin = path.parent / value if isinstance(value, str) else None
    if twin is None or not twin.is_file() or twin.suffix != ".py":
        raise TracerError(
            f"{path}: FLOAT_TWIN = {value!r} is not a model spec next to this one; give its file name, "
            'e.g. FLOAT_TWIN = "mobilenet_v2.py"'
        )
    return twin


def _describe(x) -> str:
    if isinstance(x, tuple):
        return f"a tuple of {len(x)}"
    return f"a {type(x).__name__}"
