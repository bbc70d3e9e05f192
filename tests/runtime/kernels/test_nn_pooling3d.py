"""3-d pooling of the nn family (runtime/kernels/nn/pooling.cc) vs torch:
max_pool3d_with_indices, avg_pool3d and _adaptive_avg_pool3d.

Every dtype of each kernel tag is compared with torch's CPU kernel, with
the argument lists torch.export emits (test_exported_modules checks those
forms against a real export), ceil_mode, padding, dilation,
count_include_pad and divisor_override, non-contiguous and channels-last
inputs, unbatched (4-d) and empty inputs, NaN, infinities and ties, and the
errors bad arguments raise."""

import itertools

import pytest
import torch
import torch.nn as nn
from runtime_testing import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_same,
    depth_tolerances,
    make_tensor,
    run_op,
)

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

A = torch.ops.aten
NAN = float("nan")
INF = float("inf")
MAX_POOL_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]
AVG_POOL_DTYPES = [torch.int64, torch.float32, torch.float64]  # torch's avg_pool3d: no Half, BFloat16
ADAPTIVE_DTYPES = FLOAT_DTYPES
EXACT = dict(rtol=0, atol=0)


def channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last_3d)


def max_pool(runtime, *args):
    """Runs max_pool3d_with_indices on the runtime and torch; values and
    indices must be the same, bit for bit (NaN for NaN)."""
    got = run_op(runtime, "aten::max_pool3d_with_indices", *args, returns=2)
    want = A.max_pool3d_with_indices(*args)
    assert_same(got[0], want[0], **EXACT)
    assert_same(got[1], want[1])


def avg_pool(runtime, *args, depth=27):
    got = run_op(runtime, "aten::avg_pool3d", *args)
    assert_same(got, A.avg_pool3d(*args), **depth_tolerances(args[0].dtype, depth))


def adaptive_pool(runtime, x, out_size, depth=27):
    got = run_op(runtime, "aten::_adaptive_avg_pool3d", x, out_size)
    assert_same(got, A._adaptive_avg_pool3d(x, out_size), **depth_tolerances(x.dtype, depth))


def both_fail(runtime, op, torch_fn, cases, **run_op_kwargs):
    """Each (args, message) of `cases`: torch_fn(*args) raises, and so does
    `op` in the runtime (run_op with `run_op_kwargs`), with `message`."""
    for args, message in cases:
        with pytest.raises((RuntimeError, NotImplementedError)):
            torch_fn(*args)
        with pytest.raises(PareError, match=message):
            run_op(runtime, op, *args, **run_op_kwargs)


# ---------------------------------------------------------------------------
# max_pool3d_with_indices


@pytest.mark.parametrize("dtype", MAX_POOL_DTYPES, ids=str)
def test_max_pool3d_every_dtype(runtime, dtype):
    # Small integers: ties in most windows (torch keeps the first max).
    x = make_tensor((2, 3, 5, 6, 7), dtype, 300, 0 if dtype == torch.uint8 else -3, 3)
    for args in [
        (x, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True),  # nn.MaxPool3d(3, 2, 1, ceil_mode=True)
        (x, [2, 2, 2], [2, 2, 2]),  # nn.MaxPool3d(2)
        (x, [2, 2, 2]),  # stride=[] is the kernel size
        (x[0], [2, 3, 2], [1, 2, 1], [1, 0, 1], [2, 1, 1]),  # unbatched, dilated depth
        (x, [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1], False),  # a spatial-only window
    ]:
        max_pool(runtime, *args)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation",
    [
        ([3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1]),
        ([2, 2, 2], [], [0, 0, 0], [1, 1, 1]),
        ([3, 2, 2], [3, 1, 2], [1, 1, 1], [2, 3, 1]),
        ([4], [3], [2], [1]),  # one value for every dim
        ([3, 5, 5], [1, 2, 2], [1, 2, 2], [1, 1, 1]),
        ([2, 1, 4], [1, 1, 3], [1, 0, 2], [3, 1, 1]),  # stride 3 along rows: the scalar loop
    ],
)
def test_max_pool3d_geometry(runtime, ceil_mode, kernel, stride, padding, dilation):
    # Rows of 37 and 11 columns: float runs vectors between scalar ends.
    for width in (37, 11):
        x = make_tensor((1, 2, 7, 6, width), torch.float32, 301)
        max_pool(runtime, x, kernel, stride, padding, dilation, ceil_mode)


