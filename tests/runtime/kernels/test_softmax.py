"""The softmax family (runtime/kernels/softmax/) vs torch: aten::_softmax and
aten::_log_softmax, every floating dtype, every dim, rows of special values."""

import pytest
import torch
from runtime_testing import FLOAT_DTYPES, assert_same, depth_tolerances, make_tensor, run_op, special_rows

from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(runtime, dtype, dim):
    x = make_tensor((4, 5, 6), dtype, 6, -5, 5)
    assert_same(run_op(runtime, "aten::_softmax", x, dim, False), torch.ops.aten._softmax(x, dim, False))


def test_softmax_edge_cases(runtime):
    cases = [
        (special_rows(37, 9), 1),
        (special_rows(16, 10), -1),
        (special_rows(37, 11).t(), 0),
        (torch.tensor(3.0), 0),
        (make_tensor((3, 0), torch.float32, 7), 1),
        (make_tensor((6, 7), torch.float32, 8).t(), 0),  # non-contiguous
        (torch.tensor([[1.0, float("nan")], [float("-inf"), 0.0], [1000.0, -1000.0]]), 1),
    ]
    for x, dim in cases:
        assert_same(run_op(runtime, "aten::_softmax", x, dim, False), torch.ops.aten._softmax(x, dim, False))
    with pytest.raises(PareError, match="half to float conversion is not supported on CPU"):
        run_op(runtime, "aten::_softmax", torch.ones(3, dtype=torch.float16), 0, True)
    with pytest.raises(PareError, match=r"dimension 2 is out of range for a 2-dim tensor \(expected \[-2, 1\]\)"):
        run_op(runtime, "aten::_softmax", torch.ones(2, 2), 2, False)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_log_softmax(runtime, dtype, dim):
    x = make_tensor((4, 5, 37), dtype, 130, -5, 5)
    assert_same(
        run_op(runtime, "aten::_log_softmax", x, dim, False),
        torch.ops.aten._log_softmax(x, dim, False),
        **depth_tolerances(dtype, 2),
    )


def test_log_softmax_edge_cases(runtime):
    cases = [
        (special_rows(37, 134), 1),
        (special_rows(16, 135), -1),
        (special_rows(37, 136).t(), 0),
        (torch.tensor(3.0), 0),
        (make_tensor((3, 0), torch.float32, 131), 1),
        (make_tensor((0, 3), torch.float32, 131), 1),
        (make_tensor((6, 7), torch.float32, 132).t(), 0),
        (make_tensor((6, 7, 3), torch.float64, 133).transpose(0, 2), 1),
        (
            torch.tensor(
                [[1.0, float("nan")], [float("-inf"), 0.0], [1000.0, -1000.0], [float("-inf")] * 2, [float("inf"), 1.0]]
            ),
            1,
        ),
        (torch.tensor([[1.0, float("nan")], [float("-inf"), 0.0], [1000.0, -1000.0]]).t().contiguous(), 0),
    ]
    for x, dim in cases:
        assert_same(run_op(runtime, "aten::_log_softmax", x, dim, False), torch.ops.aten._log_softmax(x, dim, False))
    with pytest.raises(PareError, match="half to float conversion is not supported on CPU"):
        run_op(runtime, "aten::_log_softmax", torch.ones(3, dtype=torch.float16), 0, True)
    with pytest.raises(PareError, match="dtype Long is not supported"):
        run_op(runtime, "aten::_log_softmax", torch.ones(3, dtype=torch.int64), 0, False)
