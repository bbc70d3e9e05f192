"""Weights packed ahead of time for Pare's float GEMM (docs/program_format.md,
"Prepacked weights").

A program's `pare::linear_prepack` / `pare::conv2d_prepack` init ops take
their weights already in the layout the runtime's GEMM micro-kernels read,
and the runtime uses those constants in place: nothing is packed or copied
when a method is created. The layout is the same for every ISA (it is the
runtime's `runtime/kernels/common/gemm.h`; both read the constants below from
the format's table, runtime/core/program_format.def):

* the depth (the reduction dimension, K) is cut into blocks of `KC`; the
  blocks follow each other, the last one shorter;
* A (a convolution's weights, [out_channels, K] per group) is packed per
  block in panels of `MR` rows: within a panel, depth by depth, the `MR`
  rows' values, rows past the end zero;
* B (a linear layer's W^T, [K, out_features]) is packed per block in panels
  of `PANEL_COLS` columns: within a panel, depth by depth, the panel's
  columns; the columns are padded with zeros to a multiple of `PAD_COLS`.

Building a program with packed layers::

    from pare.program import ProgramBuilder

    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 16])
    packed = m.linear_prepack(weight, bias)       # weight [8, 16] float32
    m.output(m.op("pare::linear_prepacked", x, packed))
"""

from __future__ import annotations

import numpy as np

from pare import _format_table as _format
from pare import dtypes as _dtypes

KC = _format.PACK_KC  # depth block (gemm::kKC)
MR = _format.PACK_MR  # rows of an A panel (gemm::kMR)
PANEL_COLS = _format.PACK_PANEL_COLS  # columns of a B panel (gemm::kPanelCols)
PAD_COLS = _format.PACK_PAD_COLS  # a packed B's columns are padded to a multiple of this (gemm::kPadCols)


class PackingError(ValueError):
    """Weights that cannot be packed (wrong rank or dtype)."""


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _float_array(w, ndim: int, what: str) -> np.ndarray:
    """`w` (a numpy array or a torch tensor) as a float32 numpy array of
    `ndim` dims, or a PackingError naming its dtype and shape."""
    if _dtypes.is_torch_tensor(w):
        dtype, shape = str(w.dtype), list(w.shape)  # any torch dtype, numpy has one or not
        if dtype == "torch.float32" and len(shape) == ndim:
            return _dtypes.to_numpy(w)[1]
    else:
        w = np.asarray(w)
        dtype, shape = str(w.dtype), list(w.shape)
        if w.dtype == np.float32 and w.ndim == ndim:
            return w
    raise PackingError(f"{what} must be a {ndim}-D float32 array, got {dtype} of shape {shape}")


def packed_a_size(m: int, k: int) -> int:
    """Floats of an [m, k] A packed (gemm::packed_a_size)."""
    return _round_up(m, MR) * k


def packed_b_size(k: int, n: int) -> int:
    """Floats of a [k, n] B packed (gemm::packed_b_size)."""
    return _round_up(n, PAD_COLS) * k


