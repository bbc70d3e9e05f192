"""The binary_math family (runtime/kernels/binary_math/) vs torch: add.Tensor,
add.Scalar, mul.Tensor, sub, mul.Scalar, div (true/trunc/floor,
Tensor and Scalar overloads), remainder, fmod, pow (three overloads), the six
comparisons (Tensor and Scalar), logical_and/or/xor, where.self,
maximum/minimum, bitwise_and/or/xor (Tensor and Scalar) and atan2.

Every op runs for every dtype of its kernel tag, with broadcasting,
non-contiguous, empty and 0-dim inputs, type promotion (tensor-tensor,
tensor-Python number, 0-dim tensors), integer division semantics (Python
floor division and modulo, C's fmod, wrapping, division by zero) and the exact
rounding PyTorch's CPU kernels use for Half and BFloat16."""

import itertools

import numpy as np
import pytest
import torch
from runtime_testing import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_matches_one_of,
    assert_same,
    assert_within_ulps,
    make_tensor,
    round_like_float_math,
    run_op,
    same_or_both_fail,
    single_op_program,
    to_input,
)

from pare.runtime import PareError

aten = torch.ops.aten
pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

NO_BOOL = [d for d in ALL_DTYPES if d != torch.bool]
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
INT_AND_BOOL = INT_DTYPES + [torch.bool]
REDUCED = [torch.float16, torch.bfloat16]


def nonzero(t: torch.Tensor) -> torch.Tensor:
    """t with integer zeros replaced (integer division by zero is an error)."""
    if t.dtype.is_floating_point:
        return t
    return torch.where(t == 0, torch.ones_like(t), t)


def with_zeros(t: torch.Tensor) -> torch.Tensor:
    """t with every third element zero (for logical ops and comparisons)."""
    t = t.clone()
    t.view(-1)[::3] = 0
    return t


def as_dtype(value, dtype) -> torch.Tensor:
    """A Python number converted to dtype as torch converts a Scalar (through float)."""
    return torch.tensor(value, dtype=torch.float64).to(torch.float32).to(dtype)


def check_reduced_float_sub(runtime, op, a, other, alpha):
    """sub with alpha != 1 on Half/BFloat16. torch computes a + (-alpha) * other
    with alpha (and a Python-number `other`) rounded to the tensor's dtype,
    but rounds differently per loop: its vectorised loop (AVX2 and AVX-512
    builds, on contiguous rows) does one fused multiply-add in float and
    rounds once; its scalar loop (ATEN_CPU_CAPABILITY=default, loop tails)
    rounds alpha * other to the 16-bit type first, which near cancellation
    is many ulps away. The runtime does what the vectorised loop does, by
    design (one rounding, like float32). The product of two 16-bit values is
    exact in float64 and in float32, so both are computed exactly here; the
    runtime must equal the single-rounding reference bit for bit, and torch
    (whichever loop ran) one of the two."""
    dtype = a.dtype
    product = (
        as_dtype(alpha, dtype).double()
        * (other if isinstance(other, torch.Tensor) else as_dtype(other, dtype)).double()
    )
    rounded_once = round_like_float_math(a.double() - product, dtype)
    product_rounded_first = round_like_float_math(a.double() - product.to(torch.float32).to(dtype).double(), dtype)
    actual = run_op(runtime, op, a, other, alpha)
    expected = torch.sub(a, other, alpha=alpha) if op == "aten::sub.Tensor" else aten.sub.Scalar(a, other, alpha)
    assert_within_ulps(actual, rounded_once, 0, f"{op} alpha={alpha}")
    assert_matches_one_of(expected, [rounded_once, product_rounded_first], 0, f"torch {op} alpha={alpha}")


# Tensor-Tensor ops with their torch reference (Python API, so a Python
# number in a Tensor position has wrapped-number semantics).
BINARY = {
    "aten::sub.Tensor": torch.sub,
    "aten::div.Tensor": torch.div,
    "aten::remainder.Tensor": torch.remainder,
    "aten::fmod.Tensor": torch.fmod,
    "aten::pow.Tensor_Tensor": torch.pow,
    "aten::eq.Tensor": torch.eq,
    "aten::ne.Tensor": torch.ne,
    "aten::lt.Tensor": torch.lt,
    "aten::le.Tensor": torch.le,
    "aten::gt.Tensor": torch.gt,
    "aten::ge.Tensor": torch.ge,
    "aten::logical_and": torch.logical_and,
    "aten::logical_or": torch.logical_or,
    "aten::logical_xor": torch.logical_xor,
    "aten::maximum": torch.maximum,
    "aten::minimum": torch.minimum,
    "aten::bitwise_and.Tensor": torch.bitwise_and,
    "aten::bitwise_or.Tensor": torch.bitwise_or,
    "aten::bitwise_xor.Tensor": torch.bitwise_xor,
    "aten::atan2": torch.atan2,
}
DIV_MODES = {
    "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
}
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def binary_dtype(op):
    return torch.int32 if "bitwise" in op else torch.float32


def binary_operands(op, a, b):
    """Operands suited to the op: positive bases for pow, no integer zero divisors."""
    if "pow" in op and a.dtype.is_floating_point:
        a = a.abs() + 0.5
    if op in ("aten::remainder.Tensor", "aten::fmod.Tensor"):
        b = nonzero(b)
    return a, b


# ---- every dtype of every tag --------------------------------------------------


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
def test_sub_every_dtype(runtime, dtype):
    a, b = make_tensor((3, 64), dtype, 1), make_tensor((1, 64), dtype, 2)
    assert_same(run_op(runtime, "aten::sub.Tensor", a, b), torch.sub(a, b))
    assert_same(run_op(runtime, "aten::sub.Scalar", a, 2), aten.sub.Scalar(a, 2))
    if dtype in REDUCED:
        # torch's loops round alpha * other differently: see check_reduced_float_sub.
        check_reduced_float_sub(runtime, "aten::sub.Tensor", a, b, 3)
        check_reduced_float_sub(runtime, "aten::sub.Scalar", a, 2, -3)
        check_reduced_float_sub(runtime, "aten::sub.Tensor", a, b, 0.3)
        check_reduced_float_sub(runtime, "aten::sub.Scalar", a, 1.7, 0.3)
        return
    # Float and Double: the vectorised loop's fused multiply-add and the
    # scalar loop's multiply-then-add differ by at most half an ulp of
    # alpha * other, inside the float tolerance; integers are exact.
    assert_same(run_op(runtime, "aten::sub.Tensor", a, b, 3), torch.sub(a, b, alpha=3))
    assert_same(run_op(runtime, "aten::sub.Scalar", a, 2, -3), aten.sub.Scalar(a, 2, -3))
    if dtype.is_floating_point:
        assert_same(run_op(runtime, "aten::sub.Tensor", a, b, 0.3), torch.sub(a, b, alpha=0.3))
        assert_same(run_op(runtime, "aten::sub.Scalar", a, 1.7, 0.3), aten.sub.Scalar(a, 1.7, 0.3))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [3, -2.5, True], ids=["int", "float", "bool"])
