"""The prepacked family (runtime/kernels/prepacked/): pare::linear_prepacked
and pare::conv2d_prepacked (custom classes LinearPackedParams and
Conv2dPackedParams) vs torch, the prepacked linear
against aten::addmm, and the packed layout (pare/packing.py) against its
definition and the runtime's gemm.h. Their speed is a benchmark, not a test:
`python -m tools.bench.prepacked_linear`."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from runtime_testing import assert_same, assert_within_dot_bound, conv_program, linear_program, make_tensor

from pare import packing
from pare.program import ObjectOf, ProgramBuilder, ProgramError
from pare.runtime import PareError

# Persistent bytes a method with one packed layer may use: one chunk of the
# load allocator (runtime/core/memory.h: 16 KB and its header) for the
# method's tables and the packed-params object, never a copy of the weights.
PACKED_OBJECT_BYTES = 16 * 1024 + 64


@pytest.mark.parametrize(
    "in_shape,out_features,bias",
    [
        ((5, 33), 17, True),
        ((2, 3, 33), 8, False),
        ((1, 300), 600, True),
        ((70, 257), 9, True),
        ((0, 4), 3, True),
        ((4,), 6, True),
        ((3, 4), 0, True),  # and a layer with no outputs
        ((2, 0), 5, True),  # no inputs: the bias alone (a product of depth 0)
    ],
)
def test_linear_prepacked(runtime, in_shape, out_features, bias):
    x = make_tensor(in_shape, torch.float32, 1, -1, 1)
    w = make_tensor((out_features, in_shape[-1]), torch.float32, 2, -1, 1)
    b = make_tensor((out_features,), torch.float32, 3) if bias else None
    method = runtime.load(linear_program(w, b, in_shape)).method()
    (y,) = method.run(x.numpy())
    assert_same(torch.from_numpy(y), F.linear(x, w, b), rtol=1e-4, atol=1e-4)
    # The packed weights are the program's constants, used in place: the
    # method's persistent memory holds the packed-params object only.
    assert method.memory_stats().persistent_bytes <= PACKED_OBJECT_BYTES


@pytest.mark.parametrize(
    "case",
    [
        dict(x=(1, 3, 9, 9), w=(4, 3, 3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        dict(x=(2, 4, 10, 7), w=(6, 4, 3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 1), groups=1),
        dict(x=(1, 4, 12, 12), w=(8, 2, 3, 3), stride=(1, 1), padding=(2, 2), dilation=(2, 2), groups=2),
        dict(x=(2, 6, 8, 8), w=(6, 1, 3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=6),  # depthwise
        # Depthwise on the direct kernel: 5x5 stride 2 with channel multiplier 2, 7x7 on odd widths.
        dict(x=(2, 4, 11, 13), w=(8, 1, 5, 5), stride=(2, 2), padding=(2, 2), dilation=(1, 1), groups=4),
        dict(x=(1, 5, 9, 17), w=(5, 1, 7, 7), stride=(1, 1), padding=(3, 3), dilation=(1, 1), groups=5),
        # Dilated depthwise: no direct kernel, a GEMM per channel.
        dict(x=(1, 4, 9, 9), w=(4, 1, 3, 3), stride=(1, 1), padding=(2, 2), dilation=(2, 2), groups=4),
        dict(x=(1, 16, 14, 14), w=(32, 16, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),  # 1x1
        dict(x=(3, 9, 9), w=(5, 3, 3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1),  # unbatched
        dict(x=(1, 64, 20, 20), w=(70, 64, 3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1),  # K > 256
        # Stride 2 over rows wider than a GEMM panel: im2col's strided row copies, and the tests at the row's ends.
        dict(x=(1, 3, 9, 70), w=(5, 3, 3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1),
        # 1x1 over 1 to 4 pixels: the narrow GEMM (gemm::sgemm_narrow), with depths that are not a multiple of the
        # kernel's step, more than one 256-deep block, row counts that are not a multiple of 6, and groups.
        dict(x=(2, 33, 2, 2), w=(13, 33, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        dict(x=(1, 300, 1, 1), w=(40, 300, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        dict(x=(1, 7, 1, 2), w=(5, 7, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        dict(x=(1, 5, 1, 3), w=(9, 5, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        dict(x=(1, 12, 2, 2), w=(18, 4, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=3),
        # 1x1 over 6 pixels with the weights packed as A (the exporter packs it for pixel rows: below).
        dict(x=(1, 12, 2, 3), w=(18, 12, 1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
        # Depthwise over tiny planes (<= 4 output pixels): vectors across channels, a partial block of channels.
        dict(x=(2, 13, 2, 2), w=(13, 1, 5, 5), stride=(1, 1), padding=(2, 2), dilation=(1, 1), groups=13),
        dict(x=(1, 20, 4, 4), w=(20, 1, 3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=20),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_prepacked(runtime, case, bias):
    x = make_tensor(case["x"], torch.float32, 4, -1, 1)
    w = make_tensor(case["w"], torch.float32, 5, -1, 1)
    b = make_tensor((case["w"][0],), torch.float32, 6) if bias else None
    method = runtime.load(
        conv_program(w, b, case["stride"], case["padding"], case["dilation"], case["groups"])
    ).method()
    (y,) = method.run(x.numpy())
    expected = F.conv2d(x, w, b, case["stride"], case["padding"], case["dilation"], case["groups"])
    assert_same(torch.from_numpy(y), expected, rtol=1e-4, atol=1e-4)
    assert method.memory_stats().persistent_bytes <= PACKED_OBJECT_BYTES


@pytest.mark.parametrize(
    "x,w,groups",
    [
        # 1x1 convolutions packed for pixel rows (the exporter does for 5 to 12 pixels other than 8; the runtime runs
        # any count): every count of rows the GEMM's panels take (1 and 2 on the few-rows kernels, 3 and 4 on
        # theirs, 5 and 6 on the full tile, 9 and 10 as a full panel and a short one), output channels that are not
        # a multiple of the 16-column padding, depths beyond one 256-deep block, groups, batch 2 and an unbatched
        # input.
        ((1, 300, 1, 1), (40, 300, 1, 1), 1),
        ((1, 7, 1, 2), (5, 7, 1, 1), 1),
        ((2, 5, 1, 3), (9, 5, 1, 1), 1),
        ((2, 33, 2, 2), (13, 33, 1, 1), 1),
        ((1, 17, 1, 5), (33, 17, 1, 1), 1),
        ((1, 600, 2, 3), (70, 600, 1, 1), 1),
        ((1, 16, 3, 3), (24, 16, 1, 1), 1),
        ((1, 12, 2, 5), (18, 4, 1, 1), 3),
        ((3, 4, 3), (6, 3, 1, 1), 1),
        ((1, 8, 3, 4), (8, 8, 1, 1), 1),
        # The layout is the exporter's choice from the traced size: a larger image still runs.
        ((1, 24, 7, 9), (20, 12, 1, 1), 2),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.fp_ops  # the GEMM's vector code: also on the v3 runtime
def test_conv2d_pixel_rows(runtime, x, w, groups, bias):
    # A 1x1 convolution with the weights packed for pixel rows (gemm.h): C^T = X^T W^T, transposed into NCHW;
    # within the bound of a float32 dot product of in_channels / groups + 1 terms (the bias), against float64.
    xt = make_tensor(x, torch.float32, 40, -1, 1)
    wt = make_tensor(w, torch.float32, 41, -1, 1)
    b = make_tensor((w[0],), torch.float32, 42) if bias else None
    method = runtime.load(conv_program(wt, b, (1, 1), (0, 0), (1, 1), groups, pixel_rows=True)).method()
    (y,) = method.run(xt.numpy())
    b64 = None if b is None else b.double()
    exact = F.conv2d(xt.double(), wt.double(), b64, 1, 0, 1, groups)
    magnitude = F.conv2d(xt.double().abs(), wt.double().abs(), None if b is None else b64.abs(), 1, 0, 1, groups)
    assert y.shape == tuple(exact.shape)
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, w[1] + 1)
    assert method.memory_stats().persistent_bytes <= PACKED_OBJECT_BYTES


@pytest.mark.parametrize(
    "x,w,stride,padding,dilation,groups",
    [
        # Any other kernel as pixel rows, on the image's im2col matrix (the exporter does for 1 to 12 output
        # pixels): ResNet's last stage in small (3x3 over 2x2 outputs, depth 360: two 256-deep blocks, 70 output
        # channels: two 32-column tiles and a short one), over 1 pixel (every tap but the centre is padding),
        # stride 2, a strided 1x1 (a downsample), padding without stride, a non-square dilated kernel with
        # uneven padding, groups, batch 2 and an unbatched input; 1 to 4 rows on the few-rows kernels.
        ((1, 40, 2, 2), (70, 40, 3, 3), (1, 1), (1, 1), (1, 1), 1),
        ((1, 9, 1, 1), (33, 9, 3, 3), (1, 1), (1, 1), (1, 1), 1),
        ((2, 16, 4, 4), (40, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1),
        ((1, 24, 4, 3), (64, 24, 1, 1), (2, 2), (0, 0), (1, 1), 1),
        ((1, 5, 1, 3), (32, 5, 1, 1), (1, 1), (1, 1), (1, 1), 1),
        ((1, 7, 5, 4), (35, 7, 3, 2), (1, 2), (1, 2), (2, 1), 1),
        ((1, 12, 3, 3), (36, 4, 3, 3), (1, 1), (0, 1), (1, 1), 3),
        ((6, 2, 2), (33, 6, 2, 2), (1, 1), (0, 0), (1, 1), 1),
        # A larger image than the exporter would choose pixel rows for still runs.
        ((1, 8, 9, 11), (20, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.fp_ops  # the GEMM's vector code: also on the v3 runtime
def test_conv2d_pixel_rows_im2col(runtime, x, w, stride, padding, dilation, groups, bias):
    xt = make_tensor(x, torch.float32, 43, -1, 1)
    wt = make_tensor(w, torch.float32, 44, -1, 1)
    b = make_tensor((w[0],), torch.float32, 45) if bias else None
    method = runtime.load(conv_program(wt, b, stride, padding, dilation, groups, pixel_rows=True)).method()
    (y,) = method.run(xt.numpy())
    b64 = None if b is None else b.double()
    exact = F.conv2d(xt.double(), wt.double(), b64, stride, padding, dilation, groups)
    magnitude = F.conv2d(
        xt.double().abs(), wt.double().abs(), None if b is None else b64.abs(), stride, padding, dilation, groups
    )
    assert y.shape == tuple(exact.shape)
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, int(np.prod(w[1:])) + 1)
    assert method.memory_stats().persistent_bytes <= PACKED_OBJECT_BYTES


def test_pixel_rows_packing():
    # Per group, W^T [cg * kh * kw, og] packed as B (docs/program_format.md); 3-D [groups, k, og rounded up to 16].
    w = np.random.default_rng(3).standard_normal((18, 4, 1, 1)).astype(np.float32)
    packed = packing.pack_conv2d_weight(w, (1, 1), (1, 1), 3, pixel_rows=True)
    assert packed.shape == (3, 4, 16)
    for g in range(3):
        np.testing.assert_array_equal(packed[g].ravel(), packing.pack_b(w[6 * g : 6 * g + 6, :, 0, 0].T))
    # Any other kernel: the depth in im2col's order (channel, then ky, kx).
    w3 = np.random.default_rng(4).standard_normal((20, 3, 3, 2)).astype(np.float32)
    packed = packing.pack_conv2d_weight(w3, (2, 2), (1, 1), 1, pixel_rows=True, padding=(1, 1))
    assert packed.shape == (1, 18, 32)
    np.testing.assert_array_equal(packed[0].ravel(), packing.pack_b(w3.reshape(20, 18).T))
    with pytest.raises(packing.PackingError, match="for Winograd or for pixel rows, not both"):
        packing.pack_conv2d_weight(w, (1, 1), (1, 1), 3, winograd=True, pixel_rows=True)
    # The exporter's rule for a 1x1, stride 1, unpadded kernel: 5 to 12 output pixels but not 8.
    pays = [p for p in range(1, 20) if packing.pixel_rows_pays((960, 160, 1, 1), (1, 1), (0, 0), (1, 1), 1, (1, p))]
    assert pays == [5, 6, 7, 9, 10, 11, 12]
    assert packing.pixel_rows_pays((960, 160, 1, 1), (1, 1), (0, 0), (1, 1), 1, (3, 4))
    assert packing.pixel_rows_pays((8, 8, 1, 1), (1, 1), (0, 0), (1, 1), 2, (3, 3))
    assert not packing.pixel_rows_pays((96, 576, 1, 1), (1, 1), (0, 0), (1, 1), 1, (4, 4))
    assert not packing.pixel_rows_pays((64, 64, 1, 1), (1, 1), (0, 0), (1, 1), 3, (3, 3))  # 3 does not divide 64
    assert not packing.pixel_rows_pays((64, 64, 1, 1), (1, 1), (0, 0), (1, 1), 1, (2, 1 << 30))  # dynamic
    # For any other kernel: 1 to 12 output pixels, 8 included; never a depthwise layer the direct kernel runs.
    pays = [p for p in range(1, 20) if packing.pixel_rows_pays((512, 512, 3, 3), (1, 1), (1, 1), (1, 1), 1, (1, p))]
    assert pays == list(range(1, 13))
    assert packing.pixel_rows_pays((64, 64, 1, 1), (2, 2), (0, 0), (1, 1), 1, (2, 2))
    assert packing.pixel_rows_pays((64, 64, 1, 1), (1, 1), (1, 1), (1, 1), 1, (3, 3))
    assert not packing.pixel_rows_pays((64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1, (4, 4))
    assert not packing.pixel_rows_pays((64, 1, 3, 3), (1, 1), (1, 1), (1, 1), 64, (2, 2))  # depthwise
    assert not packing.pixel_rows_pays((16, 2, 3, 3), (1, 1), (2, 2), (2, 2), 8, (2, 2))  # 2 channels per group
    assert packing.pixel_rows_pays((64, 2, 3, 3), (1, 1), (1, 1), (1, 1), 8, (2, 2))  # 8 per group
    assert not packing.pixel_rows_pays((64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1, (1 << 30, 2))  # dynamic


def test_conv2d_prepacked_shape_errors(runtime):
    w = make_tensor((4, 3, 3, 3), torch.float32, 7)
    method = runtime.load(conv_program(w, None, (1, 1), (0, 0), (1, 1), 1)).method()
    with pytest.raises(PareError, match="has 2 channels; the packed weights expect 3"):
        method.run(np.zeros((1, 2, 8, 8), np.float32))
    with pytest.raises(PareError, match="smaller than the kernel"):
        method.run(np.zeros((1, 3, 2, 2), np.float32))


def test_conv2d_prepacked_output_size_error_is_the_plans(runtime):
    # The prepacked op checks the output size with aten::convolution's check
    # (common/conv_plan.h): the same message, naming the layer's weight sizes,
    # for a batched and an unbatched (3-D) input.
    w = make_tensor((4, 3, 3, 3), torch.float32, 7)
    method = runtime.load(conv_program(w, None, (1, 1), (1, 0), (1, 1), 1)).method()
    for x in (np.zeros((1, 3, 4, 2), np.float32), np.zeros((3, 4, 2), np.float32)):
        with pytest.raises(
            PareError,
            match=r"with padding \(1, 0\) is smaller than the dilated kernel of 'weight' \[4, 3, 3, 3\]: the padded "
            r"input must not be smaller than the kernel",
        ):
            method.run(x)


def test_objects_only_in_init_section(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 4])
    packed = m.op(
        "pare::linear_prepack",
        packing.pack_linear_weight(np.ones((3, 4), np.float32)),
        None,
        4,
        3,
        returns=ObjectOf("LinearPackedParams"),
    )
    m.output(m.op("pare::linear_prepacked", x, packed))
    with pytest.raises(PareError, match="creates an object outside the init section"):
        runtime.load(pb.to_bytes())
    pb2 = ProgramBuilder()
    m2 = pb2.method()
    x2 = m2.input("Float", [2, 4])
    with pytest.raises(ProgramError, match="cannot read method input"):
        m2.init_op("pare::linear_prepack", x2, None, 4, 3, returns=ObjectOf("LinearPackedParams"))


def test_wrong_object_class_is_rejected(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 4])
    conv = m.conv2d_prepack(np.ones((3, 4, 1, 1), np.float32), None, [1, 1], [0, 0], [1, 1], 1)
    m.output(m.op("pare::linear_prepacked", x, conv))
    method = runtime.load(pb.to_bytes()).method()
    with pytest.raises(PareError, match="argument 'packed' \\(#1\\) must be a LinearPackedParams object"):
        method.run(np.ones((2, 4), np.float32))


def test_linear_prepacked_matches_addmm(runtime):
    # The pair tools/bench/prepacked_linear.py times: a batch-1 linear layer,
    # packed ahead of time vs aten::addmm packing W on every call.
    w = make_tensor((1024, 1024), torch.float32, 8, -1, 1)
    b = make_tensor((1024,), torch.float32, 9)
    x = make_tensor((1, 1024), torch.float32, 10, -1, 1).numpy()
    prepacked = runtime.load(linear_program(w, b, (1, 1024))).method()
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::addmm", b, m.input("Float", [1, 1024]), w.t().contiguous()))
    unpacked = runtime.load(pb.to_bytes()).method()
    assert np.allclose(prepacked.run(x)[0], unpacked.run(x)[0], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("bounds", [(0.0, float("inf")), (0.0, 6.0), (-0.5, 0.5), (-float("inf"), 0.25), (1.0, -1.0)])
def test_fused_output_clamp(runtime, bounds):
    # output_min / output_max (the fuse_clamp pass's relu, relu6, hardtanh
    # and clamp): torch.clamp's semantics, NaN kept, min > max gives max.
    lo, hi = bounds
    x = make_tensor((2, 9), torch.float32, 7, -4, 4)
    x[0, 3] = float("nan")
    w, b = make_tensor((5, 9), torch.float32, 8, -1, 1), make_tensor((5,), torch.float32, 9)
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("pare::linear_prepacked", m.input("Float", [2, 9]), m.linear_prepack(w, b), lo, hi))
    (y,) = runtime.load(pb.to_bytes()).method().run(x.numpy())
    want = torch.clamp(
        F.linear(x, w, b), min=None if lo == -float("inf") else lo, max=None if hi == float("inf") else hi
    )
    assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)
    # Each convolution kernel applies the clamp as it stores its output:
    # (image size, weight shape, groups, padding, layout).
    convolutions = [
        ((7, 7), (4, 3, 3, 3), 1, 1, None),  # im2col GEMM, edge tiles
        ((7, 7), (6, 1, 3, 3), 3, 1, None),  # the direct depthwise kernel
        ((2, 2), (3, 1, 3, 3), 3, 1, None),  # depthwise over 4 pixels (depthwise_tiny_kernel)
        ((2, 2), (5, 3, 1, 1), 1, 0, None),  # the narrow GEMM: 1x1 over 4 pixels
        ((3, 3), (5, 3, 1, 1), 1, 0, "pixel_rows"),
        ((7, 7), (4, 3, 3, 3), 1, 1, "winograd"),  # the output transform, clipped tiles
    ]
    for size, w_shape, groups, pad, layout in convolutions:
        image = make_tensor((1, 3, *size), torch.float32, 10, -2, 2)
        image[0, 0, 1, 1] = float("nan")  # NaN reaches the clamp and stays NaN
        wc = make_tensor(w_shape, torch.float32, 11, -1, 1)
        bc = make_tensor((w_shape[0],), torch.float32, 12, -1, 1)
        pb = ProgramBuilder()
        m = pb.method()
        flags = {layout: True} if layout else {}
        packed = m.conv2d_prepack(wc, bc, [1, 1], [pad, pad], [1, 1], groups, **flags)
        m.output(m.op("pare::conv2d_prepacked", m.input("Float"), packed, lo, hi))
        (y,) = runtime.load(pb.to_bytes()).method().run(image.numpy())
        want = F.conv2d(image, wc, bc, 1, pad, 1, groups).clamp(
            min=None if lo == -float("inf") else lo, max=None if hi == float("inf") else hi
        )
        assert want.isnan().any()
        assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)


@pytest.mark.fp_ops  # the depthwise kernel's vector code: also on the v3 runtime and capped at SSE2
@pytest.mark.parametrize("kernel", [3, 5, 7])
@pytest.mark.parametrize("stride,padded", [(1, True), (1, False), (2, True), (2, False)])
def test_depthwise_every_row_width_and_height(runtime, kernel, stride, padded):
    # The direct K x K kernel on output rows of 1 to 33 columns (every
    # remainder of 16 and of 8 lanes: the AVX-512 copy's masked last vector,
    # the v3 copy's spill and tail) and 1 to 9 rows (the AVX-512 copy's
    # blocks of four rows and each leftover count), with and without a bias,
    # clamped to [0, 6] (relu6, fused) with a NaN that stays NaN, or not
    # clamped. Against a float64 reference within the dot-product bound.
    padding = kernel // 2 if padded else 0
    sizes = [(1 + (w % 9), w) for w in range(1, 34)] + [(h, 17) for h in range(1, 10)]
    for i, (out_h, out_w) in enumerate(sizes):
        h, w_ = (out_h - 1) * stride + kernel - 2 * padding, (out_w - 1) * stride + kernel - 2 * padding
        x = make_tensor((1, 3, h, w_), torch.float32, 40 + i, -2, 2)
        x[0, 1, h // 2, w_ // 2] = float("nan")
        wc = make_tensor((3, 1, kernel, kernel), torch.float32, 41, -1, 1)
        for bias, (lo, hi) in [(True, (0.0, 6.0)), (False, (-float("inf"), float("inf")))]:
            bc = make_tensor((3,), torch.float32, 42, -1, 1) if bias else None
            pb = ProgramBuilder()
            m = pb.method()
            packed = m.conv2d_prepack(wc, bc, [stride] * 2, [padding] * 2, [1, 1], 3)
            m.output(m.op("pare::conv2d_prepacked", m.input("Float"), packed, lo, hi))
            (y,) = runtime.load(pb.to_bytes()).method().run(x.numpy())
            b64 = None if bc is None else bc.double()
            exact = F.conv2d(x.double(), wc.double(), b64, stride, padding, 1, 3)
            assert tuple(y.shape) == tuple(exact.shape) == (1, 3, out_h, out_w)
            magnitude = F.conv2d(
                x.double().abs(), wc.double().abs(), None if b64 is None else b64.abs(), stride, padding, 1, 3
            )
            got = torch.from_numpy(y)
            assert (got.isnan() == exact.isnan()).all(), (out_h, out_w, bias)
            finite = ~exact.isnan()
            assert_within_dot_bound(got[finite], exact.clamp(lo, hi)[finite], magnitude[finite], kernel * kernel + 1)


# Layers whose depth spans several of the GEMM's 256-deep blocks: the GEMM
# adds the bias with the first block and the residual and the clamp as it
# stores the last (gemm.h, Output); a clamp of a partial sum, or a bias or
# residual added twice, would be far outside the bound.
DEEP_LAYERS = {
    "linear": dict(x=(3, 600), w=(7, 600)),
    "conv_1x1": dict(x=(1, 300, 5, 4), w=(9, 300, 1, 1), padding=0),
    "conv_3x3": dict(x=(2, 40, 6, 6), w=(5, 40, 3, 3), padding=1),
    "conv_pixel_rows": dict(x=(1, 600, 3, 3), w=(11, 600, 1, 1), padding=0),
    "conv_3x3_pixel_rows": dict(x=(1, 40, 2, 2), w=(35, 40, 3, 3), padding=1),
}


@pytest.mark.parametrize("kind", DEEP_LAYERS)
@pytest.mark.parametrize("bounds", [(0.0, float("inf")), (-0.5, 0.5)])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.fp_ops  # the GEMM's vector code: also on the v3 runtime
def test_fused_epilogue_sees_the_whole_sum(runtime, kind, bounds, residual):
    lo, hi = bounds
    spec = DEEP_LAYERS[kind]
    x = make_tensor(spec["x"], torch.float32, 50, -1, 1)
    w = make_tensor(spec["w"], torch.float32, 51, -1, 1)
    b = make_tensor((spec["w"][0],), torch.float32, 52, -1, 1)
    pb = ProgramBuilder()
    m = pb.method()
    if kind == "linear":
        packed, op = m.linear_prepack(w, b), "pare::linear_prepacked"
        exact = F.linear(x.double(), w.double(), b.double())
        magnitude = F.linear(x.double().abs(), w.double().abs(), b.double().abs())
    else:
        pad = spec["padding"]
        packed = m.conv2d_prepack(w, b, (1, 1), (pad, pad), (1, 1), 1, pixel_rows=kind.endswith("pixel_rows"))
        op = "pare::conv2d_prepacked"
        exact = F.conv2d(x.double(), w.double(), b.double(), padding=pad)
        magnitude = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), padding=pad)
    args, inputs = [m.input("Float"), packed, lo, hi], [x.numpy()]
    if residual:
        r = make_tensor(tuple(exact.shape), torch.float32, 53, -1, 1)
        args += [None, m.input("Float")]
        inputs.append(r.numpy())
        exact, magnitude = exact + r.double(), magnitude + r.double().abs()
    m.output(m.op(op, *args))
    (y,) = runtime.load(pb.to_bytes()).method().run(*inputs)
    # A clamp moves no value further from another: the dot-product bound
    # (the depth, the bias and the residual) holds after it.
    depth = int(np.prod(spec["w"][1:])) + 1 + residual
    assert_within_dot_bound(torch.from_numpy(y), exact.clamp(lo, hi), magnitude, depth)


GEMM_H = Path(__file__).absolute().parents[3] / "runtime/kernels/common/gemm.h"


def test_packing_constants_match_gemm_h():
    # pare/packing.py packs what runtime/kernels/common/gemm.h reads: both
    # take the constants from the format's table (program_format.def), gemm.h
    # through the .def itself and packing through pare/_format_table.py
    # (tests/codegen/test_generated_tables.py keeps that in step with the .def).
    from pare import _format_table

    text = GEMM_H.read_text()
    assert "#define PARE_PACKING_CONSTANT(cpp_name, python_name, value) constexpr int64_t cpp_name = value;" in text
    assert '#include "runtime/core/program_format.def"' in text
    written = {name for name, _ in re.findall(r"constexpr int64_t (k\w+) = (\d+);", text)}
    assert not {"kKC", "kMR", "kPanelCols", "kPadCols", "kNarrowN", "kPixelRowsMax"} & written
    assert (
        packing.KC,
        packing.MR,
        packing.PANEL_COLS,
        packing.PAD_COLS,
        packing.NARROW_MAX_PIXELS,
        packing.PIXEL_ROWS_MAX_PIXELS,
    ) == (
        _format_table.PACK_KC,
        _format_table.PACK_MR,
        _format_table.PACK_PANEL_COLS,
        _format_table.PACK_PAD_COLS,
        _format_table.PACK_NARROW_MAX_PIXELS,
        _format_table.PACK_PIXEL_ROWS_MAX_PIXELS,
    )


@pytest.mark.parametrize("m,k", [(1, 1), (6, 3), (13, 300), (7, 512), (0, 4)])
def test_pack_a_layout(m, k):
    # docs/program_format.md: depth blocks of KC; in a block of kc depths,
    # panel r (rows 6r..6r+5) at p0 * rows + r * kc * 6, depth p's rows at + p * 6.
    a = np.random.default_rng(m * 1000 + k).standard_normal((m, k)).astype(np.float32)
    packed = packing.pack_a(a)
    rows = -(-m // packing.MR) * packing.MR
    assert packed.dtype == np.float32 and packed.shape == (packing.packed_a_size(m, k),) == (rows * k,)
    want = np.zeros(rows * k, np.float32)
    for i in range(m):
        for p in range(k):
            p0, kc = p // packing.KC * packing.KC, min(packing.KC, k - p // packing.KC * packing.KC)
            want[p0 * rows + (i // packing.MR) * kc * packing.MR + (p - p0) * packing.MR + i % packing.MR] = a[i, p]
    np.testing.assert_array_equal(packed, want)


@pytest.mark.parametrize("k,n", [(1, 1), (3, 8), (300, 17), (257, 40), (5, 0)])
def test_pack_b_layout(k, n):
    # Columns padded to PAD_COLS; in a block of kc depths, panel c (columns
    # 8c..8c+7) at p0 * cols + c * kc * 8, depth p's columns at + p * 8.
    b = np.random.default_rng(k * 1000 + n).standard_normal((k, n)).astype(np.float32)
    packed = packing.pack_b(b)
    cols = -(-n // packing.PAD_COLS) * packing.PAD_COLS
    assert packed.shape == (packing.packed_b_size(k, n),) == (cols * k,)
    want = np.zeros(cols * k, np.float32)
    for p in range(k):
        p0, kc = p // packing.KC * packing.KC, min(packing.KC, k - p // packing.KC * packing.KC)
        for j in range(n):
            pc = packing.PANEL_COLS
            want[p0 * cols + (j // pc) * kc * pc + (p - p0) * pc + j % pc] = b[p, j]
    np.testing.assert_array_equal(packed, want)


def test_packing_rejects_what_it_cannot_pack():
    with pytest.raises(packing.PackingError, match="must be a 2-D float32 array, got float64"):
        packing.pack_linear_weight(np.ones((2, 3)))
    with pytest.raises(packing.PackingError, match="must be a 4-D float32 array"):
        packing.pack_conv2d_weight(np.ones((2, 3), np.float32), (1, 1), (1, 1), 1)
    with pytest.raises(packing.PackingError, match="groups = 2 must be positive and divide out_channels = 3"):
        packing.pack_conv2d_weight(np.ones((3, 1, 1, 1), np.float32), (1, 1), (1, 1), 2)
    # A torch tensor is named by its torch dtype, whether numpy has one
    # (bfloat16 has none) or Pare does (complex: neither).
    with pytest.raises(packing.PackingError, match=r"2-D float32 array, got torch.bfloat16 of shape \[2, 3\]"):
        packing.pack_linear_weight(torch.ones(2, 3, dtype=torch.bfloat16))
    with pytest.raises(packing.PackingError, match="must be a 2-D float32 array, got torch.complex64"):
        packing.pack_linear_weight(torch.ones(2, 3, dtype=torch.complex64))
    with pytest.raises(packing.PackingError, match="must be a 4-D float32 array, got torch.float32 of shape"):
        packing.pack_conv2d_weight(torch.ones(2, 1, 1), (1, 1), (1, 1), 1)
    assert packing.pack_linear_weight(torch.ones(2, 3)).dtype == np.float32


def _method_with(runtime, *init_args, op="pare::linear_prepack", cls="LinearPackedParams"):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float")
    packed = m.init_op(op, *init_args, returns=ObjectOf(cls))
    m.output(m.op(op + "ed", x, packed))
    return runtime.load(pb.to_bytes())


def test_unpacked_or_mis_sized_weights_are_rejected(runtime):
    # Weights that are not in the packed layout (a program from an older
    # exporter, or a corrupt one) fail when the method is created, saying
    # what was expected and to re-export; nothing reads past a constant.
    w = np.ones((3, 4), np.float32)
    cases = [
        # The old schema: the weights as nn.Linear holds them, packed at load.
        # (Programs from before the exporter packed.)
        (
            (w, None),
            "pare::linear_prepack: takes 4 arguments, the weights packed ahead of time, got 2: a program "
            "written before Pare packed weights in the exporter; re-export it",
        ),
        (
            (w, None, 4, 3),
            "must be W\\^T packed as the GEMM's B: a contiguous 1-D Float tensor of 64 floats, "
            "got Float \\[3, 4\\]; re-export the program",
        ),
        ((np.ones(63, np.float32), None, 4, 3), "1-D Float tensor of 64 floats, got Float \\[63\\]"),
        (
            (packing.pack_linear_weight(w), np.ones(4, np.float32), 4, 3),
            "argument 'bias' must be a contiguous Float tensor of sizes \\[3\\]",
        ),
        (
            (packing.pack_linear_weight(w), None, 4, -1),
            "in_features = 4 and out_features = -1 must be in \\[0, 2\\^24\\]",
        ),
        ((packing.pack_linear_weight(w), None, 1 << 40, 3), "in_features = 1099511627776 and out_features = 3"),
        # A wrong count that is not the old schema's: the generic message.
        ((packing.pack_linear_weight(w), None, 4, 3, 1), "pare::linear_prepack: expects 4 inputs, got 5"),
    ]
    for args, message in cases:
        program = _method_with(runtime, *args)
        with pytest.raises(PareError, match=message):
            program.method()
    conv = np.ones((4, 3, 3, 3), np.float32)
    pixel_rows = packing.pack_conv2d_weight(np.ones((4, 3, 1, 1), np.float32), (1, 1), (1, 1), 1, pixel_rows=True)
    conv_cases = [
        # A 4-D weight is only for the direct depthwise kernel.
        (
            (conv, None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 3, 3]),
            "argument 'weight' is unpacked \\(4-D\\), which only a depthwise 3x3, 5x5 or 7x7",
        ),
        (
            (packing.pack_conv2d_weight(conv, (1, 1), (1, 1), 1), None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 3, 2]),
            "the convolution's weights packed as the GEMM's A: a contiguous 1-D Float tensor of 108 floats, got "
            "Float \\[162\\]",
        ),
        (
            (np.ones((4, 1, 3, 3), np.float32), None, [1, 1], [0, 0], [1, 1], 4, [4, 1, 5, 5]),
            "must be a contiguous Float tensor of sizes \\[4, 1, 5, 5\\], got Float \\[4, 1, 3, 3\\]",
        ),
        ((conv, None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 3]), "weight_sizes 4"),
        ((conv, None, [1, 1], [0, 0], [1, 1], 1, [1 << 30, 3, 3, 3]), "must be in \\[0, 2\\^24\\] \\(out_channels\\)"),
        ((conv, None, [1, 1], [0, 0], [1, 1], 1, [4, 0, 3, 3]), "and \\[1, 2\\^24\\] \\(the others\\)"),
        ((conv, None, [1, 1], [0, 0], [1, 1], 1 << 20, [1 << 20, 1 << 20, 1 << 10, 1]), "the layer is too large"),
        # A 2-D weight is only for Winograd: a 3x3 kernel, stride 1, no dilation, and 16 packed A per group.
        (
            (packing.pack_conv2d_winograd_weight(conv, 1), None, [2, 2], [0, 0], [1, 1], 1, [4, 3, 3, 3]),
            "argument 'weight' is transformed for Winograd \\(2-D\\), which only a 3x3 convolution with stride 1 "
            "and no dilation may be; re-export the program",
        ),
        (
            (packing.pack_conv2d_winograd_weight(conv, 1), None, [1, 1], [0, 0], [1, 1], 1, [4, 2, 3, 3]),
            "must be the filters transformed for Winograd: a contiguous Float tensor of sizes \\[16, 12\\] "
            "\\(F\\(2x2, 3x3\\); \\[36, 12\\] for F\\(4x4, 3x3\\)\\), got Float \\[16, 18\\]",
        ),
        (
            (np.ones((16, 18), np.float64), None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 3, 3]),
            "transformed for Winograd: a contiguous Float tensor of sizes \\[16, 18\\] .*, got Double \\[16, 18\\]",
        ),
        # A 3-D weight is for pixel rows: W^T [cg * kh * kw, og] per group, packed as B.
        (
            (pixel_rows, None, [1, 1], [1, 1], [1, 1], 1, [4, 3, 3, 3]),
            "must be the weights packed for pixel rows: a contiguous Float tensor of sizes \\[1, 27, 16\\], got "
            "Float \\[1, 3, 16\\]; re-export the program",
        ),
        (
            (pixel_rows, None, [1, 1], [0, 0], [1, 1], 1, [4, 2, 1, 1]),
            "must be the weights packed for pixel rows: a contiguous Float tensor of sizes \\[1, 2, 16\\], got "
            "Float \\[1, 3, 16\\]",
        ),
        (
            (pixel_rows.astype(np.float64), None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 1, 1]),
            "packed for pixel rows: a contiguous Float tensor of sizes \\[1, 3, 16\\], got Double",
        ),
    ]
    # Each case's weights in the layout their rank is for (the program says
    # which, conv2d_prepack's last argument).
    layout_of_rank = {
        1: packing.LAYOUT_GEMM_A,
        2: packing.LAYOUT_WINOGRAD2,
        3: packing.LAYOUT_PIXEL_ROWS,
        4: packing.LAYOUT_AS_GIVEN,
    }
    for args, message in conv_cases:
        args = (*args, layout_of_rank[np.ndim(args[0])])
        program = _method_with(runtime, *args, op="pare::conv2d_prepack", cls="Conv2dPackedParams")
        with pytest.raises(PareError, match=message):
            program.method()


def test_conv2d_weight_layout_is_the_programs(runtime):
    # The program says which layout a convolution's weights are in
    # (conv2d_prepack's `layout`); the runtime checks the weights against
    # it, never guesses it from their rank. A program from before the
    # argument existed, an unknown code, or weights of another layout's
    # rank fail when the method is created, saying what to do.
    conv = np.ones((4, 3, 3, 3), np.float32)
    gemm_a = packing.pack_conv2d_weight(conv, (1, 1), (1, 1), 1)
    winograd = packing.pack_conv2d_winograd_weight(conv, 1)
    base = (None, [1, 1], [0, 0], [1, 1], 1, [4, 3, 3, 3])
    cases = [
        (
            (gemm_a, *base),
            "pare::conv2d_prepack: takes 8 arguments, the weights packed ahead of time, got 7: a program written "
            "before the program said which layout a convolution's weights are in; re-export it",
        ),
        ((gemm_a, *base, 6), "argument 'layout' = 6 is not a weight layout this runtime knows \\(0 to 5\\)"),
        ((gemm_a, *base, -1), "argument 'layout' = -1 is not a weight layout"),
        (
            (winograd, *base, packing.LAYOUT_GEMM_A),
            "packed as the GEMM's A: a contiguous 1-D Float tensor of 162 floats, got Float \\[16, 18\\]",
        ),
        ((gemm_a, *base, packing.LAYOUT_WINOGRAD2), "transformed for Winograd: a contiguous Float tensor of sizes"),
        ((gemm_a, *base, packing.LAYOUT_WINOGRAD4), "\\[36, 18\\] for F\\(4x4, 3x3\\)\\), got Float \\[162\\]"),
        ((gemm_a, *base, packing.LAYOUT_PIXEL_ROWS), "packed for pixel rows: a contiguous Float tensor of sizes"),
    ]
    for args, message in cases:
        program = _method_with(runtime, *args, op="pare::conv2d_prepack", cls="Conv2dPackedParams")
        with pytest.raises(PareError, match=message):
            program.method()


ACTIVATIONS = {
    None: lambda y: y,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
}
# Layers whose kernels apply the epilogue on different paths: the linear
# GEMM, the conv GEMM (per group), a 1x1 and a 3x3 convolution as pixel
# rows, a 1x1 on the narrow GEMM (4 pixels), and the direct depthwise kernel.
EPILOGUE_LAYERS = {
    "linear": dict(x=(3, 2, 19), w=(21, 19)),
    "conv": dict(x=(2, 6, 7, 9), w=(10, 3, 3, 3), stride=(2, 1), padding=(1, 1), groups=2),
    "conv_pixel_rows": dict(x=(2, 33, 2, 2), w=(13, 33, 1, 1), stride=(1, 1), padding=(0, 0), groups=1),
    "conv_3x3_pixel_rows": dict(x=(2, 9, 3, 2), w=(40, 9, 3, 3), stride=(2, 1), padding=(1, 1), groups=1),
    "conv_narrow": dict(x=(2, 33, 2, 2), w=(13, 33, 1, 1), stride=(1, 1), padding=(0, 0), groups=1),
    "depthwise": dict(x=(1, 5, 8, 7), w=(5, 1, 3, 3), stride=(1, 1), padding=(1, 1), groups=5),
}


def epilogue_case(kind, activation, residual, clamp=None):
    """(program bytes, inputs, expected) for a prepacked layer with a fused
    epilogue: activation(clamp(layer(x) + r))."""
    spec = EPILOGUE_LAYERS[kind]
    x = make_tensor(spec["x"], torch.float32, 30, -4, 4)
    x.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -float("inf")])  # special values flow through
    w = make_tensor(spec["w"], torch.float32, 31, -1, 1)
    b = make_tensor((spec["w"][0],), torch.float32, 32, -1, 1)
    if kind == "linear":
        y = F.linear(x, w, b)
    else:
        y = F.conv2d(x, w, b, spec["stride"], spec["padding"], 1, spec["groups"])
    r = make_tensor(tuple(y.shape), torch.float32, 33, -3, 3) if residual else None
    want = y + r if residual else y
    if clamp is not None:
        want = want.clamp(*clamp)
    # In float64: torch's float32 gelu is NaN at +inf on some CPUs (its
    # vectorised erf; 2.13 on an AVX-512 host), where the formula and
    # torch's float64 gelu give +inf, as the runtime does.
    want = ACTIVATIONS.get(activation, ACTIVATIONS[None])(want.double()).float()
    pb = ProgramBuilder()
    m = pb.method()
    xv = m.input("Float")
    if kind == "linear":
        packed, op = m.linear_prepack(w, b), "pare::linear_prepacked"
    else:
        packed, op = (
            m.conv2d_prepack(
                w, b, spec["stride"], spec["padding"], (1, 1), spec["groups"], pixel_rows=kind.endswith("pixel_rows")
            ),
            "pare::conv2d_prepacked",
        )
    args = [xv, packed, *(clamp or (-float("inf"), float("inf"))), activation]
    inputs = [x.numpy()]
    if residual:
        args.append(m.input("Float"))
        inputs.append(r.numpy())
    m.output(m.op(op, *args))
    return pb.to_bytes(), inputs, want


@pytest.mark.parametrize("kind", EPILOGUE_LAYERS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("residual", [False, True])
def test_fused_epilogue(runtime, kind, activation, residual):
    # The formulas are the aten ops' own (common/activation.h); the layer's
    # product differs from torch's by float rounding, hence the tolerance.
    program, inputs, want = epilogue_case(kind, activation, residual)
    (y,) = runtime.load(program).method().run(*inputs)
    assert_same(torch.from_numpy(y), want, rtol=1e-4, atol=1e-4)


def test_fused_residual_then_relu(runtime):
    # ResNet's shortcut: relu(conv(x) + r) is a clamp after the residual add.
    program, inputs, want = epilogue_case("conv", None, True, clamp=(0.0, float("inf")))
    (y,) = runtime.load(program).method().run(*inputs)
    assert_same(torch.from_numpy(y), want, rtol=1e-4, atol=1e-4)


def test_fused_epilogue_errors(runtime):
    program, inputs, _ = epilogue_case("linear", "swish", False)
    with pytest.raises(
        PareError,
        match="argument 'activation' must be hardswish, hardsigmoid, sigmoid, silu, gelu or gelu_tanh, got 'swish'",
    ):
        runtime.load(program).method().run(*inputs)
    program, inputs, _ = epilogue_case("conv", None, True)
    with pytest.raises(
        PareError, match="argument 'residual' must have the output's sizes \\[2, 10, 4, 9\\], got \\[2, 10, 4, 8\\]"
    ):
        runtime.load(program).method().run(inputs[0], inputs[1][..., :8])


# -- Winograd F(2x2, 3x3) and F(4x4, 3x3) (runtime/kernels/prepacked/winograd.h) ------------

_U = 2.0**-24  # float32's unit roundoff
# B^T, G and A^T per output tile (Lavin and Gray 2015).
_BT = {
    2: np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
    4: np.array(
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        np.float64,
    ),
}
_G = {
    2: np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64),
    4: np.array(
        [
            [1 / 4, 0, 0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0, 0, 1],
        ],
        np.float64,
    ),
}
_AT = {
    2: np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64),
    4: np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64),
}
# Roundings per term beyond the input channels' (winograd.h): gamma_(cg + k).
_EXTRA_ROUNDINGS = {2: 10, 4: 14}


def winograd_magnitude(x, w, padding, groups, tile=2):
    """The Winograd computation on absolute values, in float64: for each
    output, the sum of the magnitudes of every term the runtime adds
    (A^T ((|G| |g| |G^T|) . (|B^T| |d| |B|)) A over the input channels), the
    factor of the rounding error bound (winograd.h)."""
    bt, g_m, at = (np.abs(m[tile]) for m in (_BT, _G, _AT))
    x, w = np.abs(x.double().numpy()), np.abs(w.double().numpy())
    n, c, h, wd = x.shape
    oh, ow = h + 2 * padding[0] - 2, wd + 2 * padding[1] - 2
    th, tw = -(-oh // tile), -(-ow // tile)
    plane = np.zeros((n, c, tile * th + 2, tile * tw + 2))
    plane[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + wd] = x
    a = tile + 2
    d = np.lib.stride_tricks.sliding_window_view(plane, (a, a), axis=(2, 3))[:, :, ::tile, ::tile]  # n c th tw a a
    v = np.einsum("ai,nctsij,bj->nctsab", bt, d, bt)
    u = np.einsum("ai,ocij,bj->ocab", g_m, w, g_m)
    og, cg = w.shape[0] // groups, w.shape[1]
    m = np.concatenate(
        [
            np.einsum("ocab,nctsab->notsab", u[g * og : (g + 1) * og], v[:, g * cg : (g + 1) * cg])
            for g in range(groups)
        ],
        axis=1,
    )
    y = np.einsum("ai,notsij,bj->notsab", at, m, at)  # n o th tw tile tile
    return torch.from_numpy(y.transpose(0, 1, 2, 4, 3, 5).reshape(n, -1, tile * th, tile * tw)[:, :, :oh, :ow])


def gamma(k):
    return k * _U / (1 - k * _U)


def winograd_program(w, b, padding, groups, epilogue=(), residual=False, tile=2):
    pb = ProgramBuilder()
    m = pb.method()
    args = [m.input("Float"), m.conv2d_prepack(w, b, (1, 1), padding, (1, 1), groups, winograd=tile), *epilogue]
    if residual:
        args.append(m.input("Float"))
    m.output(m.op("pare::conv2d_prepacked", *args))
    return pb.to_bytes()


@pytest.mark.fp_ops  # the GEMM's vector code: also on the v3 runtime
@pytest.mark.parametrize(
    "x,out_channels,padding,groups",
    [
        ((1, 8, 5, 5), 4, (1, 1), 1),  # the smallest layer the exporter transforms: 8 in, 9 tiles
        ((2, 17, 9, 7), 19, (1, 1), 1),  # odd sizes: the last row and column of tiles clipped; batch 2
        ((1, 20, 5, 6), 24, (0, 0), 1),  # no padding
        ((1, 16, 7, 7), 18, (2, 2), 1),  # padding 2
        ((1, 16, 6, 9), 16, (1, 0), 1),  # unequal padding
        ((1, 16, 1, 1), 16, (1, 1), 1),  # a 1x1 image: one tile, three quarters clipped
        ((1, 300, 6, 6), 7, (1, 1), 1),  # two depth blocks of the GEMM, a partial panel of rows
        ((1, 32, 40, 36), 40, (1, 1), 1),  # 380 tiles: several blocks of tiles
        ((2, 32, 6, 10), 34, (1, 1), 2),  # groups
        ((16, 6, 5), 16, (1, 1), 1),  # unbatched
        ((1, 16, 21, 9), 16, (1, 1), 1),  # more tiles per block than a row of tiles has, and a clipped last tile
        ((1, 8, 16, 100), 9, (1, 1), 1),  # rows of 25 4x4 tiles: whole vectors and an overlapping last one
        ((1, 8, 4, 37), 9, (0, 3), 1),  # one row of 2x2 and of 4x4 tiles, padding 3 on the sides
    ],
)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_within_its_error_bound(runtime, x, out_channels, padding, groups, bias, tile):
    xt = make_tensor(x, torch.float32, 40, -2, 2)
    w = make_tensor((out_channels, x[-3] // groups, 3, 3), torch.float32, 41, -1, 1)
    b = make_tensor((out_channels,), torch.float32, 42, -1, 1) if bias else None
    (y,) = runtime.load(winograd_program(w, b, padding, groups, tile=tile)).method().run(xt.numpy())
    batched = xt if xt.dim() == 4 else xt.unsqueeze(0)
    want = F.conv2d(batched.double(), w.double(), None if b is None else b.double(), 1, padding, 1, groups)
    # Each output is a sum of terms that each went through at most cg + 9
    # (F(2x2, 3x3)) or cg + 13 (F(4x4, 3x3)) roundings: the filter
    # transform's, 2 or 4 in the input transform, the product and cg - 1
    # sums, 4 or 6 in the output transform and the bias add.
    magnitude = winograd_magnitude(batched, w, padding, groups, tile)
    if bias:
        magnitude += b.double().abs()[:, None, None]
    bound = gamma(x[-3] // groups + _EXTRA_ROUNDINGS[tile]) * magnitude
    got = torch.from_numpy(y).double().reshape(want.shape)
    assert list(y.shape) == list(xt.shape[:-3]) + [out_channels, *want.shape[-2:]]
    excess = (got - want).abs() - bound
    assert excess.max() <= 1e-12, f"error exceeds the bound by {excess.max():.3g}"


@pytest.mark.fp_ops  # the GEMM's vector code: also on the v3 runtime
@pytest.mark.parametrize("activation", [None, "hardswish"])
@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_epilogue(runtime, activation, residual, tile):
    # relu(conv (+ residual)) or hardswish(clamp(conv (+ residual))): the
    # fused epilogue runs on the Winograd output as on im2col's; without a
    # residual the output transform applies the clamp as it stores the
    # tiles (the clipped ones of a 7x9 output too).
    x = make_tensor((2, 16, 7, 9), torch.float32, 43, -2, 2)
    w = make_tensor((20, 16, 3, 3), torch.float32, 44, -1, 1)
    b = make_tensor((20,), torch.float32, 45, -1, 1)
    r = make_tensor((2, 20, 7, 9), torch.float32, 46, -3, 3)
    lo, hi = (0.0, float("inf")) if activation is None else (-1.0, 2.0)
    program = winograd_program(w, b, (1, 1), 1, (lo, hi, activation), residual=residual, tile=tile)
    (y,) = runtime.load(program).method().run(x.numpy(), *([r.numpy()] if residual else []))
    want = F.conv2d(x.double(), w.double(), b.double(), padding=1) + (r if residual else 0)
    want = ACTIVATIONS[activation](want.clamp(lo, hi))
    assert_same(torch.from_numpy(y), want.float(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_packing_is_lavins_filter_transform_and_refuses_other_kernels(tile):
    w = make_tensor((7, 5, 3, 3), torch.float32, 47, -1, 1).numpy()
    a = tile + 2
    packed = packing.pack_conv2d_weight(w, (1, 1), (1, 1), 1, winograd=tile)
    assert packed.shape == (a * a, packing.packed_a_size(7, 5)) and packed.dtype == np.float32
    u = np.einsum("ai,ocij,bj->ocab", _G[tile], w.astype(np.float64), _G[tile])
    for e in range(a * a):
        np.testing.assert_array_equal(packed[e], packing.pack_a(u[:, :, e // a, e % a].astype(np.float32)))
    groups = packing.pack_conv2d_weight(np.concatenate([w, w]), (1, 1), (1, 1), 2, winograd=tile)
    np.testing.assert_array_equal(groups, np.concatenate([packed, packed]))
    for kernel, stride, dilation in [((5, 5), (1, 1), (1, 1)), ((3, 3), (2, 2), (1, 1)), ((3, 3), (1, 1), (2, 2))]:
        with pytest.raises(packing.PackingError, match=f"Winograd F\\({tile}x{tile}, 3x3\\) takes a 3x3 kernel"):
            packing.pack_conv2d_weight(np.ones((4, 4, *kernel), np.float32), stride, dilation, 1, winograd=tile)


def test_winograd_tile_choice():
    with pytest.raises(packing.PackingError, match="output tile is 2 \\(F\\(2x2, 3x3\\)\\) or 4 .*got 3"):
        packing.pack_conv2d_weight(np.ones((4, 4, 3, 3), np.float32), (1, 1), (1, 1), 1, winograd=3)
    assert (
        packing.pack_conv2d_weight(np.ones((4, 4, 3, 3), np.float32), (1, 1), (1, 1), 1, winograd=True).shape[0] == 16
    )
    # Where the exporter uses it: 8+ input channels per group and 9+ 2x2
    # output tiles; F(4x4, 3x3) from 16 4x4 output tiles.
    assert packing.winograd_tile((16, 16, 3, 3), (1, 1), (1, 1), 1, (7, 7)) == 2
    assert packing.winograd_tile((4, 8, 3, 3), (1, 1), (1, 1), 1, (5, 6)) == 2  # 9 tiles
    assert packing.winograd_tile((4, 8, 3, 3), (1, 1), (1, 1), 1, (4, 6)) == 0  # 6 tiles
    assert packing.winograd_tile((64, 64, 3, 3), (1, 1), (1, 1), 1, (12, 12)) == 2  # 9 4x4 tiles
    assert packing.winograd_tile((64, 64, 3, 3), (1, 1), (1, 1), 1, (13, 13)) == 4  # 16 4x4 tiles
    assert packing.winograd_tile((64, 64, 3, 3), (1, 1), (1, 1), 1, (56, 56)) == 4
    assert packing.winograd_tile((512, 512, 3, 3), (1, 1), (1, 1), 1, (7, 7)) == 2
    assert packing.winograd_tile((64, 7, 3, 3), (1, 1), (1, 1), 1, (56, 56)) == 0
    assert packing.winograd_tile((512, 512, 3, 3), (1, 1), (1, 1), 1, (4, 4)) == 0
    assert packing.winograd_tile((64, 64, 3, 3), (2, 2), (1, 1), 1, (56, 56)) == 0
    assert packing.winograd_tile((64, 64, 3, 3), (1, 1), (2, 2), 1, (56, 56)) == 0
    assert packing.winograd_tile((64, 4, 3, 3), (1, 1), (1, 1), 16, (56, 56)) == 0  # 4 input channels per group
    assert packing.winograd_tile((64, 16, 3, 3), (1, 1), (1, 1), 4, (56, 56)) == 4
    assert packing.winograd_pays((4, 8, 3, 3), (1, 1), (1, 1), 1, (5, 6))
    assert not packing.winograd_pays((4, 8, 3, 3), (1, 1), (1, 1), 1, (4, 6))
