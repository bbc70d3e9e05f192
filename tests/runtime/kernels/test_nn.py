"""The nn family (runtime/kernels/nn/) vs torch: convolution (1d/2d/3d, groups, depthwise, transposed),
batch/layer/group norm, max/avg/adaptive pooling, nearest/bilinear
upsampling, constant_pad_nd, reflection and replication padding and embedding.

Every dtype of each kernel tag is compared with torch's CPU kernel, with
the argument lists torch.export emits (test_exported_modules checks those
forms against a real export), plus non-contiguous, empty and edge cases and
the errors bad arguments raise."""

import functools
import itertools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from runtime_testing import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_same,
    depth_tolerances,
    make_tensor,
    run_op,
    same_or_both_fail,
    small_tensor,
    to_input,
)

from pare.program import ProgramBuilder
from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

A = torch.ops.aten
NON_BOOL = [d for d in ALL_DTYPES if d != torch.bool]
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
UPSAMPLE_DTYPES = [torch.uint8] + FLOAT_DTYPES
AVG_POOL_DTYPES = [torch.int64] + FLOAT_DTYPES


def _conv(x, w, b, stride, padding, dilation, groups, transposed=False, output_padding=None):
    nd = w.dim() - 2
    output_padding = output_padding or [0] * nd
    args = (x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    try:
        want = A.convolution(*args)
    except NotImplementedError:
        # torch has integer kernels only for some geometries (not dilated
        # or transposed ones); the exact reference is then float64 math on
        # the same small integers.
        assert not x.dtype.is_floating_point
        as_double = [t.double() if isinstance(t, torch.Tensor) else t for t in args]
        want = A.convolution(*as_double).to(x.dtype)
    return run_op(_conv.runtime, "aten::convolution", *args), want


@pytest.fixture(autouse=True)
def _bind_runtime(runtime):
    _conv.runtime = runtime


# ---------------------------------------------------------------------------
# convolution


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_conv2d_every_dtype(dtype):
    x, w, b = small_tensor((2, 4, 7, 6), dtype, 1), small_tensor((6, 2, 3, 3), dtype, 2), small_tensor((6,), dtype, 3)
    got, want = _conv(x, w, b, [2, 1], [1, 2], [1, 2], 2)
    assert_same(got, want, **depth_tolerances(dtype, 18))
    got, want = _conv(x, w[:, :, :2], None, [1, 1], [0, 0], [1, 1], 2)  # no bias, 2x3 kernel
    assert_same(got, want, **depth_tolerances(dtype, 12))


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_conv1d_every_dtype(dtype):
    x, w, b = small_tensor((2, 6, 11), dtype, 4), small_tensor((4, 3, 3), dtype, 5), small_tensor((4,), dtype, 6)
    got, want = _conv(x, w, b, [2], [1], [2], 2)
    assert_same(got, want, **depth_tolerances(dtype, 9))
    got, want = _conv(x, w[:, :, :1], None, [1], [0], [1], 2)  # pointwise
    assert_same(got, want, **depth_tolerances(dtype, 3))


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 1, 1), (1, 2, 2), (3, 0, 1)])
def test_conv2d_depthwise(dtype, stride, padding, dilation):
    x = small_tensor((2, 4, 9, 10), dtype, 7)
    w, b = small_tensor((8, 1, 3, 3), dtype, 8), small_tensor((8,), dtype, 9)  # channel multiplier 2
    got, want = _conv(x, w, b, [stride] * 2, [padding] * 2, [dilation] * 2, 4)
    assert_same(got, want, **depth_tolerances(dtype, 9))


@pytest.mark.parametrize(
    "kernel,stride,padding", [(3, 1, 1), (3, 2, 1), (5, 1, 2), (5, 2, 2), (7, 1, 3), (7, 2, 0), (3, 2, 0)]
)
@pytest.mark.parametrize("hw", [(1, 1), (7, 9), (17, 18), (6, 33), (5, 70)])
def test_conv2d_depthwise_float_fast_path(kernel, stride, padding, hw):
    # The vectorised K x K kernel (K = 3, 5, 7; stride 1, 2): output rows of
    # 1 to 70 columns (steps of 16 outputs, then whole vectors and tails on
    # 4 and 8 lanes), inputs smaller than the kernel, no bias, batch 2,
    # channel multiplier 2.
    h, w_ = hw
    if (h + 2 * padding - kernel) < 0 or (w_ + 2 * padding - kernel) < 0:
        padding = kernel // 2
    x = make_tensor((2, 3, h, w_), torch.float32, 20, -1, 1)
    w = make_tensor((6, 1, kernel, kernel), torch.float32, 21, -1, 1)
    for b in (make_tensor((6,), torch.float32, 22, -1, 1), None):
        got, want = _conv(x, w, b, [stride] * 2, [padding] * 2, [1, 1], 3)
        assert_same(got, want, **depth_tolerances(torch.float32, kernel * kernel))


@pytest.mark.parametrize(
    "kernel,stride,padding,hw",
    [(3, 1, 1, (2, 2)), (5, 1, 2, (2, 2)), (5, 2, 2, (4, 4)), (3, 2, 1, (3, 3)), (3, 1, 1, (1, 1)), (7, 1, 3, (1, 4))],
)
@pytest.mark.parametrize("channels", [8, 13])
def test_conv2d_depthwise_float_tiny_planes(kernel, stride, padding, hw, channels):
    # At most 4 output pixels, one input channel per output channel: vectors
    # across channels (a whole block of 8, and 13 = a block and a partial one
    # on 8 lanes), padding taps skipped; batch 2.
    x = make_tensor((2, channels) + hw, torch.float32, 23, -1, 1)
    w = make_tensor((channels, 1, kernel, kernel), torch.float32, 24, -1, 1)
    for b in (make_tensor((channels,), torch.float32, 25, -1, 1), None):
        got, want = _conv(x, w, b, [stride] * 2, [padding] * 2, [1, 1], channels)
        assert_same(got, want, **depth_tolerances(torch.float32, kernel * kernel))


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_conv1d_depthwise_and_single_input_channel(dtype):
    x, w = small_tensor((1, 3, 12), dtype, 10), small_tensor((3, 1, 5), dtype, 11)
    got, want = _conv(x, w, None, [1], [2], [1], 3)
    assert_same(got, want, **depth_tolerances(dtype, 5))
    x1, w1 = small_tensor((2, 1, 6, 5), dtype, 12), small_tensor((5, 1, 2, 3), dtype, 13)
    got, want = _conv(x1, w1, small_tensor((5,), dtype, 14), [1, 2], [1, 1], [1, 1], 1)
    assert_same(got, want, **depth_tolerances(dtype, 6))


@pytest.mark.parametrize(
    "shape,weight,stride,padding,dilation,groups",
    [
        ((2, 64, 20, 20), (32, 64, 3, 3), [1, 1], [1, 1], [1, 1], 1),  # k = 576 > one depth block, 400 columns
        ((1, 16, 23, 19), (80, 16, 3, 3), [1, 1], [0, 0], [1, 1], 1),  # more rows than one GEMM row block
        ((1, 32, 17, 17), (48, 32, 1, 1), [1, 1], [0, 0], [1, 1], 1),  # pointwise: image as GEMM B
        ((1, 32, 17, 17), (48, 16, 1, 1), [2, 2], [0, 0], [1, 1], 2),  # strided 1x1 through im2col
        ((2, 12, 30, 9), (12, 3, 5, 3), [2, 1], [2, 1], [1, 3], 4),
        ((1, 8, 5, 300), (8, 8, 1, 7), [1, 1], [0, 3], [1, 1], 1),  # long rows: panels inside one row
        ((1, 3, 9, 70), (5, 3, 3, 3), [2, 2], [1, 1], [1, 1], 1),  # stride 2 inside long rows: strided copies
        ((2, 300, 2, 2), (13, 300, 1, 1), [1, 1], [0, 0], [1, 1], 1),  # 1x1 over 4 pixels: the narrow GEMM
        ((1, 12, 1, 1), (9, 4, 1, 1), [1, 1], [0, 0], [1, 1], 3),  # ... over 1 pixel, in groups
        ((1, 40, 3, 3), (21, 40, 1, 1), [1, 1], [0, 0], [1, 1], 1),  # ... over 9: pixel rows, a panel of 6 and 3
        ((2, 7, 3, 4), (30, 7, 1, 1), [1, 1], [0, 0], [1, 1], 1),  # ... over 12, the most pixel rows take
        ((1, 12, 1, 5), (9, 4, 1, 1), [1, 1], [0, 0], [1, 1], 3),  # ... over 5, in groups
    ],
)
def test_conv2d_float_gemm_paths(shape, weight, stride, padding, dilation, groups):
    x, w = make_tensor(shape, torch.float32, 15, -1, 1), make_tensor(weight, torch.float32, 16, -1, 1)
    b = make_tensor((weight[0],), torch.float32, 17)
    got, want = _conv(x, w, b, stride, padding, dilation, groups)
    assert_same(got, want, **depth_tolerances(torch.float32, w[0].numel()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16], ids=str)
def test_conv_generic_column_blocks(dtype):
    # More than one 256-column block of the reference GEMM.
    x, w = small_tensor((1, 3, 20, 21), dtype, 18), small_tensor((4, 3, 3, 3), dtype, 19)
    got, want = _conv(x, w, small_tensor((4,), dtype, 20), [1, 1], [1, 1], [1, 1], 1)
    assert_same(got, want, **depth_tolerances(dtype, 27))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_conv_non_contiguous_operands(dtype):
    x = small_tensor((2, 9, 8, 4), dtype, 21).permute(0, 3, 1, 2)  # [2, 4, 9, 8], channels-last-like
    w = small_tensor((3, 3, 4, 6), dtype, 22).permute(3, 2, 0, 1)  # [6, 4, 3, 3]
    b = small_tensor((12,), dtype, 23)[::2]
    assert not x.is_contiguous() and not w.is_contiguous() and not b.is_contiguous()
    got, want = _conv(x, w, b, [1, 2], [1, 0], [1, 1], 1)
    assert_same(got, want, **depth_tolerances(dtype, 36))
    xd = x.contiguous(memory_format=torch.channels_last)
    got, want = _conv(xd, w[:4, :1], None, [1, 1], [1, 1], [1, 1], 4)  # depthwise, channels_last input
    assert_same(got, want, **depth_tolerances(dtype, 9))


