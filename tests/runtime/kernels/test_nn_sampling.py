"""Sampling ops of the nn family (runtime/kernels/nn/grid_sampler.cc and
col2im.cc) vs torch: aten::grid_sampler_2d (F.grid_sample on 4-d input) and
aten::col2im (nn.Fold).

grid_sampler_2d is compared for every dtype of its tag, interpolation mode,
padding mode and align_corners, on grids reaching past [-1, 1], on exact
rounding ties (nearest must pick torch's pixel: round half to even), on
NaN and infinite grid values, on strided inputs and grids, on empty
shapes and on the errors bad arguments raise. Half and BFloat16 round every
operation as torch's kernel does, so they match it exactly. col2im sums in
torch's order, so it matches exactly too, for every dtype, batched and
unbatched, with every geometry argument in play, and fails where torch
fails."""

import pytest
import runtime_build
import torch
import torch.nn as nn
import torch.nn.functional as F
from runtime_testing import FLOAT_DTYPES, assert_same, lower_forward, make_tensor, run_op

import codegen
from pare.runtime import PareError
from tools.tracer.exporter import decomposition_table

pytestmark = pytest.mark.fp_ops  # see tests/runtime/conftest.py

A = torch.ops.aten
GRID = "aten::grid_sampler_2d"
COL2IM = "aten::col2im"
BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
COL2IM_DTYPES = FLOAT_DTYPES + [torch.bool]
EXACT = dict(rtol=0, atol=0)
TORCH_FUSES = torch.backends.cpu.get_cpu_capability() != "DEFAULT"


def _grid(shape, dtype, seed, bound):
    """A grid of points uniform in [-bound, bound]."""
    return make_tensor(shape, torch.float64, seed, -bound, bound).to(dtype)


def _grid_tolerances(dtype, interpolation):
    # Half and BFloat16 round every operation as torch does, and nearest
    # copies a pixel: exact. Float and double sum the same products in the
    # same order: exact against torch's scalar loops (ATEN_CPU_CAPABILITY=
    # default), within rounding of its AVX2/AVX-512 loops, which fuse
    # multiplies and adds.
    if dtype in (torch.float16, torch.bfloat16) or interpolation == NEAREST or not TORCH_FUSES:
        return EXACT
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)


def _check_grid(runtime, x, grid, interpolation, padding, align_corners):
    want = A.grid_sampler_2d(x, grid, interpolation, padding, align_corners)
    got = run_op(runtime, GRID, x, grid, interpolation, padding, align_corners)
    assert_same(got, want, **_grid_tolerances(x.dtype, interpolation))
    return got


def _both_fail(runtime, op, args, reference, match):
    """torch raises for these arguments and the runtime fails with `match`."""
    with pytest.raises((RuntimeError, NotImplementedError)):
        reference(*args)
    with pytest.raises(PareError, match=match):
        run_op(runtime, op, *args)


# ---------------------------------------------------------------------------
# grid_sampler_2d


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("interpolation", [BILINEAR, NEAREST, BICUBIC], ids=["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", [ZEROS, BORDER, REFLECTION], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True], ids=["edges", "corners"])
def test_grid_sampler_every_mode(runtime, dtype, interpolation, padding, align_corners):
    x = make_tensor((2, 3, 5, 7), dtype, 1)
    # Past [-1, 1] on every side: padding at work, reflection folding twice.
    _check_grid(runtime, x, _grid((2, 4, 6, 2), dtype, 2, 2.5), interpolation, padding, align_corners)
    _check_grid(runtime, x, _grid((2, 9, 3, 2), dtype, 3, 1.0), interpolation, padding, align_corners)
    # Far outside: many reflections.
    _check_grid(runtime, x, _grid((2, 3, 5, 2), dtype, 4, 40.0), interpolation, padding, align_corners)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("interpolation", [BILINEAR, NEAREST, BICUBIC], ids=["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", [ZEROS, BORDER, REFLECTION], ids=["zeros", "border", "reflection"])
def test_grid_sampler_single_pixel_and_row(runtime, dtype, interpolation, padding):
    # Size-1 dims: align_corners scales by size - 1 = 0, and reflection over
    # one pixel is empty.
    grid = _grid((1, 3, 4, 2), dtype, 5, 1.5)
    for shape in [(1, 2, 1, 1), (1, 2, 1, 6), (1, 2, 6, 1)]:
        x = make_tensor(shape, dtype, 6)
        for align_corners in (False, True):
            _check_grid(runtime, x, grid, interpolation, padding, align_corners)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("padding", [ZEROS, BORDER, REFLECTION], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True], ids=["edges", "corners"])
