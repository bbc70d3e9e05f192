"""aten::add.Tensor, aten::add.Scalar, aten::mul.Tensor and aten::relu vs
torch: every dtype in each kernel tag, broadcasting, non-contiguous inputs,
0-dim and empty tensors, type promotion with tensors and scalars."""

import itertools

import pytest
import torch
from runtime_testing import ALL_DTYPES, assert_same, make_tensor, run_op

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_add_every_dtype(runtime, dtype):
    a, b = make_tensor((3, 5), dtype, 1), make_tensor((3, 5), dtype, 2)
    alpha = True if dtype == torch.bool else 2
    assert_same(run_op(runtime, "aten::add.Tensor", a, b, alpha), torch.add(a, b, alpha=alpha))
    assert_same(run_op(runtime, "aten::add.Tensor", a, b), torch.add(a, b))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_mul_every_dtype(runtime, dtype):
    a, b = make_tensor((4, 6), dtype, 3), make_tensor((4, 6), dtype, 4)
    assert_same(run_op(runtime, "aten::mul.Tensor", a, b), torch.mul(a, b))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != torch.bool], ids=str)
def test_relu_every_dtype(runtime, dtype):
    a = make_tensor((2, 3, 7), dtype, 5)
    assert_same(run_op(runtime, "aten::relu", a), torch.relu(a))


def test_relu_propagates_nan(runtime):
    a = torch.tensor([float("nan"), -1.0, 2.0, float("-inf")])
    assert_same(run_op(runtime, "aten::relu", a), torch.relu(a))


def test_relu_rejects_bool_with_a_clear_error(runtime):
    from pare.runtime import PareError

    with pytest.raises(PareError, match="aten::relu: .*Bool"):
        run_op(runtime, "aten::relu", torch.ones(3, dtype=torch.bool))


@pytest.mark.parametrize(
    "shape_a,shape_b",
    [
        ((4, 1, 3), (5, 3)),
        ((1,), (2, 3)),
        ((2, 3), ()),
        ((), ()),
        ((3, 1), (1, 4)),
        ((2, 1, 4, 1), (3, 1, 5)),
        ((0, 3), (1, 3)),
        ((2, 0), (2, 1)),
    ],
)
def test_broadcasting(runtime, shape_a, shape_b):
    a, b = make_tensor(shape_a, torch.float32, 6), make_tensor(shape_b, torch.float32, 7)
    assert_same(run_op(runtime, "aten::add.Tensor", a, b, 3), torch.add(a, b, alpha=3))
    assert_same(run_op(runtime, "aten::mul.Tensor", a, b), a * b)


def test_non_contiguous_inputs(runtime):
    base = make_tensor((6, 8, 5), torch.float32, 8)
    transposed = base.transpose(0, 2)  # [5, 8, 6]
    sliced = make_tensor((5, 16, 12), torch.float32, 9)[:, ::2, ::2]  # [5, 8, 6] strided
    expanded = make_tensor((1, 8, 1), torch.float32, 10).expand(5, 8, 6)
    for a, b in itertools.permutations([transposed, sliced, expanded], 2):
        assert not a.is_contiguous() or not b.is_contiguous()
        assert_same(run_op(runtime, "aten::add.Tensor", a, b), a + b)
        assert_same(run_op(runtime, "aten::mul.Tensor", a, b), a * b)
    assert_same(run_op(runtime, "aten::relu", transposed), torch.relu(transposed))


def test_large_contiguous_and_broadcast_fast_paths(runtime):
    a = make_tensor((64, 1000), torch.float32, 11)
    row = make_tensor((1000,), torch.float32, 12)
    assert_same(run_op(runtime, "aten::add.Tensor", a, row), a + row)
    assert_same(run_op(runtime, "aten::add.Tensor", a, a), a + a)
    assert_same(run_op(runtime, "aten::mul.Tensor", a, 0.5), a * 0.5)


