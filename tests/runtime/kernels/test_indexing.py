"""The indexing family (runtime/kernels/indexing/) vs torch.

Views (view, sym_size.int, alias, _unsafe_view, permute, transpose.int, expand, slice.Tensor,
select.int, squeeze.dims, unsqueeze, unbind.int, split_with_sizes) share
their input's storage; copies (clone, copy, slice_scatter, cat, stack, flip,
roll, repeat), gathers (index_select, gather, index.Tensor), scatters
(scatter, scatter_add, scatter_reduce), writes through indices (index_put,
masked_scatter) and factories (full,
full_like, scalar_tensor, empty.memory_format, arange.start_step) produce new
tensors; _assert_tensor_metadata checks. Every dtype of each kernel tag,
non-contiguous inputs, 0-dim and empty cases, type promotion in cat/stack,
and errors named by argument."""

import functools

import numpy as np
import pytest
import torch
from runtime_testing import ALL_DTYPES, assert_same, lower_forward, make_tensor, run_op, same_or_both_fail, to_input

from pare import dtypes
from pare.program import ProgramBuilder, TensorListOf, read
from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

aten = torch.ops.aten
ids = str


def non_contiguous(shape, dtype, seed):
    """A permuted, sliced view with `shape`."""
    big = make_tensor(tuple(2 * s for s in reversed(shape)), dtype, seed)
    view = big.permute(*reversed(range(len(shape))))
    return view[tuple(slice(0, 2 * s, 2) for s in shape)]


def _outputs(method, outs):
    result = []
    for i, o in enumerate(outs):
        t = torch.from_numpy(o)
        result.append(t.to(torch.bfloat16) if method.output_dtype(i) == "BFloat16" else t)
    return result


def run_program(runtime, inputs, build):
    """Runs a one-method program: `build(m, values)` gets the method builder
    and one input Value per tensor in `inputs`, and returns the outputs."""
    pb = ProgramBuilder()
    m = pb.method()
    values = [m.input(dtypes.get(t.dtype), [None] * t.dim()) for t in inputs]
    outs = build(m, values)
    m.output(*outs)
    method = runtime.load(pb.to_bytes()).method()
    return _outputs(method, method.run(*[to_input(t) for t in inputs]))


def run_list_op(runtime, op, tensors, *args):
    """`op` whose first argument is a Tensor[] of `tensors` (cat, stack)."""
    return run_program(runtime, tensors, lambda m, vs: [m.op(op, list(vs), *args)])[0]


def run_index(runtime, x, indices):
    """aten::index.Tensor(x, indices), every tensor a method input, None entries kept."""

    def build(m, vs):
        given = iter(vs[1:])
        return [m.op("aten::index.Tensor", vs[0], [None if i is None else next(given) for i in indices])]

    return run_program(runtime, [x, *[i for i in indices if i is not None]], build)[0]


def run_split_op(runtime, op, x, count, *args):
    """`op` returning a Tensor[] of `count` tensors (split_with_sizes, unbind)."""
    return run_program(runtime, [x], lambda m, vs: m.op(op, vs[0], *args, returns=TensorListOf(count)))


# --------------------------------------------------------------------------
# Views


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_views_every_dtype(runtime, dtype):
    x = make_tensor((2, 3, 4), dtype, 1)
    assert_same(run_op(runtime, "aten::permute", x, [2, 0, 1]), x.permute(2, 0, 1))
    assert_same(run_op(runtime, "aten::transpose.int", x, 0, -1), x.transpose(0, -1))
    assert_same(run_op(runtime, "aten::slice.Tensor", x, 1, 1, 3), x[:, 1:3])
    assert_same(run_op(runtime, "aten::select.int", x, 2, -1), x[..., -1])
    assert_same(run_op(runtime, "aten::unsqueeze", x, 1), x.unsqueeze(1))
    assert_same(run_op(runtime, "aten::expand", x[:, :1], [5, 2, 3, -1]), x[:, :1].expand(5, 2, 3, 4))
    assert_same(run_op(runtime, "aten::alias", x), x)
    assert_same(run_op(runtime, "aten::_unsafe_view", x, [6, -1]), x.view(6, 4))


def test_permute_transpose(runtime):
    x = non_contiguous((2, 3, 4, 5), torch.float32, 2)
    for dims in ([3, 2, 1, 0], [0, -1, 1, 2], [1, 0, 2, 3]):
        assert_same(run_op(runtime, "aten::permute", x, dims), x.permute(dims))
    assert_same(run_op(runtime, "aten::permute", torch.tensor(3.0), []), torch.tensor(3.0))
    assert_same(run_op(runtime, "aten::transpose.int", x, 1, 1), x)
    assert_same(run_op(runtime, "aten::transpose.int", torch.tensor(3.0), 0, -1), torch.tensor(3.0))
    with pytest.raises(PareError, match=r"aten::permute: argument 'dims': dim 0 is repeated"):
        run_op(runtime, "aten::permute", x, [0, 1, 2, -4])
    with pytest.raises(PareError, match=r"aten::permute: argument 'dims' has 2 entries but the input has 4 dims"):
        run_op(runtime, "aten::permute", x, [0, 1])
    with pytest.raises(PareError, match=r"aten::transpose.int: argument 'dim1': dimension 4 is out of range"):
        run_op(runtime, "aten::transpose.int", x, 0, 4)


@pytest.mark.parametrize(
    "shape,size",
    [
        ((3, 1), [3, 4]),
        ((3, 1), [2, 3, 5]),
        ((1,), [0]),
        ((), [2, 2]),
        ((2, 1, 3), [-1, 4, -1]),
        ((4,), [1, 4]),
        ((1, 1), [1, 1]),
        ((0, 1), [0, 3]),
    ],
)
def test_expand(runtime, shape, size):
    x = make_tensor(shape, torch.float32, 3)
    assert_same(run_op(runtime, "aten::expand", x, size), x.expand(size))


# (dim, start, end, step) of a slice: negative, clamped, empty and stepped
# bounds, and INT64_MAX as the end.
SLICES = [
    (0, 1, 9223372036854775807, 1),
    (0, -100, -2, 1),
    (0, 4, 2, 1),
    (1, None, None, 2),
    (1, -3, None, 3),
    (-1, 0, 100, 4),
    (0, 5, 10, 1),
    (1, 2, 3, 100),
    (1, 0, 6, 1000),
]


def test_expand_errors(runtime):
    x = torch.ones(2, 3)
    with pytest.raises(PareError, match=r"aten::expand: argument 'size' \[3\] has fewer entries"):
        run_op(runtime, "aten::expand", x, [3])
    with pytest.raises(PareError, match=r"the expanded size 4 must match the existing size 3"):
        run_op(runtime, "aten::expand", x, [2, 4])
    with pytest.raises(PareError, match=r"-1 is not allowed in a new leading dim"):
        run_op(runtime, "aten::expand", x, [-1, 2, 3])


@pytest.mark.parametrize("dim,start,end,step", SLICES)
def test_slice(runtime, dim, start, end, step):
    x = make_tensor((5, 6), torch.int16, 4)
    assert_same(
        run_op(runtime, "aten::slice.Tensor", x, dim, start, end, step), aten.slice.Tensor(x, dim, start, end, step)
    )
    y = non_contiguous((5, 6), torch.float64, 5)
    assert_same(
        run_op(runtime, "aten::slice.Tensor", y, dim, start, end, step), aten.slice.Tensor(y, dim, start, end, step)
    )


def test_slice_defaults_and_errors(runtime):
    x = make_tensor((4, 3), torch.float32, 6)
    assert_same(run_op(runtime, "aten::slice.Tensor", x), x)
    assert_same(run_op(runtime, "aten::slice.Tensor", x, 0, 2), x[2:])
    with pytest.raises(PareError, match=r"aten::slice.Tensor: argument 'step' must be positive, got 0"):
        run_op(runtime, "aten::slice.Tensor", x, 0, 0, 4, 0)
    with pytest.raises(PareError, match=r"cannot slice a 0-dim tensor"):
        run_op(runtime, "aten::slice.Tensor", torch.tensor(1.0), 0)


def test_select_squeeze_unsqueeze(runtime):
    x = non_contiguous((3, 1, 4), torch.float32, 7)
    for dim, index in ((0, 0), (0, -3), (2, 3), (-1, -1), (1, 0)):
        assert_same(run_op(runtime, "aten::select.int", x, dim, index), x.select(dim, index))
    with pytest.raises(PareError, match=r"aten::select.int: argument 'index': 3 is out of range for dim 0 of size 3"):
        run_op(runtime, "aten::select.int", x, 0, 3)
    with pytest.raises(PareError, match=r"cannot select from a 0-dim tensor"):
        run_op(runtime, "aten::select.int", torch.tensor(1.0), 0, 0)
    for dims in ([1], [0, 1, -1], [], [0]):
        assert_same(run_op(runtime, "aten::squeeze.dims", x, dims), aten.squeeze.dims(x, dims))
    y = torch.ones(1, 1, 1)
    assert_same(run_op(runtime, "aten::squeeze.dims", y, [0, 1, 2]), y.squeeze())
    assert_same(run_op(runtime, "aten::squeeze.dims", torch.tensor(2.0), [0]), torch.tensor(2.0))
    for dim in (0, 1, 3, -1, -4):
        assert_same(run_op(runtime, "aten::unsqueeze", x, dim), x.unsqueeze(dim))
    assert_same(run_op(runtime, "aten::unsqueeze", torch.tensor(2.0), -1), torch.tensor(2.0).unsqueeze(-1))
    with pytest.raises(PareError, match=r"aten::unsqueeze: argument 'dim': dimension 4 is out of range"):
        run_op(runtime, "aten::unsqueeze", x, 4)
    with pytest.raises(PareError, match=r"supports up to 8"):
        run_op(runtime, "aten::unsqueeze", torch.ones([1] * 8), 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.bfloat16], ids=ids)
def test_unbind_and_split(runtime, dtype):
    x = make_tensor((4, 5, 3), dtype, 8)
    for dim in (0, 1, -1):
        parts = run_split_op(runtime, "aten::unbind.int", x, x.shape[dim], dim)
        for got, expected in zip(parts, x.unbind(dim), strict=True):
            assert_same(got, expected)
    for sizes, dim in (([2, 2], 0), ([1, 0, 4], 1), ([3], 2), ([0, 5], -2)):
        parts = run_split_op(runtime, "aten::split_with_sizes", x, len(sizes), sizes, dim)
        for got, expected in zip(parts, x.split(sizes, dim), strict=True):
            assert_same(got, expected)
    nc = non_contiguous((6, 4), torch.float32, 9)
    for got, expected in zip(run_split_op(runtime, "aten::split_with_sizes", nc, 2, [1, 3], 1), nc.split([1, 3], 1)):
        assert_same(got, expected)


