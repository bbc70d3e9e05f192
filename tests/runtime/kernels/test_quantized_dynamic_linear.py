"""The dynamically quantized linear layer (runtime/kernels/quantized/qlinear_dynamic.cc):
pare::qlinear_dynamic vs torch eager running PT2E's reference graph,
choose_qparams.tensor -> quantize_per_tensor.tensor ->
dequantize_per_tensor.tensor -> F.linear on the dequantized per-channel
weight and float bias.

The int8 input must be the reference's bit for bit (the kernel's own
choose_qparams and quantize); the output is an exact int32 sum scaled once,
where torch sums float32 products: within float32 rounding of a float64
reference on the same int8 operands (bound below), never a quantization
step away. Awkward shapes: odd features, batch and 3-d inputs, a
non-contiguous input, no bias, a per-tensor weight scale, an all-positive
input (zero point at -128), a constant input (the scale's eps), a narrower
range, row counts around the VNNI copy's 8-row tiles and channel counts
around its 16-channel vectors; and the one-line errors of bad arguments."""

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers torch.ops.quantized_decomposed
import torch.nn.functional as F
from runtime_testing import make_tensor

from pare.program import ProgramBuilder
from pare.quantized_packing import pack_dynamic_weight
from pare.runtime import PareError

qd = torch.ops.quantized_decomposed
EPS = torch.finfo(torch.float32).eps


def weights(out_features, in_features, seed, per_tensor=False):
    w = make_tensor((out_features, in_features), torch.int8, seed, -127, 127)
    g = torch.Generator().manual_seed(seed + 1)
    scales = torch.rand(1 if per_tensor else out_features, generator=g) * 0.02 + 0.001
    return w, scales.expand(out_features).contiguous()


def reference_int8(x, qmin, qmax):
    scale, zp = qd.choose_qparams.tensor(x, qmin, qmax, EPS, torch.int8)
    return qd.quantize_per_tensor.tensor(x, scale, zp, qmin, qmax, torch.int8), scale, zp


def run(runtime, x, w, scales, bias, qmin=-128, qmax=127, threads=1):
    pb = ProgramBuilder()
    m = pb.method()
    xi = m.input("Float")
    sums = w.to(torch.int32).sum(dim=1, dtype=torch.int32)
    packed = torch.from_numpy(pack_dynamic_weight(w.numpy()))
    m.output(m.op("pare::qlinear_dynamic", xi, packed, sums, scales, bias, qmin, qmax, EPS))
    method = runtime.load(pb.to_bytes()).method()
    method.set_num_threads(threads)
    (y,) = method.run(x.numpy())
    method.close()
    return torch.from_numpy(y)


# (input shape, out_features, bias, per-tensor weight scale, input kind, (qmin, qmax))
CASES = {
    "rows_odd": ((5, 33), 17, True, False, "normal", (-128, 127)),
    "deep_no_bias": ((1, 300), 64, False, False, "normal", (-128, 127)),
    "batch_3d": ((2, 3, 40), 9, True, False, "normal", (-128, 127)),
    "per_tensor_weight": ((4, 64), 8, True, True, "normal", (-128, 127)),
    "all_positive": ((3, 31), 6, True, False, "positive", (-128, 127)),
    "constant_input": ((2, 16), 5, True, False, "constant", (-128, 127)),
    "narrow_range": ((6, 20), 11, True, False, "normal", (-127, 127)),
    "wide_values": ((16, 64), 192, True, False, "wide", (-128, 127)),
    "rows_13_channels_40": ((13, 37), 40, True, False, "normal", (-128, 127)),
    "one_row_one_channel": ((1, 5), 1, False, False, "normal", (-128, 127)),
    "rows_9_channels_33": ((9, 256), 33, True, False, "normal", (-128, 127)),
}