def special_volume() -> torch.Tensor:
    """2 x 3 volumes of 5 x 6 x 29 small integers (ties in most windows)
    with NaNs (one, two in a window, a whole row), infinities and runs of
    -inf, inside the vector part of rows and at their ends."""
    x = make_tensor((2, 3, 5, 6, 29), torch.float64, 302, -3, 3).round()
    x[0, 0, 1, 2, 9] = NAN
    x[0, 0, 2, 2, 10] = NAN
    x[0, 0, 3, 5, 28] = NAN
    x[0, 1, :, :, 12:20] = -INF
    x[1, 2, 2, 3] = NAN
    x[1, 0, 0, 0, 0] = INF
    x[1, 1, 4, :, 0] = -INF
    return x


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation,ceil_mode",
    [
        ([3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True),
        ([2, 2, 2], [1, 1, 1], [0, 1, 1], [2, 1, 1], False),
        ([3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 2], False),
        ([2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False),
    ],
)
def test_max_pool3d_nan_inf_ties(runtime, dtype, kernel, stride, padding, dilation, ceil_mode):
    # NaN wins (the last NaN of a window, as torch's loop), ties keep the
    # first max, a window of -inf reports its first tap.
    x = special_volume().to(dtype)
    for t in (x, x[..., 1:].contiguous(), x[..., :9].contiguous()):
        max_pool(runtime, t, kernel, stride, padding, dilation, ceil_mode)


def test_max_pool3d_all_lowest_windows(runtime):
    # Windows holding only -inf (or an integer type's minimum) report their
    # first tap inside the input.
    for dtype in (torch.float32, torch.bfloat16, torch.int8, torch.int64):
        low = -INF if dtype.is_floating_point else torch.iinfo(dtype).min
        x = torch.full((1, 2, 5, 4, 19), low, dtype=dtype)
        x[0, 1, 2, 1, 3] = 0
        max_pool(runtime, x, [3, 2, 3], [2, 1, 2], [1, 1, 1], [1, 1, 1], True)
        max_pool(runtime, x, [2, 2, 2], [1, 1, 1], [1, 0, 1], [2, 2, 2])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32], ids=str)
def test_max_pool3d_non_contiguous_and_channels_last(runtime, dtype):
    x = special_volume()
    x[0, 1, :, :, 12:20] = -2  # see test_max_pool3d_channels_last_all_lowest_window
    x = x.to(dtype) if dtype.is_floating_point else x.nan_to_num(0, 3, -3).to(dtype)
    permuted = x.permute(0, 1, 4, 2, 3)  # [2, 3, 29, 5, 6]
    for t in (channels_last(x), permuted, x[:, :, ::2, :, 1::3], x[1].transpose(0, 2)):
        assert not t.is_contiguous()
        max_pool(runtime, t, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True)
        max_pool(runtime, t, [2, 2, 2])


def test_max_pool3d_channels_last_all_lowest_window(runtime):
    # Deliberately not matched: for a window holding only -inf, torch's
    # channels-last kernel reports the first tap's index without its plane
    # (row * W + column: 0, 2, 8, 10 for both output planes here). The
    # runtime reports what torch's contiguous kernel does for the same
    # values (32, 34, 40, 42 for the second), whatever the layout.
    x = torch.full((1, 3, 4, 4, 4), -INF)
    got = run_op(runtime, "aten::max_pool3d_with_indices", channels_last(x), [2, 2, 2], returns=2)
    want = A.max_pool3d_with_indices(x, [2, 2, 2])
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])


