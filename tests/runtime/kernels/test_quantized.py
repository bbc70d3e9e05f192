"""The quantized family (runtime/kernels/quantized/) vs torch's reference
ops (torch/ao/quantization/fx/_decomposed.py), the quantize / dequantize /
choose_qparams operators PT2E's convert_pt2e emits: awkward shapes, zero
points at the dtype's limits, saturation, ties, per-channel axes, float32
and float64 scales, non-contiguous and empty inputs, and the one-line
errors for arguments the reference rejects. Every result must be exact
(the issue allows one quantization step; these kernels repeat the
reference's float operations in its order, so they match bit for bit)."""

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers torch.ops.quantized_decomposed
from runtime_testing import assert_same, make_tensor, run_op

from pare.runtime import PareError

qd = torch.ops.quantized_decomposed

QUANT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32]


def qrange(dtype):
    info = torch.iinfo(dtype)
    return info.min, info.max


def float_input(shape, seed, scale=0.05):
    """Values around [-6, 6] plus exact ties of half a step (k + 0.5) * scale."""
    x = make_tensor(shape, torch.float32, seed, -6, 6)
    flat = x.view(-1)
    ties = (torch.arange(flat.numel() // 3, dtype=torch.float32) - 40 + 0.5) * scale
    flat[: ties.numel()] = ties
    return x


@pytest.mark.parametrize("dtype", QUANT_DTYPES, ids=str)
def test_quantize_per_tensor(runtime, dtype):
    lo, hi = qrange(dtype)
    cases = [(0.05, 0, lo, hi), (0.02, lo, lo, hi), (0.013, hi, lo, hi), (0.1, 3, lo + 1, hi)]
    if dtype == torch.int32:
        # torch's own float sum round(x / scale) + zero_point overflows its
        # int32 conversion when the zero point sits at int32's limits.
        cases = [c for c in cases if c[1] not in (lo, hi)]
    for scale, zp, qmin, qmax in cases:
        x = float_input((3, 5, 7), 1, scale)
        x[0, 0, :3] = torch.tensor([1e30, -1e30, float("inf")])  # saturation
        expected = qd.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype)
        if dtype == torch.int32:
            # float(2**31 - 1) rounds up to 2**31, which torch's conversion
            # overflows (to -2**31 on x86_64); Pare saturates.
            expected[0, 0, :3] = torch.tensor([qmax, qmin, qmax], dtype=dtype)
        assert_same(
            run_op(runtime, "quantized_decomposed::quantize_per_tensor", x, scale, zp, qmin, qmax, dtype), expected
        )


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8], ids=str)
def test_quantize_per_tensor_bytes_isa_copies_agree(runtime, dtype):
    """The one-byte loop's copies (quantize_bytes.h: 16 lanes on x86-64-v4,
    then the build's loop) give torch's bits at every cap of the ISA: 16 *
    13 + 5 elements, ties, saturation and NaN inside the wide loop's reach."""
    lo, hi = qrange(dtype)
    x = float_input((213,), 4, 0.031)
    x[17:21] = torch.tensor([float("nan"), 1e30, -float("inf"), -0.0])
    zp = 3 if dtype == torch.int8 else 131
    expected = qd.quantize_per_tensor(x, 0.031, zp, lo, hi, dtype)
    op = "quantized_decomposed::quantize_per_tensor"
    caps = ["x86_64_v3", "x86_64_baseline"] if runtime.kernel_isa.startswith("x86_64") else []
    try:
        for cap in [None, *caps]:
            if cap:
                runtime.set_max_isa(cap)
            assert_same(run_op(runtime, op, x, 0.031, zp, lo, hi, dtype), expected)
    finally:
        if caps:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


def test_quantize_per_tensor_shapes(runtime):
    op = "quantized_decomposed::quantize_per_tensor"
    for x in [
        float_input((6, 7), 2).t(),  # non-contiguous
        torch.tensor(0.3),  # 0-dim
        torch.empty(0, 4),  # empty
        float_input((2, 3, 4, 5), 3).to(torch.float16),  # converted to float32, as torch does
    ]:
        assert_same(
            run_op(runtime, op, x, 0.03, -5, -128, 127, torch.int8),
            qd.quantize_per_tensor(x, 0.03, -5, -128, 127, torch.int8),
        )


