"""The unary_math family (runtime/kernels/unary_math/) vs torch: relu, floating ops (sqrt, rsqrt, exp, log,
reciprocal, sigmoid, tanh, sin, cos, erf, expm1, log1p, log2, log10, tan,
asin, acos, atan, sinh, cosh, asinh, acosh, atanh), activations (gelu, silu,
hardswish, hardsigmoid, leaky_relu, elu, hardtanh), clamp / clamp.Tensor,
abs, neg, sign, bitwise_not, logical_not, isnan, isinf, floor, ceil, trunc,
round and round.decimals.

Every op runs on every one of the ten dtypes: where torch's CPU kernel
accepts the dtype the results must match (dtype, shape, values), and where
torch rejects it the runtime must return an error, not a crash. Then
special values, non-contiguous / expanded / 0-dim / empty inputs, type
promotion, broadcasting and error messages."""

import pytest
import runtime_testing
import torch
from runtime_testing import ALL_DTYPES, FLOAT_DTYPES, assert_same, assert_within_ulps, make_tensor, run_op

from pare.program import ProgramBuilder
from pare.runtime import PareError

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

A = torch.ops.aten
NAN, INF = float("nan"), float("inf")
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def check(runtime, op: str, torch_fn, *args):
    """run_op(op, *args) matches torch_fn(*args), or both fail."""
    return runtime_testing.same_or_both_fail(runtime, op, args, lambda: torch_fn(*args))


# op -> (torch function, input range). Ranges include values outside the
# domain (sqrt/log of negatives, 1/0) so NaN and inf are compared too.
FLOATING_OPS = {
    "aten::sqrt": (A.sqrt, (-2, 8)),
    "aten::rsqrt": (A.rsqrt, (-2, 8)),
    "aten::exp": (A.exp, (-8, 8)),
    "aten::log": (A.log, (-2, 8)),
    "aten::reciprocal": (A.reciprocal, (-8, 8)),
    "aten::sigmoid": (A.sigmoid, (-8, 8)),
    "aten::tanh": (A.tanh, (-4, 4)),
    "aten::sin": (A.sin, (-8, 8)),
    "aten::cos": (A.cos, (-8, 8)),
    "aten::erf": (A.erf, (-3, 3)),
    "aten::expm1": (A.expm1, (-8, 8)),
    "aten::log1p": (A.log1p, (-2, 8)),
    "aten::log2": (A.log2, (-2, 8)),
    "aten::log10": (A.log10, (-2, 8)),
    "aten::tan": (A.tan, (-1, 1)),
    "aten::asin": (A.asin, (-1, 1)),
    "aten::acos": (A.acos, (-1, 1)),
    "aten::atan": (A.atan, (-8, 8)),
    "aten::sinh": (A.sinh, (-8, 8)),
    "aten::cosh": (A.cosh, (-8, 8)),
    "aten::asinh": (A.asinh, (-8, 8)),
    "aten::acosh": (A.acosh, (-1, 8)),
    "aten::atanh": (A.atanh, (-1, 1)),  # the special values below leave the domain
}

ACTIVATIONS = {
    "aten::gelu": (A.gelu, ()),
    "aten::silu": (A.silu, ()),
    "aten::hardswish": (A.hardswish, ()),
    "aten::hardsigmoid": (A.hardsigmoid, ()),
    "aten::leaky_relu": (A.leaky_relu, ()),
    "aten::elu": (A.elu, ()),
    "aten::hardtanh": (A.hardtanh, ()),
}

SAME_DTYPE_OPS = {
    "aten::abs": A.abs,
    "aten::neg": A.neg,
    "aten::sign": A.sign,
    "aten::bitwise_not": A.bitwise_not,
    "aten::logical_not": A.logical_not,
    "aten::isnan": A.isnan,
    "aten::isinf": A.isinf,
    "aten::floor": A.floor,
    "aten::ceil": A.ceil,
    "aten::trunc": A.trunc,
    "aten::round": A.round,
}

ALL_OPS = {**{k: v[0] for k, v in FLOATING_OPS.items()}, **{k: v[0] for k, v in ACTIVATIONS.items()}, **SAME_DTYPE_OPS}


# ---------------------------------------------------------------------------
# Every op x every dtype.


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", FLOATING_OPS)
def test_floating_ops_every_dtype(runtime, op, dtype):
    fn, (low, high) = FLOATING_OPS[op]
    a = make_tensor((3, 7), dtype, 1, low, high)
    out = check(runtime, op, fn, a)
    # Integral and Bool inputs promote to the default float dtype.
    assert out.dtype == (dtype if dtype.is_floating_point else torch.float32)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", ACTIVATIONS)
def test_activations_every_dtype(runtime, op, dtype):
    a = make_tensor((4, 9), dtype, 2, -6, 6)
    out = check(runtime, op, ACTIVATIONS[op][0], a)
    # hardtanh also takes integers, but Byte only with non-negative bounds
    # (the default min_val is -1).
    supported = FLOAT_DTYPES + (INT_DTYPES[1:] if op == "aten::hardtanh" else [])
    assert (out is not None) == (dtype in supported)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", SAME_DTYPE_OPS)
def test_sign_bit_and_rounding_ops_every_dtype(runtime, op, dtype):
    a = make_tensor((5, 6), dtype, 3)
    check(runtime, op, SAME_DTYPE_OPS[op], a)


# ---------------------------------------------------------------------------
# Special values and integer extremes.

SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -3.0, 1e-3, -1e-3, 20.0, -20.0, 100.0, -100.0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_special_float_values(runtime, op, dtype):
    a = torch.tensor(SPECIAL, dtype=dtype)
    if op != "aten::gelu":
        check(runtime, op, ALL_OPS[op], a)
        return
    # gelu(x) = x * Phi(x): torch's own kernel (its scalar and vectorised
    # loops, on every ATEN_CPU_CAPABILITY) computes x * 0.5 * (1 + erf(x /
    # sqrt(2))), which is +inf at +inf and -inf * 0 = NaN at -inf, as the
    # runtime does. But torch hands contiguous Float tensors of more than one
    # element (and BFloat16 ones on CPUs with AVX-512) to oneDNN,
    # whose JIT code follows oneDNN's own CPU dispatch (ONEDNN_MAX_CPU_ISA,
    # not ATEN_CPU_CAPABILITY): its AVX-512 code returns NaN at +inf, its
    # AVX2 code +inf. So infinities are checked against the limits instead of
    # whichever kernel this CPU runs: +inf at +inf (the mathematical value);
    # NaN (torch's formula) or 0 (the limit) at -inf. The finite values and
    # NaN compare with torch.
    actual = run_op(runtime, op, a)
    finite_or_nan = ~a.isinf()
    assert_same(actual[finite_or_nan], A.gelu(a)[finite_or_nan])
    assert actual[a == INF].tolist() == [INF]
    at_minus_inf = actual[a == -INF]
    assert at_minus_inf.isnan().all() or at_minus_inf.tolist() == [0.0], at_minus_inf


def test_sign_of_nan_and_negative_zero_is_zero(runtime):
    out = run_op(runtime, "aten::sign", torch.tensor([NAN, -0.0, 0.0, -INF]))
    assert out.tolist() == [0.0, 0.0, 0.0, -1.0]
    assert not torch.signbit(out[:3]).any()


def test_round_is_half_to_even(runtime):
    a = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999])
    assert run_op(runtime, "aten::round", a).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize(
    "op",
    [
        "aten::abs",
        "aten::neg",
        "aten::sign",
        "aten::bitwise_not",
        "aten::logical_not",
        "aten::floor",
        "aten::ceil",
        "aten::round",
    ],
)
def test_integer_extremes_wrap_like_torch(runtime, op, dtype):
    info = torch.iinfo(dtype)
    a = torch.tensor([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 1, info.max - 1, info.max], dtype=dtype)
    check(runtime, op, SAME_DTYPE_OPS[op], a)


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=str)
def test_floating_ops_on_integer_extremes(runtime, dtype):
    info = torch.iinfo(dtype) if dtype != torch.bool else None
    a = (
        torch.tensor([info.min, -1 if info.min < 0 else 2, 0, 1, info.max], dtype=dtype)
        if info
        else torch.tensor([True, False])
    )
    for op in ["aten::sqrt", "aten::reciprocal", "aten::exp", "aten::log", "aten::sigmoid"]:
        check(runtime, op, FLOATING_OPS[op][0], a)


# ---------------------------------------------------------------------------
# Layouts: non-contiguous, expanded, 0-dim, empty, large.


def layouts(dtype, seed):
    base = make_tensor((6, 8, 5), dtype, seed, -4, 4)
    return {
        "transposed": base.transpose(0, 2),
        "sliced": make_tensor((5, 16, 12), dtype, seed + 1, -4, 4)[:, ::2, ::3],
        "expanded": make_tensor((1, 8, 1), dtype, seed + 2, -4, 4).expand(5, 8, 6),
        "zero_dim": torch.tensor(-1.75).to(dtype),
        "empty": torch.empty((0, 4), dtype=dtype),
        "empty_inner": torch.empty((3, 0), dtype=dtype),
        "large": make_tensor((64, 257), dtype, seed + 3, -4, 4),
        "column": make_tensor((40, 3), dtype, seed + 4, -4, 4)[:, 1],
    }


@pytest.mark.parametrize("layout", list(layouts(torch.float32, 0)))
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_layouts(runtime, op, layout):
    dtype = torch.int32 if op == "aten::bitwise_not" else torch.float32
    a = layouts(dtype, 10)[layout]
    check(runtime, op, ALL_OPS[op], a)


@pytest.mark.parametrize("layout", ["transposed", "expanded", "zero_dim", "empty"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.uint8], ids=str)
def test_layouts_other_dtypes(runtime, dtype, layout):
    a = layouts(dtype, 20)[layout]
    for op in [
        "aten::sqrt",
        "aten::sigmoid",
        "aten::abs",
        "aten::neg",
        "aten::sign",
        "aten::logical_not",
        "aten::floor",
        "aten::hardtanh",
    ]:
        check(runtime, op, ALL_OPS[op], a)
    check(runtime, "aten::clamp", A.clamp, a, 1, 3)


# ---------------------------------------------------------------------------
# Activation parameters.


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_approximations(runtime, dtype, approximate):
    a = make_tensor((7, 11), dtype, 4, -6, 6)
    assert_same(run_op(runtime, "aten::gelu", a, approximate), A.gelu(a, approximate=approximate))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("slope", [0.2, 2, -0.5, True, 0.0])
def test_leaky_relu_slopes(runtime, dtype, slope):
    a = make_tensor((5, 8), dtype, 5)
    assert_same(run_op(runtime, "aten::leaky_relu", a, slope), A.leaky_relu(a, slope))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("params", [(1,), (0.5,), (2, 3), (1.5, 1.0507, 0.7), (-2, 1, 1), (1, 1, 2)])
def test_elu_parameters(runtime, dtype, params):
    a = make_tensor((5, 8), dtype, 6, -4, 4)
    assert_same(run_op(runtime, "aten::elu", a, *params), A.elu(a, *params))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != torch.bool], ids=str)
@pytest.mark.parametrize(
    "bounds",
    [(), (-2,), (-3, 2), (-2.7, 3.9), (0, 5), (5, 1), (-0.5, 0.5), (-1e6, 1e6), (-300, 300), (float("-inf"), INF)],
    ids=str,
)
def test_hardtanh_bounds(runtime, dtype, bounds):
    # Integral tensors truncate the bounds and never promote; Byte rejects
    # negative bounds; bounds that do not fit the dtype are errors.
    a = make_tensor((4, 6), dtype, 7)
    check(runtime, "aten::hardtanh", A.hardtanh, a, *bounds)


# ---------------------------------------------------------------------------
# clamp with Scalar bounds.

CLAMP_BOUNDS = [
    (-2, 3),
    (2, None),
    (None, 1),
    (-1.5, 2.5),
    (0.25, None),
    (None, -0.25),
    (True, None),
    (False, True),
    (5, 1),
    (0, 200),
    (-200, 0),
    (-255, 300),
    (1e6, None),
    (None, 1e39),
    (NAN, None),
    (None, NAN),
    (NAN, 1),
    (float("-inf"), INF),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("bounds", CLAMP_BOUNDS, ids=str)
def test_clamp_every_dtype_and_bound_kind(runtime, dtype, bounds):
    # Covers promotion (Bool/int tensors with int, float and bool bounds),
    # checked conversion of bounds (overflow is an error, as in torch),
    # NaN bounds and min > max.
    a = make_tensor((3, 8), dtype, 8)
    check(runtime, "aten::clamp", A.clamp, a, *bounds)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.float16, torch.bool], ids=str)
@pytest.mark.parametrize("bounds", [(2, 5), (0.5, None), (None, 3)], ids=str)
def test_clamp_zero_dim_self_promotes_like_torch(runtime, dtype, bounds):
    check(runtime, "aten::clamp", A.clamp, torch.tensor(4).to(dtype), *bounds)


def test_clamp_nan_elements_propagate(runtime):
    a = torch.tensor([NAN, -5.0, 0.0, 5.0] * 9)
    for bounds in [(-1, 1), (-1, None), (None, 1)]:
        assert_same(run_op(runtime, "aten::clamp", a, *bounds), A.clamp(a, *bounds))


# ---------------------------------------------------------------------------
# clamp.Tensor.


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("which", ["both", "min", "max"])
def test_clamp_tensor_every_dtype(runtime, dtype, which):
    a = make_tensor((4, 6), dtype, 9)
    lo = make_tensor((4, 6), dtype, 10, -8, 0)
    hi = make_tensor((1, 6), dtype, 11, 0, 8)
    args = {"both": (a, lo, hi), "min": (a, lo), "max": (a, None, hi)}[which]
    check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, *args)


@pytest.mark.parametrize(
    "shapes",
    [((4, 1, 3), (5, 3), (1,)), ((2, 3), (), ()), ((), (3,), (2, 1)), ((0, 3), (1, 3), (3,)), ((3, 1), (1, 4), None)],
    ids=str,
)
def test_clamp_tensor_broadcasting(runtime, shapes):
    sa, smin, smax = shapes
    a = make_tensor(sa, torch.float32, 12)
    lo = make_tensor(smin, torch.float32, 13, -8, 0)
    hi = make_tensor(smax, torch.float32, 14, 0, 8) if smax is not None else None
    check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, a, lo, hi)


@pytest.mark.parametrize(
    "dtypes",
    [
        (torch.int32, torch.float32, torch.int64),
        (torch.uint8, torch.int8, None),
        (torch.float16, torch.bfloat16, None),
        (torch.bool, torch.int16, torch.bool),
        (torch.int64, torch.float64, torch.float16),
    ],
    ids=str,
)
def test_clamp_tensor_promotion(runtime, dtypes):
    da, dmin, dmax = dtypes
    a = make_tensor((3, 5), da, 15)
    lo = make_tensor((3, 5), dmin, 16, -8, 0)
    hi = make_tensor((5,), dmax, 17, 0, 8) if dmax is not None else None
    check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, a, lo, hi)
    # A 0-dim bound does not promote a dimensioned tensor of the same category.
    check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, a, lo[0, 0].clone(), None)


def test_clamp_tensor_non_contiguous_and_nan(runtime):
    a = make_tensor((6, 8), torch.float32, 18).t()
    lo = make_tensor((8, 12), torch.float32, 19, -8, 0)[:, ::2]
    hi = make_tensor((1, 6), torch.float32, 20, 0, 8).expand(8, 6)
    check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, a, lo, hi)
    x = torch.tensor([NAN, 1.0, 2.0, 3.0])
    lo = torch.tensor([0.0, NAN, 0.0, 0.0])
    hi = torch.tensor([5.0, 5.0, NAN, 1.0])
    for args in [(x, lo, hi), (x, lo), (x, None, hi)]:
        check(runtime, "aten::clamp.Tensor", A.clamp.Tensor, *args)


# ---------------------------------------------------------------------------
# round.decimals.


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2, 400, -400])
def test_round_decimals(runtime, dtype, decimals):
    a = make_tensor((4, 7), dtype, 21, -300, 300) if dtype.is_floating_point else make_tensor((3,), dtype, 21)
    if dtype.is_floating_point:
        a = torch.cat([a.flatten(), torch.tensor([0.125, 2.5, -2.5, 1.2345, 125.0, 150.0, NAN, INF], dtype=dtype)])
    check(runtime, "aten::round.decimals", lambda t, d: A.round.decimals(t, decimals=d), a, decimals)


# ---------------------------------------------------------------------------
# Errors name the op, the argument and the expectation.


def test_error_messages(runtime):
    ints = torch.arange(4)
    cases = [
        (
            "aten::gelu",
            (ints,),
            r"aten::gelu: argument 'self' has dtype Long, which is not supported "
            r"\(kernel tag gelu_kernel handles Half, BFloat16, Float, Double\)",
        ),
        (
            "aten::gelu",
            (torch.ones(2), "erf"),
            r"aten::gelu: argument 'approximate' must be 'none' or 'tanh', got 'erf'",
        ),
        ("aten::abs", (torch.ones(2, dtype=torch.bool),), r"aten::abs: argument 'self' has dtype Bool"),
        ("aten::neg", (torch.ones(2, dtype=torch.bool),), r"aten::neg: argument 'self': negation of a Bool tensor"),
        ("aten::bitwise_not", (torch.ones(2),), r"aten::bitwise_not: argument 'self' has dtype Float"),
        ("aten::round.decimals", (ints, 2), r"aten::round.decimals: argument 'self' has dtype Long"),
        ("aten::clamp", (torch.ones(2),), r"aten::clamp: at least one of arguments 'min' and 'max' must not be None"),
        ("aten::clamp", (torch.ones(2), None, None), r"at least one of arguments 'min' and 'max'"),
        ("aten::clamp.Tensor", (torch.ones(2), None, None), r"aten::clamp.Tensor: at least one of arguments"),
        (
            "aten::clamp",
            (torch.ones(2, dtype=torch.int8), 300),
            r"aten::clamp: argument 'min': value 300 cannot be converted to Char without overflow",
        ),
        (
            "aten::clamp",
            (torch.ones(2, dtype=torch.float16), None, 1e6),
            r"argument 'max': value 1e\+06 cannot be converted to Half without overflow",
        ),
        (
            "aten::clamp",
            (torch.ones(2, dtype=torch.bool), True),
            r"aten::clamp: the result .* has dtype Bool, which is not supported",
        ),
        (
            "aten::clamp.Tensor",
            (torch.ones(2, dtype=torch.bool),) * 3,
            r"clamping Bool tensors between 'min' and 'max'",
        ),
        (
            "aten::clamp.Tensor",
            (torch.ones(2, 3), torch.ones(4)),
            r"aten::clamp.Tensor: argument 'min' with sizes \[4\] cannot be broadcast",
        ),
        ("aten::hardtanh", (torch.ones(2, dtype=torch.bool),), r"aten::hardtanh: argument 'self': .*Bool"),
        (
            "aten::hardtanh",
            (torch.ones(2, dtype=torch.uint8), -1, 3),
            r"aten::hardtanh: arguments 'min_val' and 'max_val' must not be negative for a Byte tensor, got -1 and 3",
        ),
        ("aten::hardtanh", (ints, NAN), r"aten::hardtanh: argument 'min_val': value nan cannot be converted to Long"),
        (
            "aten::hardtanh",
            (torch.ones(2, dtype=torch.int8), 0, 1000),
            r"aten::hardtanh: argument 'max_val': value 1000 cannot be converted to Char",
        ),
        ("aten::leaky_relu", (torch.ones(2), 1e300), r"argument 'negative_slope': value 1e\+300 cannot be converted"),
        ("aten::elu", (torch.ones(2), 1, 1e300), r"aten::elu: argument 'scale'"),
        ("aten::sqrt", ([1, 2],), r"aten::sqrt: argument 'self' \(#0\) must be Tensor"),
        ("aten::leaky_relu", (torch.ones(2), [1]), r"aten::leaky_relu: argument 'negative_slope' \(#1\) must be"),
    ]
    for op, args, pattern in cases:
        with pytest.raises(PareError, match=pattern):
            run_op(runtime, op, *args)


# ---------------------------------------------------------------------------
# Tracing: what a manifest needs for these ops.


def test_tracing_records_promotion_and_hardtanh_calling_clamp(tracing_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None])
    i = m.input("Int", [None])
    m.output(m.op("aten::hardtanh", x, -0.5, 0.5), m.op("aten::sqrt", i))
    program = tracing_runtime.load(pb.to_bytes())
    program.method().run(torch.randn(5).numpy(), torch.arange(5, dtype=torch.int32).numpy())
    trace = program.trace()
    assert {name: (u.root, u.non_root) for name, u in trace.ops.items()} == {
        "aten::hardtanh": (True, False),
        "aten::clamp": (False, True),
        "aten::sqrt": (True, False),
    }
    assert trace.kernel_dtypes == {
        "clamp_kernel": ("Float",),
        "sqrt_kernel": ("Float",),
        "copy_kernel": ("Int", "Float"),
    }


@pytest.mark.parametrize("approximate,tag", [("none", "gelu_kernel"), ("tanh", "gelu_tanh_kernel")])
def test_each_gelu_form_records_its_own_tag(tracing_runtime, approximate, tag):
    # A runtime selected from this trace carries only the form the model uses.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::gelu", m.input("Float", [None]), approximate))
    program = tracing_runtime.load(pb.to_bytes())
    x = torch.linspace(-4, 4, 9)
    (got,) = program.method().run(x.numpy())
    want = torch.nn.functional.gelu(x.double(), approximate=approximate).float()
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-6, atol=1e-6)
    assert program.trace().kernel_dtypes == {tag: ("Float",)}


# float exp, tanh and erf are inline polynomials (runtime/kernels/common/math.h),
# held here to their stated bounds against float64 over their whole range:
# a dense sweep, the points where their formulas switch, and special values.
POLY_SPECIAL = [
    0.0,
    -0.0,
    float("inf"),
    float("-inf"),
    float("nan"),
    88.72,
    88.73,
    -87.33,
    -103.9,
    -150.0,
    1e-30,
    -1e-30,
    0.625,
    -0.625,
    0.62499994,
    9.0,
    -9.0,
    20.0,
    0.875,
    -0.87499994,
    3.9192057,
    3.92,
]


def _float32_sweep(low, high, count=200_001):
    values = torch.linspace(low, high, count, dtype=torch.float64).float()
    return torch.cat([values, torch.tensor(POLY_SPECIAL, dtype=torch.float32)])


@pytest.mark.parametrize(
    "op,reference,low,high,ulps",
    [
        # Bounds with a margin: a 400,001-point sweep measured 1, 1 and 2 ulps
        # (torch's own float kernels: the same), with and without FMA.
        ("aten::exp", torch.exp, -87.3, 88.7, 2),  # normal results
        ("aten::tanh", torch.tanh, -12.0, 12.0, 2),
        ("aten::sigmoid", torch.sigmoid, -80.0, 80.0, 3),  # 1 / (1 + exp(-x)): exp's error and two roundings
        ("aten::erf", torch.erf, -5.0, 5.0, 2),  # every float measured within 1 ulp of correctly rounded
    ],
)
def test_float_polynomials_within_their_ulp_bounds(runtime, op, reference, low, high, ulps):
    x = _float32_sweep(low, high)
    got = run_op(runtime, op, x)
    assert_within_ulps(got, reference(x.double()).float(), ulps, op)


def test_float_exp_underflows_gradually(runtime):
    # Results below float's smallest normal (x < -87.3): within one
    # subnormal step (1.4e-45) of the float64 result, and 0 below -103.9.
    x = torch.linspace(-110.0, -87.3, 20_001, dtype=torch.float64).float()
    got, want = run_op(runtime, "aten::exp", x).double(), torch.exp(x.double())
    assert ((got - want).abs() <= 2 * 1.401298464324817e-45 + 2.4e-7 * want).all()


def test_float_polynomials_special_values_are_exact(runtime):
    # Signed zeros, infinities, NaN and saturation, bit for bit (the ulp
    # helpers treat -0.0 and 0.0 as equal, so these are checked apart).
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30, -1e-30, 200.0, -200.0]
    saturating = [9.5, -20.0, 44.5, -1e30]  # tanh is +-1.0f exactly from |x| > 9.01
    # erf is +-1.0f from 3.9192059 on (at +-1e-30 it is within its 1 ulp, not exact: the sweep checks it).
    erf_saturating = [3.9192059, -3.92, 1e30]
    for op, reference, values in (
        ("aten::tanh", torch.tanh, specials + saturating),
        ("aten::exp", torch.exp, specials),
        ("aten::erf", torch.erf, specials[:5] + specials[7:] + erf_saturating),
    ):
        x = torch.tensor(values)
        got, want = run_op(runtime, op, x), reference(x.double()).float()
        assert torch.equal(got.isnan(), want.isnan()), op
        keep = ~want.isnan()
        assert torch.equal(got[keep], want[keep]) and torch.equal(got[keep].signbit(), want[keep].signbit()), op


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
