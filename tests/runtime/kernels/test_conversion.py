"""The conversion family (runtime/kernels/conversion/) vs torch: aten::_to_copy
between every pair of dtypes, bit for bit at Half's rounding boundaries."""

import itertools

import numpy as np
import pytest
import torch
from runtime_testing import (
    ALL_DTYPES,
    assert_same,
    half_rounding_cases,
    make_tensor,
    run_op,
)

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

SCALAR_TYPE_CODES = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bool: 11,
    torch.bfloat16: 15,
}


@pytest.mark.parametrize(
    "src,dst", list(itertools.product(ALL_DTYPES, ALL_DTYPES)), ids=lambda d: str(d).removeprefix("torch.")
)
def test_to_copy_every_dtype_pair(runtime, src, dst):
    # Values inside every integer range so the conversion is defined in C++
    # and torch alike (out-of-range float->int casts are undefined in both).
    x = make_tensor((3, 4), src, 1, 0 if dst == torch.uint8 else -8, 8)
    if src.is_floating_point:
        x = x + torch.tensor(0.25, dtype=src)  # exercise truncation toward zero
    expected = torch.ops.aten._to_copy(x, dtype=dst)
    assert_same(run_op(runtime, "aten::_to_copy", x, dst), expected)


def test_to_copy_non_contiguous_and_defaults(runtime):
    x = make_tensor((4, 6, 5), torch.float32, 2).permute(2, 0, 1)[:, 1:, ::2]
    assert_same(run_op(runtime, "aten::_to_copy", x), x.clone())
    assert_same(
        run_op(runtime, "aten::_to_copy", x, torch.float16, None, "cpu", False, False, None), x.to(torch.float16)
    )
    with pytest.raises(PareError, match="argument 'device': only 'cpu'"):
        run_op(runtime, "aten::_to_copy", x, None, None, "cuda")
    with pytest.raises(PareError, match="dtype code 10 is not supported"):  # ComplexDouble
        run_op(runtime, "aten::_to_copy", x, 10)


def test_to_copy_to_and_from_complex64(runtime):
    # copy_kernel's ComplexFloat pairs (docs/complex.md): real to complex has
    # a zero imaginary part, complex to real keeps the real part (torch
    # warns), complex to Bool is "either part nonzero"; strided both ways.
    x = make_tensor((4, 6), torch.float32, 3).t()
    z = run_op(runtime, "aten::_to_copy", x, torch.complex64)
    torch.testing.assert_close(z, x.to(torch.complex64), rtol=0, atol=0)
    w = torch.complex(make_tensor((3, 5), torch.float32, 4), make_tensor((3, 5), torch.float32, 5))
    w[0, 0], w[1, 1] = complex(0, 2), 0
    for dst in (torch.float32, torch.float64, torch.int32, torch.bool, torch.float16):
        expected = torch.view_as_real(w.t())[..., 0].to(dst) if dst != torch.bool else w.t().to(dst)
        torch.testing.assert_close(run_op(runtime, "aten::_to_copy", w.t(), dst), expected, rtol=0, atol=0)


def test_to_copy_special_float_values(runtime):
    x = torch.tensor([float("nan"), float("inf"), -0.0, 65504.0, 70000.0, 1e-8, 3.3895e38])
    for dst in (torch.float16, torch.bfloat16, torch.bool):
        assert_same(run_op(runtime, "aten::_to_copy", x, dst), x.to(dst))


def test_float_to_half_bit_for_bit_at_every_rounding_boundary(runtime):
    # Software on baseline x86_64, F16C's vcvtps2ph on v3 (//tests:kernels_v3_test),
    # fcvtn on arm64 (tests/tracer/test_android.py): the same bits.
    x, want = half_rounding_cases()
    got = run_op(runtime, "aten::_to_copy", x, torch.float16)
    mismatched = np.flatnonzero(got.numpy().view(np.uint16) != want)
    assert mismatched.size == 0, [
        (
            hex(int(x[i : i + 1].numpy().view(np.uint32)[0])),
            hex(int(got[i : i + 1].numpy().view(np.uint16)[0])),
            hex(int(want[i])),
        )
        for i in mismatched[:5]
    ]