def test_grid_sampler_nearest_ties_round_half_to_even(runtime, dtype, padding, align_corners):
    # Grid values whose source coordinates are exactly k + 0.5: nearest must
    # round them to the even neighbour, as torch's nearbyint does.
    size = 9 if align_corners else 8  # scales (size - 1) / 2 and size / 2 of 4: exact ties
    x = torch.arange(1, 1 + 2 * 5 * size, dtype=torch.float64).reshape(1, 2, 5, size).to(dtype)
    steps = torch.arange(-4 * size, 4 * size + 1, dtype=torch.float64)
    if align_corners:  # x = (g + 1) (size - 1) / 2 = k + 0.5
        g = (2 * steps + 1) / (size - 1) - 1
    else:  # x = ((g + 1) size - 1) / 2 = k + 0.5
        g = (2 * steps + 2) / size - 1
    g = g[: (g.numel() // 5) * 5].reshape(1, -1, 5)
    grid = torch.stack([g, torch.zeros_like(g)], dim=-1).to(dtype)
    got = _check_grid(runtime, x, grid, NEAREST, padding, align_corners)
    if padding == BORDER and not align_corners:
        # Half-way points inside the image land on even columns only.
        inside = got[0, 0][(got[0, 0] > 0)]
        assert set(((inside - 1) % size).int().tolist()) <= {0, 2, 4, 6, 7}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("interpolation", [BILINEAR, NEAREST, BICUBIC], ids=["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", [ZEROS, BORDER, REFLECTION], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True], ids=["edges", "corners"])
def test_grid_sampler_nan_and_infinite_grid(runtime, dtype, interpolation, padding, align_corners):
    # torch's results are the same on every CPU capability: a NaN clips to
    # 0 under border and reflection, an index out of int range reads
    # nothing under zeros (Half and BFloat16 keep the low 16 bits of it:
    # index 0), and a NaN weight makes the sum NaN.
    x = torch.arange(1, 1 + 3 * 4, dtype=torch.float64).reshape(1, 1, 3, 4).to(dtype)
    nan, inf = float("nan"), float("inf")
    values = [nan, inf, -inf, 1e4, -1e4, 3e4, 5e4, -5e4, 1e10, -1e10, 0.25]
    points = [[v, 0.0] for v in values] + [[0.0, v] for v in values] + [[nan, inf], [-inf, nan]]
    grid = torch.tensor(points, dtype=torch.float64)[None, None].to(dtype)
    _check_grid(runtime, x, grid, interpolation, padding, align_corners)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("interpolation", [BILINEAR, NEAREST, BICUBIC], ids=["bilinear", "nearest", "bicubic"])
def test_grid_sampler_strided_input_and_grid(runtime, dtype, interpolation):
    x = make_tensor((2, 6, 5, 3), dtype, 7).permute(0, 3, 1, 2)  # channels last
    # The grid from a conv net's output: (N, 2, H, W) permuted, and a
    # column-sliced one.
    grid = _grid((2, 2, 4, 5), dtype, 8, 1.3).permute(0, 2, 3, 1)
    sliced = _grid((2, 4, 10, 3), dtype, 9, 1.3)[:, :, ::2, 1:]
    for padding in (ZEROS, BORDER, REFLECTION):
        for align_corners in (False, True):
            _check_grid(runtime, x, grid, interpolation, padding, align_corners)
            _check_grid(runtime, x[:, ::2], sliced, interpolation, padding, align_corners)
            # A batch broadcast over one image.
            one = make_tensor((1, 3, 4, 4), dtype, 10).expand(2, 3, 4, 4)
            _check_grid(runtime, one, sliced, interpolation, padding, align_corners)


def test_grid_sampler_larger_image_threads(runtime):
    # Enough work to split across threads; float64 so the comparison is tight.
    x = make_tensor((3, 8, 40, 50), torch.float64, 11)
    grid = _grid((3, 33, 47, 2), torch.float64, 12, 1.1)
    for interpolation in (BILINEAR, NEAREST, BICUBIC):
        _check_grid(runtime, x, grid, interpolation, REFLECTION, False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_grid_sampler_reduced_float_large_plane(runtime, dtype):
    # A deliberate difference: torch's Half and BFloat16 kernel gathers with
    # int16 offsets, which wrap past 32767 elements per plane and read the
    # wrong pixels; the runtime's offsets are int64. Nearest at pixel
    # centres copies pixels, so Float's result is the reference.
    x = make_tensor((1, 2, 200, 200), dtype, 17)
    g = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0], dtype=torch.float64)
    grid = torch.stack(torch.meshgrid(g, g, indexing="xy"), dim=-1)[None].to(dtype)
    want = A.grid_sampler_2d(x.float(), grid.float(), NEAREST, ZEROS, True).to(dtype)
    assert_same(run_op(runtime, GRID, x, grid, NEAREST, ZEROS, True), want, **EXACT)


def test_grid_sampler_empty(runtime):
    x = make_tensor((2, 3, 4, 5), torch.float32, 13)
    grid = _grid((2, 6, 7, 2), torch.float32, 14, 1.0)
    for xs, gs in [(x[:0], grid[:0]), (x[:, :0], grid), (x, grid[:, :0]), (x, grid[:, :, :0])]:
        for interpolation in (BILINEAR, NEAREST, BICUBIC):
            _check_grid(runtime, xs, gs, interpolation, ZEROS, False)


def test_grid_sampler_errors(runtime):
    x = make_tensor((2, 3, 4, 5), torch.float32, 15)
    grid = _grid((2, 6, 7, 2), torch.float32, 16, 1.0)
    ref = A.grid_sampler_2d
    _both_fail(
        runtime,
        GRID,
        (x, grid[:1], 0, 0, False),
        ref,
        r"argument 'grid' of sizes \[1, 6, 7, 2\] must have the batch size of 'input' of sizes \[2, 3, 4, 5\]",
    )
    _both_fail(
        runtime,
        GRID,
        (x, _grid((2, 6, 7, 3), torch.float32, 17, 1.0), 0, 0, False),
        ref,
        r"argument 'grid' of sizes \[2, 6, 7, 3\] must have size 2 \(x, y\) in its last dim",
    )
    _both_fail(
        runtime,
        GRID,
        (x, grid[:, 0], 0, 0, False),
        ref,
        r"expected 4-d 'input' \(N, C, H, W\) and 4-d 'grid' \(N, H_out, W_out, 2\), got sizes \[2, 3, 4, 5\] and "
        r"\[2, 7, 2\]",
    )
    _both_fail(runtime, GRID, (x[0], grid[0], 0, 0, False), ref, r"expected 4-d 'input'")
    _both_fail(
        runtime,
        GRID,
        (x[:, :, :0], grid, 1, 0, False),
        ref,
        r"argument 'input' of sizes \[2, 3, 0, 5\] must have non-empty height and width",
    )
    _both_fail(
        runtime, GRID, (x, grid.double(), 0, 0, False), ref, "argument 'grid' has dtype Double but 'input' is Float"
    )
    _both_fail(runtime, GRID, (x.int(), grid.int(), 0, 0, False), ref, "dtype Int is not supported")
    # torch leaves the output unwritten for mode numbers it does not know;
    # the runtime refuses them.
    for bad in (3, -1):
        with pytest.raises(
            PareError,
            match=rf"argument 'interpolation_mode' must be 0 \(bilinear\), 1 \(nearest\) or 2 \(bicubic\), got {bad}",
        ):
            run_op(runtime, GRID, x, grid, bad, 0, False)
        with pytest.raises(
            PareError,
            match=rf"argument 'padding_mode' must be 0 \(zeros\), 1 \(border\) or 2 \(reflection\), got {bad}",
        ):
            run_op(runtime, GRID, x, grid, 0, bad, False)


# ---------------------------------------------------------------------------
# col2im

# (output_size, kernel_size, dilation, padding, stride)
COL2IM_GEOMETRIES = [
    ([6, 7], [2, 3], [1, 1], [0, 0], [1, 1]),
    ([9, 8], [3, 3], [1, 1], [1, 1], [2, 2]),  # overlapping, padded, strided
    ([10, 11], [3, 2], [2, 3], [2, 1], [1, 2]),  # dilated
    ([7, 7], [2, 2], [1, 1], [0, 0], [3, 3]),  # gaps between blocks
    ([5, 6], [1, 1], [1, 1], [0, 0], [1, 1]),  # a reshape
    ([4, 5], [4, 5], [1, 1], [0, 0], [1, 1]),  # one block
    ([3, 4], [3, 3], [2, 1], [3, 2], [2, 1]),  # mostly padding
    ([1, 1], [1, 1], [1, 1], [0, 0], [1, 1]),
]


def _blocks(output_size, kernel_size, dilation, padding, stride):
    n = 1
    for o, k, d, p, s in zip(output_size, kernel_size, dilation, padding, stride):
        n *= (o + 2 * p - d * (k - 1) - 1) // s + 1
    return n


def _columns(dtype, shape, seed):
    if dtype == torch.bool:
        return make_tensor(shape, torch.int64, seed, 0, 3) == 0  # mostly False: the or shows
    return make_tensor(shape, dtype, seed)


@pytest.mark.parametrize("dtype", COL2IM_DTYPES, ids=str)
@pytest.mark.parametrize("geometry", COL2IM_GEOMETRIES, ids=lambda g: "x".join(map(str, sum(g, []))))
def test_col2im_every_dtype(runtime, dtype, geometry):
    kernel_size = geometry[1]
    rows = 3 * kernel_size[0] * kernel_size[1]
    cols = _columns(dtype, (2, rows, _blocks(*geometry)), 20)
    # Sums in torch's order, rounded as torch rounds them: exact.
    assert_same(run_op(runtime, COL2IM, cols, *geometry), A.col2im(cols, *geometry), **EXACT)
    assert_same(run_op(runtime, COL2IM, cols[1], *geometry), A.col2im(cols[1], *geometry), **EXACT)  # unbatched


@pytest.mark.parametrize("dtype", COL2IM_DTYPES, ids=str)
def test_col2im_strided_and_empty(runtime, dtype):
    geometry = ([9, 8], [3, 3], [1, 1], [1, 1], [2, 2])
    blocks = _blocks(*geometry)
    # (N, L, C * kh * kw) transposed, as an unfold-then-matmul model makes it.
    cols = _columns(dtype, (2, blocks, 2 * 9), 21).transpose(1, 2)
    assert_same(run_op(runtime, COL2IM, cols, *geometry), A.col2im(cols, *geometry), **EXACT)
    sliced = _columns(dtype, (3, 4 * 9, 2 * blocks), 22)[::2, ::2, ::2]
    assert_same(run_op(runtime, COL2IM, sliced, *geometry), A.col2im(sliced, *geometry), **EXACT)
    assert_same(run_op(runtime, COL2IM, cols[:0], *geometry), A.col2im(cols[:0], *geometry))


def test_col2im_errors(runtime):
    cols = make_tensor((2, 12, 20), torch.float32, 23)
    good = ([6, 7], [2, 3], [1, 1], [0, 0], [1, 1])  # 25 blocks
    ref = A.col2im

    def fails(args, match):
        _both_fail(runtime, COL2IM, args, ref, match)

    fails(
        (cols, *good),
        r"argument 'self' of sizes \[2, 12, 20\]: dim 2 must be the number of sliding blocks, 5 x 5 for output_size 6 x 7,"
        r" kernel_size 2 x 3, dilation 1 x 1, padding 0 x 0 and stride 1 x 1, got 20",
    )
    fails((cols[0], *good), r"argument 'self' of sizes \[12, 20\]: dim 1 must be the number of sliding blocks")
    fails(
        (cols, [6, 7], [2, 4], [1, 1], [0, 0], [1, 1]),
        r"argument 'self' of sizes \[2, 12, 20\]: dim 1 \(12\) must be a multiple of kernel_size 2 x 4",
    )
    fails((cols, [6, 7], [0, 3], [1, 1], [0, 0], [1, 1]), r"argument 'kernel_size' must hold values in \[1, ")
    fails((cols, [6, 7], [2, 3], [0, 1], [0, 0], [1, 1]), r"argument 'dilation' must hold values in \[1, ")
    fails((cols, [6, 7], [2, 3], [1, 1], [-1, 0], [1, 1]), r"argument 'padding' must hold values in \[0, ")
    fails((cols, [6, 7], [2, 3], [1, 1], [0, 0], [0, 1]), r"argument 'stride' must hold values in \[1, ")
    fails(
        (cols, [6, 7], [2], [1, 1], [0, 0], [1, 1]),
        r"argument 'kernel_size' must have 2 values \(height, width\), got 1",
    )
    fails((cols, [6], [2, 3], [1, 1], [0, 0], [1, 1]), r"argument 'output_size' must have 2 values")
    fails((cols, [6, 7], [2, 3], [1, 1, 1], [0, 0], [1, 1]), r"argument 'dilation' must have 2 values")
    fails(
        (cols[:1, :4, :1], [0, 2], [2, 2], [1, 1], [1, 0], [1, 1]), r"argument 'output_size' must hold values in \[1, "
    )
    fails(
        (cols[:1, :4, :1], [1, 1], [2, 2], [1, 1], [0, 0], [1, 1]),
        r"no sliding block fits: output_size 1 x 1 with padding 0 x 0 is smaller than the dilated kernel_size 2 x 2",
    )
    only = ([4, 5], [2, 3], [1, 1], [0, 0], [1, 1])  # 3 x 3 blocks
    fails((cols[:, :, :0], *only), r"argument 'self' must be 2-d \(C \* kh \* kw, L\) or 3-d \(N, C \* kh \* kw, L\)")
    fails((cols[:, :0, :9], *only), r"with only the batch dim empty, got sizes \[2, 0, 9\]")
    fails((cols[None, :, :, :9], *only), r"got sizes \[1, 2, 12, 9\]")
    fails((cols[0, 0], *only), r"got sizes \[20\]")
    fails((cols[:, :, :9].int(), *only), "dtype Int is not supported")


# ---------------------------------------------------------------------------
# Exported modules: the argument lists torch.export emits, decomposed as the
# tracer decomposes them (core ATen but for the ops the runtime implements).


class _GridSample(nn.Module):
    def __init__(self, mode, padding_mode, align_corners):
        super().__init__()
        self.args = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.args)


