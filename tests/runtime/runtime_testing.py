"""Helpers for comparing runtime ops with torch."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

import numpy as np
import pytest
import torch
from torch import nn

import pare.runtime
from pare import dtypes
from pare.program import ProgramBuilder
from tests import skip_gate

ALL_DTYPES = [
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.bool,
]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]

# What the selective runtime fixture (conftest.py) keeps (see
# test_selection.py for what each omission proves).
SELECTIVE_OPS = [
    "aten::mul.Tensor",
    "aten::relu",
    "aten::add.Scalar",
    "aten::_to_copy",
    "aten::view",
    "pare::linear_prepack",
    "pare::linear_prepacked",
    "pare::conv2d_prepack",
    "aten::max_pool2d_with_indices",
    "aten::sym_size.int",
]
SELECTIVE_KERNEL_DTYPES = {
    "mul_kernel": ["Float", "Long"],  # Double dropped
    "relu_kernel": ["Float"],
    "copy_kernel": ["Float", "Long", "Int"],
    "prepacked_kernel": ["Float"],
    "prepacked_gelu_kernel": ["Float"],  # but no other fused epilogue
    "max_pool2d_kernel": ["Float"],  # but not nn.MaxPool2d(2)'s loop, max_pool2d_2x2_kernel
}
SELECTIVE_CLASSES = ["LinearPackedParams"]  # Conv2dPackedParams dropped
SELECTIVE_FEATURES: list[str] = []  # op_profiling dropped


# The x86_64 ISA level a suite's runtimes are built for, when not the
# baseline (tests/BUILD.bazel sets it for the v3 pass of the fp_ops tests).
RUNTIME_ISA_ENV = "PARE_RUNTIME_ISA"


def runtime_isa_limit(isa: str | None) -> str | None:
    """The platform limit (tests/skip_gate.py's LIMITS) under which this
    host cannot run the suite's runtimes built for `isa`: every test carries
    it, and skips where the host has it. None when no ISA is named; an
    unknown name is a usage error, not a silent pass."""
    if not isa:
        return None
    if isa not in pare.runtime.ISA_CPU_FEATURES:
        known = ", ".join(sorted(pare.runtime.ISA_CPU_FEATURES))
        raise ValueError(f"{RUNTIME_ISA_ENV}={isa}: unknown ISA level; expected one of {known}")
    return skip_gate.ISA_LIMITS[isa]


def suite_kernel_isa(environ: Mapping[str, str] = os.environ) -> str:
    """The ISA copy the suite's `runtime` runs on this host, from the
    suite's settings and /proc/cpuinfo rather than from the runtime's own
    CPUID: the build's level (PARE_RUNTIME_ISA), else the best copy the host
    runs, at most PARE_MAX_ISA. The suite must run it (isa_coverage)."""
    if environ.get(RUNTIME_ISA_ENV):
        return environ[RUNTIME_ISA_ENV]
    copies = skip_gate.host_isa_copies()
    cap = environ.get(pare.runtime.MAX_ISA_ENV)
    return cap if cap in copies[:-1] else copies[-1]


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


def small_tensor(shape, dtype, seed):
    """make_tensor with values in [-3, 3] ([0, 3] for uint8): integer sums
    of products (convolutions, matrix products) stay exact."""
    return make_tensor(shape, dtype, seed, 0 if dtype == torch.uint8 else -3, 3)


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


def linear_program(weight, bias, in_shape):
    """A program of one prepacked linear layer (pare::linear_prepacked) over
    an input whose last dimension is in_shape[-1]; the others are dynamic."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None] * (len(in_shape) - 1) + [in_shape[-1]])
    m.output(m.op("pare::linear_prepacked", x, m.linear_prepack(weight, bias)))
    return pb.to_bytes()


def conv_program(weight, bias, stride, padding, dilation, groups, winograd=False, pixel_rows=False):
    """A program of one prepacked 2-d convolution (pare::conv2d_prepacked)."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float")
    packed = m.conv2d_prepack(weight, bias, stride, padding, dilation, groups, winograd, pixel_rows=pixel_rows)
    m.output(m.op("pare::conv2d_prepacked", x, packed))
    return pb.to_bytes()


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


def lower_forward(ep: torch.export.ExportedProgram):
    """(program bytes, LoweringReport): `ep` lowered as the tracer lowers a
    method, as `forward`, without prepacking."""
    from tools.tracer.lowering import LoweringReport, MethodLowering

    pb = ProgramBuilder()
    report = LoweringReport()
    MethodLowering(pb.method("forward"), ep, prepack=False, model_file=None, report=report).lower()
    return pb.to_bytes(), report


def tolerances(dtype):
    # Each float tolerance spans at least one ulp of its dtype everywhere
    # (two for BFloat16, many more for Float and Double): torch's scalar loop
    # (ATEN_CPU_CAPABILITY=default, and loop tails), its AVX2 and AVX-512
    # loops (Sleef, within one float ulp) and libm round a float result
    # differently by at most that much. Comparisons that must be tighter,
    # or where torch's loops round at different points, use the ulp helpers
    # below with a float64 reference.
    return {
        torch.float16: dict(rtol=1e-3, atol=1e-3),
        torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
        torch.float32: dict(rtol=1e-5, atol=1e-6),
        torch.float64: dict(rtol=1e-12, atol=1e-12),
    }.get(dtype, dict(rtol=0, atol=0))


def depth_tolerances(dtype, depth=1):
    """assert_same tolerances for a result summed over `depth` terms: the
    summation order differs from torch's, so they widen with the depth."""
    if dtype == torch.float32:
        return dict(rtol=1e-4, atol=1e-5 * max(depth, 1) ** 0.5)
    if dtype == torch.float64:
        return dict(rtol=1e-10, atol=1e-10)
    if dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=2e-2, atol=2e-2 * max(depth, 1) ** 0.5)
    return {}