def test_conv_single_value_lists_and_empty_input():
    x, w = make_tensor((2, 4, 6, 6), torch.float32, 24), make_tensor((6, 2, 3, 3), torch.float32, 25)
    got, want = _conv(x, w, None, [1], [1], [1], 2)  # one value for both dims
    assert_same(got, want, **depth_tolerances(torch.float32, 18))
    got, want = _conv(x[:0], w, None, [1, 1], [0, 0], [1, 1], 2)
    assert_same(got, want)
    with pytest.raises(RuntimeError, match="Only zero batch or zero channel inputs are supported"):
        A.convolution(x[:, :, :0], w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"'input' of sizes \[2, 4, 0, 6\]: only the batch and channel dims may be"):
        run_op(_conv.runtime, "aten::convolution", x[:, :, :0], w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 2)


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_conv_transpose2d_every_dtype(dtype):
    x, w, b = (
        small_tensor((2, 4, 5, 4), dtype, 27),
        small_tensor((4, 3, 3, 2), dtype, 28),
        small_tensor((6,), dtype, 29),
    )
    got, want = _conv(x, w, b, [2, 3], [1, 0], [1, 2], 2, True, [1, 2])
    assert_same(got, want, **depth_tolerances(dtype, 18))
    got, want = _conv(x, w[:, :, :1, :1], None, [1, 1], [0, 0], [1, 1], 1, True, [0, 0])
    assert_same(got, want, **depth_tolerances(dtype, 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32], ids=str)
def test_conv_transpose1d_and_large(dtype):
    x, w = small_tensor((2, 6, 9), dtype, 30), small_tensor((6, 4, 4), dtype, 31)
    got, want = _conv(x, w, small_tensor((4,), dtype, 32), [2], [1], [1], 1, True, [1])
    assert_same(got, want, **depth_tolerances(dtype, 24))
    # Float: several GEMM column blocks (input pixels > 256), through col2im.
    xl = make_tensor((1, 8, 20, 17), dtype, 33, -2, 2)
    wl = make_tensor((8, 5, 3, 3), dtype, 34, -2, 2)
    got, want = _conv(xl, wl, None, [2, 2], [1, 1], [1, 1], 1, True, [1, 0])
    assert_same(got, want, **depth_tolerances(dtype, 72))


def test_conv_output_size_error_names_the_layer(runtime):
    # One check (runtime/kernels/common/conv_plan.h, plan_output) for every
    # convolution: it names the input's sizes, the padding and the weight's
    # sizes as the op received them (3-d for conv1d).
    def conv(x, w, padding, dilation):
        return run_op(
            runtime,
            "aten::convolution",
            x,
            w,
            None,
            [1] * len(padding),
            padding,
            dilation,
            False,
            [0] * len(padding),
            1,
        )

    with pytest.raises(
        PareError,
        match=r"'input' of sizes \[1, 2, 4\] with padding \(0, 1\) is smaller than the dilated kernel of 'weight' "
        r"\[3, 2, 4\]: the padded input must not be smaller than the kernel",
    ):
        conv(torch.ones(1, 2, 4), torch.ones(3, 2, 4), [1], [3])
    with pytest.raises(
        PareError,
        match=r"'input' of sizes \[1, 2, 5, 2\] with padding \(1, 0\) is smaller than the dilated kernel of 'weight' "
        r"\[3, 2, 3, 3\]",
    ):
        conv(torch.ones(1, 2, 5, 2), torch.ones(3, 2, 3, 3), [1, 0], [1, 1])
    # Just large enough: the padded input (7) is the dilated kernel's span.
    g = torch.Generator().manual_seed(5)
    x, w = torch.randn(1, 2, 5, generator=g), torch.randn(3, 2, 4, generator=g)
    got = conv(x, w, [1], [2])
    want = F.conv1d(x.double(), w.double(), padding=1, dilation=2)
    assert tuple(got.shape) == (1, 3, 1)
    torch.testing.assert_close(torch.as_tensor(got).double(), want, rtol=1e-5, atol=1e-5)


