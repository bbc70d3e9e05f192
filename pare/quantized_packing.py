"""Int8 layers' constants, computed at export (docs/quantization.md, "Int8
operators").

A quantized convolution or linear layer of a PT2E model is, in torch's
reference graph, dequantize -> float op -> quantize:

    y[c] = sum_k (qx[k] - zx) * sx * qw[c, k] * sw[c] + bias[c]
    q[c] = clamp(round(y[c] / so) + zo, qmin, qmax)

Pare's int8 kernels (pare::qconv2d_prepacked, pare::qlinear_prepacked)
compute the same with an int32 product and one multiply-add per element:

    acc[c] = sum_k qx[k] * qw[c, k] + correction[c]          (int32, exact)
    q[c]   = clamp(round_half_even(float(acc[c]) * multiplier[c] + offset[c]),
                   output_min, output_max)

with, per output channel c, computed here in float64 and stored float32:

    correction[c] = -zx * sum_k qw[c, k]     (the input zero point's share)
    multiplier[c] = sx * sw[c] / so
    offset[c]     = bias[c] / so + zo

A convolution's padding reads as zx (the dequantized 0.0), so its terms
cancel in the correction like the others. The result is at most one
quantization step from torch's (the float rounding of the two formulas
differs near a half step); the tests hold every int8 op to that.
"""

from __future__ import annotations

import numpy as np

from pare.packing import PackingError

INT8_MIN, INT8_MAX = -128, 127


def int8_weight(weight, ndim: int, what: str) -> np.ndarray:
    """`weight` (numpy or torch) as a C-contiguous int8 numpy array of
    `ndim` dims, or a PackingError naming its dtype and shape."""
    from pare import dtypes as _dtypes

    if _dtypes.is_torch_tensor(weight):
        dtype, shape = str(weight.dtype), list(weight.shape)
        ok = dtype == "torch.int8" and len(shape) == ndim
        w = _dtypes.to_numpy(weight.contiguous())[1] if ok else None
    else:
        w = np.asarray(weight)
        dtype, shape = str(w.dtype), list(w.shape)
        ok = w.dtype == np.int8 and w.ndim == ndim
    if not ok:
        raise PackingError(f"{what} must be a {ndim}-D int8 array, got {dtype} of shape {shape}")
    return np.ascontiguousarray(w)


def requantization(
    weight,
    weight_scales,
    bias,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correction int32, multiplier float32, offset float32), each
    [out_channels], for an int8 layer whose weight is `weight` (int8,
    out_channels first, any rank), `weight_scales` one scale per output
    channel (or one for all: per tensor; the weight's zero points must be
    0, symmetric), `bias` float [out_channels] (dequantized already: an
    int32 bias times its scale) or None, and the input's and output's
    per-tensor scale and zero point. See the module's docstring."""
    w = np.asarray(weight)
    if w.dtype != np.int8 or w.ndim < 2:
        raise PackingError(
            f"an int8 layer's weight must be int8 with 2 or more dims, got {w.dtype} of shape {list(w.shape)}"
        )
    out_channels = w.shape[0]
    scales = np.broadcast_to(np.asarray(weight_scales, dtype=np.float64).reshape(-1), (out_channels,))
    if not (np.all(np.isfinite(scales)) and np.all(scales > 0)):
        raise PackingError("an int8 layer's weight scales must be finite and positive")
    for name, s in (("input", input_scale), ("output", output_scale)):
        if not (np.isfinite(s) and s > 0):
            raise PackingError(f"an int8 layer's {name} scale must be finite and positive, got {s}")
    sums = w.reshape(out_channels, -1).astype(np.int64).sum(axis=1)
    correction = -int(input_zero_point) * sums
    if np.any(np.abs(correction) >= 2**31):
        raise PackingError("an int8 layer's zero-point correction overflows int32 (too deep a reduction)")
    multiplier = float(input_scale) * scales / float(output_scale)
    b = np.zeros(out_channels) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
    if b.shape != (out_channels,):
        raise PackingError(f"an int8 layer's bias must have {out_channels} values, got {b.shape[0]}")
    offset = b / float(output_scale) + int(output_zero_point)
    multiplier32 = multiplier.astype(np.float32)
    offset32 = offset.astype(np.float32)
    for name, v in (
        ("requantization multiplier (input scale x weight scale / output scale)", multiplier32),
        ("requantization offset (bias / output scale + zero point)", offset32),
    ):
        if not np.all(np.isfinite(v)):
            c = int(np.flatnonzero(~np.isfinite(v))[0])
            raise PackingError(f"an int8 layer's {name} is not finite in float32 at output channel {c} ({v[c]})")
    return correction.astype(np.int32), multiplier32, offset32


DYNAMIC_BLOCK = 16  # output channels per block of pack_dynamic_weight's layout (qgemm.h, kDynamicBlock)


def pack_dynamic_weight(weight: np.ndarray) -> np.ndarray:
    """pare::qlinear_dynamic's weight: the int8 [out_features, in_features]
    matrix as every copy of its product reads it (runtime/kernels/quantized/
    qgemm.h, gemm_dynamic): [ceil(out / 16), ceil(in / 4), 16, 4], per block
    of 16 output channels, per quad of 4 input features, each channel's 4
    weights (0 past the last feature or channel)."""
    weight = np.asarray(weight, dtype=np.int8)
    if weight.ndim != 2:
        raise PackingError(f"a dynamic linear's weight must be 2-D [out_features, in_features], got {weight.shape}")
    out_features, in_features = weight.shape
    blocks = -(-out_features // DYNAMIC_BLOCK)
    quads = -(-in_features // 4)
    padded = np.zeros((blocks * DYNAMIC_BLOCK, quads * 4), dtype=np.int8)
    padded[:out_features, :in_features] = weight
    return np.ascontiguousarray(padded.reshape(blocks, DYNAMIC_BLOCK, quads, 4).transpose(0, 2, 1, 3))