def test_mul_scalar_every_dtype(runtime, dtype, scalar):
    a = make_tensor((4, 6), dtype, 3)
    assert_same(run_op(runtime, "aten::mul.Scalar", a, scalar), aten.mul.Scalar(a, scalar))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_div_true_every_dtype(runtime, dtype):
    a, b = make_tensor((3, 5), dtype, 4), nonzero(make_tensor((3, 5), dtype, 5))
    assert_same(run_op(runtime, "aten::div.Tensor", a, b), torch.div(a, b))
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, None), torch.div(a, b, rounding_mode=None))
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b), torch.div(a, b))  # rounding_mode absent
    for s in (3, -0.7, True):
        assert_same(run_op(runtime, "aten::div.Scalar", a, s), aten.div.Scalar(a, s))
        assert_same(
            run_op(runtime, "aten::div.Scalar_mode", a, s, None), aten.div.Scalar_mode(a, s, rounding_mode=None)
        )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_atan2_every_dtype(runtime, dtype):
    # Integral and Bool operands compute in Float; every quadrant, the axes
    # and signed zeros, infinities and NaN among the floating cases.
    a, b = make_tensor((4, 6), dtype, 7, low=-8, high=8), make_tensor((6,), dtype, 8, low=-8, high=8)
    assert_same(run_op(runtime, "aten::atan2", a, b), torch.atan2(a, b))
    if dtype.is_floating_point:
        nan, inf = float("nan"), float("inf")
        y = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, inf, -inf, inf, nan, 1.0, 3.0], dtype=dtype)
        x = torch.tensor([0.0, 0.0, -0.0, -0.0, -inf, -inf, inf, 2.0, -inf, 1.0, nan, -4.0], dtype=dtype)
        actual, expected = run_op(runtime, "aten::atan2", y, x), torch.atan2(y, x)
        assert_same(actual, expected)
        numbers = ~expected.isnan()  # a NaN's sign bit means nothing
        assert torch.equal(torch.signbit(actual[numbers]), torch.signbit(expected[numbers]))  # atan2(-0, +0) is -0


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_every_dtype(runtime, dtype, mode):
    a = make_tensor((4, 6), dtype, 6, low=-50, high=50)
    b = nonzero(make_tensor((4, 6), dtype, 7))
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, mode), torch.div(a, b, rounding_mode=mode))
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b[:1], mode), torch.div(a, b[:1], rounding_mode=mode))
    scalars = (3, -4) + ((0.7, -2.5) if dtype.is_floating_point else ())
    for s in scalars:
        assert_same(
            run_op(runtime, "aten::div.Scalar_mode", a, s, mode), aten.div.Scalar_mode(a, s, rounding_mode=mode)
        )
        assert_same(run_op(runtime, "aten::div.Tensor_mode", a, s, mode), torch.div(a, s, rounding_mode=mode))


def check_modulo(runtime, dtype, name):
    """aten::<name>.Tensor against a broadcast nonzero divisor, and .Scalar."""
    a = make_tensor((4, 6), dtype, 8, low=-50, high=50)
    b = nonzero(make_tensor((1, 6), dtype, 9))
    assert_same(run_op(runtime, f"aten::{name}.Tensor", a, b), getattr(torch, name)(a, b))
    for s in (3, -4) + ((0.7, -2.5) if dtype.is_floating_point else ()):
        assert_same(run_op(runtime, f"aten::{name}.Scalar", a, s), getattr(aten, name).Scalar(a, s))


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
def test_remainder_every_dtype(runtime, dtype):
    check_modulo(runtime, dtype, "remainder")


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
def test_fmod_every_dtype(runtime, dtype):
    check_modulo(runtime, dtype, "fmod")


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
def test_pow_tensor_tensor_every_dtype(runtime, dtype):
    if dtype.is_floating_point:
        a = make_tensor((3, 5), dtype, 10, low=0, high=3)
        b = make_tensor((3, 5), dtype, 11, low=-3, high=3)
    else:
        a = make_tensor((3, 5), dtype, 10, low=-5, high=5)
        b = make_tensor((3, 5), dtype, 11, low=-2, high=5)  # negative exponents give 0 / +-1
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", a, b), torch.pow(a, b))
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", a, b[:1]), torch.pow(a, b[:1]))


@pytest.mark.parametrize("dtype", NO_BOOL, ids=str)
def test_pow_tensor_scalar_every_dtype(runtime, dtype):
    a = make_tensor((3, 7), dtype, 12, low=-4, high=4)
    exponents = [0, 1, 2, 3, 5, True, False]
    if dtype.is_floating_point:
        a = a.abs() + 0.25
        exponents += [0.5, -0.5, -1, -2, 2.0, 3.0, -2.0, 0.0, 1.0, 1.7, -0.3, -3]
    else:
        exponents += [0.5, -1.5, 2.0]  # float exponents give a float result
    for e in exponents:
        assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", a, e), aten.pow.Tensor_Scalar(a, e))


