"""aten::_to_copy, aten::view, aten::sym_size.int and aten::_softmax vs torch."""

import itertools

import numpy as np
import pytest
import torch
from runtime_testing import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_same,
    half_rounding_cases,
    make_tensor,
    run_op,
    special_rows,
)

from pare.program import ProgramBuilder
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
    with pytest.raises(PareError, match="dtype code 9 is not supported"):
        run_op(runtime, "aten::_to_copy", x, 9)


def test_to_copy_special_float_values(runtime):
    x = torch.tensor([float("nan"), float("inf"), -0.0, 65504.0, 70000.0, 1e-8, 3.3895e38])
    for dst in (torch.float16, torch.bfloat16, torch.bool):
        assert_same(run_op(runtime, "aten::_to_copy", x, dst), x.to(dst))


def test_float_to_half_bit_for_bit_at_every_rounding_boundary(runtime):
    # Software on baseline x86_64, F16C's vcvtps2ph on v3 (CI's v3 pass),
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


@pytest.mark.parametrize(
    "shape,size",
    [
        ((2, 3, 4), [6, 4]),
        ((2, 3, 4), [-1]),
        ((2, 3, 4), [4, -1, 2]),
        ((24,), [2, 3, 4]),
        ((), [1, 1]),
        ((0, 3), [3, 0]),
        ((0, 3), [-1, 3]),
        ((1, 5), [5]),
    ],
)
def test_view(runtime, shape, size):
    x = make_tensor(shape, torch.float32, 3)
    assert_same(run_op(runtime, "aten::view", x, size), x.view(size))


def test_view_of_non_contiguous_input(runtime):
    x = make_tensor((6, 10, 8), torch.float32, 4)[:, :4, :]  # [6, 4, 8]; only the last two dims contiguous
    assert_same(run_op(runtime, "aten::view", x, [6, 32]), x.view(6, 32))
    with pytest.raises(PareError, match="not compatible with input sizes"):
        run_op(runtime, "aten::view", x, [24, 8])  # torch refuses too; export would use reshape
    with pytest.raises(PareError, match=r"shape \[5, -1\] is invalid for input of size 192"):
        run_op(runtime, "aten::view", x, [5, -1])


def test_view_output_shares_storage_and_outlives_base(runtime):
    # relu -> view -> add: the planner must keep relu's buffer alive for the view.
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [4, 6])
    r = m.op("aten::relu", x)
    v = m.op("aten::view", r, [24])
    t = m.op("aten::add.Tensor", x, 1.0)  # would reuse r's memory if r died at the view
    y = m.op("aten::add.Tensor", m.op("aten::view", t, [24]), v)
    m.output(y, v)
    method = runtime.load(pb.to_bytes()).method()
    a = make_tensor((4, 6), torch.float32, 5)
    for _ in range(3):  # planning run, then replays
        y_out, v_out = method.run(a.numpy())
        assert_same(torch.from_numpy(v_out), torch.relu(a).view(24))
        assert_same(torch.from_numpy(y_out), (a + 1).view(24) + torch.relu(a).view(24))


def test_sym_size_feeds_symbolic_view(runtime):
    # What torch.export emits for dynamic shapes: view(x, [s0 * ..., -1]) with
    # s0 = sym_size(x, 0), a list element referring to an Int value.
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 3, 4])
    s0 = m.op("aten::sym_size.int", x, 0, returns="int")
    y = m.op("aten::view", x, [s0, 12])
    m.output(y, s0)
    method = runtime.load(pb.to_bytes()).method()
    for batch in (2, 5, 1, 5):
        a = make_tensor((batch, 3, 4), torch.float32, batch)
        y_out, s_out = method.run(a.numpy())
        assert s_out == batch
        assert_same(torch.from_numpy(y_out), a.view(batch, 12))


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
