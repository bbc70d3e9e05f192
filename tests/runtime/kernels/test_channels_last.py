"""Channels-last (NHWC) layers (the exporter's channels_last pass): aten::clone
with memory_format=channels_last, and pare::conv2d_prepacked on HWIO depthwise
weights and on pixel-rows weights with a channels-last input, against torch
on awkward shapes (odd channel counts, stride 2, padding, 5x5 and 7x7
kernels, batch 2, one-pixel planes), with their fused epilogues and
residuals in either layout."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from runtime_testing import assert_same, assert_within_dot_bound, make_tensor

from pare import packing
from pare.program import ProgramBuilder

CHANNELS_LAST = 2  # c10::MemoryFormat codes, as programs pass them
CONTIGUOUS = 0


def nhwc_strides(shape):
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def output_strides(method, index):
    """Output `index`'s strides (elements) as the runtime left them (run()
    returns contiguous copies)."""
    info = method._info
    assert method._c_output_tensor(method._handle, index, method._info_ref) == 0
    return tuple(info.strides[: info.ndim])


@pytest.mark.parametrize("shape", [(2, 5, 3, 7), (1, 16, 4, 4), (3, 1, 2, 2), (1, 9, 1, 1), (2, 3, 0, 4)])
def test_clone_to_channels_last_and_back(runtime, shape):
    x = make_tensor(shape, torch.float32, 1, -3, 3)
    pb = ProgramBuilder()
    m = pb.method()
    nhwc = m.op("aten::clone", m.input("Float"), CHANNELS_LAST)
    m.output(nhwc)
    m.output(m.op("aten::clone", nhwc, CONTIGUOUS))
    method = runtime.load(pb.to_bytes()).method()
    y, back = method.run(x.numpy())
    assert_same(torch.from_numpy(y), x, rtol=0, atol=0)
    assert_same(torch.from_numpy(back), x, rtol=0, atol=0)
    assert output_strides(method, 1) == tuple(x.stride())
    if x.numel():
        assert output_strides(method, 0) == nhwc_strides(shape)


def test_clone_channels_last_of_other_dtypes_and_a_3d_tensor(runtime):
    x = torch.arange(2 * 3 * 2 * 5, dtype=torch.int64).reshape(2, 3, 2, 5)
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::clone", m.input("Long"), CHANNELS_LAST))
    method = runtime.load(pb.to_bytes()).method()
    (y,) = method.run(x.numpy())
    assert output_strides(method, 0) == nhwc_strides(x.shape) and (y == x.numpy()).all()
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::clone", m.input("Float"), CHANNELS_LAST))
    method = runtime.load(pb.to_bytes()).method()
    with pytest.raises(Exception, match=r"memory_format=channels_last needs a 4-D tensor, got sizes \[3, 4, 5\]"):
        method.run(np.zeros((3, 4, 5), np.float32))


# (input sizes, weight sizes, stride, padding): the shapes the pass gives
# the channels-last kernels, and more.
DEPTHWISE = [
    ((1, 16, 4, 4), (16, 1, 3, 3), 1, 1),  # MobileNet's 4x4 stage: two whole vectors of channels
    ((2, 13, 5, 3), (13, 1, 3, 3), 1, 1),  # odd channels (a vector and a tail), batch 2, a non-square plane
    ((1, 21, 7, 6), (21, 1, 3, 3), 2, 1),  # stride 2, odd sizes
    ((1, 11, 4, 4), (11, 1, 5, 5), 1, 2),  # 5x5: every tap near the border
    ((2, 8, 6, 6), (8, 1, 7, 7), 2, 3),  # 7x7 stride 2
    ((1, 40, 2, 2), (40, 1, 3, 3), 1, 1),  # a network's last stage
    ((1, 3, 1, 1), (3, 1, 3, 3), 1, 1),  # one pixel: only the centre tap
    ((1, 6, 5, 5), (6, 1, 3, 3), 1, 0),  # no padding
]


def channels_last_program(w, b, stride, padding, groups, epilogue=(), residual=None, convert_input=True):
    """x -> [clone to NHWC] -> conv2d_prepacked (channels-last weights) ->
    outputs: the layer's output as it is and converted back to NCHW."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float")
    if convert_input:
        x = m.op("aten::clone", x, CHANNELS_LAST)
    packed = m.conv2d_prepack(w, b, [stride] * 2, [padding] * 2, [1, 1], groups, channels_last=True)
    args = [x, packed, *epilogue]
    if residual is not None:
        r = m.input("Float")
        args.append(m.op("aten::clone", r, CHANNELS_LAST) if residual == "nhwc" else r)
    y = m.op("pare::conv2d_prepacked", *args)
    m.output(y)
    m.output(m.op("aten::clone", y, CONTIGUOUS))
    return pb.to_bytes()


