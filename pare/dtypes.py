"""Element types: PyTorch ScalarType codes and names, and numpy equivalents.

The codes and names are the ones the program format, the C API and PyTorch
manifests (kernel_metadata) use. numpy has no bfloat16: BFloat16 data is
exchanged as float32 (converted with round-to-nearest-even, like PyTorch)
or as raw uint16 bits.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pare._dtype_table import DTYPE_TABLE


@dataclasses.dataclass(frozen=True)
class DType:
    name: str  # PyTorch ScalarType name ("Float")
    code: int  # PyTorch ScalarType code (6)
    itemsize: int
    numpy: np.dtype | None  # None for BFloat16
    torch_name: str  # "float32"

    @property
    def is_floating(self) -> bool:
        """Half, BFloat16, Float or Double."""
        return self.name in ("Half", "BFloat16", "Float", "Double")

    @property
    def is_complex(self) -> bool:
        """ComplexFloat (complex64), the one complex dtype Pare has."""
        return self.name == "ComplexFloat"

    def __str__(self) -> str:
        return self.name


# runtime/core/dtypes.def's table (pare/_dtype_table.py is generated from it).
_ALL = [
    DType(name, code, size, None if torch_name == "bfloat16" else np.dtype(torch_name), torch_name)
    for name, code, size, torch_name in DTYPE_TABLE
]

BY_NAME = {d.name: d for d in _ALL}
BY_CODE = {d.code: d for d in _ALL}
BY_NUMPY = {d.numpy: d for d in _ALL if d.numpy is not None}  # get()'s fast path: run() calls it per input
ALL = tuple(_ALL)

Byte, Char, Short, Int, Long, Half, Float, Double, ComplexFloat, Bool, BFloat16 = _ALL

_ALIASES = {
    # numpy / torch spellings
    "uint8": Byte,
    "int8": Char,
    "int16": Short,
    "short": Short,
    "int32": Int,
    "int": Int,
    "int64": Long,
    "long": Long,
    "float16": Half,
    "half": Half,
    "float32": Float,
    "float": Float,
    "float64": Double,
    "double": Double,
    "complex64": ComplexFloat,
    "cfloat": ComplexFloat,
    "bool": Bool,
    "bfloat16": BFloat16,
}


def get(x) -> DType:
    """Resolves a DType from a DType, a ScalarType name or code, a numpy
    dtype, or a torch dtype (without importing torch)."""
    if isinstance(x, DType):
        return x
    if isinstance(x, np.dtype) and x in BY_NUMPY:
        return BY_NUMPY[x]
    if isinstance(x, bool):
        raise TypeError(f"not a dtype: {x!r}")
    if isinstance(x, int):
        if x in BY_CODE:
            return BY_CODE[x]
        raise ValueError(f"unsupported ScalarType code {x}; supported: {sorted(BY_CODE)}")
    if isinstance(x, str):
        if x in BY_NAME:
            return BY_NAME[x]
        key = x.removeprefix("torch.").lower()
        if key in _ALIASES:
            return _ALIASES[key]
        raise ValueError(f"unknown dtype {x!r}; use a PyTorch ScalarType name such as 'Float'")
    text = str(x)
    if text.startswith("torch."):
        return get(text)
    try:
        np_dtype = np.dtype(x)
    except TypeError:
        raise TypeError(f"not a dtype: {x!r}") from None
    for d in _ALL:
        if d.numpy == np_dtype:
            return d
    raise ValueError(f"numpy dtype {np_dtype} has no Pare equivalent")


def float32_to_bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """Rounds float32 values to bfloat16 (nearest even, NaN -> 0x7FC0), as bits."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(a), np.uint16(0x7FC0), rounded).astype(np.uint16)


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """BFloat16 values stored as uint16 bits, widened exactly to float32."""
    return (np.ascontiguousarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def is_torch_tensor(x) -> bool:
    """Whether `x` is a torch tensor (without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def to_numpy(x) -> tuple[DType, np.ndarray]:
    """(dtype, array of the bytes to store) for a numpy array or torch
    tensor: a tensor's contiguous CPU copy, BFloat16 as its uint16 bits."""
    if is_torch_tensor(x):
        dtype = get(x.dtype)
        t = x.detach().cpu().contiguous()
        if dtype is BFloat16:
            import torch  # only reachable with a torch tensor in hand

            return dtype, t.view(torch.int16).numpy().view(np.uint16)
        return dtype, t.numpy()
    return get(x.dtype), x