@pytest.mark.parametrize(
    "da,db",
    [
        (torch.int32, torch.float32),
        (torch.uint8, torch.int8),
        (torch.bool, torch.int16),
        (torch.float16, torch.bfloat16),
        (torch.int64, torch.float16),
        (torch.bool, torch.bool),
        (torch.uint8, torch.float64),
        (torch.bfloat16, torch.float32),
    ],
)
def test_tensor_tensor_promotion(runtime, da, db):
    a, b = make_tensor((3, 4), da, 13), make_tensor((3, 4), db, 14)
    assert_same(run_op(runtime, "aten::add.Tensor", a, b), torch.add(a, b))
    assert_same(run_op(runtime, "aten::mul.Tensor", a, b), torch.mul(a, b))


def test_zero_dim_tensors_promote_like_torch(runtime):
    cases = [
        (make_tensor((3,), torch.int32, 15), torch.tensor(2.5, dtype=torch.float64)),  # -> Float? no: Double
        (make_tensor((3,), torch.float16, 16), torch.tensor(2.5, dtype=torch.float64)),  # -> Half
        (make_tensor((3,), torch.uint8, 17), torch.tensor(3, dtype=torch.int64)),  # -> Byte
        (torch.tensor(4, dtype=torch.int16), torch.tensor(1.5, dtype=torch.float32)),  # both 0-dim -> Float
    ]
    for a, b in cases:
        assert_same(run_op(runtime, "aten::add.Tensor", a, b), torch.add(a, b))
        assert_same(run_op(runtime, "aten::mul.Tensor", b, a), torch.mul(b, a))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [3, -2.5, True], ids=["int", "float", "bool"])
def test_tensor_scalar_promotion(runtime, dtype, scalar):
    a = make_tensor((2, 5), dtype, 18)
    # A Python number in a Tensor position (how torch.export spells x + 1).
    assert_same(run_op(runtime, "aten::mul.Tensor", a, scalar), torch.mul(a, scalar))
    if dtype == torch.bool and isinstance(scalar, float):
        return
    assert_same(run_op(runtime, "aten::add.Scalar", a, scalar), torch.ops.aten.add.Scalar(a, scalar))


def test_add_scalar_alpha(runtime):
    a = make_tensor((4,), torch.float32, 19)
    assert_same(run_op(runtime, "aten::add.Scalar", a, 2, 0.5), torch.ops.aten.add.Scalar(a, 2, 0.5))
    ai = make_tensor((4,), torch.int64, 20)
    assert_same(run_op(runtime, "aten::add.Scalar", ai, 7, 3), torch.ops.aten.add.Scalar(ai, 7, 3))


def test_alpha_checks_match_torch(runtime):
    from pare.runtime import PareError

    ints = make_tensor((3,), torch.int32, 21)
    with pytest.raises(PareError, match="alpha must not be a floating point"):
        run_op(runtime, "aten::add.Tensor", ints, ints, 1.5)
    with pytest.raises(PareError, match="boolean alpha"):
        run_op(runtime, "aten::add.Tensor", ints, ints, True)


def test_integer_overflow_wraps_like_torch(runtime):
    a = torch.tensor([120, -128, 127], dtype=torch.int8)
    assert_same(run_op(runtime, "aten::add.Tensor", a, a), a + a)
    assert_same(run_op(runtime, "aten::mul.Tensor", a, a), a * a)
    big = torch.tensor([2**62, -(2**63)], dtype=torch.int64)
    assert_same(run_op(runtime, "aten::add.Tensor", big, big), big + big)


def test_incompatible_shapes_name_the_argument(runtime):
    from pare.runtime import PareError

    with pytest.raises(PareError, match=r"aten::add.Tensor: argument 'other' with sizes \[4\] cannot be broadcast"):
        run_op(runtime, "aten::add.Tensor", torch.ones(2, 3), torch.ones(4))


def test_wrong_argument_kind_names_argument(runtime):
    from pare.runtime import PareError

    with pytest.raises(PareError, match=r"aten::relu: argument 'self' \(#0\) must be Tensor, got int\[\]"):
        run_op(runtime, "aten::relu", [1, 2])
