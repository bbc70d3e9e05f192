"""Pairwise distances (runtime/kernels/linalg/distance.cc) vs torch:
aten::_cdist_forward (torch.cdist) and aten::_pdist_forward (F.pdist), the
norms p = 0, 1, 2, inf and general p, batched cdist with broadcast batch
dims, every dtype of cdist_kernel, pdist_kernel and cdist_mm_kernel, NaN
handling, empty inputs and the error paths."""

import math

import pytest
import torch
from runtime_testing import assert_same, depth_tolerances, make_tensor, run_op

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float64]  # torch's cdist and pdist kernels
NORMS = [0.0, 1.0, 2.0, math.inf, 0.5, 3.0]
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}


def _points(shape, dtype, seed):
    # Halves in [-4, 4]: repeated coordinates, so p = 0 counts both equal
    # and different ones, and every difference is exact.
    return (make_tensor(shape, torch.float64, seed, -4, 4) * 2).round().div(2).to(dtype)


def _cdist(runtime, x1, x2, p, mode=None):
    return run_op(runtime, "aten::_cdist_forward", x1, x2, p, mode)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", NORMS)
def test_cdist_every_norm(runtime, dtype, p):
    x1, x2 = _points((5, 7), dtype, 1), _points((4, 7), dtype, 2)
    assert_same(_cdist(runtime, x1, x2, p), aten._cdist_forward(x1, x2, p, None), **depth_tolerances(dtype, 7))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, math.inf, 1.5])
def test_pdist_every_norm(runtime, dtype, p):
    x = make_tensor((6, 9), dtype, 3, -2, 2)
    assert_same(run_op(runtime, "aten::_pdist_forward", x, p), aten._pdist_forward(x, p), **depth_tolerances(dtype, 9))


# Columns on each side of torch's vector lanes (8 floats, 4 doubles; 16 and
# 8 with AVX-512), rows giving 0, 1 and many pairs.
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n,m", [(0, 3), (1, 3), (2, 1), (3, 4), (4, 7), (5, 8), (5, 9), (7, 17), (13, 33), (4, 0)])
def test_pdist_sizes(runtime, dtype, n, m):
    x = make_tensor((n, m), dtype, 4)
    expected = aten._pdist_forward(x, 2.0)
    assert_same(run_op(runtime, "aten::_pdist_forward", x), expected, **depth_tolerances(dtype, m))
    assert_same(
        run_op(runtime, "aten::_pdist_forward", x, 3.0), aten._pdist_forward(x, 3.0), **depth_tolerances(dtype, m)
    )


def test_pdist_takes_any_strides(runtime):
    x = make_tensor((9, 6), torch.float32, 5).t()  # torch's kernel wants contiguous: F.pdist makes it so
    assert_same(run_op(runtime, "aten::_pdist_forward", x, 1.0), aten._pdist_forward(x.contiguous(), 1.0))


@pytest.mark.parametrize(
    "shape1,shape2",
    [
        ((2, 3, 5), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 6, 4)),  # batch dims broadcast: [2, 5]
        ((3, 4), (2, 3, 6, 4)),  # x1 without batch dims
        ((1, 3, 2), (3, 2)),
    ],
)
@pytest.mark.parametrize("p", [1.0, 2.0, math.inf])
def test_cdist_batched_broadcast(runtime, shape1, shape2, p):
    x1, x2 = make_tensor(shape1, torch.float32, 6), make_tensor(shape2, torch.float32, 7)
    assert_same(_cdist(runtime, x1, x2, p), aten._cdist_forward(x1, x2, p, None), **depth_tolerances(torch.float32, 6))


def test_cdist_takes_any_strides(runtime):
    x1 = make_tensor((2, 6, 5), torch.float64, 8).transpose(1, 2)  # [2, 5, 6]
    x2 = make_tensor((4, 12), torch.float64, 9)[:, ::2]  # [4, 6]
    for p in (0.0, 1.0, 2.0, 2.5):
        assert_same(_cdist(runtime, x1, x2, p), aten._cdist_forward(x1, x2, p, None))


# torch computes p = 2 as sqrt(clamp(|a|^2 + |b|^2 - 2 a.b, 0)) (its
# _euclidean_dist, a matrix product) for compute_mode 1, and for the default
# mode when either side has more than 25 rows; the runtime does the same
# where torch does. The dot product's summation order is the BLAS's, so the
# two results are compared with a stated bound instead of a tolerance. Each
# squared distance is within E = (c + 4) u S of the exact one, S = |a|^2 +
# |b|^2 + 2 sum |a_k b_k| (Higham 3.1: c + 2 products summed, plus rounded
# norms and a rounded result; u the dtype's unit roundoff), so two results
# differ by at most sqrt(2E) (the square root halves the exponent: near
# points cancel, in torch as here) plus a rounding of each root.
def _euclidean_bound(x1, x2, dtype):
    a, b = x1.double(), x2.double()
    a, b = torch.broadcast_tensors(a.unsqueeze(-2), b.unsqueeze(-3))  # [..., r1, r2, c]
    s = (a * a).sum(-1) + (b * b).sum(-1) + 2 * (a * b).abs().sum(-1)
    u = UNIT_ROUNDOFF[dtype]
    exact = (a - b).pow(2).sum(-1).sqrt()
    return (2 * (a.shape[-1] + 4) * u * s).sqrt(), exact


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("rows,mode", [((30, 4), None), ((3, 27), 0), ((5, 4), 1)])
def test_cdist_euclidean_matrix_product_path(runtime, dtype, rows, mode):
    x1 = make_tensor((rows[0], 10), torch.float64, 10, -2, 2)
    x2 = make_tensor((rows[1], 10), torch.float64, 11, -2, 2)
    x2[: min(rows)] = x1[: min(rows)] + 1e-3  # near points: the formula cancels
    x1, x2 = x1.to(dtype), x2.to(dtype)
    actual = _cdist(runtime, x1, x2, 2.0, mode)
    expected = aten._cdist_forward(x1, x2, 2.0, mode)
    assert actual.dtype == dtype and actual.shape == expected.shape
    bound, exact = _euclidean_bound(x1, x2, dtype)
    rounding = 2 * UNIT_ROUNDOFF[dtype] * exact
    assert bool(((actual.double() - expected.double()).abs() <= 2 * bound + 2 * rounding).all())
    assert bool(((actual.double() - exact).abs() <= bound + rounding).all())


