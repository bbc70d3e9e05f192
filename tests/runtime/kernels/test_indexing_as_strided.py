"""aten::as_strided as a copy (runtime/kernels/indexing/as_strided.cc) vs
torch: the window's elements read from the input's elements in row-major
order (torch's storage for a contiguous input at offset 0), overlapping
and repeated reads, every dtype (it moves bytes through copy_kernel),
non-contiguous inputs and the bounds checks."""

import pytest
import torch
from runtime_testing import ALL_DTYPES, assert_same, make_tensor, run_op

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py


def _as_strided(runtime, x, size, stride, offset=None):
    args = (x, list(size), list(stride)) + (() if offset is None else (offset,))
    return run_op(runtime, "aten::as_strided", *args)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_overlapping_windows_every_dtype(runtime, dtype):
    x = make_tensor((12,), dtype, 1)
    # Sliding windows of 4, step 2: what x.unfold(0, 4, 2) views.
    assert_same(_as_strided(runtime, x, (5, 4), (2, 1)), torch.as_strided(x, (5, 4), (2, 1)).contiguous())


@pytest.mark.parametrize(
    "shape,size,stride,offset",
    [
        ((2, 9), (2, 4, 3), (9, 2, 1), None),  # x.unfold(1, 3, 2)
        ((3, 8, 8), (3, 3, 3, 6, 6), (64, 8, 1, 8, 1), 0),  # 3x3 patches, im2col style
        ((10,), (3, 4), (2, 1), 1),  # windows from an offset
        ((4, 5), (4, 5), (0, 1), 0),  # a row repeated (stride 0)
        ((4, 5), (2, 2), (5, 1), 12),  # a plain block
        ((4, 5), (5, 4), (1, 5), None),  # the transpose
        ((6,), (), (), 5),  # 0-dim: the last element
        ((6,), (3, 0), (1, 1), 100),  # empty: nothing read, no bounds to check
        ((2, 3), (7,), (0,), 5),
    ],
)
def test_windows_match_torch(runtime, shape, size, stride, offset):
    x = make_tensor(shape, torch.float32, 2)
    expected = torch.as_strided(x, size, stride, offset) if offset is None or x.numel() > offset else None
    if expected is None:  # torch checks nothing for an empty window either
        expected = torch.empty(size)
    assert_same(_as_strided(runtime, x, size, stride, offset), expected.contiguous())


def test_non_contiguous_input_reads_its_row_major_elements(runtime):
    # The runtime's storage is the input's elements in row-major order: for a
    # transposed input, that of x.t().contiguous() (torch would read x's
    # storage instead; the tracer emits the op for contiguous inputs only).
    x = make_tensor((4, 6), torch.float64, 3).t()
    assert_same(_as_strided(runtime, x, (3, 5), (4, 1), 2), torch.as_strided(x.contiguous(), (3, 5), (4, 1), 2))


def test_bounds_and_arguments_are_checked(runtime):
    x = torch.rand(10)
    with pytest.raises(PareError, match=r"aten::as_strided: size \[3, 4\], stride \[4, 1\] and storage_offset 0 read "):
        _as_strided(runtime, x, (3, 4), (4, 1))  # reads element 11 of 10
    with pytest.raises(PareError, match=r"read past the end of 'self' \(10 elements, sizes \[10\]\)"):
        _as_strided(runtime, x, (1,), (1,), 10)
    with pytest.raises(PareError, match=r"read past the end"):
        _as_strided(runtime, x, (2, 2), (2**62, 2**62))  # the span overflows int64
    with pytest.raises(PareError, match=r"argument 'storage_offset' must be non-negative, got -1"):
        _as_strided(runtime, x, (2,), (1,), -1)
    with pytest.raises(PareError, match=r"argument 'stride' \[1, -1\] has a negative stride"):
        _as_strided(runtime, x, (2, 2), (1, -1))
    with pytest.raises(PareError, match=r"arguments 'size' \[2, 2\] and 'stride' \[1\] must have the same length"):
        _as_strided(runtime, x, (2, 2), (1,))
    with pytest.raises(PareError, match=r"'size'"):
        _as_strided(runtime, x, (-1,), (1,))
