"""The quantize pass's int8 ops besides the layers
(runtime/kernels/quantized/qelementwise.cc): pare::qadd, pare::qmul,
pare::qmean, pare::qavg_pool2d, pare::qlut, and aten::max_pool2d on int8 (nn/max_pool.cc;
nn.MaxPool2d(2) takes its 2x2 loop) vs torch eager running PT2E's
reference graph, dequantize_per_tensor -> float op [-> relu] ->
quantize_per_tensor.

qadd, qmul and qlut compute what the reference computes (float32, round
half to even): every element equal. qmean and qavg_pool2d sum exactly and
take the mean in double where torch's float32 sum rounds on the way: at
most one step apart, almost all equal (and equal to a float64 reference). Awkward shapes: odd sizes, batch 2, broadcasting,
zero points at -128 and 127, saturation, a fused relu, non-contiguous
inputs; and the one-line errors of bad arguments."""

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers torch.ops.quantized_decomposed
import torch.nn.functional as F
from runtime_testing import make_tensor

from pare.program import ProgramBuilder
from pare.runtime import PareError

qd = torch.ops.quantized_decomposed
fp_ops = pytest.mark.fp_ops


def int8(shape, seed):
    return make_tensor(shape, torch.int8, seed, -128, 127)


def dq(q, scale, zp):
    return qd.dequantize_per_tensor(q, scale, zp, -128, 127, torch.int8)


def quant(x, scale, zp, lo=-128, hi=127):
    return qd.quantize_per_tensor(x, scale, zp, lo, hi, torch.int8)


def run_op(runtime, name, inputs, *scalars, constants=()):
    pb = ProgramBuilder()
    m = pb.method()
    xs = [m.input("Char") for _ in inputs]
    cs = [m.constant(c) for c in constants]
    m.output(m.op(name, *xs, *cs, *scalars))
    (y,) = runtime.load(pb.to_bytes()).method().run(*[x.numpy() for x in inputs])
    return torch.from_numpy(y)


def assert_equal(actual, expected):
    assert actual.dtype == torch.int8
    assert tuple(actual.shape) == tuple(expected.shape), f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual.to(torch.int32) - expected.to(torch.int32)).abs()
    assert int(diff.max()) == 0, f"{int((diff > 0).sum())} of {diff.numel()} elements differ (max {int(diff.max())})"


# (a shape, b shape, a qparams, b qparams, out qparams, relu)
BINARY_CASES = {
    "same_shape_odd": ((1, 3, 7, 9), (1, 3, 7, 9), (0.05, 3), (0.07, -5), (0.09, 1), False),
    "batch2_relu": ((2, 5, 3, 3), (2, 5, 3, 3), (0.02, -10), (0.03, 7), (0.04, -20), True),
    "broadcast_channels": ((2, 6, 5, 7), (2, 6, 1, 1), (0.05, 0), (0.01, 4), (0.06, 2), False),
    "broadcast_rows": ((3, 1, 11), (5, 1), (0.1, 5), (0.2, -3), (0.15, 0), False),
    "zero_points_at_limits": ((1, 4, 5, 5), (1, 4, 5, 5), (0.03, -128), (0.04, 127), (0.05, 127), False),
    "saturating": ((2, 3, 4, 5), (2, 3, 4, 5), (0.5, 0), (0.5, 0), (0.01, -128), False),
    # Quotients past 2^22, where qaddmul.h's magic-number rounding no
    # longer applies (it keeps q, which the clamp then saturates): long
    # enough for the 16-lane loop, both operands and a row broadcast.
    "quotients_past_2_22": ((1, 4, 9, 9), (1, 4, 9, 9), (0.5, 3), (0.25, -7), (2e-6, 5), True),
    "row_quotients_past_2_22": ((1, 4, 1, 1), (1, 4, 9, 9), (0.5, 3), (0.25, -7), (3e-6, -5), False),
    # Same-shape contiguous operands take one vectorised loop: long enough
    # for its vector body and an odd tail.
    "same_shape_long_relu": ((1, 8, 29, 31), (1, 8, 29, 31), (0.031, -7), (0.017, 12), (0.043, -3), True),
    # One value per row of the other operand's trailing dims (a
    # squeeze-excitation's scale * input, the small operand first or
    # second) takes the row loop: rows long enough for its vector body and
    # an odd tail.
    "squeeze_excitation": ((2, 6, 1, 1), (2, 6, 19, 37), (0.0039, -128), (0.05, 3), (0.04, -6), False),
    "row_broadcast_second_relu": ((3, 5, 23), (3, 5, 1), (0.02, 9), (0.03, -2), (0.025, -1), True),
}