def pack_a(a) -> np.ndarray:
    """A [m, k] packed as the GEMM's left operand: 1-D float32."""
    a = _float_array(a, 2, "A")
    m, k = a.shape
    rows = _round_up(m, MR)
    padded = np.zeros((rows, k), np.float32)
    padded[:m] = a
    blocks = [
        padded[:, p0 : p0 + KC].reshape(rows // MR, MR, min(KC, k - p0)).transpose(0, 2, 1).ravel()
        for p0 in range(0, k, KC)
    ]
    return np.concatenate(blocks) if blocks else np.zeros(0, np.float32)


def pack_b(b) -> np.ndarray:
    """B [k, n] packed as the GEMM's right operand: 1-D float32."""
    b = _float_array(b, 2, "B")
    k, n = b.shape
    cols = _round_up(n, PAD_COLS)
    padded = np.zeros((k, cols), np.float32)
    padded[:, :n] = b
    blocks = [
        padded[p0 : p0 + KC].reshape(min(KC, k - p0), cols // PANEL_COLS, PANEL_COLS).transpose(1, 0, 2).ravel()
        for p0 in range(0, k, KC)
    ]
    return np.concatenate(blocks) if blocks else np.zeros(0, np.float32)


def pack_linear_weight(weight) -> np.ndarray:
    """nn.Linear's weight [out_features, in_features] as pare::linear_prepack takes it."""
    w = _float_array(weight, 2, "a linear weight")
    return pack_b(w.T)


def depthwise_direct(weight_sizes, stride, dilation, groups: int) -> bool:
    """Whether the runtime runs this convolution with its direct depthwise
    kernel, on the weights as they are (depthwise::has_fast_path): one input
    channel per group, a square 3x3, 5x5 or 7x7 kernel, stride 1 or 2 in
    both dimensions, no dilation."""
    _, cg, kh, kw = weight_sizes
    return (
        cg == 1
        and groups > 1
        and kh == kw
        and kh in (3, 5, 7)
        and stride[0] == stride[1]
        and stride[0] in (1, 2)
        and tuple(dilation) == (1, 1)
    )


def winograd_applies(weight_sizes, stride, dilation) -> bool:
    """Whether the runtime can run this convolution with Winograd F(2x2, 3x3)
    or F(4x4, 3x3) (runtime/kernels/prepacked/winograd.h): a 3x3 kernel,
    stride 1, no dilation."""
    return tuple(weight_sizes[2:]) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)


# Where Winograd pays (measured with `python -m tools.bench.winograd` on
# x86_64, baseline and v3; docs/performance.md, "Winograd"): at least this
# many input channels per group (fewer make its GEMMs too shallow: 4 in,
# 64 out ran at 0.66-0.94x im2col; 3 in, 16 out at 1.1-1.2x)...
WINOGRAD_MIN_IN_CHANNELS = 8
# ...and at least this many 2x2 output tiles per image (a 5x5 output has 9;
# a 4x4 output's 4 ran at 0.5-0.95x, a 6x6 output's 9 at 1.2-1.6x).
WINOGRAD_MIN_TILES = 9
# F(4x4, 3x3) instead of F(2x2, 3x3) from this many 4x4 output tiles per
# image on (a 13x13 output has 16: 1.3-1.5x F(2x2, 3x3)'s speed; a 12x12
# output's 9 ran at 0.6-0.7x, a 7x7 or 8x8 output's 4 at 0.4-0.8x: too
# few tiles for its 36 GEMMs and its transforms' vectors).
WINOGRAD4_MIN_TILES = 16
WINOGRAD_TILES = (2, 4)


def winograd_tile(weight_sizes, stride, dilation, groups: int, out_hw) -> int:
    """The output tile the exporter transforms this convolution's filters
    for: 0 (no Winograd), 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)). Winograd when
    it applies, each group has WINOGRAD_MIN_IN_CHANNELS input channels or
    more, and the traced output `out_hw` (height, width) has
    WINOGRAD_MIN_TILES 2x2 tiles or more (with fewer the transforms and the
    small products cost more than im2col saves); F(4x4, 3x3) from
    WINOGRAD4_MIN_TILES 4x4 tiles."""
    if not winograd_applies(weight_sizes, stride, dilation) or groups < 1 or weight_sizes[0] % groups:
        return 0
    if weight_sizes[1] < WINOGRAD_MIN_IN_CHANNELS:
        return 0
    if _tiles(out_hw, 4) >= WINOGRAD4_MIN_TILES:
        return 4
    return 2 if _tiles(out_hw, 2) >= WINOGRAD_MIN_TILES else 0


def winograd_pays(weight_sizes, stride, dilation, groups: int, out_hw) -> bool:
    """Whether the exporter transforms this convolution's filters for
    Winograd at all (winograd_tile is not 0)."""
    return winograd_tile(weight_sizes, stride, dilation, groups, out_hw) != 0


def _tiles(out_hw, tile: int) -> int:
    return -(-out_hw[0] // tile) * -(-out_hw[1] // tile)


# Which convolutions run as pixel rows (the pixels as the GEMM's rows, the
# weights as B; gemm::pixel_rows_pay, whose constants these are). A 1x1
# convolution (stride 1, no padding: the image itself is the product's
# operand): more than NARROW_MAX_PIXELS output pixels (up to there the
# narrow GEMM, on weights packed as A, is faster), at most
# PIXEL_ROWS_MAX_PIXELS (from 16 on the image as B fills the register
# tile), and not a multiple of PANEL_COLS (8 pixels fill SSE2's and NEON's
# 8-column tile). Measured on single layers against the other paths, one
# core, baseline and v3 (docs/performance.md, "Pixel rows"): 5 to 12
# pixels other than 8 ran 1.2-2.4x faster as pixel rows on both; 1, 2 and
# 4 pixels 1.1-1.4x slower (on v3 4 ran 1.0-1.6x faster), 8 pixels 1.15x
# slower on baseline.
NARROW_MAX_PIXELS = _format.PACK_NARROW_MAX_PIXELS  # gemm::kNarrowN
PIXEL_ROWS_MAX_PIXELS = _format.PACK_PIXEL_ROWS_MAX_PIXELS  # gemm::kPixelRowsMax
# Any other convolution (3x3, strided, padded: the narrow GEMM takes 1x1
# kernels only) runs as pixel rows on its im2col matrix from 1 output pixel
# up to PIXEL_ROWS_MAX_PIXELS: measured with `python -m
# tools.bench.pixel_rows` (one core, Zen 5) against the register tile over
# the same pixels as columns, 1 to 12 pixels ran 1.3-4.4x faster on AVX-512
# and AVX2 and 1.0-5.7x on SSE2 (8 pixels, a full SSE2 tile: 1.02x); 16
# pixels 0.94-1.3x, so not there.


def pointwise(weight_sizes, stride, padding, dilation) -> bool:
    """A 1x1 kernel, stride 1, no padding, no dilation: the image itself is
    the layer's GEMM operand (no im2col)."""
    return (
        tuple(weight_sizes[2:]) == (1, 1)
        and tuple(stride) == (1, 1)
        and tuple(padding) == (0, 0)
        and tuple(dilation) == (1, 1)
    )


def pixel_rows_pays(weight_sizes, stride, padding, dilation, groups: int, out_hw) -> bool:
    """Whether the exporter packs this convolution's weights for pixel rows
    (W^T as the GEMM's B, per group): not a depthwise convolution the direct
    kernel runs, and the traced output `out_hw` (height, width) has more
    than NARROW_MAX_PIXELS pixels, at most PIXEL_ROWS_MAX_PIXELS, and not a
    multiple of PANEL_COLS for a pointwise layer; 1 to PIXEL_ROWS_MAX_PIXELS
    for any other with at least PANEL_COLS output channels per group (a
    dynamic size counts as large)."""
    if groups < 1 or weight_sizes[0] % groups or depthwise_direct(weight_sizes, stride, dilation, groups):
        return False
    pixels = out_hw[0] * out_hw[1]
    if pointwise(weight_sizes, stride, padding, dilation):
        return NARROW_MAX_PIXELS < pixels <= PIXEL_ROWS_MAX_PIXELS and pixels % PANEL_COLS != 0
    # Fewer output channels per group than a B panel's columns would pad
    # each group's weights (a dilated depthwise layer's 1 to 16).
    return 1 <= pixels <= PIXEL_ROWS_MAX_PIXELS and weight_sizes[0] // groups >= PANEL_COLS


# The channels_last pass (tools/tracer/passes/channels_last.py): convolutions that run
# faster on NHWC activations, with the layout conversions they need, than
# on NCHW ones. Measured on MobileNetV2's layers (64x64 input, one core,
# v3; docs/performance.md, "Channels-last"): a depthwise layer over 4x4 or
# 2x2 output pixels ran 3-4x faster channels-last (its NCHW rows are 2 to
# 4 floats of a vector), over 8x8 0.9-1.0x, over 16x16 1.6x slower; a 1x1
# layer over 2x2 pixels 1.15-1.3x faster than on the narrow GEMM, over 4x4
# and 8x8 1.2-1.8x slower than the NCHW GEMM. One pixel is the same memory
# in both layouts (no conversion could pay).
CHANNELS_LAST_DEPTHWISE_MAX_PIXELS = 16
CHANNELS_LAST_1X1_MAX_PIXELS = NARROW_MAX_PIXELS


def channels_last_applies(weight_sizes, stride, padding, dilation, groups: int) -> bool:
    """Whether the runtime has a channels-last kernel for this convolution:
    the direct depthwise kernel's shapes with groups == out_channels, or a
    1x1 kernel with stride 1, no padding and no dilation."""
    if groups < 1 or weight_sizes[0] % groups:
        return False
    if depthwise_direct(weight_sizes, stride, dilation, groups):
        return groups == weight_sizes[0]
    return pointwise(weight_sizes, stride, padding, dilation)


def channels_last_pays(weight_sizes, stride, padding, dilation, groups: int, out_hw) -> bool:
    """Whether the channels_last pass runs this convolution channels-last:
    it applies and the traced output `out_hw` has from 2 pixels up to
    CHANNELS_LAST_DEPTHWISE_MAX_PIXELS (depthwise) or
    CHANNELS_LAST_1X1_MAX_PIXELS (1x1); a dynamic size counts as large."""
    if not channels_last_applies(weight_sizes, stride, padding, dilation, groups):
        return False
    pixels = out_hw[0] * out_hw[1]
    depthwise = depthwise_direct(weight_sizes, stride, dilation, groups)
    return 2 <= pixels <= (CHANNELS_LAST_DEPTHWISE_MAX_PIXELS if depthwise else CHANNELS_LAST_1X1_MAX_PIXELS)


def pack_conv2d_hwio_weight(weight) -> np.ndarray:
    """A depthwise convolution's weight [C, 1, K, K] laid out HWIO [K, K,
    1, C] for the channels-last kernel (per tap, every channel's weight)."""
    w = _float_array(weight, 4, "a convolution weight")
    return np.ascontiguousarray(w.transpose(2, 3, 1, 0))


def pack_conv2d_pixel_rows_weight(weight, groups: int) -> np.ndarray:
    """A convolution's weight [out_channels, in_channels / groups, kh, kw]
    packed for pixel rows as pare::conv2d_prepack takes it: per group, W^T
    [k, og] packed as B, k = in_channels / groups x kh x kw in im2col's
    order (channel, then ky, kx). 3-D: [groups, k, og rounded up to
    PAD_COLS] (the sizes only count the floats)."""
    w = _float_array(weight, 4, "a convolution weight")
    out_channels = w.shape[0]
    _check_groups(out_channels, groups)
    og = out_channels // groups
    k = int(np.prod(w.shape[1:]))
    rows = w.reshape(out_channels, k)
    packed = [pack_b(rows[g * og : (g + 1) * og].T) for g in range(groups)]
    return np.stack(packed).reshape(groups, k, _round_up(og, PAD_COLS))


def _check_groups(out_channels: int, groups: int) -> None:
    if groups < 1 or out_channels % groups:
        raise PackingError(f"groups = {groups} must be positive and divide out_channels = {out_channels}")


# The filter transforms G (Lavin and Gray 2015): U = G g G^T, per output
# tile. F(2x2, 3x3) at the points 0, 1, -1; F(4x4, 3x3) at 0, 1, -1, 2, -2
# (runtime/kernels/prepacked/winograd.cc has the matching B^T and A^T).
_WINOGRAD_G = {
    2: np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]]),
    4: np.array(
        [
            [1 / 4, 0.0, 0.0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0.0, 0.0, 1.0],
        ]
    ),
}