def test_pow_tensor_scalar_bool_base(runtime):
    a = torch.tensor([True, False, True])
    for e in (True, False, 2, 0, 1, 2.5, 1.0):
        assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", a, e), aten.pow.Tensor_Scalar(a, e))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_pow_scalar_every_exponent_dtype(runtime, dtype):
    exponent = make_tensor((2, 6), dtype, 13, low=0 if dtype == torch.uint8 else -2, high=4)
    for base in (2, 3, -2, 1, 0.5, 2.5, 1.0):
        same_or_both_fail(runtime, "aten::pow.Scalar", (base, exponent), lambda: aten.pow.Scalar(base, exponent))
    if dtype == torch.bool:
        with pytest.raises(PareError, match="aten::pow.Scalar: .*Bool"):
            run_op(runtime, "aten::pow.Scalar", True, exponent)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_every_dtype(runtime, name, dtype):
    a = with_zeros(make_tensor((4, 5), dtype, 14, low=-3, high=3))
    b = make_tensor((4, 5), dtype, 15, low=-3, high=3)
    b.view(-1)[::2] = a.view(-1)[::2]  # ties
    fn = getattr(torch, name)
    assert_same(run_op(runtime, f"aten::{name}.Tensor", a, b), fn(a, b))
    assert_same(run_op(runtime, f"aten::{name}.Tensor", a, b[1]), fn(a, b[1]))
    for s in (1, -2, 0.5, True, False, 1000):
        assert_same(run_op(runtime, f"aten::{name}.Scalar", a, s), getattr(aten, name).Scalar(a, s))
        assert_same(run_op(runtime, f"aten::{name}.Tensor", a, s), fn(a, s))  # wrapped number


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_every_dtype(runtime, name, dtype):
    a = with_zeros(make_tensor((4, 5), dtype, 16))
    b = with_zeros(make_tensor((5,), dtype, 17).flip(0))
    fn = getattr(torch, name)
    assert_same(run_op(runtime, f"aten::{name}", a, b), fn(a, b))
    if dtype.is_floating_point:
        special = torch.tensor([float("nan"), 0.0, -0.0, float("inf")], dtype=dtype)
        assert_same(run_op(runtime, f"aten::{name}", special, special.flip(0)), fn(special, special.flip(0)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_every_dtype(runtime, name, dtype):
    a, b = make_tensor((4, 5), dtype, 18), make_tensor((4, 1), dtype, 19)
    fn = getattr(torch, name)
    assert_same(run_op(runtime, f"aten::{name}", a, b), fn(a, b))
    if dtype.is_floating_point:
        nan, inf = float("nan"), float("inf")
        x = torch.tensor([nan, 1.0, nan, -inf, 2.0, -0.0], dtype=dtype)
        y = torch.tensor([1.0, nan, nan, 3.0, inf, 0.0], dtype=dtype)
        assert_same(run_op(runtime, f"aten::{name}", x, y), fn(x, y))


@pytest.mark.parametrize("dtype", INT_AND_BOOL, ids=str)
@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_every_dtype(runtime, name, dtype):
    low, high = (-100, 100) if dtype != torch.uint8 else (0, 255)
    a, b = make_tensor((4, 5), dtype, 20, low, high), make_tensor((5,), dtype, 21, low, high)
    fn = getattr(torch, name)
    assert_same(run_op(runtime, f"aten::{name}.Tensor", a, b), fn(a, b))


BITWISE_SCALARS = [3, 0, -1, 300, -129, 2**40, True, False]


@pytest.mark.parametrize("dtype", INT_AND_BOOL, ids=str)
@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_scalar_every_dtype(runtime, name, dtype):
    """`x & 3`: the number is a wrapped number, so an integer tensor keeps
    its dtype (the number wraps into it as torch's casts do), a Bool tensor
    with an int gives Long and with a bool stays Bool."""
    low, high = (-100, 100) if dtype != torch.uint8 else (0, 255)
    a = make_tensor((4, 33), dtype, 22, low, high)  # a vector body and a tail
    ref = getattr(aten, name).Scalar
    for s in BITWISE_SCALARS:
        assert_same(run_op(runtime, f"aten::{name}.Scalar", a, s), ref(a, s))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_scalar_layouts(runtime, name):
    """0-dim, empty, broadcast (expanded) and non-contiguous tensors."""
    ref = getattr(aten, name).Scalar
    op = f"aten::{name}.Scalar"
    for dtype in (torch.int32, torch.uint8, torch.bool):
        tensors = [
            make_tensor((), dtype, 23, 0, 100),
            make_tensor((0,), dtype, 23),
            make_tensor((2, 0, 3), dtype, 23),
            make_tensor((1, 5), dtype, 24, 0, 100).expand(3, 5),
            *strided_operands(dtype, 25),
        ]
        for a in tensors:
            for s in (6, -3, True):
                assert_same(run_op(runtime, op, a, s), ref(a, s))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_where_every_dtype(runtime, dtype):
    cond = make_tensor((4, 5), torch.bool, 22)
    a, b = make_tensor((4, 5), dtype, 23), make_tensor((4, 5), dtype, 24)
    assert_same(run_op(runtime, "aten::where.self", cond, a, b), torch.where(cond, a, b))
    # Broadcast condition and values; a value as one repeated element.
    assert_same(run_op(runtime, "aten::where.self", cond[:, :1], a, b[0]), torch.where(cond[:, :1], a, b[0]))
    assert_same(run_op(runtime, "aten::where.self", cond, a[:1, :1], b), torch.where(cond, a[:1, :1], b))


# ---- broadcasting, layouts, empty and 0-dim ---------------------------------

# Operand shape pairs that broadcast: a size-1 or missing dim on either side,
# 0-dim and empty operands.
BROADCAST_SHAPES = [
    ((4, 1, 3), (5, 3)),
    ((1,), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((3, 1), (1, 4)),
    ((2, 1, 4, 1), (3, 1, 5)),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
]


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("shape_a,shape_b", BROADCAST_SHAPES)
def test_broadcasting(runtime, op, shape_a, shape_b):
    dtype = binary_dtype(op)
    a, b = make_tensor(shape_a, dtype, 25), make_tensor(shape_b, dtype, 26)
    for x, y in ((a, b), (b, a)):
        x, y = binary_operands(op, x, y)
        assert_same(run_op(runtime, op, x, y), BINARY[op](x, y))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float16])
def test_div_rounding_broadcasting(runtime, mode, dtype):
    for shape_a, shape_b in [((4, 1, 3), (5, 3)), ((2, 3), ()), ((0, 3), (1, 3)), ((), (3, 1))]:
        a, b = make_tensor(shape_a, dtype, 27), nonzero(make_tensor(shape_b, dtype, 28))
        assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, mode), DIV_MODES[mode](a, b))


def test_where_broadcasting(runtime):
    for sc, sa, sb in [
        ((4, 1), (1, 5), ()),
        ((), (2, 3), (3,)),
        ((2, 1, 3), (4, 1), (1,)),
        ((0, 3), (3,), (1, 3)),
        ((), (), ()),
        ((3,), (2, 1), (2, 3)),
    ]:
        cond = make_tensor(sc, torch.bool, 29)
        a, b = make_tensor(sa, torch.float32, 30), make_tensor(sb, torch.float32, 31)
        assert_same(run_op(runtime, "aten::where.self", cond, a, b), torch.where(cond, a, b))


def strided_operands(dtype, seed):
    transposed = make_tensor((6, 8, 5), dtype, seed).transpose(0, 2)  # [5, 8, 6]
    sliced = make_tensor((5, 16, 12), dtype, seed + 1)[:, ::2, ::2]
    expanded = make_tensor((1, 8, 1), dtype, seed + 2).expand(5, 8, 6)
    return [transposed, sliced, expanded]


@pytest.mark.parametrize("op", list(BINARY))
def test_non_contiguous_inputs(runtime, op):
    dtype = binary_dtype(op)
    for a, b in itertools.permutations(strided_operands(dtype, 32), 2):
        a, b = binary_operands(op, a, b)
        assert_same(run_op(runtime, op, a, b), BINARY[op](a, b))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.int16, torch.float64, torch.bfloat16])
def test_div_rounding_non_contiguous(runtime, mode, dtype):
    for a, b in itertools.permutations(strided_operands(dtype, 33), 2):
        b = nonzero(b)
        assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, mode), DIV_MODES[mode](a, b))


def test_where_non_contiguous(runtime):
    cond = make_tensor((8, 5, 6), torch.bool, 34).permute(1, 0, 2)  # [5, 8, 6]
    for a, b in itertools.permutations(strided_operands(torch.float32, 35), 2):
        assert_same(run_op(runtime, "aten::where.self", cond, a, b), torch.where(cond, a, b))
    byte_mask = make_tensor((5, 16, 6), torch.uint8, 36, low=0, high=2)[:, ::2]
    a, b = strided_operands(torch.int64, 37)[:2]
    assert_same(run_op(runtime, "aten::where.self", byte_mask, a, b), torch.where(byte_mask.bool(), a, b))


def test_large_contiguous_and_broadcast_fast_paths(runtime):
    a = make_tensor((64, 1000), torch.float32, 38)
    row = make_tensor((1000,), torch.float32, 39)
    col = make_tensor((64, 1), torch.float32, 40)
    for op in ("aten::sub.Tensor", "aten::div.Tensor", "aten::maximum", "aten::lt.Tensor"):
        assert_same(run_op(runtime, op, a, row), BINARY[op](a, row))
        assert_same(run_op(runtime, op, col, a), BINARY[op](col, a))
    mask = a > 0
    assert_same(run_op(runtime, "aten::where.self", mask, a, 0.0), torch.where(mask, a, 0.0))
    assert_same(run_op(runtime, "aten::where.self", mask, 1.5, row), torch.where(mask, 1.5, row))
    assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", a, 2), a**2)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.bool], ids=str)
def test_empty_and_zero_dim_with_scalars(runtime, dtype):
    for shape in ((0,), (2, 0), ()):
        a = make_tensor(shape, dtype, 58, low=1)
        for op, args, ref in [
            ("aten::mul.Scalar", (a, 2), lambda: aten.mul.Scalar(a, 2)),
            ("aten::div.Scalar", (a, 3), lambda: aten.div.Scalar(a, 3)),
            ("aten::div.Scalar_mode", (a, 3, "floor"), lambda: aten.div.Scalar_mode(a, 3, rounding_mode="floor")),
            ("aten::remainder.Scalar", (a, 3), lambda: aten.remainder.Scalar(a, 3)),
            ("aten::fmod.Scalar", (a, 3), lambda: aten.fmod.Scalar(a, 3)),
            ("aten::pow.Tensor_Scalar", (a, 2), lambda: aten.pow.Tensor_Scalar(a, 2)),
            ("aten::pow.Scalar", (2, a), lambda: aten.pow.Scalar(2, a)),
            ("aten::ge.Scalar", (a, 0.5), lambda: aten.ge.Scalar(a, 0.5)),
            ("aten::where.self", (a > 0, a, 7), lambda: torch.where(a > 0, a, 7)),
            ("aten::logical_xor", (a, a), lambda: torch.logical_xor(a, a)),
            ("aten::bitwise_and.Scalar", (a, 3), lambda: aten.bitwise_and.Scalar(a, 3)),
            ("aten::bitwise_xor.Scalar", (a, True), lambda: aten.bitwise_xor.Scalar(a, True)),
        ]:
            same_or_both_fail(runtime, op, args, ref)


# ---- type promotion ------------------------------------------------------------

PROMOTION_PAIRS = [
    (torch.int32, torch.float32),
    (torch.uint8, torch.int8),
    (torch.bool, torch.int16),
    (torch.float16, torch.bfloat16),
    (torch.int64, torch.float16),
    (torch.bool, torch.bool),
    (torch.uint8, torch.float64),
    (torch.bfloat16, torch.float32),
    (torch.bool, torch.float32),
    (torch.int8, torch.int64),
]


@pytest.mark.parametrize("op", list(BINARY) + ["trunc", "floor"])
@pytest.mark.parametrize("da,db", PROMOTION_PAIRS, ids=str)
def test_tensor_tensor_promotion(runtime, op, da, db):
    a = make_tensor((3, 4), da, 41, low=1 if "pow" in op else -8)
    b = nonzero(make_tensor((3, 4), db, 42, low=-2 if "pow" in op else -8, high=4 if "pow" in op else 8))
    if op in DIV_MODES:
        same_or_both_fail(runtime, "aten::div.Tensor_mode", (a, b, op), lambda: DIV_MODES[op](a, b))
    else:
        same_or_both_fail(runtime, op, (a, b), lambda: BINARY[op](a, b))


@pytest.mark.parametrize("op", list(BINARY) + ["trunc", "floor"])
def test_zero_dim_tensors_promote_like_torch(runtime, op):
    cases = [
        (make_tensor((3,), torch.int32, 43, low=1), torch.tensor(2.5, dtype=torch.float64)),
        (make_tensor((3,), torch.float16, 44, low=1), torch.tensor(2.5, dtype=torch.float64)),
        (make_tensor((3,), torch.uint8, 45, low=1), torch.tensor(3, dtype=torch.int64)),
        (torch.tensor(4, dtype=torch.int16), torch.tensor(1.5, dtype=torch.float32)),
        (make_tensor((3,), torch.bool, 46), torch.tensor(3, dtype=torch.int32)),
        (make_tensor((3,), torch.bfloat16, 47, low=1), torch.tensor(-0.3, dtype=torch.float32)),
    ]
    for a, b in cases:
        for x, y in ((a, b), (b, a)):
            if op in DIV_MODES:
                same_or_both_fail(runtime, "aten::div.Tensor_mode", (x, y, op), lambda: DIV_MODES[op](x, y))
            else:
                same_or_both_fail(runtime, op, (x, y), lambda: BINARY[op](x, y))


SCALAR_TENSOR_OPS = {  # ops whose torch Python API takes a number for `other`
    op: BINARY[op]
    for op in BINARY
    if not op.startswith(("aten::logical", "aten::maximum", "aten::minimum", "aten::bitwise", "aten::atan2"))
}
# torch.pow(t, number) is pow.Tensor_Scalar; pow.Tensor_Tensor with a wrapped
# number behaves like a 0-dim tensor of the result dtype holding it.
SCALAR_TENSOR_OPS["aten::pow.Tensor_Tensor"] = lambda a, s: torch.pow(a, torch.tensor(s, dtype=torch.result_type(a, s)))


@pytest.mark.parametrize("op", list(SCALAR_TENSOR_OPS) + ["trunc", "floor"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tensor_scalar_promotion(runtime, op, dtype):
    a = make_tensor((2, 5), dtype, 48, low=1 if "pow" in op else -8)
    for s in (3, -2.5, True, 0.1):
        if op in DIV_MODES:
            same_or_both_fail(runtime, "aten::div.Tensor_mode", (a, s, op), lambda: DIV_MODES[op](a, s))
        else:
            same_or_both_fail(runtime, op, (a, s), lambda: SCALAR_TENSOR_OPS[op](a, s))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_scalar_overloads_promote_like_torch(runtime, dtype):
    a = make_tensor((2, 5), dtype, 49, low=1)
    for s in (3, -2.5, True, 0.1):
        for op, ref in [
            ("aten::sub.Scalar", lambda: aten.sub.Scalar(a, s)),
            ("aten::mul.Scalar", lambda: aten.mul.Scalar(a, s)),
            ("aten::div.Scalar", lambda: aten.div.Scalar(a, s)),
            ("aten::remainder.Scalar", lambda: aten.remainder.Scalar(a, s)),
            ("aten::fmod.Scalar", lambda: aten.fmod.Scalar(a, s)),
            ("aten::pow.Tensor_Scalar", lambda: aten.pow.Tensor_Scalar(a, s)),
            ("aten::eq.Scalar", lambda: aten.eq.Scalar(a, s)),
            ("aten::lt.Scalar", lambda: aten.lt.Scalar(a, s)),
            ("aten::bitwise_and.Scalar", lambda: aten.bitwise_and.Scalar(a, s)),
            ("aten::bitwise_or.Scalar", lambda: aten.bitwise_or.Scalar(a, s)),
            ("aten::bitwise_xor.Scalar", lambda: aten.bitwise_xor.Scalar(a, s)),
        ]:
            same_or_both_fail(runtime, op, (a, s), ref)
        for mode in ("trunc", "floor"):
            same_or_both_fail(
                runtime, "aten::div.Scalar_mode", (a, s, mode), lambda: aten.div.Scalar_mode(a, s, rounding_mode=mode)
            )


@pytest.mark.parametrize(
    "da,db",
    [
        (torch.int32, torch.float32),
        (torch.bool, torch.uint8),
        (torch.float16, torch.bfloat16),
        (torch.int64, torch.float64),
    ],
)
def test_where_promotion(runtime, da, db):
    cond = make_tensor((3, 4), torch.bool, 50)
    a, b = make_tensor((3, 4), da, 51), make_tensor((3, 4), db, 52)
    assert_same(run_op(runtime, "aten::where.self", cond, a, b), torch.where(cond, a, b))
    zero_dim = torch.tensor(2.5, dtype=torch.float64)
    assert_same(run_op(runtime, "aten::where.self", cond, a, zero_dim), torch.where(cond, a, zero_dim))
    for s in (2, -1.5, True):
        assert_same(run_op(runtime, "aten::where.self", cond, a, s), torch.where(cond, a, s))
        assert_same(run_op(runtime, "aten::where.self", cond, s, b), torch.where(cond, s, b))


# ---- integer division semantics -------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_division_is_python_floor_division(runtime, dtype):
    a = torch.tensor([7, -7, 7, -7, 6, -6, 0, 1, -1, 5], dtype=dtype)
    b = torch.tensor([2, 2, -2, -2, 3, -3, 5, -5, 5, -1], dtype=dtype)
    for mode in ("trunc", "floor"):
        assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, mode), torch.div(a, b, rounding_mode=mode))
    assert_same(run_op(runtime, "aten::remainder.Tensor", a, b), torch.remainder(a, b))
    assert_same(run_op(runtime, "aten::div.Tensor", a, b), torch.div(a, b))  # true division -> Float


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32, torch.float64])
def test_fmod_has_the_sign_of_the_dividend(runtime, dtype):
    a = torch.tensor([7, -7, 7, -7, 6, -6, 0, 1, -1, 5], dtype=dtype)
    b = torch.tensor([2, 2, -2, -2, 3, -3, 5, -5, 5, -1], dtype=dtype)
    expected = torch.tensor([1, -1, 1, -1, 0, -0, 0, 1, -1, 0], dtype=dtype)  # C's %, unlike Python's
    assert_same(run_op(runtime, "aten::fmod.Tensor", a, b), expected)
    assert_same(torch.fmod(a, b), expected)
    assert_same(run_op(runtime, "aten::fmod.Scalar", a, -3), aten.fmod.Scalar(a, -3))
    if dtype.is_floating_point:  # -0.0 for negative dividends, as C's fmod
        actual = run_op(runtime, "aten::fmod.Tensor", a, b)
        assert torch.equal(torch.signbit(actual), torch.signbit(torch.fmod(a, b)))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_division_of_the_minimum_by_minus_one_wraps(runtime, dtype):
    lo = torch.iinfo(dtype).min
    a = torch.tensor([lo, lo, lo + 1], dtype=dtype)
    b = torch.tensor([-1, 1, -1], dtype=dtype)
    expected = torch.tensor([lo, lo, -(lo + 1)], dtype=dtype)  # wraps like PyTorch's floor division
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, "floor"), expected)
    # PyTorch's own trunc division traps (SIGFPE) for int64; the runtime wraps.
    assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, "trunc"), expected)
    assert_same(run_op(runtime, "aten::remainder.Tensor", a, b), torch.zeros(3, dtype=dtype))
    assert_same(run_op(runtime, "aten::fmod.Tensor", a, b), torch.zeros(3, dtype=dtype))
    assert_same(run_op(runtime, "aten::fmod.Scalar", a, -1), torch.zeros(3, dtype=dtype))


def test_uint8_division(runtime):
    a = torch.tensor([255, 200, 7, 0], dtype=torch.uint8)
    b = torch.tensor([2, 255, 3, 9], dtype=torch.uint8)
    for mode in ("trunc", "floor"):
        assert_same(run_op(runtime, "aten::div.Tensor_mode", a, b, mode), torch.div(a, b, rounding_mode=mode))
    assert_same(run_op(runtime, "aten::remainder.Tensor", a, b), a % b)
    assert_same(run_op(runtime, "aten::fmod.Tensor", a, b), torch.fmod(a, b))
    # A negative Python number wraps into uint8 here too (-3 is 253).
    assert_same(run_op(runtime, "aten::fmod.Scalar", a, -3), aten.fmod.Scalar(a, -3))
    # A negative Python number wraps into uint8, as in PyTorch.
    assert_same(
        run_op(runtime, "aten::div.Scalar_mode", a, -3, "floor"), aten.div.Scalar_mode(a, -3, rounding_mode="floor")
    )


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_integer_division_by_zero_is_an_error(runtime, dtype):
    a = torch.tensor([3, 4], dtype=dtype)
    zero_in_b = torch.tensor([1, 0], dtype=dtype)
    for mode in ("trunc", "floor"):
        with pytest.raises(PareError, match=r"aten::div\.Tensor_mode: argument 'other': integer division by zero"):
            run_op(runtime, "aten::div.Tensor_mode", a, zero_in_b, mode)
        with pytest.raises(
            PareError,
            match=r"aten::div\.Tensor_mode \(called from aten::div\.Scalar_mode\): "
            r"argument 'other': integer division by zero",
        ):
            run_op(runtime, "aten::div.Scalar_mode", a, 0, mode)
    with pytest.raises(PareError, match=r"aten::remainder\.Tensor: argument 'other': integer division by zero"):
        run_op(runtime, "aten::remainder.Tensor", a, zero_in_b)
    with pytest.raises(PareError, match="integer division by zero"):
        run_op(runtime, "aten::remainder.Scalar", a, 0)
    with pytest.raises(PareError, match=r"aten::fmod\.Tensor: argument 'other': integer division by zero"):
        run_op(runtime, "aten::fmod.Tensor", a, zero_in_b)
    with pytest.raises(
        PareError,
        match=r"aten::fmod\.Tensor \(called from aten::fmod\.Scalar\): "
        r"argument 'other': integer division by zero",
    ):
        run_op(runtime, "aten::fmod.Scalar", a, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.fmod(a, zero_in_b)  # torch raises too
    # True division by zero is IEEE (inf/nan), and an empty tensor has nothing to divide.
    assert_same(run_op(runtime, "aten::div.Tensor", a, zero_in_b), torch.div(a, zero_in_b))
    empty = torch.empty(0, dtype=dtype)
    assert_same(
        run_op(runtime, "aten::div.Tensor_mode", empty, torch.tensor(0, dtype=dtype), "trunc"),
        torch.div(empty, torch.tensor(0, dtype=dtype), rounding_mode="trunc"),
    )


def test_integer_overflow_wraps_like_torch(runtime):
    a = torch.tensor([120, -128, 127, 3], dtype=torch.int8)
    b = torch.tensor([-100, 1, -1, 7], dtype=torch.int8)
    assert_same(run_op(runtime, "aten::sub.Tensor", a, b), a - b)
    assert_same(run_op(runtime, "aten::sub.Tensor", a, b, 3), torch.sub(a, b, alpha=3))
    assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", a, 5), a**5)
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", a, b.abs()), torch.pow(a, b.abs()))
    big = torch.tensor([2**62, -(2**63)], dtype=torch.int64)
    assert_same(run_op(runtime, "aten::sub.Tensor", big, -big), big - (-big))
    assert_same(
        run_op(runtime, "aten::pow.Scalar", 300, torch.tensor([1, 2], dtype=torch.int8)),
        aten.pow.Scalar(300, torch.tensor([1, 2], dtype=torch.int8)),
    )


def test_integer_pow_with_negative_exponents(runtime):
    base = torch.tensor([2, 1, -1, -1, 0, 5], dtype=torch.int32)
    exp = torch.tensor([-1, -3, -3, -2, 2, 0], dtype=torch.int32)
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", base, exp), torch.pow(base, exp))
    assert_same(run_op(runtime, "aten::pow.Scalar", 2, exp), aten.pow.Scalar(2, exp))
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", base, torch.tensor(-1)), torch.pow(base, torch.tensor(-1)))


# ---- floating special values -------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_division_special_values(runtime, dtype):
    nan, inf = float("nan"), float("inf")
    # Includes quotients beyond 2^23 and 2^52 (already integral) and -0.0 results.
    a = torch.tensor(
        [1.0, -1.0, 0.0, 5.0, -5.0, inf, nan, 1.0, -1.0, 7.5, -7.5, 1e4, 1e30, -3e29, 1e300, -0.5, 0.5], dtype=dtype
    )
    b = torch.tensor(
        [0.0, 0.0, 0.0, inf, -inf, 2.0, 1.0, inf, inf, -2.0, 2.0, 1e-4, 7.0, 3.0, -3.0, 4.0, -4.0], dtype=dtype
    )
    assert_same(run_op(runtime, "aten::div.Tensor", a, b), torch.div(a, b))
    for mode in ("trunc", "floor"):
        actual, expected = run_op(runtime, "aten::div.Tensor_mode", a, b, mode), torch.div(a, b, rounding_mode=mode)
        assert_same(actual, expected)
        zeros = expected == 0  # -0.0 where torch has it (NaN sign bits are not meaningful)
        assert torch.equal(torch.signbit(actual[zeros]), torch.signbit(expected[zeros])), mode
    assert_same(run_op(runtime, "aten::remainder.Tensor", a, b), torch.remainder(a, b))
    actual, expected = run_op(runtime, "aten::fmod.Tensor", a, b), torch.fmod(a, b)
    assert_same(actual, expected)
    zeros = expected == 0
    assert torch.equal(torch.signbit(actual[zeros]), torch.signbit(expected[zeros])), "fmod"
    assert_same(run_op(runtime, "aten::pow.Tensor_Tensor", a, b), torch.pow(a, b))
    assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", a, 0), a**0)  # NaN ** 0 == 1
    assert_same(run_op(runtime, "aten::pow.Scalar", 1, b), aten.pow.Scalar(1, b))  # 1 ** NaN == 1
    for name in COMPARISONS:
        assert_same(run_op(runtime, f"aten::{name}.Tensor", a, b), getattr(torch, name)(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_fmod_is_exact_for_any_quotient(runtime, dtype):
    """fmod is exact (x - n * y for the integer n = trunc(x / y), always
    representable in the operands' dtype), however large the quotient. torch's
    AVX2 and AVX-512 float loops (Sleef) are not once x / y overflows float,
    so this compares with numpy's fmod (libm) on the same values in float64,
    which is exact too."""
    rng = np.random.default_rng(59)
    a, b = (
        torch.from_numpy(rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)).to(dtype) for _ in range(2)
    )
    expected = torch.from_numpy(np.fmod(a.double().numpy(), b.double().numpy())).to(dtype)
    assert_same(run_op(runtime, "aten::fmod.Tensor", a, b), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_reduced_float_rounding_matches_torch_exactly(runtime, dtype):
    """PyTorch rounds Half/BFloat16 intermediates differently per op and per
    operand kind; trunc and floor division amplify a one-ulp difference into
    a whole unit, so these compare exactly over many values.

    Division, remainder, sub without alpha, maximum and comparisons compute
    in float from the same rounded operands in torch's vectorised and scalar
    loops (IEEE division and fmod are exact or correctly rounded), so they
    are compared with torch bit for bit. sub with alpha and pow round at
    different points per loop: those compare with float64 references (see
    check_reduced_float_sub and below)."""
    # numpy's generator, not torch.randn: torch's normal sampler has an AVX2
    # variant, so its values (not only their rounding) depend on the CPU.
    rng = np.random.default_rng(53)
    a = (torch.from_numpy(rng.standard_normal(4000)) * 50).to(dtype)
    b = (torch.from_numpy(rng.standard_normal(4000)) * 3).to(dtype)
    exact = dict(rtol=0, atol=0)
    divisors = [
        b,
        b[7:8],
        b[3:4].reshape(1, 1),
        0.3,
        -1.7,
        torch.tensor(0.3, dtype=torch.float64),
        torch.tensor(0.3, dtype=dtype),
    ]
    for d in divisors:
        for mode in ("trunc", "floor", None):
            assert_same(
                run_op(runtime, "aten::div.Tensor_mode", a, d, mode), torch.div(a, d, rounding_mode=mode), **exact
            )
        assert_same(run_op(runtime, "aten::remainder.Tensor", a, d), torch.remainder(a, d), **exact)
        assert_same(run_op(runtime, "aten::fmod.Tensor", a, d), torch.fmod(a, d), **exact)
    for s in (0.3, -1.7):
        assert_same(run_op(runtime, "aten::sub.Tensor", a, s), torch.sub(a, s), **exact)
        check_reduced_float_sub(runtime, "aten::sub.Tensor", a, b, s)
        assert_same(
            run_op(runtime, "aten::maximum", a, torch.tensor(s, dtype=torch.float64)),
            torch.maximum(a, torch.tensor(s, dtype=torch.float64)),
            **exact,
        )
        assert_same(run_op(runtime, "aten::lt.Scalar", a, s), a < s)
    base = a.abs()
    for e in (2, 3, -2, 0.5, -0.5, -1, 0.1, 2.5, 3.0001):
        check_reduced_float_pow(runtime, base, e)
    # pow.Scalar: torch wraps the base in a tensor of the exponent's dtype
    # (0.3 rounds) and calls pow in float: Sleef in its vectorised loop, libm
    # in the scalar one, each within one float ulp, which can move the final
    # rounding by one 16-bit ulp.
    reference = round_like_float_math(as_dtype(0.3, dtype).double().pow(b.double()), dtype)
    assert_within_ulps(run_op(runtime, "aten::pow.Scalar", 0.3, b), reference, 1, "aten::pow.Scalar")
    assert_within_ulps(aten.pow.Scalar(0.3, b), reference, 1, "torch pow.Scalar")


def check_reduced_float_pow(runtime, base, exponent):
    """pow.Tensor_Scalar on Half/BFloat16 against float64 references of what
    torch's kernel computes. The exponent is rounded to the tensor's dtype.
    Half always calls pow in float. BFloat16 takes sqrt for 0.5, 1 / x for
    -1 and 1 / sqrt(x) for -0.5 (float arithmetic, rounded once), squares as
    x * x, cubes as (x * x rounded) * x and takes 1 / (x * x rounded) for -2:
    IEEE-exact arithmetic, so the runtime must match those bit for bit. Calls
    to pow are Sleef (vectorised loop) or libm (scalar loop, and the
    runtime's PAL), each within one float ulp: one 16-bit ulp is allowed.
    One difference between torch's loops: its scalar rsqrt rounds sqrt(x) to
    BFloat16 before dividing (ATEN_CPU_CAPABILITY=default); the runtime
    rounds once, as the vectorised loop does."""
    dtype = base.dtype
    x = base.double()
    e = as_dtype(exponent, dtype).double().item()

    def rounded(value):
        return round_like_float_math(value, dtype)

    references, ulps = [rounded(x.pow(e))], 1
    if dtype == torch.bfloat16:
        square = rounded(x * x).double()
        arithmetic = {
            2.0: [rounded(x * x)],
            3.0: [rounded(square * x)],
            -2.0: [rounded(1 / square)],
            0.5: [rounded(x.sqrt())],
            -1.0: [rounded(1 / x)],
        }
        sqrt_float = x.sqrt().to(torch.float32)  # correctly rounded, like the CPU's sqrt
        arithmetic[-0.5] = [rounded(1 / sqrt_float.double()), rounded(1 / sqrt_float.to(dtype).double())]
        if e in arithmetic:
            references, ulps = arithmetic[e], 0
    what = f"aten::pow.Tensor_Scalar exponent {exponent}"
    assert_within_ulps(run_op(runtime, "aten::pow.Tensor_Scalar", base, exponent), references[0], ulps, what)
    assert_matches_one_of(aten.pow.Tensor_Scalar(base, exponent), references, ulps, "torch " + what)


# ---- errors --------------------------------------------------------------------


def test_sub_rejects_bool_like_torch(runtime):
    mask = torch.tensor([True, False])
    with pytest.raises(PareError, match=r"aten::sub\.Tensor: argument 'self' is Bool: .*logical_not"):
        run_op(runtime, "aten::sub.Tensor", mask, mask)
    with pytest.raises(PareError, match=r"aten::sub\.Tensor: argument 'other' is Bool"):
        run_op(runtime, "aten::sub.Tensor", torch.tensor([1, 2]), True)
    with pytest.raises(
        PareError, match=r"aten::sub\.Tensor \(called from aten::sub\.Scalar\): argument 'self' is Bool"
    ):
        run_op(runtime, "aten::sub.Scalar", mask, 1)


def test_alpha_checks_match_torch(runtime):
    ints = make_tensor((3,), torch.int32, 54)
    with pytest.raises(PareError, match="alpha must not be a floating point"):
        run_op(runtime, "aten::sub.Tensor", ints, ints, 1.5)
    with pytest.raises(PareError, match="boolean alpha"):
        run_op(runtime, "aten::sub.Tensor", ints, ints, True)
    # PyTorch converts -alpha to the result dtype (unsigned types accept
    # -255..255): int8 takes alpha 128 but not -128.
    i8 = make_tensor((3,), torch.int8, 55)
    assert_same(run_op(runtime, "aten::sub.Tensor", i8, i8, 128), torch.sub(i8, i8, alpha=128))
    with pytest.raises(
        PareError,
        match=r"argument 'alpha': value 128 cannot be converted to Char without overflow "
        r"\(sub converts -alpha\)",
    ):
        run_op(runtime, "aten::sub.Tensor", i8, i8, -128)
    u8 = make_tensor((3,), torch.uint8, 56)
    for alpha in (3, -3, 255, -255):
        assert_same(run_op(runtime, "aten::sub.Tensor", u8, u8, alpha), torch.sub(u8, u8, alpha=alpha))
    with pytest.raises(PareError, match="argument 'alpha': value -256 cannot be converted to Byte"):
        run_op(runtime, "aten::sub.Tensor", u8, u8, 256)
    half = make_tensor((3,), torch.float16, 56)
    with pytest.raises(PareError, match="argument 'alpha': value -1e\\+06 cannot be converted to Half"):
        run_op(runtime, "aten::sub.Tensor", half, half, 1e6)


def test_pow_errors_match_torch(runtime):
    ints = torch.tensor([2, 3])
    with pytest.raises(
        PareError,
        match=r"aten::pow\.Tensor_Scalar: argument 'exponent': integers to negative "
        r"integer powers are not allowed",
    ):
        run_op(runtime, "aten::pow.Tensor_Scalar", ints, -1)
    with pytest.raises(PareError, match="negative integer powers"):
        run_op(runtime, "aten::pow.Tensor_Scalar", torch.tensor([True]), -2)
    assert_same(run_op(runtime, "aten::pow.Tensor_Scalar", ints, -1.0), ints**-1.0)  # float exponent: fine
    with pytest.raises(PareError, match="argument 'exponent': value 300 cannot be converted to Char"):
        run_op(runtime, "aten::pow.Tensor_Scalar", torch.tensor([1, 2], dtype=torch.int8), 300)
    with pytest.raises(PareError, match="argument 'exponent': value 1e\\+06 cannot be converted to Half"):
        run_op(runtime, "aten::pow.Tensor_Scalar", torch.tensor([1.0], dtype=torch.float16), 1e6)
    mask = torch.tensor([True, False])
    with pytest.raises(PareError, match=r"aten::pow\.Tensor_Tensor: .*Bool"):
        run_op(runtime, "aten::pow.Tensor_Tensor", mask, mask)


def test_rounding_mode_is_checked(runtime):
    a = torch.tensor([7.0])
    with pytest.raises(
        PareError,
        match=r"aten::div\.Tensor_mode: argument 'rounding_mode' must be None, 'trunc' "
        r"or 'floor', got 'round'",
    ):
        run_op(runtime, "aten::div.Tensor_mode", a, a, "round")
    with pytest.raises(PareError, match=r"rounding_mode"):
        run_op(runtime, "aten::div.Scalar_mode", a, 2, "ceil")
    with pytest.raises(PareError, match=r"argument 'rounding_mode' \(#2\) must be str"):
        run_op(runtime, "aten::div.Tensor_mode", a, a, 3)
    mask = torch.tensor([True])
    with pytest.raises(PareError, match=r"aten::div\.Tensor_mode: .*'trunc' division of two Bool"):
        run_op(runtime, "aten::div.Tensor_mode", mask, mask, "trunc")
    with pytest.raises(PareError, match=r"aten::remainder\.Tensor: .*Bool"):
        run_op(runtime, "aten::remainder.Tensor", mask, mask)
    with pytest.raises(
        PareError,
        match=r"aten::fmod\.Tensor: arguments 'self' and 'other': fmod of two Bool "
        r"operands is not supported",
    ):
        run_op(runtime, "aten::fmod.Tensor", mask, mask)
    with pytest.raises(PareError, match=r"aten::fmod\.Tensor \(called from aten::fmod\.Scalar\): .*Bool"):
        run_op(runtime, "aten::fmod.Scalar", mask, True)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.fmod(mask, mask)  # torch rejects it too


def test_bitwise_rejects_floating_point(runtime):
    with pytest.raises(
        PareError,
        match=r"aten::bitwise_and\.Tensor: arguments 'self' \(Float\) and 'other' \(Int\) "
        r"must be integral or Bool",
    ):
        run_op(runtime, "aten::bitwise_and.Tensor", torch.ones(2), torch.ones(2, dtype=torch.int32))
    with pytest.raises(PareError, match=r"aten::bitwise_or\.Tensor: .*Float"):
        run_op(runtime, "aten::bitwise_or.Tensor", torch.ones(2, dtype=torch.int64), 1.5)
    ints = torch.tensor([5, 6])
    assert_same(run_op(runtime, "aten::bitwise_and.Tensor", ints, 3), ints & 3)
    # The Scalar overloads fail in the Tensor overload they forward to, with
    # the problem and the fix on one line; torch rejects the same operands.
    for op, a, s, self_dtype in [
        ("aten::bitwise_and.Scalar", torch.ones(2), 3, "Float"),
        ("aten::bitwise_or.Scalar", torch.ones(2, dtype=torch.float16), True, "Half"),
        ("aten::bitwise_xor.Scalar", torch.ones(2, dtype=torch.int32), 1.5, "Int"),
        ("aten::bitwise_and.Scalar", torch.tensor([True]), 0.5, "Bool"),
    ]:
        tensor_op = op.replace(".Scalar", ".Tensor")
        with pytest.raises(PareError) as e:
            run_op(runtime, op, a, s)
        message = str(e.value)
        assert "\n" not in message.strip()
        assert f"{tensor_op} (called from {op}): arguments 'self' ({self_dtype}) and 'other'" in message
        assert "must be integral or Bool, their result type is" in message
        assert "convert floating operands to an integer dtype first (x.to(torch.int64))" in message
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(aten, op.split("::")[1].split(".")[0]).Scalar(a, s)
    assert_same(
        run_op(runtime, "aten::bitwise_or.Tensor", torch.tensor([True, False]), torch.tensor([False, False])),
        torch.tensor([True, False]),
    )


def test_where_checks_its_arguments(runtime):
    x = torch.ones(3)
    with pytest.raises(PareError, match=r"aten::where\.self: argument 'condition' must be a Bool tensor, got Float"):
        run_op(runtime, "aten::where.self", x, x, x)
    with pytest.raises(PareError, match=r"aten::where\.self: argument 'other' with sizes \[4\] cannot be broadcast"):
        run_op(runtime, "aten::where.self", x > 0, x, torch.ones(4))
    with pytest.raises(PareError, match=r"aten::where\.self: argument 'self' with sizes \[2\] cannot be broadcast"):
        run_op(runtime, "aten::where.self", x > 0, torch.ones(2), x)


@pytest.mark.parametrize("op", list(BINARY))
def test_incompatible_shapes_name_the_argument(runtime, op):
    dtype = binary_dtype(op)
    name = "exponent" if "pow" in op else "other"
    with pytest.raises(
        PareError,
        match=op.replace(".", r"\.") + rf": argument '{name}' with sizes \[4\] cannot be broadcast with sizes \[2, 3\]",
    ):
        run_op(runtime, op, torch.ones(2, 3, dtype=dtype), torch.ones(4, dtype=dtype))


def test_wrong_argument_kinds_name_the_argument(runtime):
    x = torch.ones(2)
    with pytest.raises(PareError, match=r"aten::eq\.Scalar: argument 'other' \(#1\) must be"):
        run_op(runtime, "aten::eq.Scalar", x, x)
    with pytest.raises(PareError, match=r"aten::pow\.Scalar: argument 'self' \(#0\) must be"):
        run_op(runtime, "aten::pow.Scalar", x, x)
    with pytest.raises(PareError, match=r"aten::where\.self: argument 'condition' \(#0\) must be Tensor"):
        run_op(runtime, "aten::where.self", True, x, x)
    with pytest.raises(PareError, match=r"aten::mul\.Scalar: argument 'other' \(#1\) must be"):
        run_op(runtime, "aten::mul.Scalar", x, [1, 2])


# ---- composition -----------------------------------------------------------------


def test_scalar_overloads_call_their_tensor_overload(tracing_runtime):
    """sub/mul/div/remainder/fmod/bitwise_* .Scalar are composites in PyTorch:
    traces record the Tensor overload as a non-root op, and the kernel tag it
    dispatches."""
    x = make_tensor((2, 3), torch.float32, 57)
    i = make_tensor((2, 3), torch.int32, 57)
    for op, callee, args, tag, dtype in [
        ("aten::sub.Scalar", "aten::sub.Tensor", (x, 2), "sub_kernel", "Float"),
        ("aten::mul.Scalar", "aten::mul.Tensor", (x, 2), "mul_kernel", "Float"),
        ("aten::div.Scalar", "aten::div.Tensor", (x, 2), "div_true_kernel", "Float"),
        ("aten::div.Scalar_mode", "aten::div.Tensor_mode", (x, 2, "floor"), "div_floor_kernel", "Float"),
        ("aten::remainder.Scalar", "aten::remainder.Tensor", (x, 2), "remainder_kernel", "Float"),
        ("aten::fmod.Scalar", "aten::fmod.Tensor", (x, 2), "fmod_kernel", "Float"),
        ("aten::bitwise_and.Scalar", "aten::bitwise_and.Tensor", (i, 3), "bitwise_and_kernel", "Int"),
        ("aten::bitwise_or.Scalar", "aten::bitwise_or.Tensor", (i, 3), "bitwise_or_kernel", "Int"),
        ("aten::bitwise_xor.Scalar", "aten::bitwise_xor.Tensor", (i, 3), "bitwise_xor_kernel", "Int"),
    ]:
        data, inputs = single_op_program(op, list(args))
        program = tracing_runtime.load(data)
        program.method().run(*[to_input(t) for t in inputs])
        trace = program.trace()
        assert {n: (u.root, u.non_root) for n, u in trace.ops.items()} == {op: (True, False), callee: (False, True)}
        assert trace.kernel_dtypes == {tag: (dtype,)}


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


@pytest.mark.parametrize("shape_a,shape_b", BROADCAST_SHAPES)
def test_add_mul_broadcasting(runtime, shape_a, shape_b):
    a, b = make_tensor(shape_a, torch.float32, 6), make_tensor(shape_b, torch.float32, 7)
    assert_same(run_op(runtime, "aten::add.Tensor", a, b, 3), torch.add(a, b, alpha=3))
    assert_same(run_op(runtime, "aten::mul.Tensor", a, b), a * b)


def test_add_mul_non_contiguous_inputs(runtime):
    base = make_tensor((6, 8, 5), torch.float32, 8)
    transposed = base.transpose(0, 2)  # [5, 8, 6]
    sliced = make_tensor((5, 16, 12), torch.float32, 9)[:, ::2, ::2]  # [5, 8, 6] strided
    expanded = make_tensor((1, 8, 1), torch.float32, 10).expand(5, 8, 6)
    for a, b in itertools.permutations([transposed, sliced, expanded], 2):
        assert not a.is_contiguous() or not b.is_contiguous()
        assert_same(run_op(runtime, "aten::add.Tensor", a, b), a + b)
        assert_same(run_op(runtime, "aten::mul.Tensor", a, b), a * b)
    assert_same(run_op(runtime, "aten::relu", transposed), torch.relu(transposed))


def test_add_mul_large_contiguous_and_broadcast_fast_paths(runtime):
    a = make_tensor((64, 1000), torch.float32, 11)
    row = make_tensor((1000,), torch.float32, 12)
    assert_same(run_op(runtime, "aten::add.Tensor", a, row), a + row)
    assert_same(run_op(runtime, "aten::add.Tensor", a, a), a + a)
    assert_same(run_op(runtime, "aten::mul.Tensor", a, 0.5), a * 0.5)


# The promotion pairs but the last two (bool/float32, int8/int64).
@pytest.mark.parametrize("da,db", PROMOTION_PAIRS[:8])
def test_add_mul_tensor_tensor_promotion(runtime, da, db):
    a, b = make_tensor((3, 4), da, 13), make_tensor((3, 4), db, 14)
    assert_same(run_op(runtime, "aten::add.Tensor", a, b), torch.add(a, b))
    assert_same(run_op(runtime, "aten::mul.Tensor", a, b), torch.mul(a, b))


def test_add_mul_zero_dim_tensors_promote_like_torch(runtime):
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
def test_add_mul_tensor_scalar_promotion(runtime, dtype, scalar):
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


def test_add_mul_alpha_checks_match_torch(runtime):
    from pare.runtime import PareError

    ints = make_tensor((3,), torch.int32, 21)
    with pytest.raises(PareError, match="alpha must not be a floating point"):
        run_op(runtime, "aten::add.Tensor", ints, ints, 1.5)
    with pytest.raises(PareError, match="boolean alpha"):
        run_op(runtime, "aten::add.Tensor", ints, ints, True)


def test_add_mul_integer_overflow_wraps_like_torch(runtime):
    a = torch.tensor([120, -128, 127], dtype=torch.int8)
    assert_same(run_op(runtime, "aten::add.Tensor", a, a), a + a)
    assert_same(run_op(runtime, "aten::mul.Tensor", a, a), a * a)
    big = torch.tensor([2**62, -(2**63)], dtype=torch.int64)
    assert_same(run_op(runtime, "aten::add.Tensor", big, big), big + big)


def test_add_mul_incompatible_shapes_name_the_argument(runtime):
    from pare.runtime import PareError

    with pytest.raises(PareError, match=r"aten::add.Tensor: argument 'other' with sizes \[4\] cannot be broadcast"):
        run_op(runtime, "aten::add.Tensor", torch.ones(2, 3), torch.ones(4))


def test_add_mul_wrong_argument_kind_names_argument(runtime):
    from pare.runtime import PareError

    with pytest.raises(PareError, match=r"aten::relu: argument 'self' \(#0\) must be Tensor, got int\[\]"):
        run_op(runtime, "aten::relu", [1, 2])