@fp_ops
@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("case", BINARY_CASES.values(), ids=BINARY_CASES.keys())
def test_qbinary_matches_reference(runtime, name, case):
    a_shape, b_shape, (sa, za), (sb, zb), (so, zo), relu = case
    a, b = int8(a_shape, 1), int8(b_shape, 2)
    y = dq(a, sa, za) + dq(b, sb, zb) if name == "add" else dq(a, sa, za) * dq(b, sb, zb)
    if relu:
        y = torch.relu(y)
    expected = quant(y, so, zo)
    lo = max(-128, zo) if relu else -128
    actual = run_op(runtime, f"pare::q{name}", [a, b], sa, za, sb, zb, so, zo, lo, 127)
    assert_equal(actual, expected)


@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("b_shape", [(1, 3, 7, 29), (1, 3, 1, 1)], ids=["same_shape", "row_broadcast"])
def test_qbinary_isa_copies_agree(runtime, name, b_shape):
    """The same-shape and row loops' copies (qaddmul.h: 16 lanes on
    x86-64-v4, else 4, a scalar tail) give torch's bits at every cap of the
    ISA: 16 * 37 + 7 elements (a row: 16 * 12 + 11) reach the wide loop,
    the 4-lane one and the tail."""
    a, b = int8((1, 3, 7, 29), 5), int8(b_shape, 6)
    sa, za, sb, zb, so, zo = 0.029, -11, 0.043, 6, 0.051, 2
    y = dq(a, sa, za) + dq(b, sb, zb) if name == "add" else dq(a, sa, za) * dq(b, sb, zb)
    expected = quant(y, so, zo)
    caps = ["x86_64_v3", "x86_64_baseline"] if runtime.kernel_isa.startswith("x86_64") else []
    try:
        for cap in [None, *caps]:
            if cap:
                runtime.set_max_isa(cap)
            assert_equal(run_op(runtime, f"pare::q{name}", [a, b], sa, za, sb, zb, so, zo, -128, 127), expected)
    finally:
        if caps:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


@fp_ops
def test_qadd_non_contiguous(runtime):
    a = int8((2, 7, 5, 3), 3).permute(0, 3, 1, 2)  # an NCHW view of NHWC data
    b = int8((2, 3, 7, 5), 4)
    expected = quant(dq(a, 0.04, 9) + dq(b, 0.05, -2), 0.06, 3)
    pb = ProgramBuilder()
    m = pb.method()
    x, z = m.input("Char"), m.input("Char")
    x = m.op("aten::permute", x, [0, 3, 1, 2])
    m.output(m.op("pare::qadd", x, z, 0.04, 9, 0.05, -2, 0.06, 3, -128, 127))
    (y,) = runtime.load(pb.to_bytes()).method().run(int8((2, 7, 5, 3), 3).numpy(), b.numpy())
    assert_equal(torch.from_numpy(y), expected)


MEAN_CASES = {
    "global_pool_odd": ((1, 5, 7, 9), 2, True, (0.05, 3), (0.02, -4)),
    "batch2_no_keepdim": ((2, 3, 13, 11), 2, False, (0.1, -128), (0.01, 127)),
    "last_dim": ((2, 4, 33), 1, True, (0.03, 10), (0.03, 10)),
    "saturating": ((1, 6, 4, 4), 2, True, (0.5, -128), (0.001, 0)),
    "one_pixel": ((2, 3, 1, 1), 2, True, (0.07, 1), (0.07, 1)),
}


