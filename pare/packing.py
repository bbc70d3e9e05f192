"""Weights packed ahead of time for Pare's float GEMM (docs/program_format.md,
"Prepacked weights").

A program's `pare::linear_prepack` / `pare::conv2d_prepack` init ops take
their weights already in the layout the runtime's GEMM micro-kernels read,
and the runtime uses those constants in place: nothing is packed or copied
when a method is created. The layout is the same for every ISA (it is the
runtime's `runtime/kernels/common/gemm.h`; tests/runtime/kernels/test_prepacked.py
checks that the constants below match it):

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

from pare import dtypes as _dtypes

KC = 256  # depth block (gemm::kKC)
MR = 6  # rows of an A panel (gemm::kMR)
PANEL_COLS = 8  # columns of a B panel (gemm::kPanelCols)
PAD_COLS = 16  # a packed B's columns are padded to a multiple of this (gemm::kPadCols)


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


def pack_conv2d_weight(weight, stride, dilation, groups: int) -> np.ndarray:
    """A 2-d convolution's weight [out_channels, in_channels / groups, kh, kw]
    as pare::conv2d_prepack takes it: as given (4-D) for a depthwise
    convolution the direct kernel runs, otherwise each group's [og, k]
    weights packed as A, the groups one after another (1-D)."""
    w = _float_array(weight, 4, "a convolution weight")
    out_channels = w.shape[0]
    if groups < 1 or out_channels % groups:
        raise PackingError(f"groups = {groups} must be positive and divide out_channels = {out_channels}")
    if depthwise_direct(w.shape, stride, dilation, groups):
        return np.ascontiguousarray(w)
    og = out_channels // groups
    rows = w.reshape(out_channels, int(np.prod(w.shape[1:])))
    return np.concatenate([pack_a(rows[g * og : (g + 1) * og]) for g in range(groups)])