EXPORTED = {
    "grid_sample_default": (lambda: _GridSample("bilinear", "zeros", False), [(2, 3, 5, 6), (2, 4, 7, 2)], GRID),
    "grid_sample_nearest_border": (lambda: _GridSample("nearest", "border", True), [(1, 2, 5, 6), (1, 3, 3, 2)], GRID),
    "grid_sample_bicubic_reflection": (
        lambda: _GridSample("bicubic", "reflection", True),
        [(2, 3, 5, 6), (2, 4, 7, 2)],
        GRID,
    ),
    "fold": (lambda: nn.Fold((6, 7), (2, 3), dilation=1, padding=1, stride=(1, 2)), [(2, 12, 28)], COL2IM),
    "fold_unbatched": (lambda: nn.Fold(5, 2, stride=3), [(8, 4)], COL2IM),
}


@pytest.mark.parametrize("name", list(EXPORTED))
def test_exported_modules(runtime, name):
    """Exports the module, decomposes and lowers it as the tracer does, and
    runs the program: the single op it calls matches torch."""
    make, shapes, expected_op = EXPORTED[name]
    torch.manual_seed(0)
    module = make().eval()
    example = tuple(torch.randn(s) * 1.2 for s in shapes)
    table = decomposition_table(codegen.load_inventory(runtime_build.REPO / "runtime" / "inventory"))
    ep = torch.export.export(module, example).run_decompositions(table)
    program, report = lower_forward(ep)
    assert not set(report.unsupported)
    assert set(report.uses) == {expected_op}
    (got,) = runtime.load(program).method().run(*(t.numpy() for t in example))
    assert_same(torch.from_numpy(got), module(*example), rtol=1e-5, atol=1e-5)