@fp_ops
@pytest.mark.parametrize("case", MEAN_CASES.values(), ids=MEAN_CASES.keys())
def test_qmean_matches_reference(runtime, case):
    shape, dims, keepdim, (si, zi), (so, zo) = case
    x = int8(shape, 5)
    expected = quant(dq(x, si, zi).mean(dim=list(range(-dims, 0)), keepdim=keepdim), so, zo)
    actual = run_op(runtime, "pare::qmean", [x], dims, keepdim, si, zi, so, zo, -128, 127)
    assert tuple(actual.shape) == tuple(expected.shape)
    diff = (actual.to(torch.int32) - expected.to(torch.int32)).abs()
    assert int(diff.max()) <= 1
    assert float((diff == 0).double().mean()) >= 0.95


def table_of(fn, si, zi, so, zo):
    values = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)
    return quant(fn(dq(values, si, zi)), so, zo)


LUT_CASES = {
    "hardswish": (F.hardswish, (2, 5, 7, 3)),
    "sigmoid": (torch.sigmoid, (1, 9, 1, 1)),
    "silu": (F.silu, (3, 17)),
    "gelu": (F.gelu, (2, 3, 5)),
    "hardsigmoid": (F.hardsigmoid, (1, 3, 5, 5)),
    "tanh": (torch.tanh, (7,)),
    # AVX-512 VBMI's 64-byte steps and a masked last step.
    "hardswish_long": (F.hardswish, (1, 3, 11, 13)),
}


@fp_ops
@pytest.mark.parametrize("case", LUT_CASES.values(), ids=LUT_CASES.keys())
@pytest.mark.parametrize("qparams", [((0.05, 3), (0.02, -4)), ((0.1, -128), (0.01, 127))], ids=["mid", "limits"])
def test_qlut_matches_reference(runtime, case, qparams):
    fn, shape = case
    (si, zi), (so, zo) = qparams
    x = int8(shape, 6)
    expected = quant(fn(dq(x, si, zi)), so, zo)
    actual = run_op(runtime, "pare::qlut", [x], constants=[table_of(fn, si, zi, so, zo)])
    assert_equal(actual, expected)


def test_qlut_isa_copies_agree(runtime):
    """The table lookup's copies (64 bytes per step with AVX-512 VBMI, else
    one byte at a time) give the reference's bits at every cap of the ISA:
    every int8 value, 6 x 64 + 37 bytes."""
    x = torch.cat([torch.arange(-128, 128, dtype=torch.int32).to(torch.int8), int8((165,), 7)])
    table = table_of(F.hardswish, 0.05, -9, 0.03, -100)
    expected = quant(F.hardswish(dq(x, 0.05, -9)), 0.03, -100)
    caps = ["x86_64_v3", "x86_64_baseline"] if runtime.kernel_isa.startswith("x86_64") else []
    try:
        for cap in [None, *caps]:
            if cap:
                runtime.set_max_isa(cap)
            assert_equal(run_op(runtime, "pare::qlut", [x], constants=[table]), expected)
    finally:
        if caps:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