def test_cdist_euclidean_batched_on_the_matrix_product_path(runtime):
    x1, x2 = make_tensor((2, 1, 4, 3), torch.float32, 12), make_tensor((3, 30, 3), torch.float32, 13)
    actual, expected = _cdist(runtime, x1, x2, 2.0), aten._cdist_forward(x1, x2, 2.0, None)
    assert actual.shape == expected.shape == (2, 3, 4, 30)
    bound, exact = _euclidean_bound(x1.expand(2, 3, 4, 3), x2.expand(2, 3, 30, 3), torch.float32)
    assert bool(((actual.double() - expected.double()).abs() <= 2 * bound + 1e-6).all())


def test_cdist_compute_mode_2_never_uses_the_matrix_product(runtime):
    # Coincident points: the direct sum gives exactly 0, as torch's does.
    x1 = make_tensor((30, 5), torch.float32, 14)
    actual = _cdist(runtime, x1, x1, 2.0, 2)
    assert_same(actual, aten._cdist_forward(x1, x1, 2.0, 2))
    assert bool((actual.diagonal() == 0).all())


def test_cdist_half_and_bfloat16_only_on_the_matrix_product_path(runtime):
    x = make_tensor((3, 4), torch.float16, 15)
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        aten._cdist_forward(x, x, 1.0, None)
    with pytest.raises(PareError, match="kernel tag cdist_kernel handles"):
        _cdist(runtime, x, x, 1.0)
    with pytest.raises(PareError, match="kernel tag pdist_kernel handles"):
        run_op(runtime, "aten::_pdist_forward", x.bfloat16())


def test_nan_as_torch(runtime):
    # cdist's inf norm keeps the larger with std::max, skipping NaN; pdist's
    # vector maximum propagates it; the sums propagate it everywhere.
    a = torch.tensor([[1.0, float("nan"), 0.0]])
    b = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    for p in NORMS:
        assert_same(_cdist(runtime, a, b, p), aten._cdist_forward(a, b, p, None))
        x = torch.cat([a, b])
        assert_same(run_op(runtime, "aten::_pdist_forward", x, p), aten._pdist_forward(x, p))


@pytest.mark.parametrize("shape1,shape2", [((0, 3), (4, 3)), ((2, 3), (0, 3)), ((0, 2, 3), (2, 3)), ((2, 0), (3, 0))])
def test_cdist_empty(runtime, shape1, shape2):
    x1, x2 = torch.rand(shape1), torch.rand(shape2)
    for p in (0.0, 2.0):
        assert_same(_cdist(runtime, x1, x2, p), aten._cdist_forward(x1, x2, p, None))


def test_cdist_errors_name_the_problem(runtime):
    x = torch.rand(3, 4)
    with pytest.raises(PareError, match=r"aten::_cdist_forward: argument 'p' must be non-negative, got -1"):
        _cdist(runtime, x, x, -1.0)
    with pytest.raises(PareError, match=r"must have the same number of columns"):
        _cdist(runtime, x, torch.rand(3, 5), 2.0)
    with pytest.raises(PareError, match=r"argument 'x1' must have at least 2 dims"):
        _cdist(runtime, torch.rand(4), x, 2.0)
    with pytest.raises(PareError, match=r"argument 'x2' must have at least 2 dims"):
        _cdist(runtime, x, torch.rand(4), 2.0)
    with pytest.raises(PareError, match=r"argument 'compute_mode' must be 0"):
        _cdist(runtime, x, x, 2.0, 3)
    with pytest.raises(PareError, match=r"needs floating-point 'x1' and 'x2', got Int and Int"):
        _cdist(runtime, x.int(), x.int(), 2.0)
    with pytest.raises(PareError, match=r"must have the same dtype, got Float and Double"):
        _cdist(runtime, x, x.double(), 2.0)
    with pytest.raises(PareError, match=r"do not broadcast: batch dim 0 has sizes 2 and 3"):
        _cdist(runtime, torch.rand(2, 3, 4), torch.rand(3, 3, 4), 2.0)


def test_pdist_errors_name_the_problem(runtime):
    with pytest.raises(PareError, match=r"aten::_pdist_forward: argument 'self' must be 2-d"):
        run_op(runtime, "aten::_pdist_forward", torch.rand(3))
    with pytest.raises(PareError, match=r"argument 'p' must be non-negative, got -0.5"):
        run_op(runtime, "aten::_pdist_forward", torch.rand(3, 2), -0.5)
    with pytest.raises(PareError, match=r"needs a floating-point 'self', got Long"):
        run_op(runtime, "aten::_pdist_forward", torch.ones(3, 2, dtype=torch.long))
