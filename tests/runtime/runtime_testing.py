"""Helpers for comparing runtime ops with torch."""

from __future__ import annotations

import numpy as np
import torch

from pare import dtypes
from pare.program import ProgramBuilder

ALL_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
              torch.float32, torch.float64, torch.bool]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def to_input(t: torch.Tensor):
    """A method input for a torch tensor, keeping its strides (a numpy view)."""
    if t.dtype == torch.bfloat16:
        return (t.view(torch.int16).numpy().view(np.uint16), "BFloat16")
    return t.numpy()


def make_tensor(shape, dtype, seed=0, low=-8, high=8) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(low, info.min), min(high, info.max) + 1, shape, generator=g).to(dtype)


def single_op_program(op: str, args: list, returns="tensor") -> tuple[bytes, list[torch.Tensor]]:
    """A program with one instruction: torch tensors in `args` become method
    inputs (any shape, their dtype), everything else a constant."""
    pb = ProgramBuilder()
    m = pb.method("forward")
    inputs = []
    values = []
    for a in args:
        if isinstance(a, torch.Tensor):
            values.append(m.input(dtypes.get(a.dtype), [None] * a.dim()))
            inputs.append(a)
        else:
            values.append(a)
    out = m.op(op, *values, returns=returns)
    m.output(*(out if isinstance(out, (tuple, list)) else (out,)))
    return pb.to_bytes(), inputs


def run_op(runtime, op: str, *args, returns="tensor"):
    """Runs `op` on the runtime; returns its outputs as torch tensors (or
    Python scalars) with the runtime's dtypes."""
    data, inputs = single_op_program(op, list(args), returns)
    method = runtime.load(data).method()
    outs = method.run(*[to_input(t) for t in inputs])
    result = []
    for i, o in enumerate(outs):
        if isinstance(o, np.ndarray):
            dt = method.output_dtype(i)
            t = torch.from_numpy(o)  # output() returns an owned, contiguous copy
            result.append(t.to(torch.bfloat16) if dt == "BFloat16" else t)
        else:
            result.append(o)
    return result[0] if len(result) == 1 else result


def tolerances(dtype):
    return {
        torch.float16: dict(rtol=1e-3, atol=1e-3),
        torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
        torch.float32: dict(rtol=1e-5, atol=1e-6),
        torch.float64: dict(rtol=1e-12, atol=1e-12),
    }.get(dtype, dict(rtol=0, atol=0))


def assert_same(actual, expected, **kw):
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tolerances(expected.dtype)
    tol.update(kw)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tol)