# (input shape, kernel_size, stride, padding, dilation, ceil_mode): the vector
# blocks (16 outputs of a row, stride 1 or 2) and the scalar loop at the
# rows' ends and for other strides.
MAX_POOL_CASES = {
    "resnet_stem": ((1, 5, 56, 60), [3, 3], [2, 2], [1, 1], [1, 1], False),
    "2x2": ((2, 3, 34, 38), [2, 2], [2, 2], [0, 0], [1, 1], False),
    "3x3_stride1_pad1": ((1, 4, 19, 41), [3, 3], [1, 1], [1, 1], [1, 1], False),
    "odd_ceil_mode": ((1, 3, 37, 45), [3, 3], [2, 2], [0, 0], [1, 1], True),
    "dilated": ((2, 2, 23, 50), [3, 2], [1, 2], [1, 1], [2, 3], False),
    "stride3_rect": ((1, 3, 17, 40), [2, 4], [3, 3], [1, 2], [1, 1], True),
    "narrow_rows": ((3, 9, 11), [3, 3], [2, 2], [1, 1], [1, 1], False),
    "one_by_one": ((1, 2, 5, 33), [1, 1], [1, 1], [0, 0], [1, 1], False),
    # Rows of exactly one vector block (a 32x32 plane's 2x2 pool), the last
    # tap the plane's last byte; a 1-wide window at stride 2 (scalar).
    "2x2_one_block": ((2, 32, 32), [2, 2], [2, 2], [0, 0], [1, 1], False),
    "1x1_stride2": ((1, 2, 7, 35), [1, 1], [2, 2], [0, 0], [1, 1], False),
    # Rows of 32 outputs or more, which an x86-64-v4 CPU runs 32 at a time
    # (the last 32 overlapping): 65 at stride 2 (ResNet's stem pool, wider),
    # exactly 32 whose last tap is the plane's last byte, 68 at stride 1,
    # 69 at stride 2 with dilation 2 across.
    "wide_stride2": ((1, 3, 20, 130), [3, 3], [2, 2], [1, 1], [1, 1], False),
    "wide_2x2_one_block": ((2, 8, 64), [2, 2], [2, 2], [0, 0], [1, 1], False),
    "wide_stride1": ((1, 2, 9, 70), [3, 3], [1, 1], [0, 0], [1, 1], False),
    "wide_dilated": ((1, 2, 15, 140), [2, 3], [2, 2], [0, 1], [1, 2], False),
}


@pytest.mark.parametrize("case", MAX_POOL_CASES.values(), ids=MAX_POOL_CASES.keys())
def test_int8_max_pool2d_matches_reference(runtime, case):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    x = int8(shape, 7)
    x[..., 0] = 127  # the rows' ends and their padding
    x[..., -1] = -128
    si, zi = 0.04, -3
    y = F.max_pool2d(dq(x, si, zi), kernel, stride, padding, dilation, ceil_mode)
    expected = quant(y, si, zi)
    actual = run_op(runtime, "aten::max_pool2d", [x], kernel, stride, padding, dilation, ceil_mode)
    assert_equal(actual, expected)


@pytest.mark.parametrize("name", [n for n in MAX_POOL_CASES if n.startswith("wide_")])
def test_int8_max_pool2d_isa_copies_agree(runtime, name):
    """The int8 max pool's copies (32 outputs at a time on x86-64-v4, 16 on
    the baseline) give the same bits."""
    shape, kernel, stride, padding, dilation, ceil_mode = MAX_POOL_CASES[name]
    x = int8(shape, 9)
    args = ([x], kernel, stride, padding, dilation, ceil_mode)
    best = run_op(runtime, "aten::max_pool2d", *args)
    assert_equal(best, F.max_pool2d(x.float(), kernel, stride, padding, dilation, ceil_mode).to(torch.int8))
    caps = ["x86_64_v3", "x86_64_baseline"] if runtime.kernel_isa.startswith("x86_64") else []
    try:
        for cap in caps:
            runtime.set_max_isa(cap)
            assert_equal(run_op(runtime, "aten::max_pool2d", *args), best)
    finally:
        if caps:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


def test_int8_max_pool2d_non_contiguous(runtime):
    x = int8((1, 40, 6, 30), 8).permute(0, 3, 1, 2)  # (1, 30, 40, 6) viewed as channels-first
    expected = F.max_pool2d(x.float(), 3, 2, 1).to(torch.int8)
    actual = run_op(runtime, "aten::max_pool2d", [x], [3, 3], [2, 2], [1, 1], [1, 1], False)
    assert_equal(actual, expected)


