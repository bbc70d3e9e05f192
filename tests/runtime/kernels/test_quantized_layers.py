"""The int8 layers (runtime/kernels/quantized/qconv.cc, qlinear.cc, qgemm.cc):
pare::qconv2d_prepacked and pare::qlinear_prepacked (classes
QConv2dPackedParams, QLinearPackedParams) vs torch eager running PT2E's
reference graph, dequantize_per_tensor -> F.conv2d / F.linear on the
dequantized per-channel weight and float bias -> optional clamp ->
quantize_per_tensor. Every element is at most one quantization step from
torch's (the kernels compute acc * multiplier + offset from an exact int32
sum, the reference a float32 convolution divided by the output scale: the
two round differently near half a step, pare/quantized_packing.py), and
almost all are equal. Awkward shapes: odd channels, stride 2, padding,
dilation, groups, depthwise with channel multipliers 1 and 2, batch 2, 1x1
and 7x7 kernels, zero points at int8's limits, saturation, a relu-like
range, a non-contiguous input; and the one-line errors of bad arguments."""

import numpy as np
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers torch.ops.quantized_decomposed
import torch.nn.functional as F
from runtime_testing import make_tensor

from pare.program import ObjectOf, ProgramBuilder
from pare.quantized_packing import PackingError, requantization
from pare.runtime import PareError

qd = torch.ops.quantized_decomposed

# At least this share of the elements equals torch's exactly.
EXACT_SHARE = 0.95

# The numeric tests also run on the v3 runtime and against torch's scalar
# kernels (tests/BUILD.bazel): the int8 GEMM's vector code differs by ISA
# level (pmullw at SSE2, vpmaddwd at AVX2), its results must not, and the
# reference's float convolution follows torch's CPU path.
fp_ops = pytest.mark.fp_ops


def int8_tensor(shape, seed, low=-128, high=127):
    return make_tensor(shape, torch.int8, seed, low, high)


def weight_scales(out_channels, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(out_channels, generator=g, dtype=torch.float64) * 0.015 + 0.005).to(torch.float32)


def bias_values(out_channels, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(out_channels, generator=g, dtype=torch.float32) * 0.5


class Layer:
    """An int8 layer's quantization: input (sx, zx), per-channel symmetric
    weights, float bias, output (so, zo), and the float op between."""

    def __init__(self, w_q, bias, sx, zx, op, relu=False, out_range=(-128, 127), out_zero_point=0, seed=0):
        self.w_q, self.bias, self.sx, self.zx, self.op, self.relu = w_q, bias, sx, zx, op, relu
        self.sw = weight_scales(w_q.shape[0], seed)
        self.zo = out_zero_point
        self.out_range = out_range
        self.so = None

    def float_output(self, x_q):
        xf = qd.dequantize_per_tensor(x_q, self.sx, self.zx, -128, 127, torch.int8)
        zeros = torch.zeros(self.w_q.shape[0], dtype=torch.int64)
        wf = qd.dequantize_per_channel(self.w_q, self.sw, zeros, 0, -127, 127, torch.int8)
        y = self.op(xf, wf, self.bias)
        return torch.relu(y) if self.relu else y

    def calibrate(self, x_q, steps=110.0):
        """The output scale from the float result's range (as a calibration
        would), `steps` steps for the largest magnitude."""
        self.so = float(self.float_output(x_q).abs().max()) / steps
        return self

    def reference(self, x_q):
        y = self.float_output(x_q)
        lo, hi = self.out_range
        if self.relu:
            lo = max(lo, self.zo)
        return qd.quantize_per_tensor(y, self.so, self.zo, lo, hi, torch.int8)

    def constants(self):
        bias = None if self.bias is None else self.bias.numpy()
        return requantization(self.w_q.numpy(), self.sw.numpy(), bias, self.sx, self.zx, self.so, self.zo)

    def output_bounds(self):
        lo, hi = self.out_range
        return (max(lo, self.zo) if self.relu else lo), hi


def assert_within_one_step(actual, expected):
    assert actual.dtype == torch.int8, actual.dtype
    assert tuple(actual.shape) == tuple(expected.shape), f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual.to(torch.int32) - expected.to(torch.int32)).abs()
    assert int(diff.max()) <= 1, f"{int((diff > 1).sum())} elements more than one step apart (max {int(diff.max())})"
    share = float((diff == 0).double().mean())
    assert share >= EXACT_SHARE, f"only {share:.4f} of the elements equal torch's"


def conv_program(layer, case, nhwc_input=False):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Char")
    if nhwc_input:
        x = m.op("aten::permute", x, [0, 3, 1, 2])  # a non-contiguous NCHW view
    correction, multiplier, offset = layer.constants()
    packed = m.qconv2d_prepack(
        layer.w_q,
        correction,
        multiplier,
        offset,
        case["stride"],
        case["padding"],
        case["dilation"],
        case["groups"],
        layer.zx,
    )
    lo, hi = layer.output_bounds()
    m.output(m.op("pare::qconv2d_prepacked", x, packed, lo, hi))
    return pb.to_bytes()


def linear_program(layer):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Char")
    correction, multiplier, offset = layer.constants()
    packed = m.qlinear_prepack(layer.w_q, correction, multiplier, offset)
    lo, hi = layer.output_bounds()
    m.output(m.op("pare::qlinear_prepacked", x, packed, lo, hi))
    return pb.to_bytes()


def conv_case(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, **kw):
    return dict(x=x, w=w, stride=stride, padding=padding, dilation=dilation, groups=groups, **kw)