def assert_same(actual, expected, **kw):
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tolerances(expected.dtype)
    tol.update(kw)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tol)


def same_or_both_fail(runtime, op, args, reference):
    """Runs op; when torch raises for these arguments the runtime must fail
    with a PareError naming the op, otherwise the results must match."""
    try:
        expected = reference()
    except (RuntimeError, NotImplementedError):
        with pytest.raises(pare.runtime.PareError, match=op.replace(".", r"\.")):
            run_op(runtime, op, *args)
        return None
    actual = run_op(runtime, op, *args)
    assert_same(actual, expected)
    return actual


# ---- comparisons that do not depend on torch's CPU code path ----------------
# torch picks a loop per CPU capability (ATEN_CPU_CAPABILITY: default, avx2,
# avx512) and hands some ops to oneDNN, whose JIT code depends on the CPU
# again. The paths round at different points, so a test that needs more
# than a tolerance compares with a float64 reference instead, within a
# stated number of units in the last place (ulps).

_FLOAT_BITS = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}
_FAR = 2**62  # the distance reported for NaN vs a number, or an infinity vs anything else


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """The float bits as int64 keys whose order is the floats' order (-0.0 and 0.0 share 0)."""
    bits = t.contiguous().view(_FLOAT_BITS[t.dtype]).to(torch.int64)
    magnitude = bits & (torch.iinfo(_FLOAT_BITS[t.dtype]).max)
    return torch.where(bits < 0, -magnitude, magnitude)