# (input shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
# divisor_override, input qparams, output qparams, output range).
AVG_POOL_CASES = {
    "3x3_stride1_pad1": ((1, 5, 17, 19), [3, 3], [1, 1], [1, 1], False, True, None, (0.05, 3), (0.05, 3), None),
    "exclude_pad": ((2, 3, 9, 13), [3, 3], [1, 1], [1, 1], False, False, None, (0.02, -10), (0.03, 7), None),
    "2x2_stride2": ((2, 4, 14, 14), [2, 2], [2, 2], [0, 0], False, True, None, (0.1, -128), (0.1, -128), None),
    # The last window hangs over the input's end: its divisor counts the
    # padding inside it only (count_include_pad) or the input's taps alone.
    "ceil_mode": ((1, 3, 10, 11), [3, 3], [2, 2], [1, 1], True, True, None, (0.04, 5), (0.02, -3), None),
    "ceil_mode_exclude_pad": ((1, 3, 10, 11), [3, 2], [2, 3], [1, 1], True, False, None, (0.04, 5), (0.02, -3), None),
    "divisor_override": ((1, 2, 8, 9), [3, 3], [2, 2], [1, 0], False, True, 5, (0.05, 0), (0.09, 1), None),
    "rect_no_batch": ((6, 7, 23), [2, 5], [1, 3], [1, 2], False, True, None, (0.07, 127), (0.05, -2), None),
    "saturating": ((1, 4, 6, 6), [2, 2], [1, 1], [0, 0], False, True, None, (0.5, -128), (0.01, 0), None),
    "relu": ((1, 3, 12, 12), [3, 3], [2, 2], [1, 1], False, True, None, (0.03, 2), (0.02, -9), (-9, 127)),
}


@fp_ops
@pytest.mark.parametrize("case", AVG_POOL_CASES.values(), ids=AVG_POOL_CASES.keys())
def test_qavg_pool2d_matches_reference(runtime, case):
    """Against dequantize -> F.avg_pool2d -> quantize: pare::qavg_pool2d sums
    exactly where torch's float32 sum rounds, so at most one step apart."""
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor, (si, zi), (so, zo), clamp = case
    lo, hi = clamp or (-128, 127)
    x = int8(shape, 11)
    x[..., 0] = 127
    x[..., -1] = -128
    y = F.avg_pool2d(dq(x, si, zi), kernel, stride, padding, ceil_mode, include_pad, divisor)
    expected = quant(y, so, zo, lo, hi)
    actual = run_op(
        runtime,
        "pare::qavg_pool2d",
        [x],
        kernel,
        stride,
        padding,
        ceil_mode,
        include_pad,
        divisor,
        si,
        zi,
        so,
        zo,
        lo,
        hi,
    )
    assert tuple(actual.shape) == tuple(expected.shape)
    diff = (actual.to(torch.int32) - expected.to(torch.int32)).abs()
    assert int(diff.max()) <= 1
    assert float((diff == 0).double().mean()) >= 0.95


def test_qavg_pool2d_exact_against_float64(runtime):
    """Each output is the window's exact mean in input steps (float64), times
    the input scale, quantized as the reference quantizes (float32): every
    element equal, windows and divisors at the edges included."""
    x = int8((2, 3, 15, 16), 12)
    si, zi, so, zo = 0.05, -7, 0.04, 3
    mean = F.avg_pool2d(x.double() - zi, 3, 2, 1, True, False) * si
    expected = quant(mean.float(), so, zo)
    actual = run_op(
        runtime, "pare::qavg_pool2d", [x], [3, 3], [2, 2], [1, 1], True, False, None, si, zi, so, zo, -128, 127
    )
    assert_equal(actual, expected)


def test_qavg_pool2d_non_contiguous(runtime):
    x = int8((1, 20, 9, 10), 13).permute(0, 3, 1, 2)  # (1, 10, 20, 9) viewed as channels-first
    expected = quant(F.avg_pool2d(dq(x, 0.1, 4), 2, 2), 0.1, 4)
    actual = run_op(
        runtime, "pare::qavg_pool2d", [x], [2, 2], [2, 2], [0, 0], False, True, None, 0.1, 4, 0.1, 4, -128, 127
    )
    diff = (actual.to(torch.int32) - expected.to(torch.int32)).abs()
    assert tuple(actual.shape) == tuple(expected.shape) and int(diff.max()) <= 1


