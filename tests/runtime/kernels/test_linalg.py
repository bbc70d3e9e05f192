"""The linalg family (runtime/kernels/linalg/) vs torch: aten::mm, aten::addmm
and aten::bmm, every dtype of mm_kernel and bmm_kernel, blocked-GEMM edge
sizes, transposed and strided operands, broadcast bias, beta/alpha; the FFTs
(aten::_fft_r2c, _fft_c2r, _fft_c2c) on complex64 against torch's float64
transforms, with the complex views and abs around them."""

import pytest
import torch
from runtime_testing import ALL_DTYPES, assert_same, make_tensor, run_op, small_tensor

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

aten = torch.ops.aten

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


@pytest.mark.parametrize("k, n", [(48, 256), (256, 48), (7, 13), (1, 5), (0, 3)])
def test_bmm_single_rows_as_a_decode_step_multiplies(runtime, k, n):
    # m == 1, as attention over a KV cache: q K^T (K's rows contiguous, so
    # K^T's columns are), weights V (contiguous rows), and a B with neither
    # contiguous (the blocked GEMM's path), against float64.
    q = make_tensor((6, 1, k), torch.float32, 126, -2, 2)
    cache = make_tensor((6, n, k), torch.float32, 127, -2, 2)
    values = make_tensor((6, k, n), torch.float32, 128, -2, 2)
    strided = make_tensor((6, 2 * k, 2 * n), torch.float32, 129, -2, 2)[:, ::2, ::2]
    for b in (cache.transpose(1, 2), values, strided):
        want = torch.bmm(q.double(), b.double()).float()
        assert_same(run_op(runtime, "aten::bmm", q, b), want, **_tol(torch.float32, k))
    # A strided query row takes the blocked GEMM too.
    q_strided = make_tensor((6, 1, 2 * k), torch.float32, 130, -2, 2)[:, :, ::2]
    want = torch.bmm(q_strided.double(), values.double()).float()
    assert_same(run_op(runtime, "aten::bmm", q_strided, values), want, **_tol(torch.float32, k))


def test_bmm_errors(runtime):
    with pytest.raises(PareError, match="expected 'mat2' to start with \\[2, 4\\]"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4), torch.ones(3, 4, 5))
    with pytest.raises(PareError, match="expected 'self' and 'mat2' to have the same dtype, but got Float != Double"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4), torch.ones(2, 4, 5).double())
    with pytest.raises(PareError, match=r"argument 'self' must be 3-d, got sizes \[3, 4\]"):
        run_op(runtime, "aten::bmm", torch.ones(3, 4), torch.ones(2, 4, 5))
    with pytest.raises(PareError, match="dtype Bool is not supported"):
        run_op(runtime, "aten::bmm", torch.ones(2, 3, 4).bool(), torch.ones(2, 4, 5).bool())


# ---------------------------------------------------------------------------
# FFTs (fft.cc). The engine works in double and rounds once, so a result is
# within a few float32 ulps of the exact transform of the float32 input:
# compared with torch's complex128 transform of the same values, every
# element is within 2^-21 of the largest magnitude (of its output).

LENGTHS = [1, 2, 3, 5, 7, 8, 12, 16, 25, 50, 64, 97, 128, 400]  # powers of two and Bluestein's


def _assert_transform(actual, exact):
    """actual (complex64 or float32) vs the float64/complex128 transform."""
    assert tuple(actual.shape) == tuple(exact.shape), (actual.shape, exact.shape)
    assert actual.dtype == (torch.complex64 if exact.is_complex() else torch.float32), actual.dtype
    bound = 2.0**-21 * max(exact.abs().max().item(), 1e-30) if exact.numel() else 0
    err = (actual.to(exact.dtype) - exact).abs().max().item() if exact.numel() else 0
    assert err <= bound, f"max error {err:.3g} > {bound:.3g}"