def test_conv_errors(runtime):
    x, w = torch.ones(2, 4, 6, 6), torch.ones(6, 2, 3, 3)

    conv = functools.partial(run_op, runtime, "aten::convolution")

    with pytest.raises(
        PareError,
        match=r"aten::convolution: given groups=1 and 'weight' of sizes \[6, 2, 3, 3\], "
        r"expected 'input' of sizes \[2, 4, 6, 6\] to have 2 channels, but it has 4",
    ):
        conv(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(PareError, match="out_channels must be a positive multiple of groups = 4"):
        conv(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 4)
    with pytest.raises(PareError, match="smaller than the dilated kernel"):
        conv(torch.ones(1, 4, 2, 2), w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"argument 'stride' must hold values in \[1, "):
        conv(x, w, None, [0, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"argument 'padding' must hold values in \[0, "):
        conv(x, w, None, [1, 1], [-1, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match="argument 'padding' must be a single value or a list of 2 values, got 3"):
        conv(x, w, None, [1, 1], [1, 1, 1], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match="argument 'weight' has dtype Double but 'input' is Float"):
        conv(x, w.double(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"argument 'bias' must be 1-d with 6 elements, got sizes \[5\]"):
        conv(x, w, torch.ones(5), [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"expected 4-d 'input' for 4-d 'weight'"):
        conv(torch.ones(4, 6, 6), w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(PareError, match=r"argument 'weight' must be 3-d \(conv1d\), 4-d \(conv2d\) or 5-d "):
        conv(torch.ones(2, 4), torch.ones(6, 2), None, [1], [0], [1], False, [0], 2)
    with pytest.raises(PareError, match="argument 'output_padding' .* must be smaller than either stride"):
        conv(x, torch.ones(4, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], True, [1, 1], 1)
    with pytest.raises(PareError, match="dtype Bool is not supported"):
        conv(x.bool(), w.bool(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)


# 3-d convolution: a 5-d weight [O, C / groups, KT, KH, KW] (torchvision's
# r3d_18, mc3_18, r2plus1d_18), behind its own tag convolution3d_kernel.


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_conv3d_every_dtype(dtype):
    x, w, b = (
        small_tensor((2, 4, 7, 6, 5), dtype, 40),
        small_tensor((6, 2, 3, 2, 3), dtype, 41),
        small_tensor((6,), dtype, 42),
    )
    got, want = _conv(x, w, b, [2, 1, 2], [1, 0, 1], [1, 2, 1], 2)
    assert_same(got, want, **depth_tolerances(dtype, 36))
    got, want = _conv(x, w[:, :, :1], None, [1, 1, 1], [0, 1, 1], [1, 1, 1], 2)  # spatial only (KT = 1), no bias
    assert_same(got, want, **depth_tolerances(dtype, 12))
    got, want = _conv(x, w[:, :, :, :1, :1], b, [1, 1, 1], [1, 0, 0], [1, 1, 1], 2)  # temporal only (KH = KW = 1)
    assert_same(got, want, **depth_tolerances(dtype, 6))
    got, want = _conv(
        x, small_tensor((4, 1, 3, 3, 3), dtype, 43), None, [2, 2, 1], [1, 1, 1], [2, 1, 1], 4
    )  # depthwise
    assert_same(got, want, **depth_tolerances(dtype, 27))


@pytest.mark.parametrize(
    "shape,weight,stride,padding,dilation,groups",
    [
        ((1, 3, 8, 28, 28), (8, 3, 3, 7, 7), [1, 2, 2], [1, 3, 3], [1, 1, 1], 1),  # r3d_18's stem: GEMM blocks
        ((2, 5, 5, 9, 7), (7, 5, 3, 3, 3), [2, 2, 2], [1, 1, 1], [1, 1, 1], 1),  # odd channels, stride 2 everywhere
        ((2, 6, 6, 8, 8), (10, 6, 1, 3, 3), [1, 1, 1], [0, 1, 1], [1, 1, 1], 1),  # r2plus1d's spatial (1, 3, 3)
        ((2, 10, 6, 4, 4), (6, 10, 3, 1, 1), [2, 1, 1], [1, 0, 0], [1, 1, 1], 1),  # r2plus1d's temporal (3, 1, 1)
        ((1, 8, 4, 5, 5), (16, 8, 1, 1, 1), [1, 1, 1], [0, 0, 0], [1, 1, 1], 1),  # pointwise: image as GEMM B
        ((2, 6, 5, 6, 7), (9, 2, 2, 3, 2), [1, 2, 1], [2, 0, 1], [3, 1, 2], 3),  # groups, dilation, padding
        ((2, 6, 5, 6, 7), (6, 1, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 6),  # depthwise 3-d: groups == C
        ((1, 4, 6, 9, 9), (8, 1, 1, 3, 3), [2, 2, 2], [0, 1, 1], [1, 1, 1], 4),  # KT = 1, cg = 1: depthwise 2-d path
        ((3, 3, 4, 5, 6), (5, 3, 4, 2, 2), [1, 1, 1], [0, 0, 0], [1, 1, 1], 1),  # one output frame: written in place
        ((1, 2, 3, 4, 4), (4, 2, 3, 3, 3), [3, 1, 1], [2, 1, 1], [2, 1, 1], 1),  # frames mostly out of range
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16], ids=str)
def test_conv3d_geometry(dtype, shape, weight, stride, padding, dilation, groups):
    x, w = small_tensor(shape, dtype, 44), small_tensor(weight, dtype, 45)
    got, want = _conv(x, w, small_tensor((weight[0],), dtype, 46), stride, padding, dilation, groups)
    assert_same(got, want, **depth_tolerances(dtype, w[0].numel()))
    got, want = _conv(x, w, None, stride, padding, dilation, groups)
    assert_same(got, want, **depth_tolerances(dtype, w[0].numel()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16], ids=str)
def test_conv3d_non_contiguous_operands(dtype):
    x = small_tensor((2, 5, 6, 7, 4), dtype, 47).permute(0, 4, 1, 2, 3)  # [2, 4, 5, 6, 7], channels-last-like
    w = small_tensor((3, 2, 3, 4, 6), dtype, 48).permute(4, 3, 2, 0, 1)  # [6, 4, 3, 3, 2]
    b = small_tensor((12,), dtype, 49)[::2]
    assert not x.is_contiguous() and not w.is_contiguous() and not b.is_contiguous()
    got, want = _conv(x, w, b, [2, 1, 2], [1, 1, 0], [1, 1, 1], 1)
    assert_same(got, want, **depth_tolerances(dtype, 72))
    xs = small_tensor((2, 4, 10, 6, 7), dtype, 50)[:, :, ::2]  # every other frame
    got, want = _conv(xs, w[:4, :1], None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 4)
    assert_same(got, want, **depth_tolerances(dtype, 18))


def test_conv3d_single_values_and_empty_batch():
    x, w = make_tensor((2, 4, 5, 6, 6), torch.float32, 51), make_tensor((6, 2, 3, 3, 3), torch.float32, 52)
    got, want = _conv(x, w, None, [2], [1], [1], 2)  # one value for all three dims
    assert_same(got, want, **depth_tolerances(torch.float32, 54))
    got, want = _conv(x[:0], w, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 2)
    assert_same(got, want)
    with pytest.raises(PareError, match=r"'input' of sizes \[2, 4, 0, 6, 6\]: only the batch and channel dims may"):
        run_op(_conv.runtime, "aten::convolution", x[:, :, :0], w, None, [1] * 3, [2] * 3, [1] * 3, False, [0] * 3, 2)


def test_conv3d_errors(runtime):
    x, w = torch.ones(2, 4, 5, 6, 6), torch.ones(6, 2, 3, 3, 3)

    conv = functools.partial(run_op, runtime, "aten::convolution")

    ones, zeros = [1, 1, 1], [0, 0, 0]
    with pytest.raises(
        PareError,
        match=r"argument 'transposed': transposed 3-d convolution \('weight' of sizes "
        r"\[6, 2, 3, 3, 3\]\) is not supported",
    ) as e:
        conv(torch.ones(2, 6, 5, 6, 6), w, None, ones, zeros, ones, True, zeros, 1)
    assert e.value.status_name == "NotImplemented"
    with pytest.raises(
        PareError,
        match=r"expected 5-d 'input' for 5-d 'weight' \[6, 2, 3, 3, 3\], got 'input' of "
        r"sizes \[2, 4, 6, 6\]",
    ):
        conv(torch.ones(2, 4, 6, 6), w, None, ones, zeros, ones, False, zeros, 2)
    with pytest.raises(
        PareError,
        match=r"expected 4-d 'input' for 4-d 'weight' \[6, 2, 3, 3\], got 'input' of "
        r"sizes \[2, 4, 5, 6, 6\]",
    ):
        conv(x, torch.ones(6, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    with pytest.raises(
        PareError,
        match=r"argument 'weight' must be 3-d \(conv1d\), 4-d \(conv2d\) or 5-d "
        r"\(conv3d\), got sizes \[6, 2, 1, 3, 3, 3\]",
    ):
        conv(x[..., None], w[:, :, None], None, [1] * 4, [0] * 4, [1] * 4, False, [0] * 4, 2)
    with pytest.raises(
        PareError,
        match=r"aten::convolution: given groups=1 and 'weight' of sizes "
        r"\[6, 2, 3, 3, 3\], expected 'input' of sizes \[2, 4, 5, 6, 6\] to have 2 "
        r"channels, but it has 4",
    ):
        conv(x, w, None, ones, zeros, ones, False, zeros, 1)
    with pytest.raises(PareError, match="out_channels must be a positive multiple of groups = 4"):
        conv(x, w, None, ones, zeros, ones, False, zeros, 4)
    with pytest.raises(
        PareError,
        match=r"'input' of sizes \[1, 4, 2, 6, 6\] with padding \(0, 1, 1\) is smaller "
        r"than the dilated kernel",
    ):
        conv(torch.ones(1, 4, 2, 6, 6), w, None, ones, [0, 1, 1], ones, False, zeros, 2)
    with pytest.raises(PareError, match="smaller than the dilated kernel"):
        conv(x, w, None, ones, zeros, [1, 3, 1], False, zeros, 2)
    with pytest.raises(PareError, match="argument 'padding' must be a single value or a list of 3 values, got 2"):
        conv(x, w, None, ones, [1, 1], ones, False, zeros, 2)
    with pytest.raises(PareError, match=r"argument 'stride' must hold values in \[1, "):
        conv(x, w, None, [1, 0, 1], zeros, ones, False, zeros, 2)
    with pytest.raises(PareError, match=r"argument 'dilation' must hold values in \[1, "):
        conv(x, w, None, ones, zeros, [0, 1, 1], False, zeros, 2)
    with pytest.raises(PareError, match="argument 'weight' has dtype Double but 'input' is Float"):
        conv(x, w.double(), None, ones, zeros, ones, False, zeros, 2)
    with pytest.raises(PareError, match=r"argument 'bias' must be 1-d with 6 elements, got sizes \[5\]"):
        conv(x, w, torch.ones(5), ones, zeros, ones, False, zeros, 2)
    with pytest.raises(PareError, match=r"argument 'weight' of sizes \[6, 2, 0, 3, 3\] has an empty kernel"):
        conv(x, w[:, :, :0], None, ones, zeros, ones, False, zeros, 2)
    with pytest.raises(PareError, match=r"dtype Bool is not supported \(kernel tag convolution3d_kernel handles"):
        conv(x.bool(), w.bool(), None, ones, zeros, ones, False, zeros, 2)


# ---------------------------------------------------------------------------
# batch norm (inference)


def _bn_params(c, dtype, seed):
    w, b = make_tensor((c,), dtype, seed, 0.5, 2), make_tensor((c,), dtype, seed + 1)
    mean, var = make_tensor((c,), dtype, seed + 2), make_tensor((c,), dtype, seed + 3, 0.1, 3)
    return w, b, mean, var


def _check_norm_outputs(got, want, dtype):
    assert len(got) == 3
    for g, e in zip(got, want):
        assert_same(g, e, **depth_tolerances(dtype, 8))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_every_dtype(runtime, dtype, shape):
    x = make_tensor(shape, dtype, 40)
    w, b, mean, var = _bn_params(3, dtype, 41)
    args = (x, w, b, mean, var, 0.1, 1e-5)
    _check_norm_outputs(
        run_op(runtime, "aten::_native_batch_norm_legit_no_training", *args, returns=3),
        A._native_batch_norm_legit_no_training(*args),
        dtype,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_batch_norm_mixed_precision_and_no_affine(runtime, dtype):
    x = make_tensor((2, 4, 3, 3), dtype, 45)
    w, b, mean, var = _bn_params(4, torch.float32, 46)
    for args in [(x, w, b, mean, var, 0.1, 1e-3), (x, None, None, mean, var, 0.1, 1e-5)]:
        got = run_op(runtime, "aten::_native_batch_norm_legit_no_training", *args, returns=3)
        _check_norm_outputs(got, A._native_batch_norm_legit_no_training(*args), dtype)
        assert got[1].dtype == torch.float32


def test_batch_norm_non_contiguous_and_errors(runtime):
    x = make_tensor((5, 4, 6, 2), torch.float32, 50).permute(0, 3, 1, 2)  # [5, 2, 6, 4]
    w, b, mean, var = (t[::2] for t in _bn_params(4, torch.float32, 51))
    args = (x, w, b, mean, var, 0.1, 1e-5)
    _check_norm_outputs(
        run_op(runtime, "aten::_native_batch_norm_legit_no_training", *args, returns=3),
        A._native_batch_norm_legit_no_training(*args),
        torch.float32,
    )
    empty = (x[:0], w, b, mean, var, 0.1, 1e-5)
    _check_norm_outputs(
        run_op(runtime, "aten::_native_batch_norm_legit_no_training", *empty, returns=3),
        A._native_batch_norm_legit_no_training(*empty),
        torch.float32,
    )

    def batch_norm_no_training(x, weight, bias, mean, var):
        return run_op(
            runtime, "aten::_native_batch_norm_legit_no_training", x, weight, bias, mean, var, 0.1, 1e-5, returns=3
        )

    with pytest.raises(PareError, match="argument 'running_mean' has dtype Float but 'input' is Double"):
        batch_norm_no_training(x.double(), None, None, mean, var.double())
    with pytest.raises(PareError, match=r"argument 'weight' must be a 1-d tensor of 2 elements, got sizes \[3\]"):
        batch_norm_no_training(x, torch.ones(3), None, mean, var)
    with pytest.raises(PareError, match="at least 2 dims"):
        batch_norm_no_training(torch.ones(2), None, None, mean, var)
    with pytest.raises(PareError, match="dtype Long is not supported"):
        batch_norm_no_training(x.long(), None, None, mean.long(), var.long())


# ---------------------------------------------------------------------------
# batch norm over the input's own statistics (_native_batch_norm_legit.no_stats:
# what nn.InstanceNorm*d exports to, on the input viewed as [1, N * C, ...])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 6, 4, 5), (3, 2, 2, 3, 2)])
def test_batch_norm_own_statistics_every_dtype(runtime, dtype, shape):
    x = make_tensor(shape, dtype, 42)
    w, b, _, _ = _bn_params(shape[1], dtype, 43)
    count = x.numel() // shape[1]  # values per channel: the statistics' reduction depth
    for args in [(x, w, b, True, 0.1, 1e-5), (x, None, None, True, 0.1, 1e-3)]:
        got = run_op(runtime, "aten::_native_batch_norm_legit.no_stats", *args, returns=3)
        want = A._native_batch_norm_legit.no_stats(*args)
        for g, e in zip(got, want):
            assert_same(g, e, **depth_tolerances(dtype, count))


def test_batch_norm_own_statistics_mixed_precision_strides_and_errors(runtime):
    x = make_tensor((5, 4, 6, 2), torch.float16, 47).permute(0, 3, 1, 2)  # [5, 2, 4, 6], non-contiguous
    w, b = make_tensor((2,), torch.float32, 48, 0.5, 2), make_tensor((2,), torch.float32, 49)
    args = (x, w, b, True, 0.1, 1e-5)
    got = run_op(runtime, "aten::_native_batch_norm_legit.no_stats", *args, returns=3)
    for g, e in zip(got, A._native_batch_norm_legit.no_stats(*args)):
        assert_same(g, e, **depth_tolerances(torch.float16, 5 * 6 * 4))
    assert got[1].dtype == torch.float32  # Half input, Float parameters: Float statistics
    # An empty input has no statistics: both refuse it.
    with pytest.raises(RuntimeError):
        A._native_batch_norm_legit.no_stats(x[:0].float(), None, None, True, 0.1, 1e-5)
    with pytest.raises(PareError, match=r"argument 'input' of sizes \[0, 2, 4, 6\] is empty"):
        run_op(
            runtime, "aten::_native_batch_norm_legit.no_stats", x[:0].float(), None, None, True, 0.1, 1e-5, returns=3
        )
    with pytest.raises(PareError, match="argument 'training' must be true"):
        run_op(runtime, "aten::_native_batch_norm_legit.no_stats", x.float(), None, None, False, 0.1, 1e-5, returns=3)
    with pytest.raises(PareError, match=r"argument 'weight' must be a 1-d tensor of 2 elements, got sizes \[3\]"):
        run_op(runtime, "aten::_native_batch_norm_legit.no_stats", x, torch.ones(3), None, True, 0.1, 1e-5, returns=3)
    with pytest.raises(PareError, match="at least 2 dims"):
        run_op(
            runtime, "aten::_native_batch_norm_legit.no_stats", torch.ones(3), None, None, True, 0.1, 1e-5, returns=3
        )


def test_instance_norm_as_exported_matches_torch(runtime):
    # nn.InstanceNorm2d(affine=True) runs the op on the input viewed as [1, N * C, H, W]
    # with its weight and bias repeated N times.
    norm = nn.InstanceNorm2d(3, affine=True)
    with torch.no_grad():
        norm.weight.copy_(make_tensor((3,), torch.float32, 60, 0.5, 2))
        norm.bias.copy_(make_tensor((3,), torch.float32, 61))
    x = make_tensor((2, 3, 5, 4), torch.float32, 62)
    w, b = norm.weight.detach().repeat(2), norm.bias.detach().repeat(2)
    got = run_op(
        runtime, "aten::_native_batch_norm_legit.no_stats", x.view(1, 6, 5, 4), w, b, True, 0.1, 1e-5, returns=3
    )
    assert_same(got[0].view(2, 3, 5, 4), norm(x).detach(), **depth_tolerances(torch.float32, 20))


# ---------------------------------------------------------------------------
# layer norm / group norm


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape,normalized", [((4, 7), [7]), ((2, 3, 40), [40]), ((2, 3, 5), [3, 5]), ((6,), [6])])
def test_layer_norm_every_dtype(runtime, dtype, shape, normalized):
    x = make_tensor(shape, dtype, 60)
    w, b = make_tensor(normalized, dtype, 61, 0.5, 2), make_tensor(normalized, dtype, 62)
    for args in [(x, normalized, w, b, 1e-5), (x, normalized, None, None, 1e-3), (x, normalized, w, None, 1e-5)]:
        got = run_op(runtime, "aten::native_layer_norm", *args, returns=3)
        _check_norm_outputs(got, A.native_layer_norm(*args), dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_layer_norm_mixed_precision(runtime, dtype):
    x = make_tensor((3, 16), dtype, 63)
    args = (x, [16], make_tensor((16,), torch.float32, 64), make_tensor((16,), torch.float32, 65), 1e-5)
    got = run_op(runtime, "aten::native_layer_norm", *args, returns=3)
    _check_norm_outputs(got, A.native_layer_norm(*args), dtype)
    assert got[1].dtype == torch.float32


def test_layer_norm_edge_cases(runtime):
    # Non-contiguous input and weight, a large offset (stable two-pass
    # variance), an empty batch and an empty normalized dim.
    x = make_tensor((12, 9), torch.float32, 66).t()
    w = make_tensor((24,), torch.float32, 67)[::2]
    cases = [
        (x, [12], w, None, 1e-5),
        (make_tensor((4, 300), torch.float32, 68) + 1000.0, [300], None, None, 1e-5),
        (torch.ones(0, 5), [5], None, None, 1e-5),
        (torch.ones(2, 0), [0], None, None, 1e-5),
    ]
    for args in cases:
        _check_norm_outputs(
            run_op(runtime, "aten::native_layer_norm", *args, returns=3), A.native_layer_norm(*args), torch.float32
        )
    with pytest.raises(PareError, match=r"argument 'normalized_shape' \[4\] must be non-empty and match"):
        run_op(runtime, "aten::native_layer_norm", torch.ones(2, 5), [4], None, None, 1e-5, returns=3)
    with pytest.raises(PareError, match=r"argument 'bias' of sizes \[4\] must have sizes \[5\]"):
        run_op(runtime, "aten::native_layer_norm", torch.ones(2, 5), [5], None, torch.ones(4), 1e-5, returns=3)
    with pytest.raises(PareError, match="argument 'weight' has dtype Half but 'input' is Float"):
        run_op(runtime, "aten::native_layer_norm", torch.ones(2, 5), [5], torch.ones(5).half(), None, 1e-5, returns=3)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 2), ((2, 8, 3), 4), ((1, 6, 3, 3), 1)])
def test_group_norm_every_dtype(runtime, dtype, shape, groups):
    x = make_tensor(shape, dtype, 70)
    n, c = shape[:2]
    hxw = x[0, 0].numel()
    w, b = make_tensor((c,), dtype, 71, 0.5, 2), make_tensor((c,), dtype, 72)
    for args in [(x, w, b, n, c, hxw, groups, 1e-5), (x, None, None, n, c, hxw, groups, 1e-3)]:
        got = run_op(runtime, "aten::native_group_norm", *args, returns=3)
        _check_norm_outputs(got, A.native_group_norm(*args), dtype)


def test_group_norm_mixed_non_contiguous_and_errors(runtime):
    x = make_tensor((2, 4, 5, 6), torch.bfloat16, 73).transpose(2, 3)
    args = (x, make_tensor((4,), torch.float32, 74), make_tensor((4,), torch.float32, 75), 2, 4, 30, 2, 1e-5)
    got = run_op(runtime, "aten::native_group_norm", *args, returns=3)
    # torch's CPU group norm only takes contiguous inputs; the runtime takes any.
    _check_norm_outputs(got, A.native_group_norm(x.contiguous(), *args[1:]), torch.bfloat16)
    assert got[2].dtype == torch.float32
    empty = (torch.ones(0, 4, 3), None, None, 0, 4, 3, 2, 1e-5)
    _check_norm_outputs(
        run_op(runtime, "aten::native_group_norm", *empty, returns=3), A.native_group_norm(*empty), torch.float32
    )
    with pytest.raises(PareError, match="argument 'group' = 3 must be positive and divide the 4 channels"):
        run_op(runtime, "aten::native_group_norm", torch.ones(2, 4, 3), None, None, 2, 4, 3, 3, 1e-5, returns=3)
    with pytest.raises(PareError, match=r"arguments N=2, C=4, HxW=5 do not describe 'input' of sizes \[2, 4, 3\]"):
        run_op(runtime, "aten::native_group_norm", torch.ones(2, 4, 3), None, None, 2, 4, 5, 2, 1e-5, returns=3)


# ---------------------------------------------------------------------------
# pooling


def check_max_pool2d(runtime, *args):
    """aten::max_pool2d_with_indices against torch, values and indices, and
    aten::max_pool2d (what the tracer lowers it to where nothing reads the
    indices: the same loops without them) against the same values."""
    got = run_op(runtime, "aten::max_pool2d_with_indices", *args, returns=2)
    want = A.max_pool2d_with_indices(*args)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    assert_same(run_op(runtime, "aten::max_pool2d", *args), want[0])


@pytest.mark.parametrize("dtype", NON_BOOL, ids=str)
def test_max_pool2d_every_dtype(runtime, dtype):
    x = make_tensor((2, 3, 9, 8), dtype, 80, 0 if dtype == torch.uint8 else -50, 50)
    for args in [(x, [3, 3], [2, 2], [1, 1], [1, 1], True), (x, [2, 2]), (x[0], [2, 3], [1, 2], [1, 0], [2, 1])]:
        check_max_pool2d(runtime, *args)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation",
    [
        ([3, 3], [2, 2], [1, 1], [1, 1]),
        ([2, 2], [], [0, 0], [1, 1]),
        ([3, 2], [3, 1], [1, 1], [2, 3]),
        ([4], [3], [2], [1]),
        ([5, 5], [2, 2], [2, 2], [1, 1]),
    ],
)
def test_max_pool2d_geometry(runtime, ceil_mode, kernel, stride, padding, dilation):
    x = make_tensor((1, 2, 11, 10), torch.float32, 81)
    args = (x, kernel, stride, padding, dilation, ceil_mode)
    check_max_pool2d(runtime, *args)


def test_max_pool2d_nan_inf_non_contiguous_and_errors(runtime):
    x = torch.tensor([[[[1.0, float("nan"), 3.0], [float("nan"), 2.0, -1.0], [float("-inf")] * 3]]])
    ninf = torch.full((1, 1, 3, 3), float("-inf"))
    t = make_tensor((2, 7, 8, 3), torch.float32, 82).permute(0, 3, 1, 2)
    # nn.MaxPool2d(2)'s unrolled loop: NaN first, last or twice in a window, ties, all -inf.
    nan = float("nan")
    x2 = torch.tensor(
        [
            [
                [
                    [nan, 1.0, 2.0, 2.0, -1.0, nan],
                    [0.0, nan, 2.0, 1.0, nan, 5.0],
                    [float("-inf")] * 2 + [3.0, 3.0, 0.0, -0.0],
                    [float("-inf")] * 2 + [3.0, 3.0, -0.0, 0.0],
                ]
            ]
        ]
    )
    for args in [
        (x, [2, 2], [1, 1]),
        (ninf, [2, 2], [1, 1], [1, 1]),
        (t, [3, 3], [2, 2], [1, 1]),
        (t[:0], [2, 2]),
        (x2, [2, 2]),
        (ninf, [2, 2]),
    ]:
        check_max_pool2d(runtime, *args)
    with pytest.raises(PareError, match=r"argument 'padding' \(2\) must be at most half of kernel_size \(3\)"):
        run_op(runtime, "aten::max_pool2d_with_indices", t, [3, 3], [1, 1], [2, 2], returns=2)
    with pytest.raises(PareError, match="input of 2 x 2 is too small"):
        run_op(runtime, "aten::max_pool2d_with_indices", torch.ones(1, 1, 2, 2), [3, 3], returns=2)
    with pytest.raises(PareError, match=r"argument 'self' must be 3-d \(C, H, W\) or 4-d"):
        run_op(runtime, "aten::max_pool2d_with_indices", torch.ones(2, 2), [1, 1], returns=2)
    with pytest.raises(PareError, match="only the batch dim may be empty"):
        run_op(runtime, "aten::max_pool2d_with_indices", torch.ones(1, 0, 2, 2), [1, 1], returns=2)
    with pytest.raises(PareError, match="dtype Bool is not supported"):
        run_op(runtime, "aten::max_pool2d_with_indices", torch.ones(1, 1, 2, 2, dtype=torch.bool), [1, 1], returns=2)
    with pytest.raises(PareError, match="dtype Bool is not supported"):
        run_op(runtime, "aten::max_pool2d", torch.ones(1, 1, 2, 2, dtype=torch.bool), [1, 1])
    with pytest.raises(PareError, match="input of 2 x 2 is too small"):
        run_op(runtime, "aten::max_pool2d", torch.ones(1, 1, 2, 2), [3, 3])


# Geometries for rows wide enough that float pooling runs its vector loop
# (4 or 8 outputs at a time between scalar ends): stride 1 and 2 along the
# row (a load, or the even lanes of two), padding, dilation, ceil_mode's
# partial last window, and a stride of 3 along the row (scalar only).
WIDE_POOLS = [
    ([3, 3], [2, 2], [1, 1], [1, 1], False),  # ResNet's stem
    ([3, 3], [1, 1], [1, 1], [1, 1], False),
    ([2, 2], [2, 2], [0, 0], [1, 1], False),  # nn.MaxPool2d(2)
    ([5, 5], [1, 1], [2, 2], [1, 1], True),
    ([3, 2], [2, 1], [1, 1], [2, 3], True),
    ([2, 3], [3, 2], [1, 1], [1, 1], True),
    ([1, 4], [1, 3], [0, 2], [1, 1], True),
]


def wide_pool_input() -> torch.Tensor:
    """2 x 3 planes of 13 x 61 small integers (ties in most windows), with
    a NaN, a run of -inf, a row of NaN and an inf, inside the vector part
    and at the rows' ends."""
    x = make_tensor((2, 3, 13, 61), torch.float32, 88, -3, 3).round()
    x[0, 0, 4, 17] = float("nan")
    x[0, 0, 6, 60] = float("nan")
    x[0, 1, :, 30:40] = float("-inf")
    x[1, 2, 5] = float("nan")
    x[1, 0, 0, 0] = float("inf")
    return x


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", WIDE_POOLS)
def test_max_pool2d_wide_rows(runtime, kernel, stride, padding, dilation, ceil_mode):
    x = wide_pool_input()
    # Widths one less (another tail), 14 and 9 (nn.MaxPool2d(2)'s 7 and 4
    # outputs: half vectors on AVX2) and 6 (3 outputs: scalar).
    for t in (x, x[..., 1:].contiguous(), x[..., :14].contiguous(), x[..., :9].contiguous(), x[..., :6].contiguous()):
        args = (t, kernel, stride, padding, dilation, ceil_mode)
        check_max_pool2d(runtime, *args)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", WIDE_POOLS)
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (False, 7)])
def test_avg_pool2d_wide_rows(runtime, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor):
    x = make_tensor((2, 3, 13, 61), torch.float32, 89, -20, 20)
    x[1, 2, 5, 9] = float("nan")
    x[1, 2, 7, 40] = float("inf")
    padding = [min(p, k // 2) for p, k in zip(padding, kernel)]
    for t in (x, x[:, :, :, 1:].contiguous()):
        args = (t, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        assert_same(
            run_op(runtime, "aten::avg_pool2d", *args), A.avg_pool2d(*args), **depth_tolerances(torch.float32, 25)
        )


@pytest.mark.parametrize("dtype", AVG_POOL_DTYPES, ids=str)
def test_avg_pool2d_every_dtype(runtime, dtype):
    x = make_tensor((2, 3, 9, 8), dtype, 83, -20, 20)
    for args in [
        (x, [3, 3], [2, 2], [1, 1], True, False),
        (x, [2, 2], [2, 2], [0, 0], False, True, 3),
        (x, [3, 2]),
        (x[1], [2, 2], [1, 1], [1, 1], False, True),
    ]:
        assert_same(run_op(runtime, "aten::avg_pool2d", *args), A.avg_pool2d(*args), **depth_tolerances(dtype, 9))


@pytest.mark.parametrize(
    "ceil_mode,count_include_pad,divisor", list(itertools.product([False, True], [False, True], [None, 5, -2]))
)
def test_avg_pool2d_options(runtime, ceil_mode, count_include_pad, divisor):
    for dtype in (torch.float32, torch.int64):
        x = make_tensor((1, 2, 10, 7), dtype, 84, -30, 30)
        args = (x, [3, 3], [2, 3], [1, 1], ceil_mode, count_include_pad, divisor)
        assert_same(run_op(runtime, "aten::avg_pool2d", *args), A.avg_pool2d(*args), **depth_tolerances(dtype, 9))


def test_avg_pool2d_non_contiguous_and_errors(runtime):
    x = make_tensor((6, 5, 3), torch.float64, 85).permute(2, 0, 1)
    assert_same(run_op(runtime, "aten::avg_pool2d", x, [2, 2], [1, 1], [1, 1]), A.avg_pool2d(x, [2, 2], [1, 1], [1, 1]))
    with pytest.raises(PareError, match="argument 'divisor_override' must not be zero"):
        run_op(runtime, "aten::avg_pool2d", x, [2, 2], [1, 1], [0, 0], False, True, 0)
    with pytest.raises(PareError, match="dtype Int is not supported"):
        run_op(runtime, "aten::avg_pool2d", x.int(), [2, 2])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize(
    "in_size,out_size", [((9, 9), [3, 4]), ((7, 5), [7, 5]), ((5, 6), [8, 9]), ((10, 3), [1, 1]), ((6, 6), [0, 2])]
)
def test_adaptive_avg_pool2d(runtime, dtype, in_size, out_size):
    x = make_tensor((2, 3) + in_size, dtype, 86)
    assert_same(
        run_op(runtime, "aten::_adaptive_avg_pool2d", x, out_size),
        A._adaptive_avg_pool2d(x, out_size),
        **depth_tolerances(dtype, 4),
    )
    assert_same(
        run_op(runtime, "aten::_adaptive_avg_pool2d", x[0], out_size),
        A._adaptive_avg_pool2d(x[0], out_size),
        **depth_tolerances(dtype, 4),
    )


def test_adaptive_avg_pool2d_non_contiguous_and_errors(runtime):
    x = make_tensor((2, 8, 9, 3), torch.float32, 87).permute(0, 3, 1, 2)
    assert_same(run_op(runtime, "aten::_adaptive_avg_pool2d", x, [4, 2]), A._adaptive_avg_pool2d(x, [4, 2]))
    assert_same(run_op(runtime, "aten::_adaptive_avg_pool2d", x[:0], [4, 2]), A._adaptive_avg_pool2d(x[:0], [4, 2]))
    with pytest.raises(PareError, match="only the batch dim may be empty"):
        run_op(runtime, "aten::_adaptive_avg_pool2d", torch.ones(1, 2, 0, 4), [2, 2])
    with pytest.raises(PareError, match="argument 'output_size' must be a single value or a list of 2 values"):
        run_op(runtime, "aten::_adaptive_avg_pool2d", x, [1, 2, 3])
    with pytest.raises(PareError, match="dtype Long is not supported"):
        run_op(runtime, "aten::_adaptive_avg_pool2d", x.long(), [2, 2])


# ---------------------------------------------------------------------------
# upsampling

UPSAMPLE_SIZES = [
    ((5, 7), [10, 14], None),
    ((5, 7), [9, 11], None),
    ((6, 6), [3, 4], None),
    ((4, 5), None, [2.0, 2.0]),
    ((4, 5), None, [1.5, 2.5]),
    ((7, 9), None, [0.5, 0.75]),
    ((3, 3), None, [3.0, 1.0]),
    ((5, 4), [5, 4], None),
]


def _updata(shape, dtype, seed):
    return make_tensor(shape, dtype, seed, 0, 255) if dtype == torch.uint8 else make_tensor(shape, dtype, seed)


@pytest.mark.parametrize("dtype", UPSAMPLE_DTYPES, ids=str)
@pytest.mark.parametrize("in_size,size,scales", UPSAMPLE_SIZES)
def test_upsample_nearest2d_vec(runtime, dtype, in_size, size, scales):
    x = _updata((2, 3) + in_size, dtype, 90)
    assert_same(
        run_op(runtime, "aten::upsample_nearest2d.vec", x, size, scales), A.upsample_nearest2d.vec(x, size, scales)
    )


@pytest.mark.parametrize("dtype", UPSAMPLE_DTYPES, ids=str)
def test_upsample_nearest2d_default_overload(runtime, dtype):
    x = _updata((1, 2, 5, 6), dtype, 91)
    for args in [(x, [11, 13]), (x, [11, 13], 2.3, 2.1), (x, [4, 3], None, 0.5), (x, [10, 12], 2.0, 2.0)]:
        assert_same(run_op(runtime, "aten::upsample_nearest2d", *args), A.upsample_nearest2d(*args))


@pytest.mark.parametrize("dtype", UPSAMPLE_DTYPES, ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("in_size,size,scales", UPSAMPLE_SIZES)
def test_upsample_bilinear2d_vec(runtime, dtype, align_corners, in_size, size, scales):
    x = _updata((2, 3) + in_size, dtype, 92)
    want = A.upsample_bilinear2d.vec(x, size, align_corners, scales)
    assert_same(
        run_op(runtime, "aten::upsample_bilinear2d.vec", x, size, align_corners, scales),
        want,
        **depth_tolerances(dtype, 4),
    )


@pytest.mark.parametrize("dtype", UPSAMPLE_DTYPES, ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_bilinear2d_default_overload(runtime, dtype, align_corners):
    x = _updata((2, 5, 6, 5), dtype, 93)
    for args in [
        (x, [13, 11], align_corners),
        (x, [13, 11], align_corners, 2.2, 2.3),
        (x, [3, 2], align_corners, None, 0.5),
        (x, [1, 1], align_corners),
    ]:
        assert_same(
            run_op(runtime, "aten::upsample_bilinear2d", *args),
            A.upsample_bilinear2d(*args),
            **depth_tolerances(dtype, 4),
        )


@pytest.mark.parametrize("channels", [1, 3, 4, 6])
def test_upsample_bilinear2d_uint8_is_bit_exact(runtime, channels):
    # PyTorch resizes uint8 with int16 fixed-point weights and a rounded
    # intermediate; the runtime reproduces it exactly (shapes with an output
    # width of 1 and more than 4 channels are left out: torch's own generic
    # uint8 kernel returns a wrong result there).
    g = torch.Generator().manual_seed(channels)
    for _ in range(12):
        h, w = torch.randint(1, 10, (2,), generator=g).tolist()
        oh, ow = torch.randint(2, 20, (2,), generator=g).tolist()
        x = torch.randint(0, 256, (2, channels, h, w), generator=g, dtype=torch.uint8)
        for align_corners in (False, True):
            assert_same(
                run_op(runtime, "aten::upsample_bilinear2d.vec", x, [oh, ow], align_corners, None),
                A.upsample_bilinear2d.vec(x, [oh, ow], align_corners, None),
            )


def test_upsample_non_contiguous_empty_and_errors(runtime):
    x = make_tensor((2, 6, 5, 3), torch.float32, 94).permute(0, 3, 1, 2)
    assert_same(
        run_op(runtime, "aten::upsample_nearest2d.vec", x, None, [2.0, 2.0]),
        A.upsample_nearest2d.vec(x, None, [2.0, 2.0]),
    )
    assert_same(
        run_op(runtime, "aten::upsample_bilinear2d.vec", x, [9, 7], False, None),
        A.upsample_bilinear2d.vec(x, [9, 7], False, None),
        **depth_tolerances(torch.float32, 4),
    )
    assert_same(
        run_op(runtime, "aten::upsample_bilinear2d.vec", x[:0], [9, 7], False, None),
        A.upsample_bilinear2d.vec(x[:0], [9, 7], False, None),
    )
    assert_same(
        run_op(runtime, "aten::upsample_nearest2d.vec", x, None, [2, 3]),  # whole-number scales as ints
        A.upsample_nearest2d.vec(x, None, [2.0, 3.0]),
    )
    with pytest.raises(PareError, match="exactly one of 'output_size' and 'scale_factors' must be given, got both"):
        run_op(runtime, "aten::upsample_nearest2d.vec", x, [4, 4], [2.0, 2.0])
    with pytest.raises(PareError, match="got neither"):
        run_op(runtime, "aten::upsample_bilinear2d.vec", x, None, False, None)
    with pytest.raises(PareError, match=r"argument 'input' must be 4-d \(N, C, H, W\)"):
        run_op(runtime, "aten::upsample_nearest2d.vec", x[0], [4, 4], None)
    with pytest.raises(PareError, match=r"output size \(0, 4\) must be positive"):
        run_op(runtime, "aten::upsample_nearest2d", x, [0, 4])
    with pytest.raises(PareError, match="argument 'scale_factors': scale 0.1 of an input size of 6"):
        run_op(runtime, "aten::upsample_bilinear2d.vec", x, None, False, [0.1, 1.0])
    with pytest.raises(PareError, match="argument 'scale_factors' must have 2 elements, got 1"):
        run_op(runtime, "aten::upsample_nearest2d.vec", x, None, [2.0])
    with pytest.raises(PareError, match="dtype Int is not supported"):
        run_op(runtime, "aten::upsample_nearest2d.vec", x.int(), [4, 4], None)


# ---------------------------------------------------------------------------
# constant_pad_nd


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_constant_pad_nd_every_dtype(runtime, dtype):
    x = make_tensor((2, 3, 4), dtype, 100)
    value = True if dtype == torch.bool else 5
    for pad in ([1, 2], [1, 1, 0, 2], [2, 0, 1, 1, 1, 0], [-1, 2, 0, -1], []):
        assert_same(run_op(runtime, "aten::constant_pad_nd", x, pad, value), A.constant_pad_nd(x, pad, value))
    assert_same(run_op(runtime, "aten::constant_pad_nd", x, [1, 1]), A.constant_pad_nd(x, [1, 1]))


def test_constant_pad_nd_edge_cases(runtime):
    x = make_tensor((4, 6, 5), torch.float32, 101).transpose(0, 2)  # non-contiguous, incl. the last dim
    cases = [
        (x, [2, 3, 1, 1], 1.5),
        (x, [-1, -2, 0, 0, -1, 1], -1.0),
        (x, [0, 0, -6, 0], 0.0),  # crops to empty
        (x[:, :0], [1, 1], 2.0),
        (torch.tensor(3.0), [], 0.0),
        (torch.ones(3), [-1, -2], 0.0),
        (make_tensor((2, 3), torch.int32, 102), [1, 1], 2.7),
        (make_tensor((2,), torch.uint8, 103), [1, 1], -1),
        (make_tensor((2,), torch.float16, 104), [1, 0], float("inf")),
        (make_tensor((2,), torch.int64, 105), [1, 0], 2**62),
        (torch.zeros(2, dtype=torch.bool), [1, 1], 0.5),
    ]
    for args in cases:
        assert_same(run_op(runtime, "aten::constant_pad_nd", *args), A.constant_pad_nd(*args))
    for dtype, value in [
        (torch.int8, 128),
        (torch.float16, 1e6),
        (torch.int64, float("nan")),
        (torch.uint8, 256),
        (torch.uint8, -1.0),
        (torch.float32, 1e300),
    ]:
        with pytest.raises(RuntimeError, match="overflow"):
            A.constant_pad_nd(torch.ones(2, dtype=dtype), [1, 1], value)
        with pytest.raises(PareError, match="argument 'value' cannot be converted to \\w+ without overflow"):
            run_op(runtime, "aten::constant_pad_nd", torch.ones(2, dtype=dtype), [1, 1], value)
    with pytest.raises(PareError, match="argument 'pad' must have an even length, got 1"):
        run_op(runtime, "aten::constant_pad_nd", x, [1])
    with pytest.raises(PareError, match="argument 'pad' has 4 elements; at most twice the rank of 'self' \\(1\\)"):
        run_op(runtime, "aten::constant_pad_nd", torch.ones(3), [1, 1, 1, 1])
    with pytest.raises(PareError, match="gives a negative size"):
        run_op(runtime, "aten::constant_pad_nd", torch.ones(3), [-3, -1])


# ---------------------------------------------------------------------------
# reflection_pad1d/2d/3d and replication_pad1d/2d/3d

PAD_OPS = [f"{mode}_pad{k}d" for mode in ("reflection", "replication") for k in (1, 2, 3)]


def _pad_case(op, batch=True):
    """An input of the op's rank (with or without the batch dim) and padding
    that mixes widening, none and cropping, within reflection's limits."""
    k = int(op[-2])
    shape = ((2,) if batch else ()) + (3, 5, 4, 6)[: k + 1]
    padding = [2, 1, 0, 3, -1, 2][: 2 * k]
    return shape, padding


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", PAD_OPS)
def test_edge_padding_every_dtype(runtime, op, dtype):
    # Bool is refused by both (no dtype of the tags).
    fn = getattr(A, op)
    for batch in (True, False):
        shape, padding = _pad_case(op, batch)
        x = make_tensor(shape, dtype, 106)
        same_or_both_fail(runtime, f"aten::{op}", (x, padding), lambda: fn(x, padding))


@pytest.mark.parametrize("op", PAD_OPS)
def test_edge_padding_strides_crops_and_limits(runtime, op):
    fn, k = getattr(A, op), int(op[-2])
    shape, _ = _pad_case(op)
    x = make_tensor(tuple(reversed(shape)), torch.float32, 107).permute(*reversed(range(len(shape))))  # strided
    reflect = op.startswith("reflection")
    widest = [min(shape[-1 - p // 2] - 1, 7) if reflect else 7 for p in range(2 * k)]
    for padding in (widest, [0] * (2 * k), [-1, -2] * k, [-(shape[-1] - 1), 0] + [1] * (2 * k - 2)):
        assert_same(run_op(runtime, f"aten::{op}", x, padding), fn(x, padding))
    if k > 1:  # the width cropped away while the height stays: allowed, as in torch
        crop = [-shape[-1], 0] + [0] * (2 * k - 2)
        assert_same(run_op(runtime, f"aten::{op}", x, crop), fn(x, crop))
    x0 = make_tensor((0,) + shape[1:], torch.float32, 108)  # an empty batch
    assert_same(run_op(runtime, f"aten::{op}", x0, [1] * (2 * k)), fn(x0, [1] * (2 * k)))
    bad = [
        (x, [1] * (2 * k + 2), r"argument 'padding' must have \d elements"),
        (make_tensor(shape[2:], torch.float32, 109), [1] * (2 * k), r"argument 'self' must be \dD"),
        (make_tensor((2, 0) + shape[2:], torch.float32, 109), [1] * (2 * k), r"argument 'self' must be \dD"),
        (x, [-shape[-1] - 1, 0] + [0] * (2 * k - 2), r"gives a negative size"),
        (x, [-n for d in range(k) for n in (shape[-1 - d], 0)], r"crops every padded dim of 'self' to nothing"),
    ]
    if reflect:
        bad.append((x, [shape[-1], 0] + [0] * (2 * k - 2), r"reflection padding \(\d+, 0\) of dim \d must be less"))
    for t, padding, message in bad:
        with pytest.raises(RuntimeError):
            fn(t, padding)
        with pytest.raises(PareError, match=message):
            run_op(runtime, f"aten::{op}", t, padding)


def test_reflection_padding_in_a_model_matches_torch(runtime):
    # F.pad's "reflect" and "replicate" modes export to these ops.
    x = make_tensor((1, 2, 5, 6), torch.float32, 110)
    for mode in ("reflect", "replicate"):
        expected = F.pad(x, (2, 1, 3, 0), mode=mode)
        op = "aten::reflection_pad2d" if mode == "reflect" else "aten::replication_pad2d"
        assert_same(run_op(runtime, op, x, [2, 1, 3, 0]), expected)


# ---------------------------------------------------------------------------
# embedding


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_embedding_every_dtype(runtime, dtype, index_dtype):
    weight = make_tensor((10, 3), dtype, 110)
    idx = torch.tensor([[1, 9, 0], [3, 3, 7]], dtype=index_dtype)
    assert_same(run_op(runtime, "aten::embedding", weight, idx), A.embedding(weight, idx))
    assert_same(run_op(runtime, "aten::embedding", weight, idx, 0), A.embedding(weight, idx, 0))


def test_embedding_edge_cases_and_errors(runtime):
    weight = make_tensor((3, 8), torch.float32, 111).t()  # [8, 3], non-contiguous
    idx = torch.tensor([7, 0, 2, 5, 1, 1])[::2]
    for args in [
        (weight, idx),
        (weight, torch.tensor(4)),
        (weight, torch.zeros(0, 2, dtype=torch.int64)),
        (torch.zeros(4, 0), torch.tensor([1, 3])),
        (weight, idx.view(3, 1, 1), -1, False, False),
    ]:
        assert_same(run_op(runtime, "aten::embedding", *args), A.embedding(*args))
    with pytest.raises(PareError, match="argument 'indices': index 8 is out of range for 'weight' with 8 rows"):
        run_op(runtime, "aten::embedding", weight, torch.tensor([1, 8]))
    with pytest.raises(PareError, match="index -1 is out of range"):
        run_op(runtime, "aten::embedding", weight, torch.tensor([-1], dtype=torch.int32))
    with pytest.raises(PareError, match="argument 'indices' must be Long or Int, got Float"):
        run_op(runtime, "aten::embedding", weight, torch.tensor([1.0]))
    with pytest.raises(PareError, match=r"argument 'weight' must be 2-d, got sizes \[4\]"):
        run_op(runtime, "aten::embedding", torch.ones(4), torch.tensor([1]))


# ---------------------------------------------------------------------------
# bmm


# ---------------------------------------------------------------------------
# _log_softmax


# ---------------------------------------------------------------------------
# What torch.export emits for nn modules, run as exported.


class _Interpolate(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


class _Bmm(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


EXPORTED_MODULES = {
    "conv1d": (lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1), [(2, 4, 10)], "aten::convolution"),
    "conv1d_same": (lambda: nn.Conv1d(4, 6, 3, bias=False, padding="same"), [(2, 4, 10)], "aten::convolution"),
    "conv2d": (
        lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
        [(2, 4, 10, 10)],
        "aten::convolution",
    ),
    "conv2d_depthwise": (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=4), [(2, 4, 10, 10)], "aten::convolution"),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
        [(1, 4, 5, 5)],
        "aten::convolution",
    ),
    "conv3d": (
        lambda: nn.Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
        [(1, 3, 4, 16, 16)],
        "aten::convolution",
    ),
    "conv3d_spatial": (lambda: nn.Conv3d(4, 6, (1, 3, 3), padding=(0, 1, 1)), [(2, 4, 3, 6, 6)], "aten::convolution"),
    "conv3d_temporal": (
        lambda: nn.Conv3d(6, 4, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)),
        [(2, 6, 5, 4, 4)],
        "aten::convolution",
    ),
    "batch_norm2d": (lambda: nn.BatchNorm2d(4), [(2, 4, 5, 5)], "aten::_native_batch_norm_legit_no_training"),
    "batch_norm1d": (lambda: nn.BatchNorm1d(4), [(2, 4, 5)], "aten::_native_batch_norm_legit_no_training"),
    "layer_norm": (lambda: nn.LayerNorm([5]), [(2, 3, 5)], "aten::native_layer_norm"),
    "layer_norm_2d_no_affine": (
        lambda: nn.LayerNorm([3, 5], elementwise_affine=False),
        [(2, 3, 5)],
        "aten::native_layer_norm",
    ),
    "group_norm": (lambda: nn.GroupNorm(2, 4), [(2, 4, 5, 5)], "aten::native_group_norm"),
    "max_pool2d": (
        lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        [(2, 4, 9, 9)],
        "aten::max_pool2d_with_indices",
    ),
    "max_pool2d_defaults": (lambda: nn.MaxPool2d(2), [(4, 9, 9)], "aten::max_pool2d_with_indices"),
    "avg_pool2d": (
        lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        [(2, 4, 9, 9)],
        "aten::avg_pool2d",
    ),
    "avg_pool2d_divisor": (lambda: nn.AvgPool2d(2, divisor_override=3), [(2, 4, 9, 9)], "aten::avg_pool2d"),
    "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2d((3, 4)), [(2, 4, 9, 9)], "aten::_adaptive_avg_pool2d"),
    "upsample_nearest": (
        lambda: nn.Upsample(scale_factor=2, mode="nearest"),
        [(2, 4, 5, 5)],
        "aten::upsample_nearest2d.vec",
    ),
    "upsample_nearest_size": (
        lambda: nn.Upsample(size=(7, 9), mode="nearest"),
        [(2, 4, 5, 5)],
        "aten::upsample_nearest2d.vec",
    ),
    "upsample_bilinear": (
        lambda: nn.Upsample(scale_factor=2, mode="bilinear"),
        [(2, 4, 5, 5)],
        "aten::upsample_bilinear2d.vec",
    ),
    "upsample_bilinear_align": (
        lambda: nn.Upsample(size=(7, 9), mode="bilinear", align_corners=True),
        [(2, 4, 5, 5)],
        "aten::upsample_bilinear2d.vec",
    ),
    "interpolate_nearest": (
        lambda: _Interpolate(scale_factor=1.5, mode="nearest"),
        [(1, 2, 4, 4)],
        "aten::upsample_nearest2d.vec",
    ),
    "interpolate_bilinear": (
        lambda: _Interpolate(scale_factor=(2, 3), mode="bilinear"),
        [(1, 2, 4, 4)],
        "aten::upsample_bilinear2d.vec",
    ),
    "interpolate_recompute": (
        lambda: _Interpolate(scale_factor=1.5, mode="nearest", recompute_scale_factor=True),
        [(1, 2, 4, 4)],
        "aten::upsample_nearest2d.vec",
    ),
    "constant_pad": (lambda: nn.ConstantPad2d((1, 2, 0, 3), 1.5), [(2, 4, 5, 5)], "aten::constant_pad_nd"),
    "zero_pad": (lambda: nn.ZeroPad2d(1), [(2, 4, 5, 5)], "aten::constant_pad_nd"),
    "embedding": (lambda: nn.Embedding(10, 3), [torch.tensor([[1, 2], [3, 9]])], "aten::embedding"),
    "embedding_padding_idx": (
        lambda: nn.Embedding(10, 3, padding_idx=0),
        [torch.tensor([[1, 0], [3, 9]])],
        "aten::embedding",
    ),
    "log_softmax": (lambda: nn.LogSoftmax(dim=1), [(2, 4)], "aten::_log_softmax"),
    "bmm": (lambda: _Bmm(), [(2, 3, 4), (2, 4, 5)], "aten::bmm"),
}


def _op_name(target) -> str:
    packet, overload = target._schema.name, target._overloadname
    return packet if overload == "default" else f"{packet}.{overload}"


@pytest.mark.parametrize("name", list(EXPORTED_MODULES))
def test_exported_modules(runtime, name):
    """Exports the module, checks the graph is the expected single op, and
    runs that node's exact argument list (parameters and buffers as method
    inputs) through the runtime."""
    make, shapes, expected_op = EXPORTED_MODULES[name]
    torch.manual_seed(0)
    module = make()
    if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
        module.running_mean.uniform_(-1, 1)
        module.running_var.uniform_(0.5, 2)
    if isinstance(module, (nn.GroupNorm, nn.LayerNorm)) and getattr(module, "weight", None) is not None:
        with torch.no_grad():
            module.weight.uniform_(0.5, 2)
            module.bias.uniform_(-1, 1)
    module.eval()
    example = tuple(s if isinstance(s, torch.Tensor) else torch.randn(s) for s in shapes)
    ep = torch.export.export(module, example).run_decompositions()
    calls = [n for n in ep.graph.nodes if n.op == "call_function" and n.target.__name__ != "getitem"]
    assert [_op_name(n.target) for n in calls] == [expected_op], ep.graph
    node = calls[0]

    # Placeholders: parameters/buffers from the state dict, user inputs in order.
    sig = ep.graph_signature
    named = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    state = ep.state_dict
    user = iter(example)
    env = {}
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            env[n.name] = state[named[n.name]].detach() if n.name in named else next(user)

    def value(a):
        if isinstance(a, torch.fx.Node):
            return env[a.name]
        if isinstance(a, (list, tuple)):
            return [value(i) for i in a]
        return a

    assert not node.kwargs, node.kwargs  # export spells every argument positionally
    args = [value(a) for a in node.args]
    returns = len(node.target._schema.returns)
    got = run_op(runtime, expected_op, *args, returns=returns if returns > 1 else "tensor")
    want = node.target(*args)
    if returns == 1:
        got, want = [got], [want]
    for g, w in zip(got, want):
        assert_same(g, w, **depth_tolerances(w.dtype, 36))
    # The module's own output is output 0.
    assert_same(got[0], module(*example), **depth_tolerances(got[0].dtype, 36))


def test_nn_ops_in_one_program(runtime):
    """A small CNN as a multi-instruction program: conv -> batch norm -> max
    pool -> upsample -> pad -> adaptive pool, run repeatedly with changing
    batch sizes (memory re-planning)."""
    torch.manual_seed(1)
    w = torch.randn(8, 3, 3, 3)
    b = torch.randn(8)
    mean, var = torch.randn(8), torch.rand(8) + 0.5
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 3, 16, 16])
    y = m.op("aten::convolution", x, m.constant(w), m.constant(b), [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    y, _, _ = m.op(
        "aten::_native_batch_norm_legit_no_training",
        y,
        None,
        None,
        m.constant(mean),
        m.constant(var),
        0.1,
        1e-5,
        returns=3,
    )
    y, _ = m.op("aten::max_pool2d_with_indices", y, [2, 2], [2, 2], returns=2)
    y = m.op("aten::upsample_bilinear2d.vec", y, None, False, [2.0, 2.0])
    y = m.op("aten::constant_pad_nd", y, [1, 1, 1, 1], 0.0)
    y = m.op("aten::_adaptive_avg_pool2d", y, [3, 3])
    m.output(y)
    method = runtime.load(pb.to_bytes()).method()
    for batch in (2, 1, 3, 2):
        xin = torch.randn(batch, 3, 16, 16)
        ref = F.conv2d(xin, w, b, padding=1)
        ref = F.batch_norm(ref, mean, var, eps=1e-5)
        ref = F.max_pool2d(ref, 2)
        ref = F.interpolate(ref, scale_factor=2.0, mode="bilinear")
        ref = F.adaptive_avg_pool2d(F.pad(ref, [1, 1, 1, 1]), [3, 3])
        (out,) = method.run(to_input(xin))
        assert_same(torch.from_numpy(out), ref, **depth_tolerances(torch.float32, 27))


def test_tracing_records_the_conv3d_tag(tracing_runtime):
    """A 3-d convolution records convolution3d_kernel, not the 2-d tag, so a
    traced video model selects the 3-d code and a 2-d one does not."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Half", [1, 4, 3, 5, 5])
    w = m.constant(torch.randn(6, 4, 3, 3, 3).half())
    m.output(m.op("aten::convolution", x, w, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1))
    program = tracing_runtime.load(pb.to_bytes())
    program.method().run(to_input(make_tensor((1, 4, 3, 5, 5), torch.float16, 141)))
    trace = program.trace()
    assert trace.kernel_dtypes["convolution3d_kernel"] == ("Half",)
    assert "convolution_kernel" not in trace.kernel_dtypes


def test_tracing_records_nn_tags(tracing_runtime):
    """A manifest traced from an nn model lists each op's tag at the dtypes
    it ran with (embedding copies bytes and records none), plus copy_kernel
    where an input had to be made contiguous."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Half", [1, 4, 6, 6])
    idx = m.input("Int", [3])
    w = m.constant(torch.randn(4, 1, 3, 3).half())
    y = m.op("aten::convolution", x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 4)
    y, _, _ = m.op("aten::native_group_norm", y, None, None, 1, 4, 36, 2, 1e-5, returns=3)
    e = m.op("aten::embedding", m.constant(torch.randn(5, 2)), idx)
    m.output(y, e)
    program = tracing_runtime.load(pb.to_bytes())
    xin = make_tensor((1, 6, 6, 4), torch.float16, 140).permute(0, 3, 1, 2)  # non-contiguous: copied once
    program.method().run(to_input(xin), torch.tensor([0, 4, 2], dtype=torch.int32).numpy())
    trace = program.trace()
    assert {"aten::convolution", "aten::native_group_norm", "aten::embedding"} <= set(trace.ops)
    assert trace.kernel_dtypes["convolution_kernel"] == ("Half",)
    assert trace.kernel_dtypes["group_norm_kernel"] == ("Half",)
    assert "Half" in trace.kernel_dtypes["copy_kernel"]
    assert not any("embedding" in tag for tag in trace.kernel_dtypes)


# ---------------------------------------------------------------------------
# _embedding_bag, _embedding_bag_forward_only (nn.EmbeddingBag)
#
# Output 0 must equal torch bit for bit (PyTorch's CPU kernel is
# deterministic: bags in index order, FBGEMM or its own loop chosen by the
# weight's layout and padding_idx, both repeated by the kernel); the other
# three outputs are compared exactly too.

EMBEDDING_BAG_OPS = ["aten::_embedding_bag", "aten::_embedding_bag_forward_only"]
EXACT = dict(rtol=0, atol=0)


def _embedding_bag(op, *args):
    fn = A._embedding_bag if op == "aten::_embedding_bag" else A._embedding_bag_forward_only
    return fn(*args)


def _assert_bags(runtime, op, args):
    got = run_op(runtime, op, *args, returns=4)
    want = _embedding_bag(op, *args)
    for g, w in zip(got, want):
        assert_same(g, w, **EXACT)


@pytest.mark.parametrize("op", EMBEDDING_BAG_OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["sum", "mean", "max"])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_embedding_bag_every_dtype_and_mode(runtime, op, dtype, mode, index_dtype):
    weight = make_tensor((10, 5), dtype, 120)
    indices = torch.tensor([1, 9, 0, 3, 3, 7, 2, 9], dtype=index_dtype)
    offsets = torch.tensor([0, 3, 3, 5], dtype=index_dtype)  # bag 1 is empty
    for include_last_offset, offs in [(False, offsets), (True, torch.cat([offsets, offsets.new_tensor([8])]))]:
        for padding_idx in [-1, 3, 9]:
            _assert_bags(
                runtime, op, (weight, indices, offs, False, mode, False, None, include_last_offset, padding_idx)
            )
    # Trailing defaults left out, as torch.export emits them.
    _assert_bags(runtime, op, (weight, indices, offsets, False, mode))


@pytest.mark.parametrize("op", EMBEDDING_BAG_OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "padding_idx"])
def test_embedding_bag_long_bags_round_like_torch(runtime, op, dtype, layout):
    """Many long bags, so every rounding difference shows: the sum path
    (FBGEMM for a contiguous weight without padding_idx, torch's own loop
    otherwise), the weighted sum (a fused multiply-add on FBGEMM's path),
    BFloat16 rounding (half away from zero on FBGEMM's path), and the mean's
    division of the rounded sum."""
    g = torch.Generator().manual_seed(121)
    weight = (torch.randn(50, 37, generator=g, dtype=torch.float64) * 3).to(dtype)
    if layout == "transposed":
        weight = weight.t().contiguous().t()
    padding_idx = 7 if layout == "padding_idx" else -1
    indices = torch.randint(0, 50, (2000,), generator=g)
    offsets = torch.arange(0, 2000, 40)
    psw = torch.randn(2000, generator=g, dtype=torch.float64).to(dtype)
    for mode, weights in [(0, None), (0, psw), (1, None), (2, None)]:
        _assert_bags(runtime, op, (weight, indices, offsets, False, mode, False, weights, False, padding_idx))


def test_embedding_bag_bfloat16_ties(runtime):
    # 1 + 2**-8 is a tie between two bfloat16s: FBGEMM (contiguous weight)
    # rounds it up, torch's own loop (here: transposed weight) to even.
    weight = torch.tensor([[1.0, 1.0], [2**-8, 2**-8]], dtype=torch.bfloat16)
    indices, offsets = torch.tensor([0, 1]), torch.tensor([0])
    for w in [weight, weight.t().contiguous().t()]:
        _assert_bags(runtime, "aten::_embedding_bag", (w, indices, offsets, False, 0))
    assert run_op(runtime, "aten::_embedding_bag", weight, indices, offsets, returns=4)[0][0, 0].item() == 1.0078125


@pytest.mark.parametrize("op", EMBEDDING_BAG_OPS)
def test_embedding_bag_edge_cases(runtime, op):
    weight = make_tensor((6, 3), torch.float32, 122)
    nan_weight = weight.clone()
    nan_weight[2, 1] = float("nan")
    for args in [
        (weight, torch.zeros(0, dtype=torch.int64), torch.tensor([0, 0]), False, 1),  # two empty bags
        (weight, torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), False, 2),  # no bags
        # No bag, indices left over (sum only: torch's max mode writes out of bounds there).
        (weight, torch.tensor([1, 2]), torch.tensor([0], dtype=torch.int64), False, 0, False, None, True),
        (weight, torch.tensor([1, 2, 3], dtype=torch.int32), torch.tensor([0, 1]), False, 1),  # Int and Long
        (weight, torch.tensor([4, 2, 2, 5]), torch.tensor([0, 2]), False, 1, False, None, False, 2),  # all padding
        (nan_weight, torch.tensor([0, 2, 1, 1, 2]), torch.tensor([0, 2]), False, 2),  # NaN first / later
        # No columns: max mode only, as torch's FBGEMM path refuses a
        # 0-column table in sum and mean mode (the runtime returns [2, 0]).
        (torch.zeros(6, 0), torch.tensor([1, 2]), torch.tensor([0, 1]), False, 2),
        (weight, torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2]), False, 0, False, weight[:4, 0], False, -1),
        (
            weight,
            torch.tensor([1, 2, 3, 4]),
            torch.tensor([0, 2]),
            False,
            0,
            False,
            torch.arange(8.0)[::2],  # strided weights: torch's own loop
            False,
            1,
        ),
        (weight, torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2]), False, 0, False, weight.t()[0, :4], False, -1),
    ]:
        _assert_bags(runtime, op, args)


@pytest.mark.parametrize("op", EMBEDDING_BAG_OPS)
def test_embedding_bag_errors(runtime, op):
    weight = make_tensor((6, 3), torch.float32, 123)
    idx = torch.tensor([1, 2, 4, 5])

    def both_fail(*args):
        same_or_both_fail(runtime, op, list(args), lambda: _embedding_bag(op, *args))

    for mode in [0, 1, 2]:
        both_fail(weight, torch.tensor([1, 6]), torch.tensor([0]), False, mode)  # index out of range
        both_fail(weight, torch.tensor([1, -1]), torch.tensor([0]), False, mode)
        both_fail(weight, idx, torch.tensor([1, 2]), False, mode)  # first offset not 0
        both_fail(weight, idx, torch.tensor([0, 5]), False, mode)  # beyond the indices
        both_fail(weight, idx, torch.tensor([0, 2, 5]), False, mode, False, None, True)
        both_fail(weight.int(), idx, torch.tensor([0, 2]), False, mode)  # integer weight
        both_fail(weight, idx.float(), torch.tensor([0, 2]), False, mode)
    both_fail(weight, idx, torch.tensor([0, 2]), False, 3)
    both_fail(weight, idx, torch.tensor([0, 2]), False, 1, False, torch.ones(4))  # weights need sum
    both_fail(weight, idx, torch.tensor([0, 2]), False, 0, False, torch.ones(4, dtype=torch.float64))
    both_fail(weight, idx, torch.tensor([0, 2]), False, 0, False, torch.ones(3))
    both_fail(weight, idx, torch.zeros(0, dtype=torch.int64), False, 0, False, None, True)
    for mode in [0, 1]:
        both_fail(weight, idx, torch.tensor([0, 3, 1]), False, mode)  # decreasing
    # Where torch's result depends on its path (max mode reads decreasing
    # offsets through a running count; a short last offset with
    # include_last_offset ends the last bag early on FBGEMM's path only)
    # the runtime refuses.
    with pytest.raises(PareError, match=r"argument 'offsets' must be non-decreasing, got 1 after 3 at position 2"):
        run_op(runtime, op, weight, idx, torch.tensor([0, 3, 1]), False, 2, returns=4)
    with pytest.raises(
        PareError, match="with include_last_offset=True the last offset must be the number of indices 4"
    ):
        run_op(runtime, op, weight, idx, torch.tensor([0, 2, 3]), False, 0, False, None, True, returns=4)
    with pytest.raises(PareError, match="argument 'indices' must be 1-d"):
        run_op(runtime, op, weight, idx.view(2, 2), torch.tensor([0, 1]), False, 0, returns=4)
    with pytest.raises(PareError, match=r"argument 'indices': index 6 is out of range for 'weight' with 6 rows"):
        run_op(runtime, op, weight, torch.tensor([1, 6]), torch.tensor([0]), returns=4)


@pytest.mark.parametrize(
    "kwargs, two_d",
    [
        (dict(mode="sum"), False),
        (dict(mode="mean"), False),
        (dict(mode="max"), False),
        (dict(mode="sum"), True),
        (dict(mode="max", padding_idx=2), True),
        (dict(mode="mean", include_last_offset=True), False),
        (dict(mode="sum", padding_idx=4), False),
    ],
)
@pytest.mark.parametrize("frozen", [False, True], ids=["trainable", "frozen"])
def test_embedding_bag_as_exported(runtime, kwargs, two_d, frozen):
    """nn.EmbeddingBag exports to _embedding_bag (a weight that requires
    grad) or _embedding_bag_forward_only (a frozen one), with its argument
    list; 2-d input is flattened before the op. Runs that node's exact
    arguments."""
    torch.manual_seed(124)
    module = nn.EmbeddingBag(10, 4, **kwargs).eval().requires_grad_(not frozen)
    if two_d:
        example = (torch.tensor([[1, 2, 4], [4, 3, 9]]),)
    else:
        last = [6] if kwargs.get("include_last_offset") else []
        example = (torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 2, 2] + last))
    ep = torch.export.export(module, example).run_decompositions()
    (node,) = [n for n in ep.graph.nodes if n.op == "call_function" and "embedding_bag" in str(n.target)]
    expected_op = "aten::_embedding_bag_forward_only" if frozen else "aten::_embedding_bag"
    assert f"aten::{node.target._schema.name.split('::')[1]}" == expected_op
    values = {
        n.name: v
        for n, v in zip([n for n in ep.graph.nodes if n.op == "placeholder"], [module.weight.detach(), *example])
    }
    interp_env = {}

    # Evaluate the nodes before the op (arange/view for 2-d input) with torch.
    for n in ep.graph.nodes:
        if n is node:
            break
        if n.op == "placeholder":
            interp_env[n] = values[n.name]
        elif n.op == "call_function":
            args = torch.fx.node.map_arg(n.args, lambda a: interp_env[a])
            kw = torch.fx.node.map_arg(n.kwargs, lambda a: interp_env[a])
            interp_env[n] = n.target(*args, **kw)
    args = torch.fx.node.map_arg(node.args, lambda a: interp_env[a])
    got = run_op(runtime, expected_op, *args, returns=4)[0]
    assert_same(got, module(*example).detach(), **EXACT)