def ulp_distance(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Per element, how many representable values of the (shared) floating
    dtype separate actual from expected: 0 for equal values (either zero) and
    for two NaNs; _FAR for NaN against a number or an infinity against
    anything but itself."""
    assert actual.dtype == expected.dtype and actual.dtype in _FLOAT_BITS, (actual.dtype, expected.dtype)
    ka, ke = _ordered(actual), _ordered(expected)
    same_side = (ka >= 0) == (ke >= 0)
    # Keys of one sign cannot overflow when subtracted; across zero the
    # distance is at least the larger magnitude, which only needs to be "far".
    distance = torch.where(same_side, (ka - ke).abs(), ka.abs().clamp(max=_FAR // 2) + ke.abs().clamp(max=_FAR // 2))
    a_nan, e_nan = actual.isnan(), expected.isnan()
    distance = torch.where(a_nan | e_nan, torch.where(a_nan & e_nan, 0, _FAR), distance)
    return torch.where((actual.isinf() | expected.isinf()) & (distance != 0), _FAR, distance)


def assert_within_ulps(actual: torch.Tensor, expected: torch.Tensor, ulps: int, what: str = ""):
    """actual matches expected (same dtype and shape) to within `ulps` units
    in the last place; 0 means the same values (NaN matches NaN)."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    distance = ulp_distance(actual, expected)
    bad = distance > ulps
    if bad.any():
        i = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} elements are more than {ulps} ulp(s) from "
            f"the reference, e.g. at {i}: {actual[i].item()!r} vs {expected[i].item()!r} "
            f"({int(distance[i])} ulps)"
        )


def assert_matches_one_of(actual: torch.Tensor, candidates: list[torch.Tensor], ulps: int = 0, what: str = ""):
    """Each element of actual is within `ulps` of the same element of at
    least one candidate: for torch, whose loops round at different points."""
    close = torch.zeros(actual.shape, dtype=torch.bool)
    for c in candidates:
        assert c.dtype == actual.dtype and c.shape == actual.shape, (what, c.dtype, actual.dtype, c.shape, actual.shape)
        close |= ulp_distance(actual, c) <= ulps
    if not close.all():
        i = tuple((~close).nonzero()[0].tolist())
        raise AssertionError(
            f"{what}: {int((~close).sum())} of {close.numel()} elements match none of the "
            f"{len(candidates)} references, e.g. at {i}: {actual[i].item()!r} vs "
            f"{[c[i].item() for c in candidates]!r}"
        )


