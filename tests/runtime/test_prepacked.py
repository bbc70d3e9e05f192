"""pare::linear_prepacked / pare::conv2d_prepacked (custom classes
LinearPackedParams / Conv2dPackedParams) vs torch, and the prepacked linear
against aten::addmm. Their speed is a benchmark, not a test:
`python -m tools.bench.prepacked_linear`."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from pare.program import ObjectOf, ProgramBuilder, ProgramError
from pare.runtime import PareError
from runtime_testing import assert_same, make_tensor


def linear_program(weight, bias, in_shape):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None] * (len(in_shape) - 1) + [in_shape[-1]])
    packed = m.init_op("pare::linear_prepack", weight, bias, returns=ObjectOf("LinearPackedParams"))
    m.output(m.op("pare::linear_prepacked", x, packed))
    return pb.to_bytes()


def conv_program(weight, bias, stride, padding, dilation, groups):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float")
    packed = m.init_op("pare::conv2d_prepack", weight, bias, list(stride), list(padding), list(dilation), groups,
                       returns=ObjectOf("Conv2dPackedParams"))
    m.output(m.op("pare::conv2d_prepacked", x, packed))
    return pb.to_bytes()


@pytest.mark.parametrize("in_shape,out_features,bias", [
    ((5, 33), 17, True), ((2, 3, 33), 8, False), ((1, 300), 600, True), ((70, 257), 9, True), ((0, 4), 3, True),
    ((4,), 6, True),
])
def test_linear_prepacked(runtime, in_shape, out_features, bias):
    x = make_tensor(in_shape, torch.float32, 1, -1, 1)
    w = make_tensor((out_features, in_shape[-1]), torch.float32, 2, -1, 1)
    b = make_tensor((out_features,), torch.float32, 3) if bias else None
    method = runtime.load(linear_program(w, b, in_shape)).method()
    (y,) = method.run(x.numpy())
    assert_same(torch.from_numpy(y), F.linear(x, w, b), rtol=1e-4, atol=1e-4)
    # Packed weights live in the method's persistent memory, made once.
    assert method.memory_stats().persistent_bytes >= w.numel() * 4


@pytest.mark.parametrize("case", [
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
    # Depthwise over tiny planes (<= 4 output pixels): vectors across channels, a partial block of channels.
    dict(x=(2, 13, 2, 2), w=(13, 1, 5, 5), stride=(1, 1), padding=(2, 2), dilation=(1, 1), groups=13),
    dict(x=(1, 20, 4, 4), w=(20, 1, 3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=20),
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_prepacked(runtime, case, bias):
    x = make_tensor(case["x"], torch.float32, 4, -1, 1)
    w = make_tensor(case["w"], torch.float32, 5, -1, 1)
    b = make_tensor((case["w"][0],), torch.float32, 6) if bias else None
    method = runtime.load(conv_program(w, b, case["stride"], case["padding"], case["dilation"],
                                       case["groups"])).method()
    (y,) = method.run(x.numpy())
    expected = F.conv2d(x, w, b, case["stride"], case["padding"], case["dilation"], case["groups"])
    assert_same(torch.from_numpy(y), expected, rtol=1e-4, atol=1e-4)


def test_conv2d_prepacked_shape_errors(runtime):
    w = make_tensor((4, 3, 3, 3), torch.float32, 7)
    method = runtime.load(conv_program(w, None, (1, 1), (0, 0), (1, 1), 1)).method()
    with pytest.raises(PareError, match="has 2 channels; the packed weights expect 3"):
        method.run(np.zeros((1, 2, 8, 8), np.float32))
    with pytest.raises(PareError, match="smaller than the kernel"):
        method.run(np.zeros((1, 3, 2, 2), np.float32))


def test_objects_only_in_init_section(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 4])
    packed = m.op("pare::linear_prepack", np.ones((3, 4), np.float32), None, returns=ObjectOf("LinearPackedParams"))
    m.output(m.op("pare::linear_prepacked", x, packed))
    with pytest.raises(PareError, match="creates an object outside the init section"):
        runtime.load(pb.to_bytes())
    pb2 = ProgramBuilder()
    m2 = pb2.method()
    x2 = m2.input("Float", [2, 4])
    with pytest.raises(ProgramError, match="cannot read method input"):
        m2.init_op("pare::linear_prepack", x2, None, returns=ObjectOf("LinearPackedParams"))


def test_wrong_object_class_is_rejected(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 4])
    conv = m.init_op("pare::conv2d_prepack", np.ones((3, 4, 1, 1), np.float32), None, [1, 1], [0, 0], [1, 1], 1,
                     returns=ObjectOf("Conv2dPackedParams"))
    m.output(m.op("pare::linear_prepacked", x, conv))
    method = runtime.load(pb.to_bytes()).method()
    with pytest.raises(PareError, match="argument 'packed' \\(#1\\) must be a LinearPackedParams object"):
        method.run(np.ones((2, 4), np.float32))


def test_linear_prepacked_matches_addmm(runtime):
    # The pair tools/bench/prepacked_linear.py times: a batch-1 linear layer,
    # packed once at load vs aten::addmm packing W on every call.
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
    packed = m.init_op("pare::linear_prepack", w, b, returns=ObjectOf("LinearPackedParams"))
    m.output(m.op("pare::linear_prepacked", m.input("Float", [2, 9]), packed, lo, hi))
    (y,) = runtime.load(pb.to_bytes()).method().run(x.numpy())
    want = torch.clamp(F.linear(x, w, b), min=None if lo == -float("inf") else lo, max=None if hi == float("inf") else hi)
    assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)
    for groups, w_shape in ((1, (4, 3, 3, 3)), (3, (6, 1, 3, 3))):  # the GEMM path and the depthwise kernel
        image = make_tensor((1, 3, 7, 7), torch.float32, 10, -2, 2)
        wc = make_tensor(w_shape, torch.float32, 11, -1, 1)
        pb = ProgramBuilder()
        m = pb.method()
        packed = m.init_op("pare::conv2d_prepack", wc, None, [1, 1], [1, 1], [1, 1], groups,
                           returns=ObjectOf("Conv2dPackedParams"))
        m.output(m.op("pare::conv2d_prepacked", m.input("Float"), packed, lo, hi))
        (y,) = runtime.load(pb.to_bytes()).method().run(image.numpy())
        want = F.conv2d(image, wc, None, 1, 1, 1, groups).clamp(min=None if lo == -float("inf") else lo,
                                                               max=None if hi == float("inf") else hi)
        assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)