@pytest.mark.parametrize("x_shape,w_shape,stride,padding", DEPTHWISE)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("convert_input", [True, False])
@pytest.mark.fp_ops  # the vector code: also on the v3 runtime
def test_depthwise_channels_last(runtime, x_shape, w_shape, stride, padding, bias, convert_input):
    # Within the bound of a float32 dot product of K * K + 1 terms against
    # float64. Without the input's conversion the layer converts it itself
    # (HWIO weights always run channels-last).
    x = make_tensor(x_shape, torch.float32, 2, -1, 1)
    w = make_tensor(w_shape, torch.float32, 3, -1, 1)
    b = make_tensor((w_shape[0],), torch.float32, 4, -1, 1) if bias else None
    groups = w_shape[0]
    program = channels_last_program(w, b, stride, padding, groups, convert_input=convert_input)
    method = runtime.load(program).method()
    y, back = method.run(x.numpy())
    b64 = None if b is None else b.double()
    exact = F.conv2d(x.double(), w.double(), b64, stride, padding, 1, groups)
    magnitude = F.conv2d(
        x.double().abs(), w.double().abs(), None if b is None else b64.abs(), stride, padding, 1, groups
    )
    assert back.shape == tuple(exact.shape)
    assert_within_dot_bound(torch.from_numpy(back), exact, magnitude, w_shape[2] * w_shape[3] + 1)
    assert_same(torch.from_numpy(y), torch.from_numpy(back), rtol=0, atol=0)
    assert output_strides(method, 0) == nhwc_strides(exact.shape)


POINTWISE = [
    ((1, 33, 2, 2), (20, 33, 1, 1), 1),  # 4 pixels: the rows of the few-rows kernel
    ((2, 7, 1, 3), (9, 7, 1, 1), 1),  # batch 2: the images' pixels are one matrix's rows
    ((1, 300, 3, 3), (17, 300, 1, 1), 1),  # deeper than one 256-deep block
    ((2, 12, 2, 2), (18, 4, 1, 1), 3),  # groups: each a column range of the NHWC rows
    ((1, 8, 5, 7), (24, 8, 1, 1), 1),  # more pixels than the pass gives it: any count runs
]


@pytest.mark.parametrize("x_shape,w_shape,groups", POINTWISE)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.fp_ops
def test_pointwise_channels_last(runtime, x_shape, w_shape, groups, bias):
    x = make_tensor(x_shape, torch.float32, 5, -1, 1)
    w = make_tensor(w_shape, torch.float32, 6, -1, 1)
    b = make_tensor((w_shape[0],), torch.float32, 7, -1, 1) if bias else None
    method = runtime.load(channels_last_program(w, b, 1, 0, groups)).method()
    y, back = method.run(x.numpy())
    b64 = None if b is None else b.double()
    exact = F.conv2d(x.double(), w.double(), b64, 1, 0, 1, groups)
    magnitude = F.conv2d(x.double().abs(), w.double().abs(), None if b is None else b64.abs(), 1, 0, 1, groups)
    assert_within_dot_bound(torch.from_numpy(back), exact, magnitude, w_shape[1] + 1)
    assert output_strides(method, 0) == nhwc_strides(exact.shape)


def test_pointwise_weights_on_an_nchw_input_run_nchw(runtime):
    # The channels-last 1x1 layer is the pixel-rows layout: given an NCHW
    # input it runs the NCHW pixel rows (same values, NCHW output).
    x = make_tensor((1, 6, 2, 3), torch.float32, 8, -1, 1)
    w = make_tensor((5, 6, 1, 1), torch.float32, 9, -1, 1)
    program = channels_last_program(w, None, 1, 0, 1, convert_input=False)
    method = runtime.load(program).method()
    _, back = method.run(x.numpy())
    assert output_strides(method, 0) == (30, 6, 3, 1)
    assert_same(torch.from_numpy(back), F.conv2d(x, w), rtol=1e-5, atol=1e-5)


