"""The value record's schema (runtime/core/program_format.def,
PARE_VALUE_FIELDS): one table that the C++ loader checks every record
against (runtime/executor/program_schema.h) and that pare/program.py writes
and reads the fields by. A program holding every kind of value is written,
read back and loaded; then every field a kind does not use (or uses only
as a constant) is set in turn, and the loader must reject each one."""

import struct

import numpy as np
import pytest

from pare import _format_table as fmt
from pare.program import ObjectOf, ProgramBuilder, ProgramError, TensorListOf, read, value_fields, value_payload
from pare.runtime import PareError

# Byte offset and struct format of the payload fields a, b, c, d in a record.
FIELD_AT = ((4, "<I"), (8, "<Q"), (16, "<Q"), (24, "<Q"))


def every_kind_program() -> bytes:
    """A method with a value of every kind, constant and not wherever the
    kind may be either. The loader checks records before it looks at what
    an operator takes, and never checks argument types (kernels do, when
    they run), so one call can hold them all."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, None])  # a non-constant Tensor
    packed = m.linear_prepack(np.ones((2, 2), np.float32), None)  # an Object, a constant Tensor
    n, f, flag, t = m.op(
        "aten::add.Tensor",
        x,
        None,
        True,
        3,
        2.5,
        "name",
        [1, 2],
        [1.5, -0.5],
        [x, x],
        packed,
        m.constant(np.arange(6, dtype=np.int32).reshape(2, 3)),
        returns=["int", "float", "bool", "tensor"],
    )
    lst = m.op("aten::unbind.int", x, 0, returns=TensorListOf(2))
    y = m.op("aten::view", x, [n, 2])  # an int list with a symbolic element
    m.output(y, t, *lst)
    m.output(m.op("aten::add.Tensor", t, f, flag))
    return pb.to_bytes()


def records(data: bytes):
    """(offset of method 0's value table, its value infos)."""
    methods_offset = struct.unpack_from("<Q", data, 40)[0]
    record = struct.unpack_from("<Q", data, methods_offset + 8)[0]
    values_offset = struct.unpack_from("<Q", data, record + 24)[0]
    return values_offset, read(data).methods[0].values


def test_the_program_holds_every_kind_both_ways():
    _, values = records(every_kind_program())
    seen = {(v.kind, v.constant) for v in values}
    for kind, (constant, _) in fmt.VALUE_FIELDS.items():
        wanted = {"must": [True], "never": [False], "may": [True, False]}[constant]
        for c in wanted:
            assert (kind, c) in seen, (fmt.KIND_NAMES[kind], c)


def test_written_fields_round_trip_by_name():
    data = every_kind_program()
    offset, values = records(data)
    by_kind = {}
    for i, v in enumerate(values):
        payload = tuple(struct.unpack_from(f, data, offset + 32 * i + at)[0] for at, f in FIELD_AT)
        fields = value_fields(v.kind, payload)
        assert value_payload(v.kind, v.constant, **fields) == payload
        by_kind.setdefault(fmt.KIND_NAMES[v.kind], []).append((v, fields))
    # The reader's values come from the named fields.
    (b,) = [v for v, _ in by_kind["bool"] if v.constant]
    assert b.payload is True
    assert {0, 3} <= {v.payload for v, _ in by_kind["int"] if v.constant}  # unbind's dim, the 3
    assert [v.payload for v, _ in by_kind["float[]"]] == [[1.5, -0.5]]
    assert [v.payload for v, _ in by_kind["str"]] == ["name"]
    assert [v.payload for v, _ in by_kind["Object"]] == ["LinearPackedParams"]
    (const_ints,) = [v for v, f in by_kind["Tensor"] if v.constant and v.dtype == "Int"]
    assert const_ints.payload.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_the_loader_takes_the_program(runtime):
    runtime.load(every_kind_program())


def unused_fields():
    """(value id, kind name, field index) for every field of every value in
    the program that its kind does not use, or uses only as a constant."""
    data = every_kind_program()
    _, values = records(data)
    out = []
    for i, v in enumerate(values):
        _, names = fmt.VALUE_FIELDS[v.kind]
        for f, name in enumerate(names):
            if name is None or (name.startswith("constant_") and not v.constant):
                out.append((i, fmt.KIND_NAMES[v.kind], f))
    return out


def test_every_kind_has_a_field_to_check():
    # Every kind leaves some field to 0 (a constant tensor uses all four;
    # a non-constant one leaves its data fields), so each is tested below.
    assert {kind for _, kind, _ in unused_fields()} == set(fmt.KIND_NAMES)


@pytest.mark.parametrize("value,kind,field", unused_fields())
def test_the_loader_rejects_a_field_the_schema_leaves_zero(runtime, value, kind, field):
    data = bytearray(every_kind_program())
    offset, _ = records(bytes(data))
    at, f = FIELD_AT[field]
    struct.pack_into(f, data, offset + 32 * value + at, 1)
    escaped = kind.replace("[", "\\[").replace("]", "\\]")
    with pytest.raises(PareError, match=f"value {value} \\({escaped}\\) has unused fields set"):
        runtime.load(bytes(data))


def test_the_writer_names_fields_the_schema_does_not_have():
    with pytest.raises(ProgramError, match="a bool value record has no field count"):
        value_payload(fmt.BOOL, True, count=1)
    with pytest.raises(ProgramError, match="a non-constant int value record sets a constant_ field"):
        value_payload(fmt.INT, False, constant_value=4)
    assert value_payload(fmt.TENSOR, False, rank=2, sizes_offset=64) == (2, 64, 0, 0)


def test_an_object_value_record_names_its_class():
    pb = ProgramBuilder()
    m = pb.method()
    obj = m.init_op("pare::linear_prepack", np.ones(32, np.float32), None, 2, 2, returns=ObjectOf("LinearPackedParams"))
    m.output(m.op("pare::linear_prepacked", m.input("Float"), obj))
    values = read(pb.to_bytes()).methods[0].values
    assert [v.payload for v in values if v.kind == fmt.OBJECT] == ["LinearPackedParams"]
