"""The linalg family (runtime/kernels/linalg/) vs torch: aten::mm, aten::addmm
and aten::bmm, every dtype of mm_kernel and bmm_kernel, blocked-GEMM edge
sizes, transposed and strided operands, broadcast bias, beta/alpha."""

import pytest
import torch
from runtime_testing import ALL_DTYPES, assert_same, make_tensor, run_op, small_tensor

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

MM_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]


def _tol(dtype, k):
    # Summation order differs from torch's BLAS; scale tolerance with depth.
    if dtype == torch.float32:
        return dict(rtol=1e-4, atol=1e-4 * max(k, 1) ** 0.5)
    if dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=2e-2, atol=2e-2 * max(k, 1) ** 0.5)
    return {}


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=str)
def test_mm_every_dtype(runtime, dtype):
    a, b = make_tensor((5, 7), dtype, 1, -4, 4), make_tensor((7, 3), dtype, 2, -4, 4)
    assert_same(run_op(runtime, "aten::mm", a, b), torch.mm(a, b), **_tol(dtype, 7))


@pytest.mark.parametrize(
    "m,k,n",
    [
        (1, 1, 1),
        (6, 8, 8),
        (7, 9, 17),
        (13, 300, 5),
        (73, 257, 260),
        (1, 512, 1000),
        (0, 4, 3),
        (3, 0, 5),
        (4, 5, 0),
    ],
)
def test_mm_float_gemm_blocking(runtime, m, k, n):
    a, b = make_tensor((m, k), torch.float32, 3, -1, 1), make_tensor((k, n), torch.float32, 4, -1, 1)
    assert_same(run_op(runtime, "aten::mm", a, b), torch.mm(a, b), **_tol(torch.float32, k))


# Every row count of the register tile's last panel (gemm.cc: one or two
# rows run few_rows_kernel<R> with 4 or 2 depths per step, 3 to 5 the full
# 6-row tile), depths that leave a step's tail (1, 3, 5) or cross a
# depth block (258), and columns that fill a tile, leave an edge or make
# one column: checked against a float64 product within the error bound of
# float32 summation in any order, gamma_k * sum_p |a_ip| |b_pj| (Higham,
# Accuracy and Stability of Numerical Algorithms, 3.1).
@pytest.mark.parametrize("m", range(1, 14))
@pytest.mark.parametrize("k,n", [(1, 16), (3, 9), (5, 1), (258, 33)])
def test_mm_float_every_row_count(runtime, m, k, n):
    a, b = make_tensor((m, k), torch.float32, 13, -1, 1), make_tensor((k, n), torch.float32, 14, -1, 1)
    expected = torch.mm(a.double(), b.double())
    actual = run_op(runtime, "aten::mm", a, b).double()
    bound = 1.01 * k * 2.0**-24 * torch.mm(a.double().abs(), b.double().abs())
    assert bool(((actual - expected).abs() <= bound).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.float16], ids=str)
def test_mm_transposed_and_strided(runtime, dtype):
    a = make_tensor((9, 20), dtype, 5, -3, 3).t()  # [20, 9], column-major
    b = make_tensor((9, 22), dtype, 6, -3, 3)[:, ::2]  # [9, 11], strided columns
    assert_same(run_op(runtime, "aten::mm", a, b), torch.mm(a, b), **_tol(dtype, 9))


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=str)
def test_addmm_every_dtype(runtime, dtype):
    bias = make_tensor((4,), dtype, 7, -4, 4)
    a, b = make_tensor((3, 6), dtype, 8, -4, 4), make_tensor((6, 4), dtype, 9, -4, 4)
    assert_same(run_op(runtime, "aten::addmm", bias, a, b), torch.addmm(bias, a, b), **_tol(dtype, 6))
    assert_same(
        run_op(runtime, "aten::addmm", bias, a, b, 2, 3), torch.addmm(bias, a, b, beta=2, alpha=3), **_tol(dtype, 6)
    )


@pytest.mark.parametrize("bias_shape", [(), (1,), (9,), (1, 9), (5, 1), (5, 9)])
def test_addmm_bias_broadcast(runtime, bias_shape):
    bias = make_tensor(bias_shape, torch.float32, 10)
    a, w = make_tensor((5, 33), torch.float32, 11), make_tensor((9, 33), torch.float32, 12)
    # The linear-layer spelling: addmm(bias, x, w.t()).
    assert_same(
        run_op(runtime, "aten::addmm", bias, a, w.t(), 0.5, 1.5),
        torch.addmm(bias, a, w.t(), beta=0.5, alpha=1.5),
        **_tol(torch.float32, 33),
    )


def test_addmm_beta_zero_ignores_nan_bias(runtime):
    bias = torch.full((2, 3), float("nan"))
    a, b = make_tensor((2, 4), torch.float32, 13), make_tensor((4, 3), torch.float32, 14)
    assert_same(run_op(runtime, "aten::addmm", bias, a, b, 0.0), torch.addmm(bias, a, b, beta=0.0))


def test_mm_errors_name_arguments(runtime):
    with pytest.raises(PareError, match=r"aten::mm: 'self' and 'mat2' shapes cannot be multiplied \(2x3 and 4x5\)"):
        run_op(runtime, "aten::mm", torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(PareError, match=r"argument 'mat2' must be a matrix"):
        run_op(runtime, "aten::mm", torch.ones(2, 3), torch.ones(3))
    with pytest.raises(PareError, match="same dtype"):
        run_op(runtime, "aten::mm", torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64))
    with pytest.raises(PareError, match="kernel tag mm_kernel handles"):
        run_op(runtime, "aten::mm", torch.ones(2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool))


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=str)
def test_bmm_every_dtype(runtime, dtype):
    a, b = small_tensor((3, 4, 5), dtype, 120), small_tensor((3, 5, 6), dtype, 121)
    assert_same(run_op(runtime, "aten::bmm", a, b), torch.bmm(a, b), **_tol(dtype, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16], ids=str)
def test_bmm_non_contiguous_large_and_empty(runtime, dtype):
    a = make_tensor((70, 2, 300), dtype, 122, -2, 2).permute(1, 0, 2)  # [2, 70, 300]
    b = make_tensor((2, 260, 600), dtype, 123, -2, 2)[:, ::2, ::2].transpose(1, 2)  # [2, 300, 130], strided
    assert_same(run_op(runtime, "aten::bmm", a, b), torch.bmm(a, b), **_tol(dtype, 300))
    for sa, sb in [((0, 3, 4), (0, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((2, 3, 0), (2, 0, 5))]:
        x, y = make_tensor(sa, dtype, 124), make_tensor(sb, dtype, 125)
        assert_same(run_op(runtime, "aten::bmm", x, y), torch.bmm(x, y))


def test_bmm_errors(runtime):
    with pytest.raises(PareError, match="expected 'mat2' to start with \\[2, 4\\]"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4), torch.ones(3, 4, 5))
    with pytest.raises(PareError, match="expected 'self' and 'mat2' to have the same dtype, but got Float != Double"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4), torch.ones(2, 4, 5).double())
    with pytest.raises(PareError, match=r"argument 'self' must be 3-d, got sizes \[3, 4\]"):
        run_op(runtime, "aten::bmm", torch.ones(3, 4), torch.ones(2, 4, 5))
    with pytest.raises(PareError, match="dtype Bool is not supported"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4).bool(), torch.ones(2, 4, 5).bool())