def test_split_errors(runtime):
    x = torch.ones(5, 2)
    with pytest.raises(PareError, match=r"aten::split_with_sizes: argument 'split_sizes' \[2, 2\] must sum to 5"):
        run_split_op(runtime, "aten::split_with_sizes", x, 2, [2, 2])
    with pytest.raises(PareError, match=r"must be non-negative"):
        run_split_op(runtime, "aten::split_with_sizes", x, 3, [2, -1, 4])
    with pytest.raises(PareError, match=r"aten::unbind.int: the program expects 4 outputs, but the op produces 5"):
        run_split_op(runtime, "aten::unbind.int", x, 4, 0)


def test_views_share_storage_and_keep_it_alive(runtime):
    # relu -> views -> add: the planner must keep relu's buffer alive for
    # every view (including Tensor[] elements) until their last use.
    x = make_tensor((4, 6), torch.float32, 10)

    def build(m, vs):
        r = m.op("aten::relu", vs[0])
        t = m.op("aten::permute", r, [1, 0])
        s = m.op("aten::slice.Tensor", t, 0, 1, 5, 2)
        parts = m.op("aten::split_with_sizes", r, [1, 3], 0, returns=TensorListOf(2))
        e = m.op("aten::expand", m.op("aten::select.int", r, 0, 2), [3, 6])
        later = m.op("aten::add.Tensor", vs[0], 1.0)  # would reuse r's memory if r died early
        return [m.op("aten::add.Tensor", later, 0.0), s, parts[1], e]

    r = torch.relu(x)
    for _ in range(3):  # planning run, then replays
        later, s, p1, e = run_program(runtime, [x], build)
        assert_same(later, x + 1)
        assert_same(s, r.t()[1:5:2])
        assert_same(p1, r[1:])
        assert_same(e, r[2].expand(3, 6))


# --------------------------------------------------------------------------
# Copies


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_copies_every_dtype(runtime, dtype):
    x = make_tensor((3, 4), dtype, 11)
    y = non_contiguous((3, 4), dtype, 12)
    assert_same(run_op(runtime, "aten::clone", y), y.clone())
    assert_same(run_op(runtime, "aten::clone", x, 0), x.clone(memory_format=torch.contiguous_format))
    assert_same(run_op(runtime, "aten::copy", x, y), aten.copy(x, y))
    assert_same(run_op(runtime, "aten::flip", y, [0, 1]), y.flip([0, 1]))
    assert_same(run_op(runtime, "aten::roll", y, [1, -3], [0, 1]), y.roll([1, -3], [0, 1]))
    assert_same(run_op(runtime, "aten::roll", y, [5]), y.roll(5))
    assert_same(run_op(runtime, "aten::repeat", y, [2, 1, 3]), y.repeat(2, 1, 3))
    assert_same(run_list_op(runtime, "aten::cat", [x, y], 1), torch.cat([x, y], 1))
    assert_same(run_list_op(runtime, "aten::stack", [x, y, x], -1), torch.stack([x, y, x], -1))


def test_copy_broadcasts_and_converts(runtime):
    base = torch.zeros(2, 3, 4)
    for src in (
        torch.arange(4, dtype=torch.int32),
        make_tensor((3, 1), torch.float64, 13),
        torch.tensor(7),
        non_contiguous((2, 3, 4), torch.float16, 14),
    ):
        assert_same(run_op(runtime, "aten::copy", base, src), aten.copy(base, src))
    with pytest.raises(
        PareError, match=r"aten::copy: argument 'src' with sizes \[2\] cannot be broadcast to \[2, 3, 4\]"
    ):
        run_op(runtime, "aten::copy", base, torch.ones(2))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_slice_scatter_every_dtype(runtime, dtype):
    x, src = make_tensor((4, 6, 5), dtype, 50), make_tensor((4, 2, 5), dtype, 51)
    assert_same(run_op(runtime, "aten::slice_scatter", x, src, 1, 1, 5, 2), aten.slice_scatter(x, src, 1, 1, 5, 2))
    y, src_y = non_contiguous((4, 6, 5), dtype, 52), non_contiguous((4, 6, 2), dtype, 53)
    assert_same(run_op(runtime, "aten::slice_scatter", y, src_y, -1, -2), aten.slice_scatter(y, src_y, -1, -2))


@pytest.mark.parametrize(
    "dim,start,end,step",
    [
        *SLICES,
        (-2, -9223372036854775808, 3, 2),
        (2, 1, -1, 3),
        (-3, None, 3, 1),
    ],
)
def test_slice_scatter_bounds(runtime, dim, start, end, step):
    for x_of, src_of in ((make_tensor, make_tensor), (non_contiguous, non_contiguous), (make_tensor, non_contiguous)):
        x = x_of((5, 6, 7), torch.float32, 54)
        shape = tuple(aten.slice.Tensor(x, dim, start, end, step).shape)
        src = src_of(shape, torch.float32, 55)
        assert_same(
            run_op(runtime, "aten::slice_scatter", x, src, dim, start, end, step),
            aten.slice_scatter(x, src, dim, start, end, step),
        )


def test_slice_scatter_defaults_and_empty(runtime):
    x, src = make_tensor((4, 3), torch.int64, 56), make_tensor((4, 3), torch.int64, 57)
    assert_same(run_op(runtime, "aten::slice_scatter", x, src), aten.slice_scatter(x, src))
    assert_same(run_op(runtime, "aten::slice_scatter", x, src[2:], 0, 2), aten.slice_scatter(x, src[2:], 0, 2))
    assert_same(run_op(runtime, "aten::slice_scatter", x, src[:, :0], 1, 3), x)  # empty slice: a copy of self
    empty = torch.zeros(0, 3, dtype=torch.int64)
    assert_same(
        run_op(runtime, "aten::slice_scatter", empty, empty, 0, 1, 4), aten.slice_scatter(empty, empty, 0, 1, 4)
    )
    assert_same(run_op(runtime, "aten::slice_scatter", empty, empty[:, :1], 1, 2), empty)


def test_slice_scatter_as_exported_for_slice_assignment(runtime):
    """`x[:, 1:3] = y` exports as clone -> slice -> copy -> slice_scatter."""
    pb = ProgramBuilder()
    m = pb.method()
    x, y = m.input("Float", [None, 5]), m.input("Double", [None, 2])
    clone = m.op("aten::clone", x)
    copied = m.op("aten::copy", m.op("aten::slice.Tensor", clone, 1, 1, 3), y)
    m.output(m.op("aten::slice_scatter", clone, copied, 1, 1, 3))
    xin, yin = make_tensor((4, 5), torch.float32, 58), make_tensor((4, 2), torch.float64, 59)
    (out,) = runtime.load(pb.to_bytes()).method().run(xin.numpy(), yin.numpy())
    want = xin.clone()
    want[:, 1:3] = yin
    assert_same(torch.from_numpy(out), want)


def test_slice_scatter_errors(runtime):
    x = torch.zeros(4, 5)

    scatter = functools.partial(run_op, runtime, "aten::slice_scatter")

    with pytest.raises(
        PareError,
        match=r"aten::slice_scatter: argument 'src' of sizes \[4, 3\] must have the sizes "
        r"of the slice of 'self', \[4, 2\]",
    ) as e:
        scatter(x, torch.ones(4, 3), 1, 0, 2)
    assert e.value.status_name == "InvalidShape"
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        aten.slice_scatter(x, torch.ones(4, 3), 1, 0, 2)
    with pytest.raises(
        PareError,
        match=r"argument 'src' of sizes \[2\] must have the sizes of the slice of 'self', "
        r"\[4, 2\]",
    ):
        scatter(x, torch.ones(2), 1, 0, 2)  # no broadcasting, like torch
    with pytest.raises(PareError, match=r"argument 'src' of sizes \[1, 2\] must have the sizes"):
        scatter(x, torch.ones(1, 2), 1, 0, 2)
    # torch's eager op converts src; exported programs convert it first (aten::copy, as above).
    with pytest.raises(PareError, match="argument 'src' has dtype Double but 'self' is Float; they must match"):
        scatter(x, torch.ones(4, 2, dtype=torch.float64), 1, 0, 2)
    with pytest.raises(PareError, match="argument 'step' must be positive, got 0"):
        scatter(x, torch.ones(4, 2), 1, 0, 2, 0)
    with pytest.raises(PareError, match="argument 'step' must be positive, got -1"):
        scatter(x, torch.ones(4, 2), 1, 0, 2, -1)
    with pytest.raises(PareError, match="cannot slice a 0-dim tensor"):
        scatter(torch.tensor(1.0), torch.tensor(2.0), 0)
    with pytest.raises(PareError, match="argument 'dim'"):
        scatter(x, torch.ones(4, 2), 2, 0, 2)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_select_scatter_every_dtype(runtime, dtype):
    x = make_tensor((3, 4, 5), dtype, 71)
    for dim, index in ((0, 1), (1, -1), (2, 0), (-1, 4)):
        src = make_tensor(x.select(dim, index).shape, dtype, 72)
        assert_same(
            run_op(runtime, "aten::select_scatter", x, src, dim, index), aten.select_scatter(x, src, dim, index)
        )


def test_select_scatter_strides_broadcast_views_and_errors(runtime):
    x = make_tensor((5, 4, 3), torch.float32, 73).permute(2, 0, 1)  # [3, 5, 4], non-contiguous
    src = make_tensor((4,), torch.float32, 74).expand(5, 4)  # stride 0 along its first dim
    assert_same(run_op(runtime, "aten::select_scatter", x, src, 0, 2), aten.select_scatter(x, src, 0, 2))
    empty = torch.zeros(2, 0)
    assert_same(
        run_op(runtime, "aten::select_scatter", empty, torch.zeros(0), 0, 1),
        aten.select_scatter(empty, torch.zeros(0), 0, 1),
    )
    with pytest.raises(PareError, match=r"argument 'index': 3 is out of range for dim 0 of size 3"):
        run_op(runtime, "aten::select_scatter", x, src, 0, 3)
    with pytest.raises(PareError, match=r"argument 'src' of sizes \[4, 5\] must have sizes \[5, 4\]"):
        run_op(runtime, "aten::select_scatter", x, src.t().contiguous(), 0, 0)
    with pytest.raises(PareError, match="argument 'src' has dtype Double but 'self' is Float"):
        run_op(runtime, "aten::select_scatter", x, src.double(), 0, 0)
    with pytest.raises(PareError, match="cannot select from a 0-dim tensor"):
        run_op(runtime, "aten::select_scatter", torch.tensor(1.0), torch.tensor(2.0), 0, 0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_diagonal_every_dtype(runtime, dtype):
    x = make_tensor((3, 4), dtype, 75)
    for offset in (0, 1, -2, 3, 4, -3, 9, -9):
        assert_same(run_op(runtime, "aten::diagonal", x, offset), aten.diagonal(x, offset))


def test_diagonal_dims_strides_and_errors(runtime):
    x = make_tensor((4, 2, 3, 5), torch.float32, 76).transpose(0, 3)  # [5, 2, 3, 4], non-contiguous
    for offset, dim1, dim2 in ((0, 0, 3), (1, 3, 0), (-1, 2, -1), (2, 1, 2), (-4, 0, 1)):
        assert_same(run_op(runtime, "aten::diagonal", x, offset, dim1, dim2), aten.diagonal(x, offset, dim1, dim2))
    assert_same(run_op(runtime, "aten::diagonal", x), aten.diagonal(x))  # every default
    with pytest.raises(PareError, match="arguments 'dim1' and 'dim2' are both dim 1"):
        run_op(runtime, "aten::diagonal", x, 0, 1, -3)
    with pytest.raises(PareError, match=r"at least 2 dims for a diagonal, got sizes \[3\]"):
        run_op(runtime, "aten::diagonal", torch.ones(3))
    with pytest.raises(PareError, match="argument 'dim2'"):
        run_op(runtime, "aten::diagonal", x, 0, 0, 4)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat(runtime, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    tensors = [make_tensor(s, torch.float32, 15 + i) for i, s in enumerate(shapes)]
    tensors[1] = non_contiguous(shapes[1], torch.float32, 20)
    sizes = list(shapes[0])
    sizes[dim] = 0
    tensors.append(torch.ones(sizes))  # empty along dim
    assert_same(run_list_op(runtime, "aten::cat", tensors, dim), torch.cat(tensors, dim))


def test_cat_promotion_and_legacy_empty(runtime):
    a = make_tensor((2, 3), torch.int32, 21)
    b = make_tensor((2, 1), torch.float16, 22)
    c = make_tensor((2, 2), torch.bool, 23)
    assert_same(run_list_op(runtime, "aten::cat", [a, b, c], 1), torch.cat([a, b, c], 1))
    assert_same(run_list_op(runtime, "aten::cat", [c, a], -1), torch.cat([c, a], -1))
    # 1-d empty tensors are skipped whatever the other shapes (torch's legacy rule).
    e = torch.ones(0, dtype=torch.float64)
    assert_same(run_list_op(runtime, "aten::cat", [a, e, a], 1), torch.cat([a, e, a], 1))
    assert_same(run_list_op(runtime, "aten::cat", [e, e]), torch.cat([e, e]))
    assert_same(run_list_op(runtime, "aten::cat", [a]), torch.cat([a]))
    large = [make_tensor((64, 500), torch.float32, 24), make_tensor((64, 700), torch.float32, 25)]
    assert_same(run_list_op(runtime, "aten::cat", large, 1), torch.cat(large, 1))
    assert_same(run_list_op(runtime, "aten::cat", [large[0], large[0]], 0), torch.cat([large[0], large[0]]))


def test_cat_and_stack_errors(runtime):
    with pytest.raises(PareError, match=r"aten::cat: argument 'tensors': tensors must have the same number of dims"):
        run_list_op(runtime, "aten::cat", [torch.ones(2, 3), torch.ones(2)], 1)
    with pytest.raises(PareError, match=r"sizes must match except in dim 1; tensor 1 has sizes \[3, 3\]"):
        run_list_op(runtime, "aten::cat", [torch.ones(2, 3), torch.ones(3, 3)], 1)
    with pytest.raises(PareError, match=r"tensor 0 is 0-dim and cannot be concatenated"):
        run_list_op(runtime, "aten::cat", [torch.tensor(1.0), torch.tensor(2.0)])
    with pytest.raises(PareError, match=r"aten::cat: argument 'dim': dimension 2 is out of range"):
        run_list_op(runtime, "aten::cat", [torch.ones(2, 3)], 2)
    with pytest.raises(PareError, match=r"aten::stack: argument 'tensors': every tensor must have the same sizes"):
        run_list_op(runtime, "aten::stack", [torch.ones(2, 3), torch.ones(3, 2)])


def test_stack(runtime):
    xs = [make_tensor((3, 4), torch.int64, 26), non_contiguous((3, 4), torch.int64, 27)]
    for dim in (0, 1, 2, -1, -3):
        assert_same(run_list_op(runtime, "aten::stack", xs, dim), torch.stack(xs, dim))
    mixed = [make_tensor((2,), torch.uint8, 28), make_tensor((2,), torch.int8, 29)]
    assert_same(run_list_op(runtime, "aten::stack", mixed), torch.stack(mixed))
    scalars = [torch.tensor(1.5), torch.tensor(2.5)]
    assert_same(run_list_op(runtime, "aten::stack", scalars), torch.stack(scalars))
    empties = [torch.ones(0, 2), torch.ones(0, 2)]
    assert_same(run_list_op(runtime, "aten::stack", empties, 1), torch.stack(empties, 1))


def test_flip(runtime):
    x = non_contiguous((3, 4, 5), torch.float32, 30)
    for dims in ([0], [1], [2], [0, 2], [-1, 0, 1], []):
        assert_same(run_op(runtime, "aten::flip", x, dims), x.flip(dims))
    for t in (torch.tensor(3.0), torch.ones(0, 2), torch.ones(1, 3)):
        assert_same(run_op(runtime, "aten::flip", t, [0]), t.flip([0]))
    with pytest.raises(PareError, match=r"aten::flip: argument 'dims': dim 0 appears multiple times"):
        run_op(runtime, "aten::flip", x, [0, -3])


@pytest.mark.parametrize(
    "shifts,dims",
    [
        ([1], [0]),
        ([-1], [2]),
        ([7], [1]),
        ([-17], [-1]),
        ([2, -3], [0, -1]),
        ([1, 2, 3], [0, 1, 2]),
        ([1, 1], [1, 1]),
        ([2, -2], [1, -2]),
        ([3, 4], [2, 0]),
        ([0], [1]),
        ([5], [0]),
        ([2**62], [1]),
        ([-(2**62)], [2]),
        ([4], []),
        ([-13], []),
        ([61], []),
        ([0], []),
    ],
)
def test_roll(runtime, shifts, dims):
    """Several (shift, dim) pairs, negative and oversized shifts, negative and
    repeated dims, and no dims (the flattened tensor rolls), on a permuted,
    sliced input."""
    x = non_contiguous((3, 4, 5), torch.float32, 32)
    assert_same(run_op(runtime, "aten::roll", x, shifts, dims), x.roll(shifts, dims))
    c = x.contiguous()
    assert_same(run_op(runtime, "aten::roll", c, shifts, dims), c.roll(shifts, dims))
    if not dims:
        assert_same(run_op(runtime, "aten::roll", x, shifts), x.roll(shifts))  # dims defaulted


def test_roll_shapes(runtime):
    # `int[1]` arguments given as single ints.
    x = make_tensor((4, 6), torch.int64, 33)
    assert_same(run_op(runtime, "aten::roll", x, -1, 1), x.roll(-1, 1))
    assert_same(run_op(runtime, "aten::roll", x, 3), x.roll(3))
    # Swin's shifted windows: [B, H, W, C] rolled over H and W, both ways.
    w = make_tensor((2, 7, 7, 8), torch.float32, 34)
    for s in (-3, 3):
        assert_same(run_op(runtime, "aten::roll", w, [s, s], [1, 2]), w.roll((s, s), (1, 2)))
    # Every dim of an 8-dim tensor (2^8 blocks), and size-1 dims.
    big = make_tensor((2, 3, 1, 2, 3, 2, 1, 3), torch.float16, 35)
    shifts, dims = [1, -1, 5, 1, 2, -3, 2, 1], list(range(8))
    assert_same(run_op(runtime, "aten::roll", big, shifts, dims), big.roll(shifts, dims))
    # Broadcast (stride-0) input.
    e = make_tensor((1, 5), torch.bfloat16, 36).expand(3, 5)
    assert_same(run_op(runtime, "aten::roll", e, [1, 2], [0, 1]), e.roll([1, 2], [0, 1]))
    assert_same(run_op(runtime, "aten::roll", e, [4]), e.roll(4))
    # 0-dim: only the flattened roll exists.
    t = torch.tensor(2.5)
    assert_same(run_op(runtime, "aten::roll", t, [3]), t.roll(3))
    # Empty tensors are copied; like torch, dims are not looked at then.
    for shape, shifts, dims in [((0, 3), [1], [1]), ((0, 3), [2], []), ((3, 0), [1, 1], [0, 1]), ((0, 3), [1], [5])]:
        z = torch.ones(shape)
        assert_same(run_op(runtime, "aten::roll", z, shifts, dims), z.roll(shifts, dims))


def test_roll_errors(runtime):
    x = torch.ones(2, 3)
    with pytest.raises(
        PareError,
        match=r"aten::roll: arguments 'shifts' and 'dims' must have the same length, "
        r"got 2 shifts and 1 dims",
    ):
        run_op(runtime, "aten::roll", x, [1, 2], [0])
    with pytest.raises(PareError, match=r"got 2 shifts and 0 dims"):
        run_op(runtime, "aten::roll", x, [1, 2])
    with pytest.raises(PareError, match=r"aten::roll: argument 'shifts' must not be empty"):
        run_op(runtime, "aten::roll", x, [], [])
    with pytest.raises(
        PareError,
        match=r"aten::roll: argument 'dims': dimension 2 is out of range for a 2-dim "
        r"tensor \(expected \[-2, 1\]\)",
    ):
        run_op(runtime, "aten::roll", x, [1], [2])
    with pytest.raises(PareError, match=r"aten::roll: argument 'dims': dimension -3 is out of range"):
        run_op(runtime, "aten::roll", x, [1, 1], [0, -3])
    with pytest.raises(PareError, match=r"aten::roll: argument 'dims': a 0-dim tensor has no dim 0 to roll"):
        run_op(runtime, "aten::roll", torch.tensor(1.0), [1], [0])
    with pytest.raises(PareError, match=r"aten::roll: argument 'shifts' \(#1\) must be int\[\]"):
        run_op(runtime, "aten::roll", x, 1.5, [0])
    for args in (([1, 2], [0]), ([1, 2], []), ([], []), ([1], [2]), ([1, 1], [0, -3])):
        with pytest.raises((RuntimeError, IndexError)):
            x.roll(*args)  # torch rejects the same arguments
    with pytest.raises(IndexError):
        torch.tensor(1.0).roll([1], [0])


@pytest.mark.parametrize(
    "shape,repeats",
    [
        ((2, 3), [2, 2]),
        ((2, 3), [3, 1, 2]),
        ((2, 3), [1, 1]),
        ((2, 3), [2, 0, 1]),
        ((), [3]),
        ((), []),
        ((1, 3), [4, 1]),
        ((2, 1, 2, 1, 2), [2, 2, 2, 2, 2]),
        ((2, 2, 2, 2, 2, 2), [2, 1, 2, 1, 2, 2]),
        ((0, 2), [2, 2]),
    ],
)
def test_repeat(runtime, shape, repeats):
    x = make_tensor(shape, torch.float32, 31)
    assert_same(run_op(runtime, "aten::repeat", x, repeats), x.repeat(repeats))


def test_repeat_errors(runtime):
    with pytest.raises(PareError, match=r"aten::repeat: argument 'repeats' \[2\] has fewer entries"):
        run_op(runtime, "aten::repeat", torch.ones(2, 3), [2])
    with pytest.raises(PareError, match=r"invalid repeat count -1"):
        run_op(runtime, "aten::repeat", torch.ones(2, 3), [2, -1])


# --------------------------------------------------------------------------
# Gathers


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_gathers_every_dtype(runtime, dtype):
    x = make_tensor((4, 5, 3), dtype, 32)
    idx = torch.tensor([3, 0, 0, 2])
    assert_same(run_op(runtime, "aten::index_select", x, 1, idx), x.index_select(1, idx))
    g = torch.randint(0, 5, (4, 2, 3), generator=torch.Generator().manual_seed(33))
    assert_same(run_op(runtime, "aten::gather", x, 1, g), torch.gather(x, 1, g))
    assert_same(run_index(runtime, x, [idx]), x[idx])


def test_index_select(runtime):
    x = non_contiguous((5, 6, 7), torch.float32, 34)
    for dim in (0, 1, 2, -1):
        for idx in (
            torch.tensor([4, 0, 2, 2]),
            torch.tensor([1], dtype=torch.int32),
            torch.tensor(3),
            torch.tensor([], dtype=torch.int64),
        ):
            assert_same(run_op(runtime, "aten::index_select", x, dim, idx), x.index_select(dim, idx))
    weight = make_tensor((100, 64), torch.float32, 35)  # embedding-like rows
    ids_ = torch.randint(0, 100, (50,), generator=torch.Generator().manual_seed(36))
    assert_same(run_op(runtime, "aten::index_select", weight, 0, ids_), weight.index_select(0, ids_))
    s = torch.tensor(5.0)
    assert_same(run_op(runtime, "aten::index_select", s, 0, torch.tensor([0])), s.index_select(0, torch.tensor([0])))
    with pytest.raises(PareError, match=r"aten::index_select: argument 'index': index 7 is out of range for dim 2"):
        run_op(runtime, "aten::index_select", x, 2, torch.tensor([0, 7]))
    with pytest.raises(PareError, match=r"index -1 is out of range"):
        run_op(runtime, "aten::index_select", x, 2, torch.tensor([-1]))
    with pytest.raises(PareError, match=r"argument 'index': indices must be Long or Int, got Float"):
        run_op(runtime, "aten::index_select", x, 0, torch.tensor([0.0]))
    with pytest.raises(PareError, match=r"argument 'index' must be a vector"):
        run_op(runtime, "aten::index_select", x, 0, torch.tensor([[0]]))


def test_gather(runtime):
    g = torch.Generator().manual_seed(37)
    x = non_contiguous((4, 5, 6), torch.float64, 38)
    for dim in (0, 1, 2, -1):
        shape = [3, 4, 5]
        shape[dim] = 7
        index = torch.randint(0, x.shape[dim], shape, generator=g)
        assert_same(run_op(runtime, "aten::gather", x, dim, index), torch.gather(x, dim, index))
        strided = torch.randint(0, x.shape[dim], [2 * s for s in shape], generator=g)[::2, ::2, ::2]
        assert_same(run_op(runtime, "aten::gather", x, dim, strided), torch.gather(x, dim, strided))
    assert_same(
        run_op(runtime, "aten::gather", x, 1, torch.ones(0, 2, 2, dtype=torch.int64)),
        torch.gather(x, 1, torch.ones(0, 2, 2, dtype=torch.int64)),
    )
    s = torch.tensor(2.0)
    assert_same(run_op(runtime, "aten::gather", s, 0, torch.tensor(0)), torch.gather(s, 0, torch.tensor(0)))
    v = torch.arange(5.0)
    assert_same(run_op(runtime, "aten::gather", v, 0, torch.tensor(3)), torch.gather(v, 0, torch.tensor(3)))
    with pytest.raises(
        PareError, match=r"aten::gather: argument 'index': index 5 is out of bounds for dim 1 with size 5"
    ):
        run_op(runtime, "aten::gather", x, 1, torch.full((1, 1, 1), 5))
    with pytest.raises(PareError, match=r"argument 'index' must be a Long \(int64\) tensor, got Int"):
        run_op(runtime, "aten::gather", x, 1, torch.zeros(1, 1, 1, dtype=torch.int32))
    with pytest.raises(PareError, match=r"argument 'index' must have as many dims as 'self'"):
        run_op(runtime, "aten::gather", x, 1, torch.zeros(1, 1, dtype=torch.int64))
    with pytest.raises(PareError, match=r"must not be larger than 'self'"):
        run_op(runtime, "aten::gather", x, 1, torch.zeros(5, 1, 1, dtype=torch.int64))


def _unique_scatter_index(shape, dim, size, seed):
    """An index for scatter along `dim` with no two positions hitting the
    same element (which one plain scatter keeps is unspecified in torch):
    along `dim`, a random permutation of range(size) cut to shape[dim]."""
    g = torch.Generator().manual_seed(seed)
    moved = list(shape)
    n = moved.pop(dim)
    rows = [torch.randperm(size, generator=g)[:n] for _ in range(max(1, int(torch.tensor(moved).prod())))]
    return torch.stack(rows).reshape(*moved, n).movedim(-1, dim).contiguous()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_scatter_every_dtype(runtime, dtype):
    x = make_tensor((4, 5), dtype, 80)
    src = make_tensor((3, 5), dtype, 81)
    index = _unique_scatter_index((3, 4), 1, 5, 82)
    assert_same(run_op(runtime, "aten::scatter.src", x, 1, index, src), aten.scatter.src(x, 1, index, src))
    value = True if dtype == torch.bool else 3
    assert_same(run_op(runtime, "aten::scatter.value", x, 1, index, value), aten.scatter.value(x, 1, index, value))
    # scatter_add with duplicate indices: the additions run in torch's order.
    dup = torch.randint(0, 4, (3, 5), generator=torch.Generator().manual_seed(83))
    assert_same(run_op(runtime, "aten::scatter_add", x, 0, dup, src), aten.scatter_add(x, 0, dup, src))


def test_scatter_dims_strides_and_shapes(runtime):
    x = make_tensor((5, 6, 4), torch.float32, 84).permute(2, 0, 1)  # [4, 5, 6], non-contiguous
    for dim in (0, 1, 2, -1):
        shape = [3, 4, 5]
        index = _unique_scatter_index(shape, dim, x.shape[dim], 85 + dim)
        src = make_tensor((4, 5, 6), torch.float32, 90 + dim).transpose(0, 1).contiguous().transpose(0, 1)
        for idx in (index, index.int(), index.transpose(0, 1).contiguous().transpose(0, 1)):
            assert_same(run_op(runtime, "aten::scatter.src", x, dim, idx, src), aten.scatter.src(x, dim, idx, src))
        dup = torch.randint(0, x.shape[dim], shape, generator=torch.Generator().manual_seed(95))
        assert_same(run_op(runtime, "aten::scatter_add", x, dim, dup, src), aten.scatter_add(x, dim, dup, src))
    # Half accumulates duplicates in float and rounds once, as torch does (30.0, not 29.28).
    h = torch.zeros(2, dtype=torch.float16)
    many = torch.zeros(300, dtype=torch.int64)
    ones = torch.full((300,), 0.1, dtype=torch.float16)
    assert_same(run_op(runtime, "aten::scatter_add", h, 0, many, ones), aten.scatter_add(h, 0, many, ones))
    # An empty index gives a copy of self whatever its rank and dtype (torch checks nothing else then); 0-dim tensors.
    for empty in (torch.zeros(0, 5, dtype=torch.int64), torch.zeros(0)):
        assert_same(run_op(runtime, "aten::scatter.src", x, 1, empty, x), aten.scatter.src(x, 1, empty, x))
    s = torch.tensor(1.0)
    args = (s, 0, torch.tensor(0), torch.tensor(5.0))
    assert_same(run_op(runtime, "aten::scatter.src", *args), aten.scatter.src(*args))


def test_scatter_errors(runtime):
    x = torch.zeros(3, 4)
    index = torch.zeros(2, 2, dtype=torch.int64)
    src = torch.ones(3, 4)
    for bad, message in [
        (index + 3, r"aten::scatter\.src: argument 'index': index 3 is out of bounds for dim 0 with size 3"),
        (index - 1, r"index -1 is out of bounds for dim 0 with size 3"),
        (torch.zeros(4, 1, dtype=torch.int64), r"must be no larger than 'self' \(sizes \[3, 4\]\) apart from dim 0"),
        (torch.zeros(2, dtype=torch.int64), r"must have the same number of dims"),
        (index.float(), r"argument 'index' must be a Long or Int tensor, got Float"),
    ]:
        with pytest.raises(RuntimeError):
            aten.scatter.src(x, 0, bad, src)
        with pytest.raises(PareError, match=message):
            run_op(runtime, "aten::scatter.src", x, 0, bad, src)
    with pytest.raises(PareError, match="argument 'src' has dtype Double but 'self' is Float"):
        run_op(runtime, "aten::scatter_add", x, 0, index, src.double())
    with pytest.raises(RuntimeError, match="overflow"):
        aten.scatter.value(x.to(torch.int8), 0, index, 300)
    with pytest.raises(PareError, match="argument 'value': the value cannot be converted to Char without overflow"):
        run_op(runtime, "aten::scatter.value", x.to(torch.int8), 0, index, 300)


def test_index_tensor(runtime):
    x = non_contiguous((4, 5, 6), torch.float32, 39)
    i0 = torch.tensor([[3, -1], [0, 2]])
    i1 = torch.tensor([3, -4], dtype=torch.int32)
    cases = [[i0], [i1], [i0, i1], [i0, i1, torch.tensor(5)], [torch.tensor(2)], [torch.tensor([], dtype=torch.int64)]]
    for indices in cases:
        assert_same(run_index(runtime, x, indices), aten.index.Tensor(x, indices))
    flat = make_tensor((30,), torch.int16, 40)
    picks = torch.randint(-30, 30, (7, 3), generator=torch.Generator().manual_seed(41))
    assert_same(run_index(runtime, flat, [picks]), flat[picks])
    with pytest.raises(PareError, match=r"aten::index.Tensor: argument 'indices': index 4 is out of bounds for dim 0"):
        run_index(runtime, x, [torch.tensor([4])])
    with pytest.raises(PareError, match=r"index tensor 1 with sizes \[3\] cannot be broadcast with \[2\]"):
        run_index(runtime, x, [torch.tensor([0, 1]), torch.tensor([0, 1, 2])])
    with pytest.raises(PareError, match=r"boolean mask indices \(tensor 0\) are not supported"):
        run_index(runtime, x, [torch.ones(4, dtype=torch.bool)])
    with pytest.raises(PareError, match=r"4 index tensors for a tensor of 3 dims"):
        run_index(runtime, x, [torch.tensor(0)] * 4)


def test_index_tensor_with_none_entries(runtime):
    # index.Tensor reads None entries itself since format 1.1 (the tracer
    # still rewrites them away for it): x[:, i], x[i, :, j] (moved to the front).
    x = non_contiguous((4, 5, 6), torch.float32, 44)
    i = torch.tensor([[3, -1], [0, 2]])
    j = torch.tensor([5, -6])
    for indices in ([None, i], [None, None, j], [i, None, j], [None, i, j], [i, None]):
        assert_same(run_index(runtime, x, indices), aten.index.Tensor(x, indices))
    # Nothing is read from an empty dim, so nothing is checked (as torch).
    assert_same(run_index(runtime, torch.zeros(2, 0), [torch.tensor([5])]), torch.zeros(2, 0)[torch.tensor([5])])


# --------------------------------------------------------------------------
# Writes through advanced indexing: index_put, masked_scatter; scatter_reduce


def run_index_put(runtime, x, indices, values, *rest):
    """aten::index_put(x, indices, values, *rest); every tensor a method input, None entries kept."""
    tensors = [x, *[i for i in indices if i is not None], values]

    def build(m, vs):
        given = iter(vs[1:-1])
        return [m.op("aten::index_put", vs[0], [None if i is None else next(given) for i in indices], vs[-1], *rest)]

    return run_program(runtime, tensors, build)[0]


def index_put_same_or_both_fail(runtime, x, indices, values, accumulate=False, exact=True):
    """index_put on the runtime vs torch: the same result (exactly, by
    default), or both fail."""
    try:
        expected = aten.index_put(x, indices, values, accumulate)
    except (RuntimeError, IndexError, NotImplementedError):
        with pytest.raises(PareError, match=r"aten::index_put"):
            run_index_put(runtime, x, indices, values, accumulate)
        return
    actual = run_index_put(runtime, x, indices, values, accumulate)
    if exact:
        assert_same(actual, expected, rtol=0, atol=0)
    else:
        assert_same(actual, expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_index_put_every_dtype(runtime, dtype):
    x = make_tensor((5, 4, 3), dtype, 100)
    idx = torch.tensor([4, 0, -2])
    v = make_tensor((3, 4, 3), dtype, 101)
    for accumulate in (False, True):
        index_put_same_or_both_fail(runtime, x, [idx], v, accumulate)
        index_put_same_or_both_fail(
            runtime, x, [None, torch.tensor([[1], [3]])], make_tensor((5, 2, 1, 3), dtype, 102), accumulate
        )
        dup = torch.tensor([1, 3, 1, 1, 0, 3])  # duplicates: last write / additions in torch's order
        index_put_same_or_both_fail(runtime, x, [dup], make_tensor((6, 1, 3), dtype, 103), accumulate)
        mask = make_tensor((5, 4), torch.bool, 104)
        index_put_same_or_both_fail(runtime, x, [mask], make_tensor((3,), dtype, 105), accumulate)
    # x[mask] = scalar: torch's masked_fill shortcut.
    index_put_same_or_both_fail(runtime, x, [make_tensor((5,), torch.bool, 106)], make_tensor((), dtype, 107))


def test_index_put_layouts(runtime):
    g = torch.Generator().manual_seed(110)
    x = non_contiguous((4, 5, 6), torch.float32, 111)
    i = torch.tensor([[3, -1], [0, 2]])
    j = torch.tensor([5, -6], dtype=torch.int32)
    k = torch.tensor(2)
    cases = [
        ([i], (2, 2, 5, 6)),
        ([i, j], (2, 2, 6)),
        ([i, j, k], (2, 2)),
        ([None, j], (4, 2, 6)),
        ([None, None, i], (4, 5, 2, 2)),
        ([i, None, j], (2, 2, 5)),  # not adjacent: the index dims go first
        ([None, i, j], (4, 2, 2)),
        ([k, None, None], (5, 6)),
    ]
    for indices, shape in cases:
        for values in (
            make_tensor(shape, torch.float32, 112),
            make_tensor(shape[-1:], torch.float32, 113),  # broadcast
            torch.tensor(7.5),
            non_contiguous(shape, torch.float32, 114),
            make_tensor((1,) + shape[1:], torch.float32, 115).expand(shape),
        ):
            index_put_same_or_both_fail(runtime, x, indices, values)
            index_put_same_or_both_fail(runtime, x, indices, values, accumulate=True)
    # Masks: multi-dim, after None, Byte (deprecated in torch but accepted), empty.
    y = make_tensor((3, 4, 5), torch.int64, 116)
    m2 = make_tensor((4, 5), torch.bool, 117)
    n = int(m2.sum())
    index_put_same_or_both_fail(runtime, y, [None, m2], make_tensor((3, n), torch.int64, 118))
    index_put_same_or_both_fail(runtime, y, [None, m2], make_tensor((n,), torch.int64, 119), accumulate=True)
    m3 = make_tensor((3, 4, 5), torch.bool, 120)
    index_put_same_or_both_fail(runtime, y, [m3], make_tensor((int(m3.sum()),), torch.int64, 121))
    index_put_same_or_both_fail(runtime, y, [m3.to(torch.uint8)], make_tensor((int(m3.sum()),), torch.int64, 122))
    index_put_same_or_both_fail(runtime, y, [torch.zeros(3, dtype=torch.bool)], make_tensor((4, 5), torch.int64, 123))
    # Empty index, empty self, strided Long and Int indices.
    index_put_same_or_both_fail(runtime, x, [torch.tensor([], dtype=torch.int64)], torch.ones(5, 6))
    index_put_same_or_both_fail(runtime, torch.zeros(0, 3), [torch.tensor([], dtype=torch.int64)], torch.ones(3))
    index_put_same_or_both_fail(runtime, torch.zeros(2, 0), [torch.tensor([5])], torch.ones(0))
    strided = torch.randint(-4, 4, (6, 4), generator=g)[::2, ::2]
    index_put_same_or_both_fail(runtime, x, [strided], make_tensor((3, 2, 5, 6), torch.float32, 124), accumulate=True)
    index_put_same_or_both_fail(runtime, x, [strided.int()], make_tensor((3, 2, 5, 6), torch.float32, 125))


def test_index_put_duplicates_in_torch_order(runtime):
    # Which duplicate wins depends on the order torch's TensorIterator walks
    # the index positions, which follows the operands' strides: a transposed
    # `values` makes torch keep a different one.
    x = torch.zeros(3, 4)
    i = torch.tensor([[0, 1], [1, 0]])
    v = torch.arange(4.0).reshape(2, 2, 1).expand(2, 2, 4).contiguous()
    transposed = v.transpose(0, 1).contiguous().transpose(0, 1)
    for values in (v, transposed, v.transpose(0, 1)):
        for index in (i, i.t().contiguous().t(), i.int(), i.int().t().contiguous().t()):
            for accumulate in (False, True):
                index_put_same_or_both_fail(runtime, x, [index], values, accumulate)
    # Many duplicates over several index dims and layouts (fewer than 3000
    # positions: above that torch writes from several threads, and which
    # duplicate lands last is not determined).
    g = torch.Generator().manual_seed(130)
    base = make_tensor((6, 7, 8), torch.float32, 131)

    def layouts(t):
        return [t, t.permute(2, 1, 0).contiguous().permute(2, 1, 0), t.transpose(0, 1).contiguous().transpose(0, 1)]

    for seed in range(6):
        a = torch.randint(0, 6, (5, 4), generator=g)
        b = torch.randint(-7, 7, (4,), generator=g)
        c = torch.randint(-8, 8, (4,), generator=g)
        # Broadcast index tensors: a Long one keeps its 0 strides, an Int one
        # torch converts to a dense Long copy (other strides, other order).
        for index in (a, a.t().contiguous().t(), a.int(), a[:1].expand(5, 4), a[:1].int().expand(5, 4), a[:, :1]):
            for vals in layouts(make_tensor((5, 4, 8), torch.float32, 132 + seed)):
                index_put_same_or_both_fail(runtime, base, [index, b], vals)
                # Float additions in torch's order: exactly its rounding.
                index_put_same_or_both_fail(runtime, base, [index, b], vals, accumulate=True)
            for vals in layouts(make_tensor((5, 4, 7), torch.float32, 140 + seed)):
                index_put_same_or_both_fail(runtime, base, [index, None, c], vals)  # index dims moved first
    # Half and BFloat16 add in their own type, rounding after every addition
    # (29.28, not 30: unlike scatter_add).
    for dtype in (torch.float16, torch.bfloat16):
        h = torch.zeros(2, dtype=dtype)
        many = torch.zeros(300, dtype=torch.int64)
        index_put_same_or_both_fail(runtime, h, [many], torch.full((300,), 0.1, dtype=dtype), accumulate=True)
    # Integers wrap, booleans or.
    index_put_same_or_both_fail(
        runtime,
        torch.full((2,), 120, dtype=torch.int8),
        [torch.zeros(5, dtype=torch.int64)],
        torch.full((5,), 50, dtype=torch.int8),
        True,
    )
    index_put_same_or_both_fail(
        runtime, torch.zeros(3, dtype=torch.bool), [torch.tensor([1, 1, 2])], torch.tensor([True, False, False]), True
    )


def test_index_put_kv_cache_rows(runtime):
    # cache[:, :, pos] = k and cache.index_put_((None, None, pos), k): whole rows per position.
    cache = make_tensor((2, 3, 16, 8), torch.float32, 140)
    pos = torch.tensor([5, 6, 7])
    k = make_tensor((2, 3, 3, 8), torch.float32, 141)
    index_put_same_or_both_fail(runtime, cache, [None, None, pos], k)
    index_put_same_or_both_fail(runtime, cache, [None, None, pos], k.transpose(0, 1).contiguous().transpose(0, 1))
    index_put_same_or_both_fail(runtime, cache.half(), [None, None, torch.tensor(15)], k[:, :, 0].half())
    rows = make_tensor((100, 64), torch.float32, 142)
    ids_ = torch.randperm(100, generator=torch.Generator().manual_seed(143))[:40]
    index_put_same_or_both_fail(runtime, rows, [ids_], make_tensor((40, 64), torch.float32, 144))


def test_index_put_masked_fill_shortcut(runtime):
    # One value and one mask (no accumulate): torch fills with value.item(),
    # converted with its overflow check, whatever the value's dtype or shape.
    x = make_tensor((3, 4), torch.int8, 150)
    mask = make_tensor((3, 4), torch.bool, 151)
    for value in (torch.tensor(2.7, dtype=torch.float64), torch.tensor([[5]]), torch.tensor(True), torch.tensor(-128)):
        index_put_same_or_both_fail(runtime, x, [mask], value)
        index_put_same_or_both_fail(runtime, x, [mask], value, accumulate=True)  # the general path: refused
    index_put_same_or_both_fail(
        runtime, x, [None, make_tensor((4,), torch.bool, 152)], torch.tensor(-3, dtype=torch.int8)
    )
    index_put_same_or_both_fail(runtime, x, [torch.tensor(True)], torch.tensor(1, dtype=torch.int8))
    index_put_same_or_both_fail(runtime, x, [torch.tensor(False)], torch.tensor(1, dtype=torch.int8))


def test_index_put_errors(runtime):
    x = torch.zeros(4, 3)
    one = torch.ones(3)
    cases = [
        ([torch.tensor([0])], one.double(), r"argument 'values' has dtype Double but 'self' is Float"),
        ([torch.tensor([4])], one, r"argument 'indices': index 4 is out of bounds for dim 0 with size 4"),
        ([torch.tensor([-5])], one, r"index -5 is out of bounds for dim 0 with size 4"),
        ([None, torch.tensor([3])], torch.ones(1), r"index 3 is out of bounds for dim 1 with size 3"),
        (
            [torch.tensor([0, 1])],
            torch.ones(3, 3),
            r"argument 'values' with sizes \[3, 3\] cannot be broadcast to the indexed shape \[2, 3\]",
        ),
        ([torch.tensor([0])] * 3, torch.ones(1), r"3 index tensors for a tensor of 2 dims"),
        ([torch.tensor([0.0])], torch.ones(1), r"tensor 0 is Float; indices must be Long, Int, Bool or Byte"),
        ([torch.tensor([0], dtype=torch.int16)], torch.ones(1), r"indices must be Long, Int, Bool or Byte"),
        (
            [torch.ones(3, dtype=torch.bool)],
            torch.ones(1),
            r"mask with sizes \[3\] does not match 'self' \(sizes \[4, 3\]\)",
        ),
        ([torch.ones(3, dtype=torch.bool)], torch.ones(2, 3), r"mask 0 with sizes \[3\] does not match"),
        ([torch.tensor(True)], torch.ones(1), r"a 0-dim mask"),  # accumulate below; torch asserts internally
        ([None], torch.ones(2), r"holds no index tensor"),
        ([], torch.ones(1), r"argument 'indices' \(#1\) must be Tensor\[\], got int\[\]"),  # [] is written as int[]
        (
            [torch.tensor([0, 1]), torch.tensor([0, 1, 2])],
            torch.ones(1),
            r"index tensor 1 with sizes \[3\] cannot be broadcast with \[2\]",
        ),
        ([torch.tensor([1, 0, 1, 0], dtype=torch.uint8)], torch.ones(1), r"a Byte mask with a single value"),
        ([torch.ones(4, dtype=torch.bool)], torch.tensor(1e40, dtype=torch.float64), r"cannot be converted to Float"),
    ]
    for indices, values, message in cases:
        accumulate = message == r"a 0-dim mask"
        with pytest.raises((RuntimeError, IndexError)):
            aten.index_put(x, indices, values, accumulate)
        with pytest.raises(PareError, match=r"aten::index_put: .*" + message):
            run_index_put(runtime, x, indices, values, accumulate)
    with pytest.raises(IndexError):
        aten.index_put(torch.zeros(0, 3), [torch.tensor([0])], one)
    with pytest.raises(PareError, match=r"dim 0 has size 0, so no index is in bounds"):
        run_index_put(runtime, torch.zeros(0, 3), [torch.tensor([0])], one)
    with pytest.raises(IndexError):
        aten.index_put(torch.tensor(1.0), [torch.tensor(0)], torch.tensor(2.0))
    with pytest.raises(PareError, match=r"1 index tensors for a tensor of 0 dims"):
        run_index_put(runtime, torch.tensor(1.0), [torch.tensor(0)], torch.tensor(2.0))
    # Tensor[] arguments refuse None elements.
    with pytest.raises(
        PareError, match=r"aten::cat: argument 'tensors' \(#0\) must be Tensor\[\], but element 1 is None"
    ):
        run_program(runtime, [x], lambda m, vs: [m.op("aten::cat", [vs[0], None], 0)])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_masked_scatter_every_dtype(runtime, dtype):
    x = make_tensor((3, 4), dtype, 160)
    mask = make_tensor((3, 4), torch.bool, 161)
    source = make_tensor((12,), dtype, 162)
    assert_same(
        run_op(runtime, "aten::masked_scatter", x, mask, source), aten.masked_scatter(x, mask, source), rtol=0, atol=0
    )


def test_masked_scatter_shapes_and_errors(runtime):
    x = non_contiguous((3, 4, 5), torch.float32, 170)
    source = make_tensor((70,), torch.float32, 171)
    for mask in (
        make_tensor((3, 4, 5), torch.bool, 172),
        make_tensor((4, 5), torch.bool, 173),  # broadcast over self
        non_contiguous((3, 4, 5), torch.bool, 174),
        make_tensor((5,), torch.bool, 175).expand(3, 4, 5),
        torch.tensor(True),
        torch.zeros(3, 4, 5, dtype=torch.bool),
    ):
        same_or_both_fail(
            runtime, "aten::masked_scatter", (x, mask, source), lambda: aten.masked_scatter(x, mask, source)
        )
    # self broadcast to the mask's shape; a 2-d strided source read row-major.
    mask = make_tensor((2, 3, 4, 5), torch.bool, 176)
    src2 = make_tensor((12, 10), torch.float32, 177).t()
    assert_same(run_op(runtime, "aten::masked_scatter", x, mask, src2), aten.masked_scatter(x, mask, src2))
    s = torch.tensor(1.0)
    assert_same(
        run_op(runtime, "aten::masked_scatter", s, torch.tensor(True), torch.tensor([7.0])),
        aten.masked_scatter(s, torch.tensor(True), torch.tensor([7.0])),
    )
    empty = torch.zeros(0, 3)
    assert_same(
        run_op(runtime, "aten::masked_scatter", empty, torch.ones(3, dtype=torch.bool), torch.zeros(0)),
        aten.masked_scatter(empty, torch.ones(3, dtype=torch.bool), torch.zeros(0)),
    )
    assert_same(
        run_op(runtime, "aten::masked_scatter", x, torch.zeros(5, dtype=torch.bool), torch.zeros(0)),
        aten.masked_scatter(x, torch.zeros(5, dtype=torch.bool), torch.zeros(0)),
    )
    m = torch.ones(3, 4, 5, dtype=torch.bool)
    for mask, src, message in [
        (m, torch.zeros(59), r"argument 'source' has 59 elements but 'mask' is true at 60 positions"),
        (m.to(torch.uint8), source, r"argument 'mask' must be a Bool tensor, got Byte"),
        (m, source.double(), r"argument 'source' has dtype Double but 'self' is Float"),
        (
            torch.ones(4, dtype=torch.bool),
            source,
            r"arguments 'self' \(sizes \[3, 4, 5\]\) and 'mask' \(sizes \[4\]\) cannot be broadcast",
        ),
    ]:
        with pytest.raises(RuntimeError):
            aten.masked_scatter(x, mask, src)
        with pytest.raises(PareError, match=r"aten::masked_scatter: " + message):
            run_op(runtime, "aten::masked_scatter", x, mask, src)


REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """torch's aten::scatter_reduce.two, include_self positional as the program passes it."""
    return aten.scatter_reduce.two(self, dim, index, src, reduce, include_self=include_self)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_scatter_reduce_every_dtype(runtime, dtype):
    x = make_tensor((4, 5), dtype, 180, -3, 3)
    src = make_tensor((6, 5), dtype, 181, -3, 3)
    dup = torch.randint(0, 4, (6, 5), generator=torch.Generator().manual_seed(182))  # duplicates
    for reduce in REDUCTIONS:
        for include_self in (True, False):
            args = (x, 0, dup, src, reduce, include_self)
            actual = same_or_both_fail(runtime, "aten::scatter_reduce.two", args, lambda: scatter_reduce(*args))
            if actual is not None:  # the same order, the same roundings
                assert_same(actual, scatter_reduce(*args), rtol=0, atol=0)


def test_scatter_reduce_rounding_nan_and_order(runtime):
    g = torch.Generator().manual_seed(190)
    # Integer mean is floor division, count included (negative sums round down).
    args = (torch.tensor([7, -7, 5]), 0, torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1]))
    for include_self in (True, False):
        for dtype in (torch.int64, torch.int8, torch.uint8):
            a = (args[0].to(dtype), 0, args[2], args[3].to(dtype) - 4 * (dtype != torch.uint8), "mean", include_self)
            assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a))
    # Many duplicates: integer counts wrap, Half and BFloat16 sum in float
    # and round the sum and the count to the dtype before dividing.
    many = torch.zeros(300, dtype=torch.int64)
    for dtype in (torch.int8, torch.uint8, torch.float16, torch.bfloat16):
        for reduce in ("sum", "mean", "prod"):
            a = (
                torch.ones(2, dtype=dtype),
                0,
                many,
                torch.full((300,), 1.01 if dtype.is_floating_point else 1, dtype=dtype),
                reduce,
            )
            assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a), rtol=0, atol=0)
    # NaN: a NaN source wins and a NaN in self stays; -0.0/0.0 ties keep the first.
    nan = float("nan")
    self_ = torch.tensor([1.0, nan, 0.0, -0.0, 0.0])
    index = torch.tensor([0, 0, 1, 2, 2, 3, 4])
    src = torch.tensor([nan, 5.0, 3.0, 1.0, nan, 0.0, -0.0])
    for reduce in ("amax", "amin", "max", "min", "sum", "prod", "mean"):
        for include_self in (True, False):
            a = (self_, 0, index, src, reduce, include_self)
            actual = run_op(runtime, "aten::scatter_reduce.two", *a)
            expected = scatter_reduce(*a)
            assert_same(actual, expected, rtol=0, atol=0)
            numbers = ~expected.isnan()
            assert torch.equal(actual[numbers].signbit(), expected[numbers].signbit())
    # Float sums in torch's order, every dim, strided operands; the GNN
    # pattern (an expanded index over rows of 16+), which torch runs as a
    # sorted segment reduction: the same order for each element.
    x = non_contiguous((5, 6, 7), torch.float32, 191)
    for dim in (0, 1, 2, -1):
        shape = [4, 5, 6]
        shape[dim] = 9
        index = torch.randint(0, x.shape[dim], shape, generator=g)
        src = make_tensor((9, 9, 9), torch.float32, 192 + dim).transpose(0, 2)
        for reduce in REDUCTIONS:
            for include_self in (True, False):
                a = (x, dim, index, src, reduce, include_self)
                assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a), rtol=0, atol=0)
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        rows = make_tensor((10, 32), dtype, 196)
        index = torch.randint(0, 10, (200,), generator=g).unsqueeze(1).expand(200, 32)
        src = make_tensor((200, 32), dtype, 197)
        for reduce in REDUCTIONS:
            for include_self in (True, False):
                a = (rows, 0, index, src, reduce, include_self)
                assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a), rtol=0, atol=0)
    # 0-dim, empty index (self returned), Int index.
    s = torch.tensor(2.0)
    a = (s, 0, torch.tensor(0), torch.tensor(5.0), "prod")
    assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a))
    a = (x, 1, torch.zeros(0, 2, dtype=torch.int64), x, "mean", False)
    assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a))
    a = (x, 1, torch.zeros(2, 2, 2, dtype=torch.int32), x, "amin")
    assert_same(run_op(runtime, "aten::scatter_reduce.two", *a), scatter_reduce(*a))


def test_scatter_reduce_errors(runtime):
    x = torch.zeros(3, 4)
    index = torch.zeros(2, 2, dtype=torch.int64)
    src = torch.ones(3, 4)
    empty = torch.zeros(0, dtype=torch.int64)
    for args, message in [
        (
            (x, 0, index, src, "maximum"),
            r"argument 'reduce' must be one of sum, prod, mean, amax or amin, got 'maximum'",
        ),
        ((x, 0, empty, src, "add"), r"got 'add'"),  # checked even when nothing is scattered
        ((x.bool(), 0, index, src.bool(), "mean"), r"mean of Bool tensors is not supported"),
        ((x.bool(), 0, empty, src.bool(), "mean"), r"mean of Bool tensors is not supported"),
        ((x, 0, index, src.double(), "sum"), r"argument 'src' has dtype Double but 'self' is Float"),
        ((x, 0, empty, src.double(), "sum"), r"argument 'src' has dtype Double but 'self' is Float"),
        ((x, 0, index + 3, src, "amax"), r"argument 'index': index 3 is out of bounds for dim 0 with size 3"),
        ((x, 1, index - 1, src, "sum", False), r"index -1 is out of bounds for dim 1 with size 4"),
        ((x, 2, index, src, "sum"), r"argument 'dim'"),
        ((x, 0, index.float(), src, "prod"), r"argument 'index' must be a Long or Int tensor, got Float"),
        ((x, 0, torch.zeros(4, 1, dtype=torch.int64), src, "sum"), r"must be no larger than 'self'"),
    ]:
        with pytest.raises((RuntimeError, IndexError, NotImplementedError)):
            scatter_reduce(*args)
        with pytest.raises(PareError, match=r"aten::scatter_reduce\.two: .*" + message):
            run_op(runtime, "aten::scatter_reduce.two", *args)