def make_input(shape, kind, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "positive":
        return x.abs() + 0.5
    if kind == "constant":
        return torch.full(shape, 0.0)
    if kind == "wide":
        return x * 40.0
    return x


@pytest.mark.fp_ops
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_qlinear_dynamic_matches_reference(runtime, case):
    shape, out_features, with_bias, per_tensor, kind, (qmin, qmax) = case
    x = make_input(shape, kind, 3)
    w, scales = weights(out_features, shape[-1], 4, per_tensor)
    bias = torch.randn(out_features, generator=torch.Generator().manual_seed(5)) if with_bias else None
    q, scale, zp = reference_int8(x, qmin, qmax)
    x_dq = qd.dequantize_per_tensor.tensor(q, scale, zp, qmin, qmax, torch.int8)
    w_dq = qd.dequantize_per_channel(w, scales, torch.zeros(out_features, dtype=torch.int64), 0, -127, 127, torch.int8)
    expected = F.linear(x_dq, w_dq, bias)
    actual = run(runtime, x, w, scales, bias, qmin, qmax)
    assert actual.dtype == torch.float32 and actual.shape == expected.shape
    # float64 on the reference's own int8 operands: the kernel's exact sum,
    # scaled once (two float32 roundings and the bias's addition), is within
    # a few float32 ulps of the magnitudes involved; torch's float32 sum
    # rounds once per product and addition.
    exact = F.linear(x_dq.double(), w_dq.double(), None if bias is None else bias.double())
    magnitude = x_dq.double().abs() @ w_dq.double().abs().T + (0 if bias is None else bias.double().abs())
    assert bool(((actual.double() - exact).abs() <= 4 * EPS * magnitude + 1e-30).all())
    assert bool(((actual.double() - expected.double()).abs() <= 4 * EPS * magnitude * shape[-1] ** 0.5 + 1e-30).all())


def test_qlinear_dynamic_non_contiguous_input(runtime):
    x = torch.randn(24, 6, generator=torch.Generator().manual_seed(7)).T  # [6, 24], columns
    w, scales = weights(10, 24, 8)
    q, scale, zp = reference_int8(x, -128, 127)
    x_dq = qd.dequantize_per_tensor.tensor(q, scale, zp, -128, 127, torch.int8)
    exact = x_dq.double() @ (w.double() * scales.double()[:, None]).T
    actual = run(runtime, x, w, scales, None)
    magnitude = x_dq.double().abs() @ (w.double().abs() * scales.double()[:, None]).T
    assert bool(((actual.double() - exact).abs() <= 4 * EPS * magnitude + 1e-30).all())


@pytest.mark.parametrize(
    "sums,qmin,qmax,message",
    [
        (torch.zeros(3, dtype=torch.int64), -128, 127, r"argument 'weight_sums' must be a 1-D Int tensor"),
        (None, 1, 127, r"the range \[1, 127\] must include 0"),
        (None, -128, 255, r"\[-128, 255\] must lie within int8's -128..127"),
    ],
    ids=["sums_dtype", "range_without_zero", "range_past_int8"],
)
def test_errors(runtime, sums, qmin, qmax, message):
    w, scales = weights(3, 4, 9)
    pb = ProgramBuilder()
    m = pb.method()
    xi = m.input("Float")
    sums = w.to(torch.int32).sum(dim=1, dtype=torch.int32) if sums is None else sums
    packed = torch.from_numpy(pack_dynamic_weight(w.numpy()))
    m.output(m.op("pare::qlinear_dynamic", xi, packed, sums, scales, None, qmin, qmax, EPS))
    with pytest.raises(PareError, match=message) as e:
        runtime.load(pb.to_bytes()).method().run(torch.randn(2, 4).numpy())
    assert "\n" not in str(e.value).strip()


def test_unpacked_weight_error(runtime):
    w, scales = weights(3, 4, 9)
    pb = ProgramBuilder()
    m = pb.method()
    xi = m.input("Float")
    sums = w.to(torch.int32).sum(dim=1, dtype=torch.int32)
    m.output(m.op("pare::qlinear_dynamic", xi, w, sums, scales, None, -128, 127, EPS))
    with pytest.raises(PareError, match=r"argument 'weight' must be the packed \[1, 1, 16, 4\] int8 weight") as e:
        runtime.load(pb.to_bytes()).method().run(torch.randn(2, 4).numpy())
    assert "\n" not in str(e.value).strip()


@pytest.mark.parametrize("case", CASES.keys())
def test_qlinear_dynamic_copies_agree(runtime, case):
    """Every copy of the input's range and quantization and of the product
    (qgemm.h's dynamic_range, quantize_dynamic, gemm_dynamic: baseline,
    x86-64-v3's AVX2, AVX-512's with VNNI) gives the same bits;
    tests/tracer/test_android.py compares arm64's with them."""
    shape, out_features, with_bias, per_tensor, kind, _ = CASES[case]
    x = make_input(shape, kind, 11)
    w, scales = weights(out_features, shape[-1], 12, per_tensor)
    bias = torch.randn(out_features, generator=torch.Generator().manual_seed(13)) if with_bias else None
    best = run(runtime, x, w, scales, bias)
    caps = ("x86_64_v3", "x86_64_baseline") if runtime.kernel_isa.startswith("x86_64") else ()
    for cap in caps:
        try:
            runtime.set_max_isa(cap)
            capped = run(runtime, x, w, scales, bias)
        finally:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped
        assert torch.equal(capped, best), cap


def test_qlinear_dynamic_splits_rows_over_threads(runtime):
    """Build feature threads (qlinear_dynamic.cc): the rows split over 2 to
    4 threads, 4 at a time (61 rows: a partial block last), give one
    thread's bits on every copy."""
    x = make_input((61, 200), "normal", 21)
    w, scales = weights(96, 200, 22)
    bias = torch.randn(96, generator=torch.Generator().manual_seed(23))
    caps = ("x86_64_v4", "x86_64_v3", "x86_64_baseline") if runtime.kernel_isa.startswith("x86_64") else (None,)
    serial = run(runtime, x, w, scales, bias)
    try:
        for cap in caps:
            if cap is not None:
                runtime.set_max_isa(cap)
            for threads in (1, 2, 3, 4):
                assert torch.equal(run(runtime, x, w, scales, bias, threads=threads), serial), (cap, threads)
    finally:
        if caps[0] is not None:
            runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped
