"""The program format's records as both halves of pare.program read them:
the header's and the value record's layouts, and the value record's payload
fields by their schema names (runtime/core/program_format.def's
PARE_VALUE_FIELDS, which the C++ loader checks every record against)."""

from __future__ import annotations

import struct

from pare._format_table import HEADER_SIZE, KIND_NAMES, VALUE_FIELDS, VALUE_RECORD_SIZE


class ProgramError(Exception):
    """A program could not be built or parsed."""


ProgramError.__module__ = "pare.program"  # where users import it from


# The header (docs/program_format.md, "Header"): magic, version major and
# minor, header size, flags, file size, then the string table's, operator
# table's, method table's and data segment's offsets and the data's size.
HEADER = struct.Struct("<4sHHIIQQQQQQ")
# A value record: kind, dtype, flags, reserved, then the payload fields a,
# b, c, d, named per kind by VALUE_FIELDS (the schema the C++ loader checks).
VALUE_RECORD = struct.Struct("<BBBBIQQQ")
assert HEADER.size == HEADER_SIZE and VALUE_RECORD.size == VALUE_RECORD_SIZE


def value_payload(kind: int, constant: bool, **fields: int) -> tuple[int, int, int, int]:
    """The payload fields (a, b, c, d) of a value record of `kind` from its
    fields by their schema names (VALUE_FIELDS); a field left out is 0. A
    name the kind does not have, or a constant_ field on a non-constant, is
    a ProgramError."""
    _, names = VALUE_FIELDS[kind]
    unknown = set(fields) - {n for n in names if n is not None}
    if unknown:
        raise ProgramError(f"a {KIND_NAMES[kind]} value record has no field {', '.join(sorted(unknown))}")
    if not constant and any(fields.get(n) for n in names if n is not None and n.startswith("constant_")):
        raise ProgramError(f"a non-constant {KIND_NAMES[kind]} value record sets a constant_ field")
    return tuple(fields.get(n, 0) if n is not None else 0 for n in names)


def value_fields(kind: int, payload: tuple[int, int, int, int]) -> dict[str, int]:
    """A value record's payload fields by their schema names (the inverse of
    value_payload; unused fields are left out)."""
    _, names = VALUE_FIELDS[kind]
    return {n: v for n, v in zip(names, payload) if n is not None}