@pytest.mark.parametrize("scale_dtype", [torch.float32, torch.float64], ids=str)
def test_quantize_dequantize_per_tensor_tensor(runtime, scale_dtype):
    x = float_input((4, 9), 4)
    for shape in [(), (1,)]:
        scale = torch.full(shape, 0.037, dtype=scale_dtype)
        zp = torch.full(shape, -128, dtype=torch.int64)
        q = run_op(runtime, "quantized_decomposed::quantize_per_tensor.tensor", x, scale, zp, -128, 127, torch.int8)
        expected = qd.quantize_per_tensor.tensor(x, scale, zp, -128, 127, torch.int8)
        assert_same(q, expected)
        y = run_op(
            runtime, "quantized_decomposed::dequantize_per_tensor.tensor", expected, scale, zp, -128, 127, torch.int8
        )
        assert_same(y, qd.dequantize_per_tensor.tensor(expected, scale, zp, -128, 127, torch.int8), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", QUANT_DTYPES, ids=str)
def test_dequantize_per_tensor(runtime, dtype):
    lo, hi = qrange(dtype)
    q = make_tensor((5, 6), dtype, 5, lo, hi)
    for zp in [lo, hi, 0]:
        expected = qd.dequantize_per_tensor(q, 0.0123, zp, lo, hi, dtype)
        actual = run_op(runtime, "quantized_decomposed::dequantize_per_tensor", q, 0.0123, zp, lo, hi, dtype)
        assert_same(actual, expected, rtol=0, atol=0)
    for qt in [q.t(), q[:0]]:  # non-contiguous, empty
        actual = run_op(runtime, "quantized_decomposed::dequantize_per_tensor", qt, 0.5, 1, lo, hi, dtype)
        assert_same(actual, qd.dequantize_per_tensor(qt, 0.5, 1, lo, hi, dtype), rtol=0, atol=0)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("scale_dtype", [torch.float32, torch.float64], ids=str)
def test_per_channel(runtime, axis, scale_dtype):
    x = float_input((5, 6, 3), 6) * 3
    channels = x.shape[axis]
    g = torch.Generator().manual_seed(7)
    scales = (torch.rand(channels, generator=g, dtype=torch.float64) * 0.1 + 0.001).to(scale_dtype)
    zps = torch.randint(-128, 128, (channels,), generator=g)
    zps[0], zps[-1] = -128, 127
    args = (-127, 127, torch.int8)
    expected = qd.quantize_per_channel(x, scales, zps, axis, *args)
    assert_same(run_op(runtime, "quantized_decomposed::quantize_per_channel", x, scales, zps, axis, *args), expected)
    xt = x.transpose(0, 2).contiguous().transpose(0, 2)  # same values, non-contiguous
    assert_same(run_op(runtime, "quantized_decomposed::quantize_per_channel", xt, scales, zps, axis, *args), expected)
    for zp in [zps, None]:
        ref = qd.dequantize_per_channel(expected, scales, zp, axis, *args)
        args_in = (expected, scales) + ((zp,) if zp is not None else (None,))
        actual = run_op(runtime, "quantized_decomposed::dequantize_per_channel", *args_in, axis, *args)
        assert_same(actual, ref, rtol=0, atol=0)


def test_dequantize_per_channel_int32_bias_and_uint8(runtime):
    # PareQuantizer's int32 bias (pare/quantizer.py) and a uint8 weight.
    bias = torch.tensor([-(2**31), 2**31 - 1, 0, 12345], dtype=torch.int32)
    scales = torch.tensor([1e-6, 2e-6, 3e-6, 4e-6])
    zps = torch.zeros(4, dtype=torch.int64)
    args = (0, -(2**31), 2**31 - 1, torch.int32)
    ref = qd.dequantize_per_channel(bias, scales, zps, *args)
    assert_same(
        run_op(runtime, "quantized_decomposed::dequantize_per_channel", bias, scales, zps, *args), ref, rtol=0, atol=0
    )
    w = make_tensor((4, 3, 2, 2), torch.uint8, 8, 0, 255)
    ref = qd.dequantize_per_channel(w, scales, zps + 128, 0, 0, 255, torch.uint8)
    actual = run_op(
        runtime, "quantized_decomposed::dequantize_per_channel", w, scales, zps + 128, 0, 0, 255, torch.uint8
    )
    assert_same(actual, ref, rtol=0, atol=0)


def test_choose_qparams(runtime):
    cases = [
        float_input((4, 33), 9),
        torch.rand(3, 4) + 1,  # all positive: the range still includes 0
        -torch.rand(3, 4) - 1,  # all negative
        torch.zeros(5),  # scale = eps
        torch.full((2, 3), 1e-7),
        float_input((6, 5), 10).t(),  # non-contiguous
        torch.tensor(2.5),  # 0-dim
    ]
    for x in cases:
        for qmin, qmax, dtype in [(-128, 127, torch.int8), (0, 255, torch.uint8)]:
            scale, zp = run_op(
                runtime, "quantized_decomposed::choose_qparams.tensor", x, qmin, qmax, 2**-12, dtype, returns=2
            )
            ref_scale, ref_zp = qd.choose_qparams.tensor(x, qmin, qmax, 2**-12, dtype)
            assert_same(scale, ref_scale, rtol=0, atol=0)
            assert_same(zp, ref_zp)


@pytest.mark.parametrize(
    "op, args, message",
    [
        (
            "quantize_per_tensor",
            (torch.ones(3), 0.1, 0, -129, 127, torch.int8),
            r"argument 'quant_min': -129 is below the smallest Char, -128; use a quant_min in \[-128, 127\]",
        ),
        (
            "quantize_per_tensor",
            (torch.ones(3), 0.1, 0, 0, 256, torch.uint8),
            r"argument 'quant_max': 256 is above the largest Byte, 255",
        ),
        (
            "quantize_per_tensor",
            (torch.ones(3), 0.1, 0, 5, 4, torch.int8),
            r"argument 'quant_min': 5 is above quant_max 4",
        ),
        (
            "quantize_per_tensor",
            (torch.ones(3), 0.1, 0, -128, 127, torch.float32),
            r"argument 'dtype': Float is not a quantized dtype Pare supports; quantize to torch.int8 or torch.uint8",
        ),
        ("quantize_per_tensor", (torch.ones(3), 0.0, 0, -128, 127, torch.int8), r"argument 'scale' is 0"),
        (
            "quantize_per_tensor",
            (torch.ones(3, dtype=torch.int32), 0.1, 0, -128, 127, torch.int8),
            r"argument 'input': expected a float32",
        ),
        (
            "dequantize_per_tensor",
            (torch.ones(3, dtype=torch.uint8), 0.1, 0, -128, 127, torch.int8),
            r"argument 'input': expected dtype Char \(the 'dtype' argument\), got Byte",
        ),
        (
            "quantize_per_tensor.tensor",
            (torch.ones(3), torch.ones(2), torch.zeros((), dtype=torch.int64), -128, 127, torch.int8),
            r"argument 'scale' must have one element, got 2",
        ),
        (
            "quantize_per_tensor.tensor",
            (torch.ones(3), torch.ones(()), torch.zeros(()), -128, 127, torch.int8),
            r"argument 'zero_point' must be an integer tensor",
        ),
        (
            "quantize_per_channel",
            (torch.ones(3, 4), torch.ones(3), torch.zeros(3, dtype=torch.int64), 1, -128, 127, torch.int8),
            r"argument 'scales' must be 1-d with one scale per channel \(4\) along 'axis'",
        ),
        (
            "dequantize_per_channel",
            (torch.ones(3, 4, dtype=torch.int8), torch.ones(3), None, 2, -128, 127, torch.int8),
            r"dimension 2 is out of range",
        ),
        ("choose_qparams.tensor", (torch.empty(0), -128, 127, 1e-5, torch.int8), r"argument 'input' is empty"),
        ("choose_qparams.tensor", (torch.ones(3), 1, 127, 1e-5, torch.int8), r"the range \[1, 127\] must include 0"),
    ],
    ids=lambda v: v if isinstance(v, str) and "::" not in v and " " not in v else None,
)
def test_bad_arguments(runtime, op, args, message):
    returns = 2 if op.startswith("choose_qparams") else "tensor"
    with pytest.raises(PareError, match=message) as info:
        run_op(runtime, f"quantized_decomposed::{op}", *args, returns=returns)
    assert "\n" not in str(info.value)