# --------------------------------------------------------------------------
# Factories


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_factories_every_dtype(runtime, dtype):
    fill = True if dtype == torch.bool else 3
    assert_same(run_op(runtime, "aten::full", [2, 3], fill, dtype), torch.full([2, 3], fill, dtype=dtype))
    x = make_tensor((4, 2), torch.float32, 42)
    assert_same(run_op(runtime, "aten::full_like", x, fill, dtype), torch.full_like(x, fill, dtype=dtype))
    assert_same(run_op(runtime, "aten::scalar_tensor", fill, dtype), torch.scalar_tensor(fill, dtype=dtype))
    empty = run_op(runtime, "aten::empty.memory_format", [3, 0, 2], dtype)
    assert empty.dtype == dtype and empty.shape == (3, 0, 2)
    if dtype != torch.bool:
        assert_same(run_op(runtime, "aten::arange.start_step", 1, 11, 3, dtype), torch.arange(1, 11, 3, dtype=dtype))


@pytest.mark.parametrize("fill", [0, 1, -3, 2.5, -0.0, True, False, float("inf"), float("nan"), 2**40])
def test_full_infers_dtype_and_converts(runtime, fill):
    assert_same(run_op(runtime, "aten::full", [3], fill), torch.full([3], fill))
    x = make_tensor((2, 3), torch.int32, 43)
    if isinstance(fill, float) and fill != fill or fill in (float("inf"), 2**40):
        return  # does not fit an int32 (torch errors, tested below)
    assert_same(run_op(runtime, "aten::full_like", x, fill), torch.full_like(x, fill))
    assert_same(run_op(runtime, "aten::scalar_tensor", fill), torch.scalar_tensor(fill))