CONV_CASES = {
    "3x3_odd_channels": conv_case((1, 3, 9, 11), (5, 3, 3, 3), padding=(1, 1)),
    "stride2_padding": conv_case((2, 7, 12, 13), (9, 7, 3, 3), stride=(2, 2), padding=(1, 1)),
    "asymmetric": conv_case((1, 4, 10, 7), (6, 4, 3, 2), stride=(2, 1), padding=(1, 2)),
    "dilation2_groups2": conv_case((1, 6, 12, 12), (8, 3, 3, 3), padding=(2, 2), dilation=(2, 2), groups=2),
    "groups3_odd": conv_case((2, 9, 8, 9), (6, 3, 3, 3), stride=(2, 2), padding=(1, 1), groups=3),
    "depthwise": conv_case((2, 6, 9, 9), (6, 1, 3, 3), padding=(1, 1), groups=6),
    "depthwise_multiplier2_stride2": conv_case((1, 5, 11, 13), (10, 1, 5, 5), stride=(2, 2), padding=(2, 2), groups=5),
    "depthwise_dilated": conv_case((1, 4, 9, 10), (4, 1, 3, 3), padding=(2, 2), dilation=(2, 2), groups=4),
    "depthwise_7x7": conv_case((1, 3, 9, 17), (3, 1, 7, 7), padding=(3, 3), groups=3),
    "1x1": conv_case((2, 19, 7, 9), (13, 19, 1, 1)),
    "1x1_wide": conv_case((1, 40, 6, 6), (33, 40, 1, 1)),
    # The AVX2 micro-kernel's 6 x 16 tiles, their channel and pixel edges
    # (a 9-pixel tail; 3 pixels), and the AVX2 depthwise rows' 8 outputs
    # with a tail, at strides 1 and 2 and a 5x5 filter.
    "1x1_tail9": conv_case((1, 24, 5, 5), (7, 24, 1, 1)),
    "3x3_wide": conv_case((1, 16, 21, 23), (13, 16, 3, 3), padding=(1, 1)),
    "depthwise_wide": conv_case((1, 4, 13, 29), (4, 1, 3, 3), padding=(1, 1), groups=4),
    "depthwise_wide_stride2": conv_case((1, 3, 17, 35), (3, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=3),
    # 16 outputs at a time, the last 16 overlapping; 8 under 16 outputs.
    "depthwise_5x5_stride2_19_wide": conv_case((1, 3, 10, 37), (3, 1, 5, 5), stride=(2, 2), padding=(2, 2), groups=3),
    "depthwise_dilated_rows_32_wide": conv_case(
        (1, 2, 11, 32), (4, 1, 3, 3), padding=(2, 1), dilation=(2, 1), groups=2
    ),
    "depthwise_5x5_wide": conv_case((1, 2, 12, 30), (2, 1, 5, 5), padding=(2, 2), groups=2),
    # The VNNI plane's padded rows: past one 64-byte vector (70 + 2), and
    # unpadded.
    "depthwise_70_wide": conv_case((1, 2, 5, 70), (2, 1, 3, 3), padding=(1, 1), groups=2),
    "depthwise_unpadded": conv_case((1, 3, 9, 9), (3, 1, 3, 3), groups=3),
    # Under 16 output pixels (the AVX2 GEMM's zero-padded tile) and a
    # 8-pixel tail overlapping the tile before (7x7 = 49 pixels).
    "3x3_4_pixels": conv_case((1, 16, 4, 4), (7, 16, 3, 3), stride=(2, 2), padding=(1, 1)),
    "1x1_49_pixels": conv_case((1, 24, 7, 7), (14, 24, 1, 1)),
    "1x1_grouped": conv_case((1, 12, 5, 7), (18, 12 // 3, 1, 1), groups=3),
    "1x1_stride2": conv_case((1, 8, 9, 9), (5, 8, 1, 1), stride=(2, 2)),
    "7x7_stride2": conv_case((1, 3, 23, 21), (8, 3, 7, 7), stride=(2, 2), padding=(3, 3)),
    "deep": conv_case((1, 64, 8, 8), (17, 64, 3, 3), padding=(1, 1)),
    "unbatched": conv_case((3, 9, 9), (5, 3, 3, 3), stride=(2, 2), padding=(1, 1)),
    # Fewer than 4 input channels: the im2col matrix written about 64 KB of
    # output rows at a time (qconv.cc; here 7 rows of 60, a last chunk of 5
    # rows, batch 2).
    "rgb_7x7_chunked_rows": conv_case((2, 3, 40, 60), (6, 3, 7, 7), padding=(3, 3)),
    # The VNNI copy's 8-channel x 48-pixel tiles (qgemm_vnni.cc): reductions
    # not a multiple of 4 (5, 27), 9 and 12 channels (a partial block),
    # partial tiles of 1, 2 and 3 vectors under masks (35, 49, 95 pixels),
    # one exact tile (48) and a panel of several.
    "vnni_1x1_k5_49_pixels": conv_case((1, 5, 7, 7), (9, 5, 1, 1)),
    "vnni_1x1_35_pixels": conv_case((1, 12, 5, 7), (16, 12, 1, 1)),
    "vnni_3x3_48_pixels": conv_case((1, 3, 6, 8), (12, 3, 3, 3), padding=(1, 1)),
    "vnni_3x3_95_pixels": conv_case((2, 10, 5, 19), (24, 10, 3, 3), padding=(1, 1)),
    "vnni_1x1_many_tiles": conv_case((1, 32, 20, 31), (40, 32, 1, 1)),
    # arm64's 8-channel x 12-pixel tiles (qgemm_arm64_columns.inc) over
    # panels of 128 KB of packed pixels: k = 576, 400 pixels (18 tiles a
    # panel, then 16; its last tile of 4 pixels packed byte by byte).
    "arm64_3x3_two_panels": conv_case((1, 64, 20, 20), (9, 64, 3, 3), padding=(1, 1)),
    # Its tiles packed from the image, no im2col matrix (stride 1 or 2
    # across): a 16-pixel vector over 2 to 4 output rows, padding at both
    # ends of a row, dilation across, stride (1, 2), batch 2 with groups;
    # stride 3 across writes the matrix.
    "vnni_image_stride2_31_wide": conv_case((1, 5, 15, 61), (16, 5, 3, 3), stride=(2, 2), padding=(1, 1)),
    "vnni_image_5_wide_dilated": conv_case((1, 6, 9, 9), (10, 6, 3, 3), padding=(2, 0), dilation=(1, 2)),
    "vnni_image_stride_1x2_groups": conv_case((2, 8, 11, 40), (12, 4, 5, 3), stride=(1, 2), padding=(2, 3), groups=2),
    "vnni_image_stride3": conv_case((1, 4, 13, 50), (9, 4, 3, 3), stride=(3, 3), padding=(1, 1)),
    # Each quad's 4 rows loaded into one vector's 4 lanes: at stride 2, a
    # last quad of 3 rows (k = 63) and vectors over 3 output rows (6 wide),
    # batch 2; at stride 1, a 7x7 filter over 5 channels (k = 245).
    "vnni_image_stride2_k63": conv_case((2, 7, 12, 11), (9, 7, 3, 3), stride=(2, 2), padding=(1, 1)),
    "vnni_image_7x7_k245": conv_case((1, 5, 12, 13), (10, 5, 7, 7), padding=(3, 3)),
    # On outputs 16 or more wide, from a copy of the image laid out with
    # its padding: vectors in one output row (32 and 48 wide) as plain
    # loads, at stride (2, 1); unpadded with a last quad of one row (k =
    # 45) and batch 2; RGB stems (3 channels, k = 27 and 147: these take
    # this path too), the 7x7 at stride 2 over 20 columns (vectors over two
    # rows); borders of 70 bytes (more than one 64-byte store) with
    # dilation.
    "vnni_padded_stride_2x1_32_wide": conv_case((1, 8, 9, 32), (12, 8, 3, 3), stride=(2, 1), padding=(1, 1)),
    "vnni_padded_unpadded_k45_batch2": conv_case((2, 5, 6, 50), (7, 5, 3, 3)),
    "vnni_padded_rgb_stem": conv_case((1, 3, 16, 32), (8, 3, 3, 3), padding=(1, 1)),
    "vnni_padded_rgb_7x7_stride2": conv_case((2, 3, 19, 40), (10, 3, 7, 7), stride=(2, 2), padding=(3, 3)),
    "vnni_padded_wide_border": conv_case((1, 4, 5, 6), (5, 4, 3, 3), padding=(2, 70), dilation=(2, 1)),
    # Its tile over output channels on small planes (16 channels per
    # vector, a pixel's 4 bytes broadcast: up to 64 pixels wasting over an
    # eighth of their pixel vectors, reductions of 256 or more; results
    # turned back to planes 16 x 16 at a time): 7x7 (packed tiles of 36
    # and 13 pixels, runs of 12, 12, 12 and 13) over 61 channels (k = 549)
    # with batch 2, 48 channels (a 32- and a 16-channel block) at stride 2,
    # a 1x1 over 25 pixels (k = 517; runs of 12 and 13), groups of 16 channels over 30 pixels (runs of 12, 4 and 1
    # pixels), a 1x1 at the least depth (k = 256, 48 channels at 7x7), 17
    # pixels in one row (a group of 16 and one of 1 to turn back).
    "vnni_channels_7x7_batch2": conv_case((2, 61, 7, 7), (32, 61, 3, 3), padding=(1, 1)),
    "vnni_channels_48_stride2": conv_case((1, 57, 13, 13), (48, 57, 3, 3), stride=(2, 2), padding=(1, 1)),
    "vnni_channels_1x1_25_pixels": conv_case((1, 517, 5, 5), (16, 517, 1, 1)),
    "vnni_channels_groups_30_pixels": conv_case((1, 118, 6, 5), (32, 59, 3, 3), padding=(1, 1), groups=2),
    "vnni_channels_1x1_depth256": conv_case((1, 256, 7, 7), (48, 256, 1, 1)),
    "vnni_channels_17_pixels": conv_case((1, 300, 1, 17), (64, 300, 1, 1)),
    # A pixel tiles' last tile of at most 12 pixels runs the tile over
    # channels (whole vectors of 16 channels): 14x14 (196 = 4 x 48 + 4) over
    # 32 channels, and dilated over 16; a 1x1 over 2 x 100 pixels (48 + 48 +
    # 4 each) and 48 channels (a 32- and a 16-channel block); a last tile of
    # 12 (60 pixels); 24 channels (not whole vectors: the pixel tile).
    # Outputs up to 8x8 through the im2col matrix, each tap's source per
    # pixel planned once for all channels (qconv.cc's im2col_columns): 2x2
    # (ResNet-50's last stage at 64x64), stride 2 with dilation down and
    # batch 2, two groups on 5x5 (below VNNI's image tiles on the
    # baseline and AVX2 copies).
    "gathered_2x2": conv_case((1, 64, 2, 2), (32, 64, 3, 3), padding=(1, 1)),
    "gathered_stride2_dilated": conv_case((2, 6, 9, 8), (8, 6, 3, 3), stride=(2, 2), padding=(2, 1), dilation=(2, 1)),
    "gathered_groups": conv_case((1, 8, 5, 5), (8, 4, 3, 3), padding=(1, 1), groups=2),
    "vnni_tail_14x14": conv_case((1, 40, 14, 14), (32, 40, 3, 3), padding=(1, 1)),
    "vnni_tail_14x14_dilated": conv_case((1, 16, 14, 14), (16, 16, 3, 3), padding=(2, 2), dilation=(2, 2)),
    "vnni_tail_1x1_batch2": conv_case((2, 24, 10, 10), (48, 24, 1, 1)),
    "vnni_tail_12_pixels": conv_case((1, 16, 6, 10), (16, 16, 3, 3), padding=(1, 1)),
    "vnni_tail_24_channels": conv_case((1, 40, 14, 14), (24, 40, 3, 3), padding=(1, 1)),
    # Its depthwise plane: stride 1 in flat order over the padded columns
    # (many 64-output chunks, a partial last one), rows of 64 outputs at
    # stride (2, 1), rows of 32 at stride 2 (two chunks), no padding, 7x7
    # (two quads of taps per filter row), a channel multiplier of 3.
    "vnni_depthwise_flat": conv_case((1, 3, 20, 70), (3, 1, 3, 3), padding=(1, 1), groups=3),
    "vnni_depthwise_stride_2x1": conv_case((1, 2, 11, 67), (2, 1, 3, 3), stride=(2, 1), padding=(1, 1), groups=2),
    "vnni_depthwise_stride2_rows": conv_case((1, 2, 9, 81), (2, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=2),
    "vnni_depthwise_unpadded": conv_case((2, 4, 7, 7), (4, 1, 3, 3), groups=4),
    "vnni_depthwise_7x7_multiplier3": conv_case((1, 2, 14, 14), (6, 1, 7, 7), padding=(3, 3), groups=2),
    # The depthwise layer across channels (qgemm_vnni_depthwise.cc's
    # depthwise_channels_vnni; conv_plan.h's DepthwiseChannels: channel
    # multiplier 1, 16 channels or more, outputs up to 14x14 from inputs up
    # to 28x28): channels not
    # a multiple of its 16 (a 5-channel last block) with batch 2, stride 2,
    # stride (2, 1), 5x5 and 7x7 (two quads of taps per filter row), rows
    # of more than 16 outputs, 28x28 at stride 2, dilation down, no padding;
    # dilated across (quads of pixels dw apart): LR-ASPP's 5x5 at dilation
    # 2 on an 8x8 plane (two blocks and a partial one), 3x3 at dilation 2
    # and stride 2, dilation 3 across only on rows narrower than 8.
    "channels_3x3_37_batch2": conv_case((2, 37, 7, 7), (37, 1, 3, 3), padding=(1, 1), groups=37),
    "channels_stride2_odd": conv_case((1, 20, 14, 13), (20, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=20),
    "channels_stride_2x1": conv_case((1, 18, 8, 19), (18, 1, 3, 3), stride=(2, 1), padding=(1, 1), groups=18),
    "channels_5x5_stride2": conv_case((1, 33, 11, 9), (33, 1, 5, 5), stride=(2, 2), padding=(2, 2), groups=33),
    "channels_7x7": conv_case((1, 16, 12, 12), (16, 1, 7, 7), padding=(3, 3), groups=16),
    "channels_30_wide": conv_case((1, 24, 6, 30), (24, 1, 3, 3), padding=(1, 1), groups=24),
    "channels_28_stride2": conv_case((1, 24, 28, 28), (24, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=24),
    "channels_dilated_rows": conv_case((1, 17, 9, 10), (17, 1, 3, 3), padding=(2, 1), dilation=(2, 1), groups=17),
    "channels_unpadded": conv_case((1, 16, 9, 10), (16, 1, 3, 3), groups=16),
    "channels_dilated_5x5": conv_case((1, 40, 8, 8), (40, 1, 5, 5), padding=(4, 4), dilation=(2, 2), groups=40),
    "channels_dilated_stride2": conv_case(
        (2, 32, 13, 13), (32, 1, 3, 3), stride=(2, 2), padding=(2, 2), dilation=(2, 2), groups=32
    ),
    "channels_dilated_across": conv_case((1, 16, 6, 7), (16, 1, 3, 3), padding=(1, 3), dilation=(1, 3), groups=16),
}


def conv_op(case):
    return lambda x, w, b: F.conv2d(x, w, b, case["stride"], case["padding"], case["dilation"], case["groups"])


@fp_ops
@pytest.mark.parametrize("name", list(CONV_CASES))
@pytest.mark.parametrize("zx", [0, -128, 127, 11])
def test_qconv2d(runtime, name, zx):
    case = CONV_CASES[name]
    x_q = int8_tensor(case["x"], 1)
    w_q = int8_tensor(case["w"], 2, -127, 127)
    layer = Layer(w_q, bias_values(case["w"][0], 3), 0.02, zx, conv_op(case), out_zero_point=-3, seed=4)
    layer.calibrate(x_q)
    (y,) = runtime.load(conv_program(layer, case)).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(y), layer.reference(x_q))


def calibrated_conv(case, seed, zx):
    """The case's int8 input (from `seed`), a layer of its shape at input
    zero point zx (weights, bias and scales from seed + 1 .. seed + 3)
    calibrated on it, and the layer's program."""
    x_q = int8_tensor(case["x"], seed)
    w_q = int8_tensor(case["w"], seed + 1, -127, 127)
    layer = Layer(w_q, bias_values(case["w"][0], seed + 2), 0.02, zx, conv_op(case), seed=seed + 3)
    layer.calibrate(x_q)
    return x_q, layer, conv_program(layer, case)


@pytest.mark.parametrize("name", list(CONV_CASES))
def test_qconv2d_isa_copies_agree(runtime, name):
    """The baseline copy and the best this CPU runs (x86-64-v3's AVX2
    micro-kernels here) give the same bits (qgemm_kernels.inc); one copy
    (arm64, a capped or SSE2 CPU) is compared with itself."""
    x86_64 = runtime.kernel_isa.startswith("x86_64")
    case = CONV_CASES[name]
    x_q, _, program = calibrated_conv(case, 21, -7)
    (best,) = runtime.load(program).method().run(x_q.numpy())
    try:
        if x86_64:
            runtime.set_max_isa("x86_64_baseline")
        (baseline,) = runtime.load(program).method().run(x_q.numpy())
    finally:
        if x86_64:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped
    np.testing.assert_array_equal(best, baseline)


@pytest.mark.parametrize("name", ["3x3_wide", "1x1_tail9", "groups3_odd", "1x1_wide"])
def test_qconv2d_isa_cap_between_load_and_run(runtime, name):
    """The layer packs its weights at init for the copy the CPU runs then
    (qgemm.h's pack_columns): a method loaded under one ISA cap and run
    under another (the packed copy ignored, or made on the call) gives the
    same bits (one copy, arm64's, is compared with itself)."""
    x86_64 = runtime.kernel_isa.startswith("x86_64")
    case = CONV_CASES[name]
    x_q, _, program = calibrated_conv(case, 31, 5)
    (uncapped,) = runtime.load(program).method().run(x_q.numpy())
    try:
        packed_at_best = runtime.load(program).method()
        if x86_64:
            runtime.set_max_isa("x86_64_baseline")
        loaded_at_baseline = runtime.load(program).method()
        (a,) = packed_at_best.run(x_q.numpy())
    finally:
        if x86_64:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped
    (b,) = loaded_at_baseline.run(x_q.numpy())
    np.testing.assert_array_equal(a, uncapped)
    np.testing.assert_array_equal(b, uncapped)


def run_capped(runtime, program, x, load_cap, run_cap):
    """Output of `program` loaded (its weights packed) under ISA cap
    `load_cap` and run under `run_cap`; the cap is reset to the best after."""
    try:
        runtime.set_max_isa(load_cap)
        method = runtime.load(program).method()
        runtime.set_max_isa(run_cap)
        (y,) = method.run(x.numpy())
    finally:
        runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped
    return y


@pytest.mark.platform_limit("cpu:avx512_vnni")
@pytest.mark.parametrize("name", list(CONV_CASES))
@pytest.mark.parametrize("zx", [-128, 127, 3])
def test_qconv2d_vnni_copy_agrees(runtime, name, zx):
    """The AVX-512 VNNI copies of the int8 GEMM and depthwise plane
    (qgemm_vnni.cc: vpdpbusd on x + 128, the 128 sum w folded into the
    packed weights or the plane's correction) give the bits of the AVX2
    (vpmaddwd) and baseline copies, within one step of torch's reference;
    at zero points at the int8 limits too."""
    assert runtime.kernel_isa == "x86_64_v4"
    case = CONV_CASES[name]
    x_q, layer, program = calibrated_conv(case, 41, zx)
    (vnni,) = runtime.load(program).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(vnni), layer.reference(x_q))
    for cap in ("x86_64_v3", "x86_64_baseline"):
        np.testing.assert_array_equal(run_capped(runtime, program, x_q, cap, cap), vnni, err_msg=cap)


@pytest.mark.platform_limit("cpu:avx512_vnni")
@pytest.mark.parametrize(
    "name",
    [
        "vnni_3x3_95_pixels",
        "1x1_tail9",
        "groups3_odd",
        "vnni_1x1_k5_49_pixels",
        "channels_3x3_37_batch2",
        "channels_5x5_stride2",
        "vnni_channels_1x1_depth256",
        "vnni_tail_14x14",
        "channels_dilated_5x5",
    ],
)
def test_qconv2d_vnni_cap_between_load_and_run(runtime, name):
    """A layer packed at init for the VNNI copy (its quads) and run capped
    at the AVX2 or baseline copy, and one packed for AVX2 (int16 pairs) run
    on VNNI, give the same bits: a call passes the packed weights only to
    the copy whose layout they are in (QConv2dPackedParams::packing). A
    depthwise layer's filters packed for VNNI's layer across channels are
    read by that copy alone; loaded below VNNI, VNNI lays them out per
    call."""
    case = CONV_CASES[name]
    x_q, _, program = calibrated_conv(case, 51, -9)
    (best,) = runtime.load(program).method().run(x_q.numpy())
    for load_cap, run_cap in [
        ("x86_64_v4", "x86_64_v3"),
        ("x86_64_v4", "x86_64_baseline"),
        ("x86_64_v3", "x86_64_v4"),
        ("x86_64_baseline", "x86_64_v4"),
    ]:
        y = run_capped(runtime, program, x_q, load_cap, run_cap)
        np.testing.assert_array_equal(y, best, err_msg=f"loaded at {load_cap}, run at {run_cap}")


ACROSS_CHANNELS_NAMES = [n for n in CONV_CASES if n.startswith("channels_")] + ["depthwise", "vnni_depthwise_unpadded"]


def across_channels_extra_bytes(runtime, name, cap):
    """(the scratch the method plans capped at `cap` minus at x86-64
    baseline, which runs the plane kernel; 64 bytes per padded input pixel)."""
    case = CONV_CASES[name]
    x_q, _, program = calibrated_conv(case, 61, 2)

    def planned(c):
        try:
            runtime.set_max_isa(c)
            method = runtime.load(program).method()
            method.run(x_q.numpy())
            return method.memory_stats().planned_arena_bytes
        finally:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped

    _, _, h, w = case["x"]
    return planned(cap) - planned("x86_64_baseline"), (h + 2 * case["padding"][0]) * (w + 2 * case["padding"][1]) * 64


@pytest.mark.platform_limit("cpu:avx512_vnni")
@pytest.mark.parametrize("name", ACROSS_CHANNELS_NAMES)
def test_qconv2d_depthwise_across_channels_runs(runtime, name):
    """The cases named channels_* run the depthwise layer across channels on
    VNNI (conv_plan.h's DepthwiseChannels), the others the plane kernel: the
    scratch the method plans says which (its channels-last quads, 64 bytes
    per padded input pixel, against the plane kernel's copy of one plane)."""
    extra, quads = across_channels_extra_bytes(runtime, name, "x86_64_v4")
    if name.startswith("channels_"):
        assert extra >= quads * 3 // 4, f"{extra} more bytes planned at v4: not VNNI's layer across channels"
    else:
        assert extra == 0, f"{extra} more bytes planned at v4: the layer across channels ran"


@pytest.mark.platform_limit("cpu:avx2")
@pytest.mark.parametrize("name", ACROSS_CHANNELS_NAMES)
def test_qconv2d_depthwise_across_channels_runs_on_avx2(runtime, name):
    """Capped at x86-64-v3 the channels_* cases run the AVX2 layer across
    channels (qgemm_kernels.inc's depthwise_channels_avx2: 16 int16
    channels per padded pixel, 32 bytes), the others the plane kernel; its
    bits are test_qconv2d_isa_copies_agree's (against baseline's planes)."""
    extra, quads = across_channels_extra_bytes(runtime, name, "x86_64_v3")
    if name.startswith("channels_"):
        # Its image (half of quads) in place of the plane kernel's copy of one plane, ranges and sums.
        assert 0 < extra <= quads // 2, f"{extra} more bytes planned at v3: not the AVX2 layer across channels"
    else:
        assert extra == 0, f"{extra} more bytes planned at v3: the layer across channels ran"


@fp_ops
@pytest.mark.parametrize(
    "name,relu,out_range,steps",
    [
        ("3x3_odd_channels", False, (-128, 127), 300.0),  # saturates at int8's limits
        ("stride2_padding", False, (-90, 60), 150.0),  # a narrower output range (a fused clamp)
        ("depthwise_multiplier2_stride2", False, (-128, 127), 300.0),
        ("1x1", True, (-128, 127), 300.0),  # relu: output_min = the output zero point
        ("depthwise", True, (-128, 100), 200.0),
        ("channels_3x3_37_batch2", False, (-128, 127), 300.0),  # the layer across channels saturating
        ("channels_stride2_odd", True, (-128, 100), 200.0),
        ("vnni_channels_7x7_batch2", False, (-128, 127), 300.0),  # the VNNI tile over output channels saturating
        ("vnni_channels_1x1_25_pixels", True, (-128, 127), 300.0),
    ],
)
def test_qconv2d_output_range(runtime, name, relu, out_range, steps):
    case = CONV_CASES[name]
    x_q = int8_tensor(case["x"], 5)
    w_q = int8_tensor(case["w"], 6, -127, 127)
    layer = Layer(
        w_q,
        bias_values(case["w"][0], 7),
        0.03,
        -20,
        conv_op(case),
        relu=relu,
        out_range=out_range,
        out_zero_point=-40 if relu else 5,
        seed=8,
    )
    layer.calibrate(x_q, steps)
    expected = layer.reference(x_q)
    lo, hi = layer.output_bounds()
    assert int((expected == lo).sum()) > 0 and int((expected == hi).sum()) > 0, "the case does not saturate"
    (y,) = runtime.load(conv_program(layer, case)).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(y), expected)


@fp_ops
@pytest.mark.parametrize("name", ["3x3_odd_channels", "depthwise", "1x1", "groups3_odd"])
def test_qconv2d_non_contiguous_input(runtime, name):
    case = CONV_CASES[name]
    x_nhwc = int8_tensor((case["x"][0], case["x"][2], case["x"][3], case["x"][1]), 9)
    x_q = x_nhwc.permute(0, 3, 1, 2)
    layer = Layer(int8_tensor(case["w"], 10, -127, 127), None, 0.02, 7, conv_op(case), seed=11).calibrate(x_q)
    (y,) = runtime.load(conv_program(layer, case, nhwc_input=True)).method().run(x_nhwc.numpy())
    assert_within_one_step(torch.from_numpy(y), layer.reference(x_q))


@fp_ops
@pytest.mark.parametrize(
    "in_shape,out_features",
    [((5, 33), 17), ((2, 3, 40), 9), ((1, 300), 64), ((7, 16), 1), ((4,), 6), ((3, 2, 5), 3)],
)
@pytest.mark.parametrize("zx,relu", [(0, False), (-128, False), (127, False), (-5, True)])
def test_qlinear(runtime, in_shape, out_features, zx, relu):
    x_q = int8_tensor(in_shape, 12)
    w_q = int8_tensor((out_features, in_shape[-1]), 13, -127, 127)
    layer = Layer(
        w_q, bias_values(out_features, 14), 0.025, zx, F.linear, relu=relu, out_zero_point=-60 if relu else 2, seed=15
    )
    layer.calibrate(x_q)
    (y,) = runtime.load(linear_program(layer)).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(y), layer.reference(x_q))


@pytest.mark.parametrize(
    "in_shape,out_features",
    [((1, 1280), 1000), ((5, 33), 17), ((9, 130), 7), ((4, 64), 4), ((3, 200), 6), ((2, 70), 37), ((1, 20), 48)],
)
@pytest.mark.parametrize("zx", [-128, 127, 3])
def test_qlinear_isa_copies_agree(runtime, in_shape, out_features, zx):
    """The row GEMM's copies (qgemm.h's gemm_rows: baseline, x86-64-v3's,
    AVX-512 VNNI's vpdpbusd on the weights + 128) give the same bits, within
    one step of torch's reference: a classifier's one row of 1280, pixel
    and channel counts around the VNNI tiles' 4 x 4 and a single pixel's 16
    channels, depths around their 64."""
    x_q = int8_tensor(in_shape, 40)
    w_q = int8_tensor((out_features, in_shape[-1]), 41, -128, 127)
    layer = Layer(w_q, bias_values(out_features, 42), 0.02, zx, F.linear, out_zero_point=4, seed=43).calibrate(x_q)
    program = linear_program(layer)
    (best,) = runtime.load(program).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(best), layer.reference(x_q))
    if runtime.kernel_isa.startswith("x86_64"):
        for cap in ("x86_64_v3", "x86_64_baseline"):
            np.testing.assert_array_equal(run_capped(runtime, program, x_q, cap, cap), best)


@fp_ops
def test_qlinear_saturates(runtime):
    x_q = int8_tensor((6, 50), 16)
    w_q = int8_tensor((11, 50), 17, -127, 127)
    layer = Layer(w_q, None, 0.02, 3, F.linear, out_range=(-100, 120), seed=18).calibrate(x_q, 400.0)
    expected = layer.reference(x_q)
    assert int((expected == -100).sum()) > 0 and int((expected == 120).sum()) > 0
    (y,) = runtime.load(linear_program(layer)).method().run(x_q.numpy())
    assert_within_one_step(torch.from_numpy(y), expected)


# Error paths: each a one-line PareError naming the problem.

W = int8_tensor((4, 3, 3, 3), 20, -127, 127).numpy()
CORRECTION = np.zeros(4, np.int32)
MULTIPLIER = np.full(4, 0.01, np.float32)
OFFSET = np.zeros(4, np.float32)


def raw_conv_program(
    weight=W,
    correction=CORRECTION,
    multiplier=MULTIPLIER,
    offset=OFFSET,
    layout=0,
    output_min=-128,
    output_max=127,
    input_dtype="Char",
):
    """pare::qconv2d_prepack written by hand (any dtype, any layout code)."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input(input_dtype)
    packed = m.init_op(
        "pare::qconv2d_prepack",
        weight,
        correction,
        multiplier,
        offset,
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        layout,
        0,
        returns=ObjectOf("QConv2dPackedParams"),
    )
    m.output(m.op("pare::qconv2d_prepacked", x, packed, output_min, output_max))
    return pb.to_bytes()


def run_raw(runtime, data, x):
    return runtime.load(data).method().run(x)


X = int8_tensor((1, 3, 6, 6), 21).numpy()


@pytest.mark.parametrize(
    "program,x,message",
    [
        (
            dict(input_dtype="Float"),
            X.astype(np.float32),
            r"argument 'input' must be an int8 \(Char\) tensor, got Float",
        ),
        (dict(layout=2), X, r"argument 'layout' = 2 is not a layout of int8 weights"),
        (
            dict(correction=np.zeros(3, np.int32)),
            X,
            r"argument 'correction' must be a contiguous Int tensor of sizes \[4\]",
        ),
        (
            dict(correction=np.zeros(4, np.float32)),
            X,
            r"argument 'correction' must be a contiguous Int tensor .* got Float",
        ),
        (dict(multiplier=np.zeros(4, np.float64)), X, r"argument 'multiplier' must be a contiguous Float tensor"),
        (
            dict(multiplier=np.array([0.01, np.inf, 0.01, 0.01], np.float32)),
            X,
            r"argument 'multiplier' is \+inf at output channel 1: .* leave this layer float",
        ),
        (
            dict(offset=np.array([0.0, 0.0, 0.0, np.nan], np.float32)),
            X,
            r"argument 'offset' is NaN at output channel 3",
        ),
        (dict(weight=W.astype(np.float32)), X, r"argument 'weight' must be a contiguous 4-D Char \(int8\) tensor"),
        (dict(output_min=10, output_max=-10), X, r"output_min = 10 and output_max = -10 must satisfy"),
        (dict(output_min=-129), X, r"output_min = -129 and output_max = 127 must satisfy"),
        (dict(), int8_tensor((1, 5, 6, 6), 22).numpy(), r"argument 'input' has 5 channels; the int8 weights expect 3"),
    ],
    ids=[
        "float_input",
        "layout",
        "correction_size",
        "correction_dtype",
        "multiplier_dtype",
        "multiplier_infinite",
        "offset_nan",
        "weight_dtype",
        "min_above_max",
        "min_below_int8",
        "input_channels",
    ],
)
def test_qconv2d_errors(runtime, program, x, message):
    with pytest.raises(PareError, match=message) as e:
        run_raw(runtime, raw_conv_program(**program), x)
    assert "\n" not in str(e.value).strip()


def test_requantization_constants_must_be_finite():
    """Scales whose ratio, or a bias whose quotient by the output scale,
    overflows float32 fail the export in one line (the runtime's init
    checks the same: test_qconv2d_errors' multiplier_infinite, offset_nan)."""
    w = np.ones((2, 3), np.int8)
    with pytest.raises(PackingError, match=r"multiplier .* not finite in float32 at output channel 0 \(inf\)"):
        requantization(w, [1e30, 1.0], None, 1e30, 0, 1e-20, 0)
    with pytest.raises(PackingError, match=r"offset .* not finite in float32 at output channel 1 \(-inf\)"):
        requantization(w, [0.5, 0.5], np.array([0.0, -1e39]), 0.1, 0, 1.0, 0)


def test_qlinear_errors(runtime):
    w = int8_tensor((4, 8), 23, -127, 127).numpy()

    def program(correction=CORRECTION, output_min=-128, output_max=127):
        pb = ProgramBuilder()
        m = pb.method()
        x = m.input(None)
        packed = m.init_op(
            "pare::qlinear_prepack", w, correction, MULTIPLIER, OFFSET, returns=ObjectOf("QLinearPackedParams")
        )
        m.output(m.op("pare::qlinear_prepacked", x, packed, output_min, output_max))
        return pb.to_bytes()

    x = int8_tensor((2, 8), 24).numpy()
    cases = [
        (program(correction=np.zeros(5, np.int32)), x, r"argument 'correction' must be a contiguous Int tensor"),
        (program(output_min=5, output_max=4), x, r"output_min = 5 and output_max = 4 must satisfy"),
        (program(), x.astype(np.float32), r"argument 'input' must be an int8 \(Char\) tensor, got Float"),
        (
            program(),
            int8_tensor((2, 7), 25).numpy(),
            r"argument 'input' with sizes \[2, 7\] does not end in in_features",
        ),
    ]
    for data, xin, message in cases:
        with pytest.raises(PareError, match=message) as e:
            run_raw(runtime, data, xin)
        assert "\n" not in str(e.value).strip()


# Layers large enough for the cost model to split them over threads
# (KernelContext::chunks_for): output channels not a multiple of any copy's
# block (60 = 7.5 blocks of the quads' 8, 10 of the AVX2 pairs' 6), the
# image GEMM with its padded copy per chunk, stride 3 (the im2col matrix
# written before the split), groups with batch 2, an RGB stem (its matrix
# written in chunks of rows), the depthwise plane per output plane, and
# across channels in 16-channel blocks (72: a half block last).
THREAD_CASES = {
    "threads_1x1_60": conv_case((1, 40, 20, 20), (60, 40, 1, 1)),
    "threads_3x3_image": conv_case((1, 16, 24, 30), (44, 16, 3, 3), padding=(1, 1)),
    # 16 image tiles or more: the VNNI copy's pixels split at whole 48-pixel
    # tiles instead (from the padded copy at strides 1 and 2; planned per
    # tap on a 10-wide output).
    "threads_pixels_3x3": conv_case((1, 16, 32, 41), (20, 16, 3, 3), padding=(1, 1)),
    "threads_pixels_stride2": conv_case((2, 8, 70, 64), (12, 8, 3, 3), stride=(2, 2), padding=(1, 1)),
    "threads_pixels_narrow": conv_case((1, 8, 200, 20), (9, 8, 3, 3), stride=(2, 2), padding=(1, 1)),
    "threads_stride3": conv_case((1, 8, 30, 30), (30, 8, 3, 3), stride=(3, 3), padding=(1, 1)),
    "threads_groups_batch2": conv_case((2, 32, 16, 16), (48, 16, 3, 3), padding=(1, 1), groups=2),
    "threads_rgb_stem": conv_case((1, 3, 64, 96), (16, 3, 3, 3), stride=(2, 2), padding=(1, 1)),
    "threads_depthwise_planes": conv_case((2, 24, 40, 40), (24, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=24),
    "threads_depthwise_channels": conv_case((1, 72, 14, 14), (72, 1, 3, 3), padding=(1, 1), groups=72),
}


def runs_on_threads(runtime, program, x, threads):
    method = runtime.load(program).method()
    method.set_num_threads(threads)
    (y,) = method.run(x.numpy())
    method.close()
    return y


@pytest.mark.parametrize("name", list(THREAD_CASES))
def test_qconv2d_splits_over_threads(runtime, name):
    """Build feature threads (qconv.cc): 2 to 4 threads give the single
    thread's bits on every ISA copy (the GEMM's split at its packed
    weights' blocks: 8 channels in the quads, 6 in the AVX2 pairs, 4
    unpacked), and that is within one step of torch's reference."""
    case = THREAD_CASES[name]
    x_q, layer, program = calibrated_conv(case, 51, -9)
    caps = ("x86_64_v4", "x86_64_v3", "x86_64_baseline") if runtime.kernel_isa.startswith("x86_64") else (None,)
    serial = None
    try:
        for cap in caps:
            if cap is not None:
                runtime.set_max_isa(cap)
            one = runs_on_threads(runtime, program, x_q, 1)
            if serial is None:
                serial = one
                assert_within_one_step(torch.from_numpy(serial), layer.reference(x_q))
            np.testing.assert_array_equal(one, serial, err_msg=f"1 thread at {cap}")
            for threads in (2, 3, 4):
                np.testing.assert_array_equal(
                    runs_on_threads(runtime, program, x_q, threads), serial, err_msg=f"{threads} threads at {cap}"
                )
        if caps[0] is not None:
            # Packed at init for the VNNI quads, run on AVX2: each chunk packs
            # its own channels' pairs into its own scratch.
            runtime.set_max_isa("x86_64_v4")
            method = runtime.load(program).method()
            method.set_num_threads(3)
            runtime.set_max_isa("x86_64_v3")
            (capped,) = method.run(x_q.numpy())
            np.testing.assert_array_equal(capped, serial, err_msg="packed at v4, run at v3 on 3 threads")
    finally:
        if caps[0] is not None:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


@pytest.mark.parametrize("rows,in_features,out_features", [(61, 200, 48), (1, 1280, 1000), (3, 576, 1030)])
def test_qlinear_splits_over_threads(runtime, rows, in_features, out_features):
    """The int8 linear layer splits over the threads (qlinear.cc) its rows
    (61: a partial tile last) or, under 16 rows (a classifier's one row;
    3 rows of 1030 channels, a partial block last), its output channels:
    the same bits for 1 to 4 threads on every x86_64 copy."""
    x_q = int8_tensor((rows, in_features), 52)
    w_q = int8_tensor((out_features, in_features), 53, -127, 127)
    layer = Layer(w_q, bias_values(out_features, 54), 0.02, 7, F.linear, out_zero_point=-2, seed=55).calibrate(x_q)
    program = linear_program(layer)
    serial = runs_on_threads(runtime, program, x_q, 1)
    assert_within_one_step(torch.from_numpy(serial), layer.reference(x_q))
    caps = ("x86_64_v4", "x86_64_v3", "x86_64_baseline") if runtime.kernel_isa.startswith("x86_64") else (None,)
    try:
        for cap in caps:
            if cap is not None:
                runtime.set_max_isa(cap)
            for threads in (1, 2, 3, 4):
                np.testing.assert_array_equal(
                    runs_on_threads(runtime, program, x_q, threads), serial, err_msg=f"{threads} threads at {cap}"
                )
    finally:
        if caps[0] is not None:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


def test_tracing_records_the_int8_layers(tracing_runtime):
    # What the manifest of a model with int8 layers selects: the ops, the
    # (tag, Char) kernels and the classes, and nothing float.
    case = CONV_CASES["3x3_odd_channels"]
    x_q = int8_tensor(case["x"], 26)
    conv = Layer(int8_tensor(case["w"], 27, -127, 127), None, 0.02, 1, conv_op(case), seed=28).calibrate(x_q)
    linear = Layer(int8_tensor((4, 11), 29, -127, 127), None, 0.02, 1, F.linear, seed=30)
    linear.so = 0.5
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Char")
    packed = m.qconv2d_prepack(conv.w_q, *conv.constants(), case["stride"], case["padding"], case["dilation"], 1, 1)
    y = m.op("pare::qconv2d_prepacked", x, packed, -128, 127)
    m.output(m.op("pare::qlinear_prepacked", y, m.qlinear_prepack(linear.w_q, *linear.constants()), -128, 127))
    program = tracing_runtime.load(pb.to_bytes())
    program.method().run(x_q.numpy())
    trace = program.trace()
    assert set(trace.ops) == {
        "pare::qconv2d_prepack",
        "pare::qconv2d_prepacked",
        "pare::qlinear_prepack",
        "pare::qlinear_prepacked",
    }
    # The runtime reports the storage dtype; a manifest names it QInt8 (tools/tracer/tracing.py).
    assert trace.kernel_dtypes == {"qconv2d_kernel": ("Char",), "qlinear_kernel": ("Char",)}
    assert set(trace.classes) == {"QConv2dPackedParams", "QLinearPackedParams"}