def _complex(shape, seed):
    return torch.complex(
        make_tensor(shape, torch.float32, seed, -2, 2), make_tensor(shape, torch.float32, seed + 1, -2, 2)
    )


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_r2c_every_length_both_sides(runtime, n):
    x = make_tensor((3, n), torch.float32, n, -2, 2)
    for onesided in (True, False):
        _assert_transform(
            run_op(runtime, "aten::_fft_r2c", x, [1], 0, onesided), aten._fft_r2c(x.double(), [1], 0, onesided)
        )


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_c2r_and_c2c_every_length(runtime, n):
    z = _complex((2, n // 2 + 1), n)
    _assert_transform(run_op(runtime, "aten::_fft_c2r", z, [1], 2, n), aten._fft_c2r(z.cdouble(), [1], 2, n))
    w = _complex((2, n), n + 7)
    for forward in (True, False):
        _assert_transform(
            run_op(runtime, "aten::_fft_c2c", w, [1], 0, forward), aten._fft_c2c(w.cdouble(), [1], 0, forward)
        )


@pytest.mark.parametrize("norm", [0, 1, 2])
def test_fft_several_dims_every_normalization_and_strides(runtime, norm):
    x = make_tensor((6, 4, 10), torch.float32, 5, -2, 2).permute(2, 0, 1)  # [10, 6, 4], not contiguous
    for dims in ([0, 2], [2, 0, 1], [1]):
        _assert_transform(
            run_op(runtime, "aten::_fft_r2c", x, dims, norm, True), aten._fft_r2c(x.double(), dims, norm, True)
        )
    z = _complex((9, 5, 4), 6).transpose(0, 2)  # [4, 5, 9], a permuted spectrum (copy_kernel ComplexFloat)
    for dims, last in (([0, 2], 16), ([1, 2], 17), ([2], 16)):
        _assert_transform(
            run_op(runtime, "aten::_fft_c2r", z, dims, norm, last), aten._fft_c2r(z.cdouble(), dims, norm, last)
        )
    _assert_transform(
        run_op(runtime, "aten::_fft_c2c", z, [0, 1], norm, True), aten._fft_c2c(z.cdouble(), [0, 1], norm, True)
    )


def test_fft_c2r_reads_only_the_hermitian_half(runtime):
    # The imaginary parts of bin 0 and of the Nyquist bin are ignored, as
    # torch does; the input holds exactly last_dim_size / 2 + 1 bins.
    z = _complex((3, 9), 8)
    for last in (16, 17):
        _assert_transform(run_op(runtime, "aten::_fft_c2r", z, [1], 0, last), aten._fft_c2r(z.cdouble(), [1], 0, last))
    with pytest.raises(
        PareError, match=r"must hold last_dim_size / 2 \+ 1 = 4 bins for a real signal of 6; torch.fft.irfft pads"
    ):
        run_op(runtime, "aten::_fft_c2r", z, [1], 0, 6)


def test_fft_round_trip_and_empty_batches(runtime):
    x = make_tensor((2, 3, 30), torch.float32, 9, -2, 2)
    spectrum = run_op(runtime, "aten::_fft_r2c", x, [2], 0, True)
    back = run_op(runtime, "aten::_fft_c2r", spectrum, [2], 2, 30)
    torch.testing.assert_close(back, x, rtol=0, atol=2e-6)
    empty = torch.zeros(0, 8)
    assert run_op(runtime, "aten::_fft_r2c", empty, [1], 0, True).shape == (0, 5)
    assert run_op(runtime, "aten::_fft_c2r", torch.zeros(0, 5, dtype=torch.complex64), [1], 0, 8).shape == (0, 8)


def test_complex_views_and_abs(runtime):
    z = _complex((4, 6), 10)
    torch.testing.assert_close(run_op(runtime, "aten::view_as_real", z), torch.view_as_real(z), rtol=0, atol=0)
    pairs = make_tensor((3, 5, 2), torch.float32, 11)
    torch.testing.assert_close(
        run_op(runtime, "aten::view_as_complex", pairs), torch.view_as_complex(pairs), rtol=0, atol=0
    )
    strided = _complex((6, 8), 12)[::2, 1:].transpose(0, 1)
    exact = strided.cdouble().abs()
    _assert_transform(run_op(runtime, "aten::abs", strided), exact)
    assert run_op(runtime, "aten::abs", z).dtype == torch.float32


def test_fft_errors_name_the_problem_and_the_fix(runtime):
    with pytest.raises(
        PareError, match=r"'self' must be Float for a complex64 result, got Double.*convert the input to float32"
    ):
        run_op(runtime, "aten::_fft_r2c", torch.ones(4, dtype=torch.float64), [0], 0, True)
    with pytest.raises(PareError, match=r"'self' must be ComplexFloat \(complex64\), got Float"):
        run_op(runtime, "aten::_fft_c2r", torch.ones(3), [0], 0, 4)
    with pytest.raises(PareError, match=r"'normalization' must be 0 \(none\), 1 \(1/sqrt\(n\)\) or 2 \(1/n\), got 3"):
        run_op(runtime, "aten::_fft_r2c", torch.ones(4), [0], 3, True)
    with pytest.raises(PareError, match="dim 1 is repeated"):
        run_op(runtime, "aten::_fft_r2c", torch.ones(2, 4), [1, -1], 0, True)
    with pytest.raises(PareError, match="is empty; an FFT needs at least one element"):
        run_op(runtime, "aten::_fft_r2c", torch.ones(2, 0), [1], 0, True)
    with pytest.raises(PareError, match="'last_dim_size' must be at least 1, got 0"):
        run_op(runtime, "aten::_fft_c2r", torch.ones(3, dtype=torch.complex64), [0], 0, 0)
    with pytest.raises(PareError, match="last dim of size 2 and stride 1"):
        run_op(runtime, "aten::view_as_complex", torch.ones(3, 4))
    with pytest.raises(PareError, match=r"'self' must be ComplexFloat \(complex64\), got Float"):
        run_op(runtime, "aten::view_as_real", torch.ones(3))