# (value, dtype) pairs torch's fills refuse (overflow) and accept (wrapping
# negative uint8, inf, rounding toward zero, any number for Bool).
FULL_REJECTED = [
    (300, torch.uint8),
    (-256, torch.uint8),
    (-0.5, torch.uint8),
    (255.5, torch.uint8),
    (2**31, torch.int32),
    (1e10, torch.int32),
    (float("nan"), torch.int64),
    (9.3e18, torch.int64),
    (65520, torch.float16),
    (1e300, torch.float32),
    (3.4e38, torch.bfloat16),
    (2**63 - 1, torch.float16),
]
FULL_ACCEPTED = [
    (-255, torch.uint8),
    (-1, torch.uint8),
    (255, torch.uint8),
    (-(2**31), torch.int32),
    (2**63 - 1, torch.int64),
    (65504, torch.float16),
    (float("inf"), torch.float16),
    (float("-inf"), torch.float32),
    (2**63 - 1, torch.bfloat16),
    (300, torch.bool),
    (-3.5, torch.bool),
    (1e300, torch.float64),
    (2.7, torch.int64),
    (-2.7, torch.int8),
]


@pytest.mark.parametrize("value,dtype", FULL_REJECTED)
def test_full_rejects_values_torch_rejects(runtime, value, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full([2], value, dtype=dtype)
    with pytest.raises(PareError, match=r"aten::full: argument 'fill_value': the value cannot be converted to "):
        run_op(runtime, "aten::full", [2], value, dtype)


@pytest.mark.parametrize("value,dtype", FULL_ACCEPTED)
def test_full_accepts_values_torch_accepts(runtime, value, dtype):
    assert_same(run_op(runtime, "aten::full", [2], value, dtype), torch.full([2], value, dtype=dtype))


def test_single_element_half_fill_skips_the_overflow_check_like_torch(runtime):
    for dtype in (torch.float16, torch.bfloat16):
        assert_same(run_op(runtime, "aten::scalar_tensor", 1e300, dtype), torch.scalar_tensor(1e300, dtype=dtype))
        assert_same(run_op(runtime, "aten::full", [1], 1e300, dtype), torch.full([1], 1e300, dtype=dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_fill_every_dtype(runtime, dtype):
    x = make_tensor((2, 3), dtype, 70).t()  # the result takes self's sizes, not its strides
    for value in (3, -1.5, True):  # -1.5 overflows uint8: both refuse it
        same_or_both_fail(runtime, "aten::fill.Scalar", (x, value), lambda: aten.fill.Scalar(x, value))
        for t in (torch.tensor(value), torch.tensor(value, dtype=torch.float16)):
            same_or_both_fail(runtime, "aten::fill.Tensor", (x, t), lambda: aten.fill.Tensor(x, t))


@pytest.mark.parametrize("value,dtype", FULL_REJECTED)
def test_fill_rejects_values_torch_rejects(runtime, value, dtype):
    x = torch.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        aten.fill.Scalar(x, value)
    with pytest.raises(PareError, match=r"aten::fill\.Scalar: argument 'value': the value cannot be converted to "):
        run_op(runtime, "aten::fill.Scalar", x, value)
    # As a 0-dim tensor the value is cast as a copy casts, unchecked: 300
    # fills uint8 with 44. (Integers only: C++ leaves a float out of an
    # integer type's range undefined, and torch's result differs by CPU.)
    if isinstance(value, int):
        t = torch.tensor(value)
        same_or_both_fail(runtime, "aten::fill.Tensor", (x, t), lambda: aten.fill.Tensor(x, t))


@pytest.mark.parametrize("value,dtype", FULL_ACCEPTED)
def test_fill_accepts_values_torch_accepts(runtime, value, dtype):
    x = torch.zeros(2, dtype=dtype)
    assert_same(run_op(runtime, "aten::fill.Scalar", x, value), aten.fill.Scalar(x, value))


def test_fill_tensor_value_must_be_0_dim(runtime):
    with pytest.raises(RuntimeError, match="0-dimension"):
        aten.fill.Tensor(torch.zeros(2), torch.ones(2))
    with pytest.raises(PareError, match=r"argument 'value' must be a 0-dim tensor, got sizes \[2\]"):
        run_op(runtime, "aten::fill.Tensor", torch.zeros(2), torch.ones(2))


def test_factory_errors(runtime):
    with pytest.raises(PareError, match=r"aten::full: argument 'size' \[2, -1\]: invalid size -1"):
        run_op(runtime, "aten::full", [2, -1], 1.0)
    with pytest.raises(PareError, match=r"aten::full: argument 'device': only 'cpu' is supported, got 'cuda'"):
        run_op(runtime, "aten::full", [2], 1.0, None, None, "cuda")
    with pytest.raises(PareError, match=r"aten::full_like: argument 'layout': only torch.strided"):
        run_op(runtime, "aten::full_like", torch.ones(2), 1.0, None, 1)
    with pytest.raises(PareError, match=r"aten::empty.memory_format: argument 'pin_memory' must be false"):
        run_op(runtime, "aten::empty.memory_format", [2], None, None, None, True)


@pytest.mark.parametrize(
    "start,end,step,dtype",
    [
        (0, 10, 1, None),
        (2, 10, 2, None),
        (10, 0, -3, None),
        (0, 1, 0.1, None),
        (-1.5, 2.5, 0.5, None),
        (0, 2.5, 1, torch.int64),
        (0, 2.5, 1, torch.int32),
        (0, 5, 1, torch.float16),
        (0, 1000, 1, torch.bfloat16),
        (0, 0, 1, None),
        (5, 5, -1, None),
        (0, 100, 7, torch.float64),
        (3, -4, -0.7, torch.float32),
        (0, 300, 1, torch.uint8),
        (-5, 5, 3, torch.int8),
        (0, 1, 1e-4, None),
        (0, 2**40, 2**37, None),
    ],
)
def test_arange(runtime, start, end, step, dtype):
    assert_same(
        run_op(runtime, "aten::arange.start_step", start, end, step, dtype), torch.arange(start, end, step, dtype=dtype)
    )


def test_arange_errors(runtime):
    with pytest.raises(PareError, match=r"aten::arange.start_step: argument 'step' must be nonzero"):
        run_op(runtime, "aten::arange.start_step", 0, 5, 0)
    with pytest.raises(PareError, match=r"bounds are inconsistent with the step's sign"):
        run_op(runtime, "aten::arange.start_step", 5, 0, 1)
    with pytest.raises(PareError, match=r"bounds are inconsistent with the step's sign"):
        run_op(runtime, "aten::arange.start_step", 0.0, 1.0, -0.5)
    with pytest.raises(PareError, match=r"must be finite"):
        run_op(runtime, "aten::arange.start_step", 0.0, float("inf"), 1.0)
    with pytest.raises(PareError, match=r"arange does not support Bool"):
        run_op(runtime, "aten::arange.start_step", 0, 2, 1, torch.bool)


def test_arange_with_symbolic_end(runtime):
    # torch.arange(x.shape[0]) with a dynamic dim: `end` is an Int value.
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 2])
    n = m.op("aten::sym_size.int", x, 0, returns="int")
    m.output(m.op("aten::arange.start_step", 0, n, 1, torch.float32))
    method = runtime.load(pb.to_bytes()).method()
    for rows in (3, 7, 0, 7):
        (out,) = method.run(np.zeros((rows, 2), np.float32))
        assert_same(torch.from_numpy(out), torch.arange(rows, dtype=torch.float32))


def test_assert_tensor_metadata(runtime):
    x = make_tensor((2, 3), torch.float32, 44)

    def checked(*args):
        def build(m, vs):
            m.op("aten::_assert_tensor_metadata", vs[0], *args, returns=())
            return [m.op("aten::clone", vs[0])]

        return run_program(runtime, [x], build)[0]

    assert_same(checked([2, 3], None, torch.float32), x)
    assert_same(checked(None, [3, 1], None, "cpu", 0), x)
    assert_same(checked(), x)
    with pytest.raises(
        PareError,
        match=r"aten::_assert_tensor_metadata: tensor metadata mismatch: argument 'size' is "
        r"\[3, 2\] but the tensor has sizes \[2, 3\]",
    ):
        checked([3, 2])
    with pytest.raises(PareError, match=r"argument 'dtype' is Double but the tensor is Float"):
        checked(None, None, torch.float64)


# --------------------------------------------------------------------------
# What torch.export emits


class Indexing(torch.nn.Module):
    def forward(self, x, idx):
        a, b = torch.split(x, [1, 3], dim=1)
        c = torch.chunk(x, 2, 1)
        return (
            x[:, 1:3],
            x[0],
            x[..., -1],
            x[1:, ::2],
            torch.cat([x, x], 1),
            a,
            b,
            c[1],
            x.unsqueeze(0),
            torch.arange(10),
            torch.arange(2, 10, 2),
            torch.arange(x.shape[0], dtype=torch.float32),
            torch.full((2, 3), 1.5),
            torch.zeros(3, 4),
            torch.ones(2, dtype=torch.int64),
            torch.zeros_like(x),
            torch.ones_like(x),
            torch.full_like(x, 7),
            x.permute(1, 0, 2),
            x.transpose(0, 1),
            x.expand(2, -1, -1, -1),
            x.flatten(1),
            x.squeeze(0),
            torch.stack([x, x]),
            *x.unbind(0),
            torch.flip(x, [0]),
            x.repeat(2, 1, 1),
            x[idx],
            torch.index_select(x, 1, idx),
            torch.gather(x, 2, idx.view(1, 1, -1).expand(3, 4, -1)),
            x.new_zeros(3),
            x.narrow(1, 0, 2),
            x.mT,
            x.view(-1)[idx],
        )


def test_exported_indexing_runs_like_torch(runtime):
    x = make_tensor((3, 4, 5), torch.float32, 45)
    idx = torch.tensor([0, 2])
    model = Indexing()
    ep = torch.export.export(model, (x, idx)).run_decompositions()
    program, report = lower_forward(ep)
    assert not set(report.unsupported)
    ours = runtime.load(program).method().run(x.numpy(), idx.numpy())
    for got, expected in zip(ours, model(x, idx), strict=True):
        assert_same(torch.from_numpy(got), expected)
    for name in (
        "aten::slice.Tensor",
        "aten::select.int",
        "aten::cat",
        "aten::split_with_sizes",
        "aten::unsqueeze",
        "aten::arange.start_step",
        "aten::full",
        "aten::full_like",
        "aten::permute",
        "aten::expand",
        "aten::squeeze.dims",
        "aten::flip",
        "aten::repeat",
        "aten::index.Tensor",
        "aten::index_select",
        "aten::gather",
    ):
        assert name in report.uses, name


class Roll(torch.nn.Module):
    def forward(self, x):
        return torch.roll(x, (-3, 3), (1, 2)), torch.roll(x, 5), torch.roll(x, -1, 3)


@pytest.mark.parametrize("keep_roll", [True, False], ids=["kept", "decomposed"])
def test_exported_roll_runs_like_torch(runtime, keep_roll):
    """The tracer keeps aten::roll (the runtime implements it); torch.export's
    default decomposition turns it into index arithmetic with fmod.Scalar and
    index_select, which runs too."""
    x = make_tensor((2, 7, 7, 4), torch.float32, 46)
    table = torch.export.default_decompositions()
    if keep_roll:
        del table[aten.roll.default]
    ep = torch.export.export(Roll(), (x,)).run_decompositions(table)
    program, report = lower_forward(ep)
    assert not set(report.unsupported)
    ours = runtime.load(program).method().run(x.numpy())
    for got, expected in zip(ours, Roll()(x), strict=True):
        assert_same(torch.from_numpy(got), expected)
    assert ("aten::roll" if keep_roll else "aten::fmod.Scalar") in report.uses


def test_tracing_records_dtypes_and_the_view_behind_unsafe_view(tracing_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Half", [None, 4])
    i = m.input("Int", [None])
    v = m.op("aten::_unsafe_view", x, [-1])  # -> aten::view, non-root
    s = m.op("aten::index_select", x, 0, i)  # Int indices converted through copy_kernel
    m.output(v, s, m.op("aten::cat", [x, x], 1), m.op("aten::full", [2], 1, torch.int8))
    program = tracing_runtime.load(pb.to_bytes())
    program.method().run(np.ones((3, 4), np.float16), np.zeros(2, np.int32))
    trace = program.trace()
    assert (trace.ops["aten::view"].root, trace.ops["aten::view"].non_root) == (False, True)
    assert trace.ops["aten::_unsafe_view"].root
    assert trace.kernel_dtypes["index_select_kernel"] == ("Half",)
    assert trace.kernel_dtypes["full_kernel"] == ("Char",)
    assert set(trace.kernel_dtypes["copy_kernel"]) == {"Int", "Long", "Half"}  # indices; cat's strided copy


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


class IndexWrites(torch.nn.Module):
    """What torch.export lowers to index_put (x[idx] = v, x[mask] = c,
    x.index_put_(..., accumulate=True), x[:, idx] += v with a None in the
    indices), scatter_reduce and masked_scatter."""

    def forward(self, x, idx, mask, v, cache, pos, k, src, index):
        x = x.clone()
        x[idx] = v
        x.index_put_((idx,), v, accumulate=True)
        x[mask] = 2.5
        cache = cache.clone()
        cache[:, :, pos] = k
        cache[:, idx] += 1.0
        reduced = x.scatter_reduce(0, index, src, "amax", include_self=False)
        mean = x.scatter_reduce(1, index[:5, :3] % 4, src, "mean")
        return x, cache, reduced, mean, x.masked_scatter(mask, src)


def test_exported_index_writes_run_like_torch(runtime):
    g = torch.Generator().manual_seed(200)
    inputs = (
        make_tensor((5, 4), torch.float32, 201),
        torch.tensor([3, 0, 3]),
        make_tensor((5, 4), torch.bool, 202),
        make_tensor((3, 4), torch.float32, 203),
        make_tensor((2, 5, 6, 3), torch.float32, 204),
        torch.tensor([4, 5]),
        make_tensor((2, 5, 2, 3), torch.float32, 205),
        make_tensor((6, 4), torch.float32, 206),
        torch.randint(0, 5, (6, 4), generator=g),
    )
    model = IndexWrites()
    ep = torch.export.export(model, inputs).run_decompositions()
    data, report = lower_forward(ep)
    assert not set(report.unsupported)
    assert {"aten::index_put", "aten::scatter_reduce.two", "aten::masked_scatter"} <= set(report.uses)
    assert read(data).version == (1, 1)  # a Tensor?[] with None: cache[:, :, pos] = k
    ours = [torch.from_numpy(a) for a in runtime.load(data).method().run(*[to_input(t) for t in inputs])]
    expected = model(*inputs)
    assert len(ours) == len(expected) == 5
    for a, e in zip(ours, expected):
        assert_same(a, e, rtol=0, atol=0)


# ---------------------------------------------------------------------------
# triu_indices (a factory: no tensor inputs)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=str)
def test_triu_indices_every_shape_and_offset(runtime, dtype):
    for row in range(0, 5):
        for col in range(0, 5):
            for offset in range(-6, 7):
                got = run_op(runtime, "aten::triu_indices", row, col, offset, dtype)
                assert_same(got, torch.triu_indices(row, col, offset, dtype=dtype))


def test_triu_indices_defaults_and_errors(runtime):
    # torch.export's form: dtype left out (Long), device and pin_memory given.
    assert_same(run_op(runtime, "aten::triu_indices", 4, 4, 1), torch.triu_indices(4, 4, 1))
    assert_same(run_op(runtime, "aten::triu_indices", 3, 5), torch.triu_indices(3, 5))
    assert_same(run_op(runtime, "aten::triu_indices", 40, 7, -(2**62)), torch.triu_indices(40, 7, -(2**62)))
    assert_same(run_op(runtime, "aten::triu_indices", 2**62, 3, 2**62), torch.triu_indices(2**62, 3, 2**62))
    with pytest.raises(PareError, match="argument 'row' must be non-negative, got -1"):
        run_op(runtime, "aten::triu_indices", -1, 3)
    with pytest.raises(PareError, match="argument 'col' must be non-negative, got -2"):
        run_op(runtime, "aten::triu_indices", 3, -2)
    with pytest.raises(PareError, match="too many elements"):
        run_op(runtime, "aten::triu_indices", 2**62, 2**62)
    with pytest.raises(PareError, match="triu_indices"):
        run_op(runtime, "aten::triu_indices", 3, 3, 0, torch.float32)


# --- nonzero: an output of data-dependent size ---


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_nonzero_every_dtype(runtime, dtype):
    x = make_tensor((3, 5, 2), dtype, 7)
    x.view(-1)[::3] = 0
    assert_same(run_op(runtime, "aten::nonzero", x), torch.nonzero(x))


@pytest.mark.parametrize(
    "x",
    [
        torch.tensor([0.0, -0.0, float("nan"), 1e-45, float("inf")]),  # NaN counts, -0.0 does not
        torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),  # non-contiguous
        torch.arange(6.0).reshape(2, 3).expand(4, 2, 3),  # broadcast (stride 0)
        torch.tensor(3.0),  # 0-d, non-zero: one row of no columns
        torch.tensor(0.0),  # 0-d, zero: no row
        torch.zeros(0, 3),  # empty
        torch.zeros(2, 3),  # nothing non-zero
        torch.ones(2, 1, 3, 1, 2),  # everything: the bound itself
    ],
    ids=["nan_and_signed_zero", "permuted", "broadcast", "scalar", "scalar_zero", "empty", "all_zero", "all_ones"],
)
def test_nonzero_shapes(runtime, x):
    assert_same(run_op(runtime, "aten::nonzero", x), torch.nonzero(x))


def test_nonzero_keeps_its_plan_whatever_the_data(runtime):
    # The output is planned at its upper bound (every element non-zero), a
    # size the input's shape decides: runs with as many different counts
    # reuse one plan and allocate nothing outside it.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::nonzero", m.input("Float", [4, 6])))
    method = runtime.load(pb.to_bytes()).method()
    g = torch.Generator().manual_seed(0)
    for threshold in (0.0, 0.5, 0.9, 1.0, 0.2):
        x = torch.rand(4, 6, generator=g)
        x[x < threshold] = 0
        (out,) = method.run(to_input(x))
        assert torch.equal(torch.from_numpy(out), torch.nonzero(x))
    stats = method.memory_stats()
    assert stats.num_plans == 1 and stats.temporary_blocks == 0