def winograd_filter_transform(tile: int) -> np.ndarray:
    """G for output tile `tile` (2 or 4), float64 [tile + 2, 3]."""
    if tile not in _WINOGRAD_G:
        raise PackingError(f"Winograd's output tile is 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)), got {tile}")
    return _WINOGRAD_G[tile].copy()


def pack_conv2d_winograd_weight(weight, groups: int, tile: int = 2) -> np.ndarray:
    """A 3x3 convolution's weight [out_channels, in_channels / groups, 3, 3]
    transformed for Winograd F(tile x tile, 3x3) (tile 2 or 4) as
    pare::conv2d_prepack takes it: U = G g G^T for every filter, computed in
    float64 and rounded once; for each group, for each position e = a i + j
    of the a x a U (a = tile + 2), the group's [og, in_channels / groups]
    matrix of U[i, j] packed as A. 2-D: [groups x a^2, packed_a_size(og,
    in_channels / groups)]."""
    g_matrix = winograd_filter_transform(tile)
    w = _float_array(weight, 4, "a convolution weight")
    out_channels, cg = w.shape[:2]
    _check_groups(out_channels, groups)
    if w.shape[2:] != (3, 3):
        raise PackingError(f"Winograd F({tile}x{tile}, 3x3) takes a 3x3 kernel, got {w.shape[2]}x{w.shape[3]}")
    u = np.einsum("ai,ocij,bj->ocab", g_matrix, w.astype(np.float64), g_matrix).astype(np.float32)
    og = out_channels // groups
    a = tile + 2
    rows = [pack_a(u[g * og : (g + 1) * og, :, e // a, e % a]) for g in range(groups) for e in range(a * a)]
    return np.stack(rows) if rows else np.zeros((0, packed_a_size(og, cg)), np.float32)


# pare::conv2d_prepack's `layout` argument (runtime/core/program_format.def,
# conv::WeightLayout): which algorithm a convolution's weights are packed for.
LAYOUT_AS_GIVEN = _format.LAYOUT_AS_GIVEN
LAYOUT_DEPTHWISE_HWIO = _format.LAYOUT_DEPTHWISE_HWIO
LAYOUT_GEMM_A = _format.LAYOUT_GEMM_A
LAYOUT_WINOGRAD2 = _format.LAYOUT_WINOGRAD2
LAYOUT_WINOGRAD4 = _format.LAYOUT_WINOGRAD4
LAYOUT_PIXEL_ROWS = _format.LAYOUT_PIXEL_ROWS


def conv2d_weight_layout(
    weight_sizes,
    stride,
    dilation,
    groups: int,
    winograd: int = 0,
    pixel_rows: bool = False,
    padding=(0, 0),
    channels_last: bool = False,
) -> int:
    """The layout code (LAYOUT_*) pack_conv2d_weight packs a 2-d
    convolution's weights [out_channels, in_channels / groups, kh, kw] in,
    with the same arguments: as given for a depthwise convolution the direct
    kernel runs, HWIO with `channels_last`; transformed for Winograd with
    `winograd` (where winograd_applies: the output tile, 2 or 4; True means
    2); packed for pixel rows with `pixel_rows` (and for a 1x1 layer with
    `channels_last`); otherwise each group's [og, k] weights packed as A.
    A PackingError names a combination that cannot be."""
    weight_sizes = tuple(int(s) for s in weight_sizes)
    _check_groups(weight_sizes[0], groups)
    if winograd and pixel_rows:
        raise PackingError("a convolution's weights are packed for Winograd or for pixel rows, not both")
    direct = depthwise_direct(weight_sizes, stride, dilation, groups)
    if channels_last:
        if not channels_last_applies(weight_sizes, stride, padding, dilation, groups):
            raise PackingError(
                "channels-last kernels take a depthwise convolution (3x3, 5x5 or 7x7, stride 1 or 2, one "
                "output channel per input channel) or a 1x1 convolution with stride 1 and no padding, got a "
                f"{weight_sizes[2]}x{weight_sizes[3]} kernel of {list(weight_sizes)} with groups {groups}, "
                f"stride {list(stride)}"
            )
        if winograd:
            raise PackingError("a convolution's weights are packed for Winograd or for channels-last, not both")
        return LAYOUT_DEPTHWISE_HWIO if direct else LAYOUT_PIXEL_ROWS
    if direct:
        return LAYOUT_AS_GIVEN
    if pixel_rows:
        return LAYOUT_PIXEL_ROWS
    if winograd:
        tile = 2 if winograd is True else int(winograd)
        if not winograd_applies(weight_sizes, stride, dilation):
            raise PackingError(
                f"Winograd F({tile}x{tile}, 3x3) takes a 3x3 kernel with stride 1 and no dilation, got a "
                f"{weight_sizes[2]}x{weight_sizes[3]} kernel, stride {list(stride)}, dilation {list(dilation)}"
            )
        if tile not in WINOGRAD_TILES:
            winograd_filter_transform(tile)  # raises, naming the tiles there are
        return LAYOUT_WINOGRAD4 if tile == 4 else LAYOUT_WINOGRAD2
    return LAYOUT_GEMM_A


def conv2d_weight(weight) -> np.ndarray:
    """A 2-d convolution's weight (numpy or torch) as a 4-D float32 numpy
    array, or a PackingError naming its dtype and shape."""
    return _float_array(weight, 4, "a convolution weight")


def pack_conv2d_for_layout(weight, layout: int, groups: int) -> np.ndarray:
    """A 2-d convolution's weight [out_channels, in_channels / groups, kh,
    kw] packed in `layout` (a LAYOUT_* code): as given or HWIO (4-D),
    Winograd (2-D, pack_conv2d_winograd_weight), pixel rows (3-D,
    pack_conv2d_pixel_rows_weight), or each group's [og, k] weights packed
    as A, the groups one after another (1-D)."""
    w = conv2d_weight(weight)
    out_channels = w.shape[0]
    _check_groups(out_channels, groups)
    if layout == LAYOUT_AS_GIVEN:
        return np.ascontiguousarray(w)
    if layout == LAYOUT_DEPTHWISE_HWIO:
        return pack_conv2d_hwio_weight(w)
    if layout == LAYOUT_PIXEL_ROWS:
        return pack_conv2d_pixel_rows_weight(w, groups)
    if layout in (LAYOUT_WINOGRAD2, LAYOUT_WINOGRAD4):
        return pack_conv2d_winograd_weight(w, groups, 4 if layout == LAYOUT_WINOGRAD4 else 2)
    if layout == LAYOUT_GEMM_A:
        og = out_channels // groups
        rows = w.reshape(out_channels, int(np.prod(w.shape[1:])))
        return np.concatenate([pack_a(rows[g * og : (g + 1) * og]) for g in range(groups)])
    raise PackingError(f"weight layout {layout} is not one of 0 to {len(_format.LAYOUT_NAMES) - 1}")


def pack_conv2d_weight(weight, stride, dilation, groups: int, **layout_args) -> np.ndarray:
    """A 2-d convolution's weight [out_channels, in_channels / groups, kh, kw]
    as pare::conv2d_prepack takes it, in the layout conv2d_weight_layout
    chooses for the same arguments (`layout_args`: its winograd, pixel_rows,
    padding and channels_last), packed by pack_conv2d_for_layout."""
    w = conv2d_weight(weight)
    layout = conv2d_weight_layout(w.shape, stride, dilation, groups, **layout_args)
    return pack_conv2d_for_layout(w, layout, groups)