def round_like_float_math(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A float64 result as a kernel computing in float produces it: Half and
    BFloat16 kernels compute in float, so the value is rounded to float32
    first and then to the 16-bit type (two IEEE round-to-nearest-even steps,
    both deterministic on every CPU)."""
    if dtype in (torch.float16, torch.bfloat16):
        return exact.to(torch.float32).to(dtype)
    return exact.to(dtype)


def half_rounding_cases() -> tuple[torch.Tensor, np.ndarray]:
    """Floats at every Half's rounding boundaries, and the Half bits
    PyTorch's c10::Half gives them: each finite Half's value, the midpoint
    to the next Half away from zero (a tie: to even) and the floats one ulp
    either side of it, for all 63,488 finite Halves (subnormals, the
    overflow edge at 65,520), plus NaNs with payloads and both signs, infinities, and floats
    far below the smallest subnormal. numpy rounds to nearest even like
    c10::Half; for NaN, c10::Half gives the quiet NaN 0x7E00 with the sign
    (numpy keeps part of the payload)."""
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)]
    finite = halves.astype(np.float32)
    # Halfway to the next Half away from zero: 12 significant bits, exact in
    # float32; +-65,504's is +-65,520. A Half's ulp is 2^(e - 11) for
    # |h| = m 2^e with m in [0.5, 1), and 2^-24 below 2^-14 (subnormals).
    h64 = halves.astype(np.float64)
    ulp = np.where(np.abs(h64) < 2.0**-14, 2.0**-24, np.ldexp(1.0, np.frexp(h64)[1] - 11))
    mid = (h64 + np.where(np.signbit(halves), -ulp, ulp) / 2).astype(np.float32)
    nan_bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FC0ABCD], dtype=np.uint32)
    extra = np.concatenate(
        [nan_bits.view(np.float32), np.array([np.inf, -np.inf, 1e-30, -1e-30, 3.4e38, -3.4e38], dtype=np.float32)]
    )
    x = np.concatenate(
        [finite, mid, np.nextafter(mid, np.float32(-np.inf)), np.nextafter(mid, np.float32(np.inf)), extra]
    )
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    want[nan] = np.where(np.signbit(x[nan]), 0xFE00, 0x7E00).astype(np.uint16)
    return torch.from_numpy(x), want


def special_rows(length: int, seed: int) -> torch.Tensor:
    """Rows longer than a vector (the float path reduces 4 or 8 lanes at a
    time, then a scalar tail) with NaN inside the vector part and in the
    tail, a row of -inf, an inf, and values far apart (for the softmax
    family)."""
    x = make_tensor((6, length), torch.float32, seed, -5, 5)
    x[0, 3] = float("nan")
    x[1, length - 1] = float("nan")
    x[2] = float("-inf")
    x[3, 10] = float("inf")
    x[4, ::3] = 1000.0
    x[5, 1::2] = -1000.0
    return x


# ---- The recording PAL (runtime/pal/pal_test_double.cc) ----------------------


class PalStats(ctypes.Structure):
    """pare_test_pal_stats_t."""

    _fields_ = [
        (n, ctypes.c_uint64)
        for n in (
            "malloc_calls",
            "free_calls",
            "failed_mallocs",
            "live_blocks",
            "live_bytes",
            "peak_bytes",
            "log_calls",
            "abort_calls",
        )
    ] + [("last_log", ctypes.c_char * 256)]


def pal_stats(rt) -> PalStats:
    s = PalStats()
    rt._lib.pare_test_pal_stats(ctypes.byref(s))
    return s


EPS32 = float(np.finfo(np.float32).eps)


def assert_within_dot_bound(actual: torch.Tensor, exact: torch.Tensor, magnitude: torch.Tensor, depth: int):
    """|actual - exact| <= depth * eps32 * magnitude elementwise: the bound of
    a float32 dot product of `depth` terms in any order, fused or not, where
    `magnitude` is the same product over absolute values (in float64)."""
    bound = depth * EPS32 * magnitude + 1e-30
    excess = ((actual.double() - exact).abs() / bound).max().item() if actual.numel() else 0.0
    assert excess <= 1.0, f"error {excess:.3g}x the float32 dot-product bound (depth {depth})"


def fragmenting_program(combine: str = "aten::add.Tensor"):
    """First fit's classic loss: a 4 KB block dies just before two 16 KB
    blocks need room, leaving a hole neither fits in.

    t0: s = relu(x)            4 KB, read at t1
    t1: b = s[:, None] * w     16 KB, live to t3
    t2: c = x[:, None] * w     16 KB (s's 4 KB hole at offset 0 is too small)
    t3: d = b + c              16 KB

    First fit: s 0, b 4K, c 20K, d 36K: 52 KB. Greedy by size: b 0, c 16K,
    d 32K, then s (alive with b only) at 16K..20K: 48 KB. `combine` is t3's op
    (aten::mul.Tensor for a runtime that does not select add)."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [1024])
    w = np.array([[1.0, -2.0, 0.5, 3.0]], np.float32)
    s = m.op("aten::relu", x)
    b = m.op("aten::mul.Tensor", m.op("aten::view", s, [1024, 1]), w)
    c = m.op("aten::mul.Tensor", m.op("aten::view", x, [1024, 1]), w)
    m.output(m.op(combine, b, c))
    return pb.to_bytes(), w


def symbolic_view_program():
    """view(x, [x.size(0), 2, 2]): an int list with a symbolic element."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 4])
    n = m.op("aten::sym_size.int", x, 0, returns="int")
    m.output(m.op("aten::view", x, [n, 2, 2]))
    return pb.to_bytes()


class MutatedBuffers(nn.Module):
    """Two buffers forward mutates, the two ways the exporter writes state
    back: a counter updated elementwise (written in place) and a history
    replaced with copy_ after its old value was read (copied back at the
    end of a run)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("history", torch.zeros(4))

    def forward(self, x):
        self.count.add_(1)
        old = self.history.clone()
        self.history.copy_(x * 2)
        return x * self.count + old