def test_max_pool3d_empty_batch(runtime):
    x = make_tensor((2, 3, 4, 5, 6), torch.float32, 303)
    max_pool(runtime, x[:0], [2, 2, 2])
    max_pool(runtime, x[:0], [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True)


def test_max_pool3d_errors(runtime):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, 304)
    op = "aten::max_pool3d_with_indices"
    cases = [
        ((x, [3, 3, 3], [1, 1, 1], [1, 2, 1]), r"argument 'padding' \(2\) must be at most half of kernel_size \(3\)"),
        ((x, [5, 3, 3]), r"input of 4 x 4 x 4 is too small for kernel_size \(5, 3, 3\) with padding \(0, 0, 0\)"),
        ((x, [2, 2, 2], [1, 1, 1], [0, 0, 0], [4, 1, 1]), r"too small .* and dilation \(4, 1, 1\)"),
        ((x, [0, 2, 2]), r"argument 'kernel_size' must hold values in \[1, "),
        ((x, [2, 2, 2], [1, 0, 1]), r"argument 'stride' must hold values in \[1, "),
        ((x, [2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 1, 0]), r"argument 'dilation' must hold values in \[1, "),
        ((x, [2, 2]), "argument 'kernel_size' must be a single value or a list of 3 values, got 2 values"),
        ((x, [2, 2, 2], [], [-1, 0, 0]), r"argument 'padding' must hold values in \[0, "),
        ((x[0, 0], [1, 1, 1]), r"argument 'self' must be 4-d \(C, D, H, W\) or 5-d \(N, C, D, H, W\), got sizes \[4,"),
        ((x[None], [1, 1, 1]), r"argument 'self' must be 4-d .*, got sizes \[1, 1, 2, 4, 4, 4\]"),
        ((x[:, :, :0], [1, 1, 1]), r"argument 'self' of sizes \[1, 2, 0, 4, 4\]: only the batch dim may be empty"),
        ((x[:, :0], [1, 1, 1]), "only the batch dim may be empty"),
        ((x.bool(), [1, 1, 1]), "dtype Bool is not supported"),
    ]
    both_fail(runtime, op, A.max_pool3d_with_indices, cases, returns=2)


# ---------------------------------------------------------------------------
# avg_pool3d


@pytest.mark.parametrize("dtype", AVG_POOL_DTYPES, ids=str)
@pytest.mark.parametrize(
    "ceil_mode,count_include_pad,divisor", list(itertools.product([False, True], [False, True], [None, 5, -2]))
)
def test_avg_pool3d_options(runtime, dtype, ceil_mode, count_include_pad, divisor):
    x = make_tensor((2, 2, 6, 7, 9), dtype, 310, -30, 30)
    avg_pool(runtime, x, [3, 3, 3], [2, 3, 2], [1, 1, 1], ceil_mode, count_include_pad, divisor)
    avg_pool(runtime, x[1], [2, 3, 2], [1, 2, 2], [1, 0, 1], ceil_mode, count_include_pad, divisor)


@pytest.mark.parametrize("dtype", AVG_POOL_DTYPES, ids=str)
def test_avg_pool3d_every_dtype(runtime, dtype):
    x = make_tensor((2, 3, 5, 6, 7), dtype, 311, -20, 20)
    for args in [
        (x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True),  # nn.AvgPool3d(2)
        (x, [3, 3, 3], [2, 2, 2], [1, 1, 1], True, False),
        (x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, 3),
        (x, [3, 2, 1]),  # defaults: stride = kernel_size
        (x[0], [2, 2, 2], [1, 1, 1], [1, 1, 1], False, True),  # unbatched
    ]:
        avg_pool(runtime, *args)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (False, 7)])