ACTIVATIONS = {None: lambda t: t, "hardswish": F.hardswish, "sigmoid": torch.sigmoid}


@pytest.mark.parametrize("kind", ["depthwise", "pointwise"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("residual", [None, "nhwc", "nchw"])
def test_channels_last_epilogues(runtime, kind, activation, residual):
    # activation(clamp(layer(x) + r)) on the NHWC output: the residual in
    # the layer's layout or converted by the layer (an NCHW one); NaN kept.
    x = make_tensor((2, 10, 3, 3), torch.float32, 10, -2, 2)
    x[0, 1, 1, 1] = float("nan")
    if kind == "depthwise":
        w, stride, padding, groups = make_tensor((10, 1, 3, 3), torch.float32, 11, -1, 1), 2, 1, 10
    else:
        w, stride, padding, groups = make_tensor((7, 10, 1, 1), torch.float32, 11, -1, 1), 1, 0, 1
    b = make_tensor((w.shape[0],), torch.float32, 12, -1, 1)
    want = F.conv2d(x, w, b, stride, padding, 1, groups)
    r = make_tensor(tuple(want.shape), torch.float32, 13, -3, 3)
    if residual:
        want = want + r
    want = ACTIVATIONS[activation](want.clamp(-1.0, 4.0))
    program = channels_last_program(w, b, stride, padding, groups, (-1.0, 4.0, activation), residual)
    inputs = [x.numpy()] + ([r.numpy()] if residual else [])
    _, back = runtime.load(program).method().run(*inputs)
    assert want.isnan().any()
    assert_same(torch.from_numpy(back), want, rtol=1e-4, atol=1e-4)


def test_channels_last_packing():
    w = torch.arange(4 * 9, dtype=torch.float32).reshape(4, 1, 3, 3)
    hwio = packing.pack_conv2d_weight(w, (1, 1), (1, 1), 4, channels_last=True, padding=(1, 1))
    assert hwio.shape == (3, 3, 1, 4) and hwio[1, 2, 0, 3] == w[3, 0, 1, 2]
    w1 = torch.ones(6, 4, 1, 1)
    assert packing.pack_conv2d_weight(w1, (1, 1), (1, 1), 1, channels_last=True).shape == (1, 4, 16)
    with pytest.raises(packing.PackingError, match="channels-last kernels take a depthwise convolution"):
        packing.pack_conv2d_weight(torch.ones(4, 4, 3, 3), (1, 1), (1, 1), 1, channels_last=True)
    # The pass's rule: small planes only, one pixel never (the same memory).
    dw = ((8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8)
    assert packing.channels_last_pays(*dw, (4, 4)) and not packing.channels_last_pays(*dw, (8, 8))
    assert not packing.channels_last_pays(*dw, (1, 1))
    pw = ((8, 4, 1, 1), (1, 1), (0, 0), (1, 1), 1)
    assert packing.channels_last_pays(*pw, (2, 2)) and not packing.channels_last_pays(*pw, (4, 4))
    assert not packing.channels_last_pays((8, 2, 3, 3), (1, 1), (1, 1), (1, 1), 4, (2, 2))  # multiplier 2


def test_hwio_weights_of_a_layer_they_cannot_be_are_rejected(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    hwio = np.zeros((3, 3, 1, 4), np.float32)
    packed = m.init_op(
        "pare::conv2d_prepack",
        hwio,
        None,
        [3, 3],
        [1, 1],
        [1, 1],
        4,
        [4, 1, 3, 3],
        packing.LAYOUT_DEPTHWISE_HWIO,
        returns=_object(),
    )
    m.output(m.op("pare::conv2d_prepacked", m.input("Float"), packed))
    with pytest.raises(Exception, match="laid out HWIO.*re-export"):
        runtime.load(pb.to_bytes()).method()


def _object():
    from pare.program import ObjectOf

    return ObjectOf("Conv2dPackedParams")
