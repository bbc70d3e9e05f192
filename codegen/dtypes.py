"""Dtype names: Pare's ten, PyTorch's full ScalarType list, C++ spellings.

Manifests name dtypes as PyTorch's `ScalarType` does (the strings in
`kernel_metadata`). Pare's kernels reach ten of them; the rest are valid
PyTorch names that no Pare kernel can reach, which is different from a typo.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from codegen._dtype_table import DTYPE_TABLE, QUANTIZED_DTYPE_TABLE


@dataclass(frozen=True)
class Dtype:
    name: str  # PyTorch ScalarType name, as in kernel_metadata
    value: int  # PyTorch's numeric ScalarType value, kept by pare::ScalarType
    cpp_elf: str  # demangled C++ type on Linux and Android
    cpp_macho: str  # demangled C++ type on Apple targets


# How each C++ element type demangles: int64_t is `long` on LP64 Linux and
# Android but `long long` on Apple, and symbols show the underlying type.
_DEMANGLED: dict[str, tuple[str, str]] = {
    "uint8_t": ("unsigned char", "unsigned char"),
    "int8_t": ("signed char", "signed char"),
    "int16_t": ("short", "short"),
    "int32_t": ("int", "int"),
    "int64_t": ("long", "long long"),
    "Half": ("pare::Half", "pare::Half"),
    "float": ("float", "float"),
    "double": ("double", "double"),
    "ComplexFloat": ("pare::ComplexFloat", "pare::ComplexFloat"),
    "bool": ("bool", "bool"),
    "BFloat16": ("pare::BFloat16", "pare::BFloat16"),
}

# runtime/core/dtypes.def's table, in pare::ScalarType order
# (codegen/_dtype_table.py is generated from it).
PARE_DTYPES: tuple[Dtype, ...] = tuple(Dtype(name, code, *_DEMANGLED[cpp_type]) for name, code, cpp_type in DTYPE_TABLE)

DTYPES_BY_NAME: dict[str, Dtype] = {d.name: d for d in PARE_DTYPES}
PARE_DTYPE_NAMES: tuple[str, ...] = tuple(d.name for d in PARE_DTYPES)

# PyTorch's quantized dtypes, by name: the Pare dtype that stores each
# (runtime/core/dtypes.def, PARE_QUANTIZED_DTYPE). A kernel tag of an int8
# operator lists QInt8 where its cases dispatch on Char, so that manifests
# record it as PyTorch's quantized kernels do.
QUANTIZED_STORAGE: dict[str, str] = {name: storage for name, _, storage in QUANTIZED_DTYPE_TABLE}

# What a kernel tag's dtype list may name: Pare's dtypes and the quantized names.
KERNEL_DTYPE_NAMES: tuple[str, ...] = PARE_DTYPE_NAMES + tuple(QUANTIZED_STORAGE)


def storage_dtype(name: str) -> Dtype:
    """The Pare dtype that holds a kernel tag's dtype `name` (itself, or a
    quantized name's storage)."""
    return DTYPES_BY_NAME[QUANTIZED_STORAGE.get(name, name)]


# Every c10::ScalarType name (torch 2.13, values 0..45). A manifest traced by
# PyTorch may carry any of these; tests compare this list with torch's header.
PYTORCH_SCALAR_TYPE_NAMES: frozenset[str] = frozenset(
    """
    Byte Char Short Int Long Half Float Double ComplexHalf ComplexFloat
    ComplexDouble Bool QInt8 QUInt8 QInt32 BFloat16 QUInt4x2 QUInt2x4 Bits1x8
    Bits2x4 Bits4x2 Bits8 Bits16 Float8_e5m2 Float8_e4m3fn Float8_e5m2fnuz
    Float8_e4m3fnuz UInt16 UInt32 UInt64 UInt1 UInt2 UInt3 UInt4 UInt5 UInt6
    UInt7 Int1 Int2 Int3 Int4 Int5 Int6 Int7 Float8_e8m0fnu Float4_e2m1fn_x2
    """.split()
)

# What people type instead of the ScalarType name.
_ALIASES: dict[str, str] = {
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "short": "Short",
    "int32": "Int",
    "int": "Int",
    "int64": "Long",
    "long": "Long",
    "float16": "Half",
    "half": "Half",
    "float32": "Float",
    "float": "Float",
    "float64": "Double",
    "double": "Double",
    "complex64": "ComplexFloat",
    "cfloat": "ComplexFloat",
    "bool": "Bool",
    "bfloat16": "BFloat16",
    "byte": "Byte",
    "char": "Char",
}


def suggest_dtype(name: str) -> str | None:
    """The Pare dtype name a misspelt `name` most likely meant, or None."""
    key = name.strip()
    for prefix in ("torch.", "at::ScalarType::", "c10::ScalarType::", "ScalarType::", "k"):
        if key.startswith(prefix) and key[len(prefix) :]:
            stripped = key[len(prefix) :]
            if prefix != "k" or stripped[0].isupper():
                key = stripped
    if key in DTYPES_BY_NAME:
        return key
    lowered = key.lower()
    if lowered in _ALIASES:
        return _ALIASES[lowered]
    for d in PARE_DTYPE_NAMES:
        if d.lower() == lowered:
            return d
    close = difflib.get_close_matches(key, PARE_DTYPE_NAMES, n=1, cutoff=0.5)
    return close[0] if close else None