@pytest.mark.parametrize(
    "kernel,stride,padding",
    [([3, 3, 3], [1, 1, 1], [1, 1, 1]), ([2, 3, 3], [2, 2, 2], [1, 1, 1]), ([1, 2, 5], [1, 2, 3], [0, 1, 2])],
)
def test_avg_pool3d_wide_rows(runtime, kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    # Rows of 37 and 36 columns: float runs vectors between scalar ends; a
    # NaN and an inf inside them.
    x = make_tensor((2, 2, 5, 6, 37), torch.float32, 312, -20, 20)
    x[1, 1, 2, 3, 9] = NAN
    x[1, 0, 4, 5, 20] = INF
    for t in (x, x[..., 1:].contiguous()):
        avg_pool(runtime, t, kernel, stride, padding, ceil_mode, count_include_pad, divisor)


@pytest.mark.parametrize("dtype", AVG_POOL_DTYPES, ids=str)
def test_avg_pool3d_non_contiguous_channels_last_and_empty(runtime, dtype):
    x = make_tensor((2, 3, 6, 5, 7), dtype, 313, -20, 20)
    for t in (channels_last(x), x.permute(0, 1, 4, 3, 2), x[:, :, 1::2, :, ::2], x[0].transpose(1, 3)):
        assert not t.is_contiguous()
        avg_pool(runtime, t, [2, 2, 2], [1, 1, 1], [1, 1, 1], False, False)
        avg_pool(runtime, t, [3, 3, 3], [2, 2, 2], [1, 1, 1], True, True, 4)
    avg_pool(runtime, x[:0], [2, 2, 2])


def test_avg_pool3d_errors(runtime):
    x = make_tensor((1, 2, 4, 4, 4), torch.float64, 314)
    op = "aten::avg_pool3d"
    cases = [
        ((x, [2, 2, 2], [1, 1, 1], [0, 0, 0], False, True, 0), "argument 'divisor_override' must not be zero"),
        ((x, [3, 3, 3], [1, 1, 1], [2, 1, 1]), r"argument 'padding' \(2\) must be at most half of kernel_size \(3\)"),
        ((x, [2, 5, 2]), r"input of 4 x 4 x 4 is too small for kernel_size \(2, 5, 2\)"),
        ((x, [2, 2, 2], [0, 1, 1]), r"argument 'stride' must hold values in \[1, "),
        ((x, [2, 2, 2, 2]), "argument 'kernel_size' must be a single value or a list of 3 values, got 4 values"),
        ((x[0, 0], [1, 1, 1]), r"argument 'self' must be 4-d \(C, D, H, W\) or 5-d \(N, C, D, H, W\)"),
        ((x[:, :, :, :0], [1, 1, 1]), "only the batch dim may be empty"),
        ((x.int(), [2, 2, 2]), "dtype Int is not supported"),
        ((x.half(), [2, 2, 2]), "dtype Half is not supported"),
        ((x.bfloat16(), [2, 2, 2]), "dtype BFloat16 is not supported"),
    ]
    both_fail(runtime, op, A.avg_pool3d, cases)


# ---------------------------------------------------------------------------
# _adaptive_avg_pool3d


@pytest.mark.parametrize("dtype", ADAPTIVE_DTYPES, ids=str)
@pytest.mark.parametrize(
    "in_size,out_size",
    [
        ((6, 9, 9), [2, 3, 4]),
        ((5, 7, 5), [5, 7, 5]),  # identity
        ((3, 5, 6), [4, 8, 9]),  # larger than the input: overlapping windows
        ((4, 10, 3), [1, 1, 1]),  # global average
        ((6, 6, 6), [0, 2, 2]),  # empty output
        ((7, 4, 5), [3, 2, 2]),
    ],
)
def test_adaptive_avg_pool3d(runtime, dtype, in_size, out_size):
    x = make_tensor((2, 3) + in_size, dtype, 320)
    adaptive_pool(runtime, x, out_size, depth=x[0, 0].numel())
    adaptive_pool(runtime, x[0], out_size, depth=x[0, 0].numel())  # unbatched


@pytest.mark.parametrize("dtype", ADAPTIVE_DTYPES, ids=str)
def test_adaptive_avg_pool3d_non_contiguous_channels_last_and_empty(runtime, dtype):
    x = make_tensor((2, 8, 5, 9, 3), dtype, 321)
    for t in (channels_last(x), x.permute(0, 1, 4, 3, 2), x[:, ::2, :, 1::2], x[0].transpose(0, 1)):
        assert not t.is_contiguous()
        adaptive_pool(runtime, t, [2, 4, 2])
        adaptive_pool(runtime, t, [3, 2, 1])
    adaptive_pool(runtime, x[:0], [2, 4, 2])
    special = special_volume().to(dtype)  # NaN and inf propagate
    adaptive_pool(runtime, special, [2, 3, 5], depth=100)


def test_adaptive_avg_pool3d_errors(runtime):
    x = make_tensor((2, 3, 4, 5, 6), torch.float32, 322)
    op = "aten::_adaptive_avg_pool3d"
    cases = [
        ((x[:, :, :0], [2, 2, 2]), r"argument 'self' of sizes \[2, 3, 0, 5, 6\]: only the batch dim may be empty"),
        ((x, [1, 2]), "argument 'output_size' must be a single value or a list of 3 values, got 2 values"),
        ((x, [2, -1, 2]), r"argument 'output_size' must hold values in \[0, "),
        ((x[0, 0], [2, 2, 2]), r"argument 'self' must be 4-d \(C, D, H, W\) or 5-d"),
        ((x.long(), [2, 2, 2]), "dtype Long is not supported"),
    ]
    both_fail(runtime, op, A._adaptive_avg_pool3d, cases)


# ---------------------------------------------------------------------------
# the argument lists torch.export emits

EXPORTED_MODULES = {
    "max_pool3d": (lambda: nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True), (2, 4, 7, 9, 9)),
    "max_pool3d_defaults": (lambda: nn.MaxPool3d(2), (4, 6, 9, 9)),
    "max_pool3d_dilated": (lambda: nn.MaxPool3d((2, 3, 3), stride=1, dilation=(2, 1, 2)), (1, 3, 6, 8, 9)),
    "avg_pool3d": (
        lambda: nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        (2, 4, 7, 9, 9),
    ),
    "avg_pool3d_divisor": (lambda: nn.AvgPool3d(2, divisor_override=3), (2, 4, 6, 9, 9)),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3d((2, 3, 4)), (2, 4, 5, 9, 9)),
    "adaptive_avg_pool3d_one_value": (lambda: nn.AdaptiveAvgPool3d(3), (2, 4, 5, 9, 7)),  # (1 exports as mean)
}


@pytest.mark.parametrize("name", list(EXPORTED_MODULES))
def test_exported_modules(runtime, name):
    """Exports the module, checks the graph is one 3-d pooling op, and runs
    that node's exact argument list through the runtime."""
    make, shape = EXPORTED_MODULES[name]
    x = make_tensor(shape, torch.float32, 330)
    ep = torch.export.export(make().eval(), (x,)).run_decompositions()
    calls = [n for n in ep.graph.nodes if n.op == "call_function" and n.target.__name__ != "getitem"]
    assert len(calls) == 1, ep.graph
    node = calls[0]
    assert not node.kwargs, node.kwargs  # export spells every argument positionally
    op = node.target._schema.name
    assert op in ("aten::max_pool3d_with_indices", "aten::avg_pool3d", "aten::_adaptive_avg_pool3d")
    assert node.target._overloadname == "default"
    args = [x] + list(node.args[1:])
    want = node.target(*args)
    if op == "aten::max_pool3d_with_indices":
        got = run_op(runtime, op, *args, returns=2)
        assert_same(got[0], want[0], **EXACT)
        assert_same(got[1], want[1])
    else:
        assert_same(run_op(runtime, op, *args), want, **depth_tolerances(torch.float32, 27))