@pytest.mark.parametrize(
    "name,inputs,scalars,message",
    [
        (
            "pare::qadd",
            [int8((2, 3), 1), int8((4, 3), 2)],
            (0.1, 0, 0.1, 0, 0.1, 0, -128, 127),
            r"broadcast|shape|size",
        ),
        (
            "pare::qadd",
            [int8((2, 3), 1), int8((2, 3), 2)],
            (0.1, 0, 0.0, 0, 0.1, 0, -128, 127),
            r"'b_scale' must be positive",
        ),
        (
            "pare::qmul",
            [int8((2, 3), 1), int8((2, 3), 2)],
            (0.1, 0, 0.1, 0, 0.1, 0, 10, -10),
            r"output_min 10 and output_max -10 must satisfy",
        ),
        (
            "pare::qmean",
            [int8((2, 3), 1)],
            (3, True, 0.1, 0, 0.1, 0, -128, 127),
            r"argument 'dims' = 3 must be between 1",
        ),
        (
            "aten::max_pool2d",
            [int8((1, 2, 5, 5), 1)],
            ([3, 3], [2, 2], [2, 2], [1, 1], False),
            r"argument 'padding' \(2\) must be at most half of kernel_size \(3\)",
        ),
        (
            "pare::qavg_pool2d",
            [int8((1, 2, 5, 5), 1)],
            ([3, 3], [2, 2], [2, 2], False, True, None, 0.1, 0, 0.1, 0, -128, 127),
            r"argument 'padding' \(2\) must be at most half of kernel_size \(3\)",
        ),
        (
            "pare::qavg_pool2d",
            [int8((1, 2, 5, 5), 1)],
            ([3, 3], [2, 2], [1, 1], False, True, 0, 0.1, 0, 0.1, 0, -128, 127),
            r"argument 'divisor_override' must not be zero",
        ),
        (
            "pare::qavg_pool2d",
            [int8((2, 5, 5), 1)],
            ([7, 7], [1, 1], [0, 0], False, True, None, 0.1, 0, 0.1, 0, -128, 127),
            r"input of 5 x 5 is too small for kernel_size \(7, 7\)",
        ),
        (
            "pare::qavg_pool2d",
            [int8((5, 5), 1)],
            ([3, 3], [1, 1], [0, 0], False, True, None, 0.1, 0, 0.1, 0, -128, 127),
            r"argument 'self' must be 3-d \(C, H, W\) or 4-d \(N, C, H, W\)",
        ),
    ],
    ids=[
        "qadd_shapes",
        "qadd_scale",
        "qmul_range",
        "qmean_dims",
        "max_pool2d_int8_padding",
        "qavg_pool2d_padding",
        "qavg_pool2d_divisor",
        "qavg_pool2d_too_small",
        "qavg_pool2d_rank",
    ],
)
def test_errors(runtime, name, inputs, scalars, message):
    with pytest.raises(PareError, match=message) as e:
        run_op(runtime, name, inputs, *scalars)
    assert "\n" not in str(e.value).strip()


def test_qadd_float_input(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    a, b = m.input("Float"), m.input("Char")
    m.output(m.op("pare::qadd", a, b, 0.1, 0, 0.1, 0, 0.1, 0, -128, 127))
    with pytest.raises(PareError, match=r"argument 'a' must be an int8 \(Char\) tensor, got Float"):
        runtime.load(pb.to_bytes()).method().run(torch.zeros(2).numpy(), int8((2,), 1).numpy())


def test_qlut_table_size(runtime):
    with pytest.raises(PareError, match=r"argument 'table' must be 256 int8 \(Char\) values, got 255"):
        run_op(runtime, "pare::qlut", [int8((4,), 1)], constants=[int8((255,), 2)])
