"""Build and read Pare program files (format v1, docs/program_format.md).

Building a program::

    from pare.program import ProgramBuilder, TensorListOf, ObjectOf

    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 16])            # None: any size in that dim
    w = np.ones((8, 16), np.float32)             # numpy arrays and torch tensors become constants
    packed = m.linear_prepack(w, None)           # W packed here, used in place (pare/packing.py)
    y = m.op("pare::linear_prepacked", x, packed)
    z = m.op("aten::add.Tensor", y, 1.0)        # Python scalars become values
    m.output(z)
    data = pb.to_bytes()

Arguments are Values or Python objects converted to constant values: None,
bool, int, float, str, lists (of ints and Int Values: an int list, with
symbolic elements where a Value is given; of floats: a float list; of tensor
Values: a tensor list, which may also hold None for a Tensor?[] argument), numpy arrays and torch tensors (constant tensors),
and dtypes (pare.dtypes.DType or torch.dtype: their ScalarType code).
Trailing defaulted schema arguments may be omitted; kernels apply defaults.

``python -m pare.program dump FILE`` prints a program.
"""

from __future__ import annotations

import argparse
import dataclasses
import struct
import sys
from typing import Any, Iterable, Sequence

import numpy as np

from pare import dtypes as _dtypes
from pare import packing as _packing

# The format's constants and value kinds: generated from runtime/core/program_format.def.
from pare._format_table import (
    BOOL,
    DATA_ALIGNMENT,
    DOUBLE,
    DOUBLE_LIST,
    FLAG_CONSTANT,
    HEADER_FLAG_STATE,
    HEADER_SIZE,
    INT,
    INT_LIST,
    KIND_NAMES,
    MAGIC,
    MAX_DIM,
    NO_VALUE,
    NONE,
    OBJECT,
    STATE_FLAG_IN_PLACE,
    STRING,
    TENSOR,
    TENSOR_LIST,
    UNKNOWN_DTYPE,
    UNKNOWN_RANK,
    VERSION_MAJOR,
    VERSION_MINOR,
)
from pare._program_records import HEADER as _HEADER
from pare._program_records import VALUE_RECORD as _VALUE_RECORD
from pare._program_records import ProgramError, value_fields, value_payload  # noqa: F401 (re-exported)
from pare.program_reader import (  # noqa: F401 (re-exported: pare.program reads programs too)
    InstructionInfo,
    MethodInfo,
    ProgramInfo,
    ValueInfo,
    dump,
    read,
)

# --------------------------------------------------------------------------
# Building


@dataclasses.dataclass(frozen=True)
class Value:
    """A value of a method under construction (its id and kind)."""

    method: "MethodBuilder"
    id: int
    kind: int

    def __repr__(self) -> str:
        return f"Value(%{self.id}: {KIND_NAMES[self.kind]})"


# Delegate calls (docs/program_format.md): the init operator of backend B is
# DELEGATE_INIT_PREFIX + B; it makes a DELEGATE_CLASS object that
# DELEGATE_CALL runs.
DELEGATE_INIT_PREFIX = "pare::delegate_init."
DELEGATE_CALL = "pare::delegate_call"
DELEGATE_CLASS = "Delegate"


@dataclasses.dataclass(frozen=True)
class TensorListOf:
    """`returns=` spec: the op returns a Tensor[] of `length` tensors
    (e.g. split_with_sizes); op() returns the element Values."""

    length: int


@dataclasses.dataclass(frozen=True)
class ObjectOf:
    """`returns=` spec: the op returns an object of a custom class."""

    class_name: str


@dataclasses.dataclass
class _ValueRecord:
    kind: int
    constant: bool
    dtype: int = 0
    rank: int | None = None  # tensors; None = unknown
    sizes: tuple[int, ...] = ()
    data: bytes | None = None  # constant tensor bytes
    scalar: Any = None  # int / float / bool / str / class name
    ints: tuple[int, ...] = ()
    refs: tuple[int, ...] | None = None  # int list element refs
    doubles: tuple[float, ...] = ()
    ids: tuple[int, ...] = ()  # tensor list items


@dataclasses.dataclass
class _State:
    name: str
    value: int  # a constant tensor: the initial value
    update: int = NO_VALUE  # the value each execute writes back
    in_place: bool = False


@dataclasses.dataclass
class _Instruction:
    op: str
    inputs: list[int]
    outputs: list[int]


_RETURN_KINDS = {"tensor": TENSOR, "int": INT, "float": DOUBLE, "bool": BOOL}


class MethodBuilder:
    def __init__(self, program: "ProgramBuilder", name: str):
        self.program = program
        self.name = name
        self._values: list[_ValueRecord] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._init: list[_Instruction] = []
        self._body: list[_Instruction] = []
        self._scalar_cache: dict[tuple, int] = {}
        self._states: list[_State] = []

    # -- values -------------------------------------------------------------

    def _add(self, record: _ValueRecord) -> Value:
        self._values.append(record)
        return Value(self, len(self._values) - 1, record.kind)

    def input(self, dtype, shape: Sequence[int | None] | None = None) -> Value:
        """A tensor input. `shape` entries None (or -1) accept any size; a
        `shape` of None accepts any rank. `dtype` None accepts any dtype."""
        code = UNKNOWN_DTYPE if dtype is None else _dtypes.get(dtype).code
        if shape is None:
            record = _ValueRecord(TENSOR, False, code, None)
        else:
            sizes = tuple(-1 if s is None else int(s) for s in shape)
            if len(sizes) > MAX_DIM or any(s < -1 for s in sizes):
                raise ProgramError(f"invalid input shape {list(shape)}")
            record = _ValueRecord(TENSOR, False, code, len(sizes), sizes)
        v = self._add(record)
        self._inputs.append(v.id)
        return v

    def constant(self, x) -> Value:
        """A constant value from a Python object (see the module docstring)."""
        if isinstance(x, Value):
            self._check_owned(x)
            return x
        if x is None:
            return self._cached(("none",), lambda: _ValueRecord(NONE, True))
        if isinstance(x, _dtypes.DType) or type(x).__name__ == "dtype" and str(x).startswith("torch."):
            return self.constant(_dtypes.get(x).code)
        if isinstance(x, (bool, np.bool_)):
            return self._cached(("bool", bool(x)), lambda: _ValueRecord(BOOL, True, scalar=bool(x)))
        if isinstance(x, (int, np.integer)):
            return self._cached(("int", int(x)), lambda: _ValueRecord(INT, True, scalar=int(x)))
        if isinstance(x, (float, np.floating)):
            key = ("float", struct.pack("<d", float(x)))
            return self._cached(key, lambda: _ValueRecord(DOUBLE, True, scalar=float(x)))
        if isinstance(x, str):
            return self._cached(("str", x), lambda: _ValueRecord(STRING, True, scalar=x))
        if isinstance(x, (list, tuple)):
            return self._list(list(x))
        if isinstance(x, np.ndarray) or _dtypes.is_torch_tensor(x):
            dtype, array = _dtypes.to_numpy(x)
            if array.ndim > MAX_DIM:
                raise ProgramError(f"constant of rank {array.ndim} exceeds {MAX_DIM}")
            return self._add(
                _ValueRecord(
                    TENSOR, True, dtype.code, array.ndim, tuple(array.shape), data=np.ascontiguousarray(array).tobytes()
                )
            )
        raise ProgramError(f"cannot turn {type(x).__name__} into a program value")

    def state(self, name: str, initial) -> Value:
        """A buffer the method keeps between calls (format 1.2, build feature
        state): a tensor value whose initial value is `initial` (numpy or
        torch); each method instance holds its own copy. Give the value
        each call writes into it with update_state()."""
        if not name or any(s.name == name for s in self._states):
            raise ProgramError(f"state name {name!r} is empty or already used in method '{self.name}'")
        v = self.constant(initial if _dtypes.is_torch_tensor(initial) else np.asarray(initial))
        self._states.append(_State(name, v.id))
        return v

    def update_state(self, state: Value, value: Value, in_place: bool = False) -> None:
        """At the end of every execute, `value` (a tensor an instruction of
        the body produces, with the state's dtype and sizes) becomes the
        state's content. `in_place`: its producer writes it straight into
        the state's storage, which is only right when nothing after the
        producer reads the state or a view of it (the loader checks direct
        reads)."""
        self._check_owned(state)
        self._check_owned(value)
        entry = next((s for s in self._states if s.value == state.id), None)
        if entry is None:
            raise ProgramError(f"{state} is not a state of method '{self.name}'")
        entry.update = value.id
        entry.in_place = bool(in_place)

    def _cached(self, key, make) -> Value:
        if key not in self._scalar_cache:
            self._scalar_cache[key] = self._add(make()).id
        vid = self._scalar_cache[key]
        return Value(self, vid, self._values[vid].kind)

    def _list(self, items: list) -> Value:
        values = [i for i in items if isinstance(i, Value)]
        for v in values:
            self._check_owned(v)
        if items and all(isinstance(i, Value) and i.kind == TENSOR for i in items):
            return self._add(_ValueRecord(TENSOR_LIST, False, ids=tuple(i.id for i in items)))
        if items and all(i is None or isinstance(i, Value) and i.kind in (TENSOR, NONE) for i in items):
            # A Tensor?[] argument (index_put's indices): None elements need format 1.1.
            ids = tuple(self.constant(None).id if i is None else i.id for i in items)
            return self._add(_ValueRecord(TENSOR_LIST, False, ids=ids))
        if all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) or isinstance(i, Value) and i.kind == INT
            for i in items
        ):
            ints = tuple(0 if isinstance(i, Value) else int(i) for i in items)
            refs = tuple(i.id if isinstance(i, Value) else NO_VALUE for i in items) if values else None
            return self._add(_ValueRecord(INT_LIST, True, ints=ints, refs=refs))
        if all(isinstance(i, (int, float, np.integer, np.floating)) and not isinstance(i, bool) for i in items):
            return self._add(_ValueRecord(DOUBLE_LIST, True, doubles=tuple(float(i) for i in items)))
        raise ProgramError(
            f"cannot make a list value from {items!r}: use all ints (or Int values), all floats, or all tensor values"
        )

    def _check_owned(self, v: Value) -> None:
        if v.method is not self:
            raise ProgramError(f"{v} belongs to method '{v.method.name}', not '{self.name}'")

    # -- instructions -------------------------------------------------------

    def op(self, name: str, *args, returns="tensor", init: bool = False):
        """Appends an instruction calling operator `name` (full name with
        overload, e.g. "aten::add.Tensor"). `returns` is "tensor" (the
        default), "int", "float", "bool", a count of tensors, a sequence of
        those kinds, TensorListOf(n) or ObjectOf(class). Returns the output
        Value, or a tuple of them (a list for TensorListOf). `init=True`
        puts the instruction in the init section, run once at method
        creation (use it for prepacking)."""
        inputs = [self.constant(a).id for a in args]
        outputs, result = self._make_returns(returns)
        ins = _Instruction(name, inputs, outputs)
        if init:
            for vid in inputs:
                if vid in self._inputs:
                    raise ProgramError(f"init op {name} cannot read method input %{vid}")
            self._init.append(ins)
        else:
            self._body.append(ins)
        return result

    def init_op(self, name: str, *args, returns="tensor"):
        """Like op(), in the init section: run once when the method instance is created (e.g. weight packing)."""
        return self.op(name, *args, returns=returns, init=True)

    def delegate_call(self, backend: str, blob: bytes, specs, inputs, num_outputs: int) -> list[Value]:
        """A delegate call (docs/program_format.md, "Delegate calls"): an
        init-section pare::delegate_init.<backend> of `blob` (stored as a
        1-D Byte constant) and the compile `specs` ((key, value) string
        pairs), and a pare::delegate_call of the Delegate it makes on the
        tensor Values `inputs`; returns the `num_outputs` output Values."""
        if not inputs:
            raise ProgramError(f"a delegate call to {backend} needs at least one tensor input")
        spec_args = [text for key, value in specs for text in (str(key), str(value))]
        handle = self.init_op(
            f"{DELEGATE_INIT_PREFIX}{backend}",
            np.frombuffer(bytes(blob), np.uint8),
            *spec_args,
            returns=ObjectOf(DELEGATE_CLASS),
        )
        return self.op(DELEGATE_CALL, handle, list(inputs), returns=TensorListOf(num_outputs))

    def linear_prepack(self, weight, bias) -> Value:
        """An init-section pare::linear_prepack of nn.Linear's `weight`
        [out_features, in_features] (float32, numpy or torch), packed here
        (pare/packing.py), and `bias` [out_features] or None: the
        LinearPackedParams object pare::linear_prepacked takes."""
        w = _packing.pack_linear_weight(weight)
        out_features, in_features = np.shape(weight)
        return self.init_op(
            "pare::linear_prepack", w, bias, int(in_features), int(out_features), returns=ObjectOf("LinearPackedParams")
        )

    def conv2d_prepack(
        self,
        weight,
        bias,
        stride,
        padding,
        dilation,
        groups: int,
        winograd: int = 0,
        pixel_rows: bool = False,
        channels_last: bool = False,
    ) -> Value:
        """An init-section pare::conv2d_prepack of a 2-d convolution's
        `weight` [out_channels, in_channels / groups, kh, kw] (float32),
        packed here (pare/packing.py; `winograd`: transformed for Winograd
        with that output tile, 2 for F(2x2, 3x3) or 4 for F(4x4, 3x3), True
        meaning 2; `pixel_rows`: for pixel rows (W^T packed as B);
        `channels_last`: for the channels-last kernels, HWIO for a depthwise
        convolution, pixel rows for a 1x1 one), and `bias` or None: the
        Conv2dPackedParams object pare::conv2d_prepacked takes. The program
        says which layout the weights are in (the op's `layout` argument)."""
        weight = _packing.conv2d_weight(weight)
        sizes = [int(s) for s in weight.shape]
        layout = _packing.conv2d_weight_layout(
            sizes, stride, dilation, groups, winograd, pixel_rows, padding, channels_last
        )
        w = _packing.pack_conv2d_for_layout(weight, layout, groups)
        return self.init_op(
            "pare::conv2d_prepack",
            w,
            bias,
            list(stride),
            list(padding),
            list(dilation),
            int(groups),
            sizes,
            layout,
            returns=ObjectOf("Conv2dPackedParams"),
        )

    def qconv2d_prepack(
        self, weight, correction, multiplier, offset, stride, padding, dilation, groups: int, input_zero_point: int
    ) -> Value:
        """An init-section pare::qconv2d_prepack of an int8 2-d convolution:
        `weight` [out_channels, in_channels / groups, kh, kw] (int8, as
        given: layout 0), and the per-output-channel `correction` (int32),
        `multiplier` and `offset` (float32) of pare.quantized_packing's
        requantization(); `input_zero_point` is the value padding reads.
        The QConv2dPackedParams object pare::qconv2d_prepacked takes."""
        return self._int8_prepack(
            "pare::qconv2d_prepack",
            "QConv2dPackedParams",
            (weight, 4, "an int8 convolution weight"),
            (correction, multiplier, offset),
            [int(v) for v in stride],
            [int(v) for v in padding],
            [int(v) for v in dilation],
            int(groups),
            _packing.LAYOUT_AS_GIVEN,
            int(input_zero_point),
        )

    def qlinear_prepack(self, weight, correction, multiplier, offset) -> Value:
        """An init-section pare::qlinear_prepack of an int8 linear layer:
        `weight` [out_features, in_features] (int8) and the per-output
        `correction`, `multiplier`, `offset` of
        pare.quantized_packing.requantization(). The QLinearPackedParams
        object pare::qlinear_prepacked takes."""
        return self._int8_prepack(
            "pare::qlinear_prepack",
            "QLinearPackedParams",
            (weight, 2, "an int8 linear weight"),
            (correction, multiplier, offset),
        )

    def _int8_prepack(self, op: str, class_name: str, weight: tuple, requantization: tuple, *rest) -> Value:
        """The init op `op` of an int8 layer: its weight ((array, dims,
        what) for quantized_packing.int8_weight), its requantization
        (correction, multiplier, offset: int32, float32, float32), then
        `rest`; returns the `class_name` object."""
        from pare import quantized_packing as _qpacking

        correction, multiplier, offset = requantization
        return self.init_op(
            op,
            _qpacking.int8_weight(*weight),
            np.asarray(correction, dtype=np.int32),
            np.asarray(multiplier, dtype=np.float32),
            np.asarray(offset, dtype=np.float32),
            *rest,
            returns=ObjectOf(class_name),
        )

    def _make_returns(self, returns):
        if isinstance(returns, TensorListOf):
            items = [self._add(_ValueRecord(TENSOR, False, UNKNOWN_DTYPE, None)) for _ in range(returns.length)]
            lst = self._add(_ValueRecord(TENSOR_LIST, False, ids=tuple(i.id for i in items)))
            return [lst.id], items
        if isinstance(returns, ObjectOf):
            obj = self._add(_ValueRecord(OBJECT, False, scalar=returns.class_name))
            return [obj.id], obj
        if isinstance(returns, int) and not isinstance(returns, bool):
            kinds = ["tensor"] * returns
            single = False
        elif isinstance(returns, str):
            kinds = [returns]
            single = True
        else:
            kinds = list(returns)
            single = False
        values = []
        for k in kinds:
            if k not in _RETURN_KINDS:
                raise ProgramError(f"unknown return kind {k!r}; use one of {sorted(_RETURN_KINDS)}")
            kind = _RETURN_KINDS[k]
            if kind == TENSOR:
                values.append(self._add(_ValueRecord(TENSOR, False, UNKNOWN_DTYPE, None)))
            else:
                values.append(self._add(_ValueRecord(kind, False)))
        ids = [v.id for v in values]
        return ids, (values[0] if single else tuple(values))

    def output(self, *values: Value) -> None:
        """Declares the method's outputs, in order (non-Value arguments become constants)."""
        for v in values:
            if not isinstance(v, Value):
                v = self.constant(v)
            self._check_owned(v)
            self._outputs.append(v.id)

    @property
    def instructions(self) -> list[_Instruction]:
        """The init section's instructions, then the body's."""
        return self._init + self._body


class ProgramBuilder:
    def __init__(self):
        self._methods: list[MethodBuilder] = []

    def method(self, name: str = "forward") -> MethodBuilder:
        """A builder for a new method `name`; ProgramError if the program has one by that name."""
        if any(m.name == name for m in self._methods):
            raise ProgramError(f"method '{name}' already exists")
        m = MethodBuilder(self, name)
        self._methods.append(m)
        return m

    def to_bytes(self) -> bytes:
        """The program file's bytes (docs/program_format.md); ProgramError for an invalid program."""
        return _Writer(self._methods).write()

    def save(self, path) -> None:
        """Writes to_bytes() to `path`."""
        with open(path, "wb") as f:
            f.write(self.to_bytes())


class _Writer:
    def __init__(self, methods: list[MethodBuilder]):
        if not methods:
            raise ProgramError("a program needs at least one method")
        self.methods = methods
        self.buf = bytearray(HEADER_SIZE)
        self.strings: dict[str, int] = {}
        self.ops: dict[str, int] = {}
        self.data = bytearray()

    def align(self, n: int) -> int:
        self.buf.extend(b"\0" * (-len(self.buf) % n))
        return len(self.buf)

    def put(self, fmt: str, *values) -> int:
        offset = len(self.buf)
        self.buf.extend(struct.pack("<" + fmt, *values))
        return offset

    def string(self, s: str) -> int:
        if s not in self.strings:
            self.strings[s] = len(self.strings)
        return self.strings[s]

    def constant_data(self, data: bytes) -> int:
        self.data.extend(b"\0" * (-len(self.data) % DATA_ALIGNMENT))
        offset = len(self.data)
        self.data.extend(data)
        return offset

    def minor_version(self) -> int:
        """The oldest minor version that reads the program: 2 (VERSION_MINOR)
        when a method has state, 1 when a tensor list holds None (a
        Tensor?[] argument), else 0, so a program an older runtime can load
        says so."""
        if self.has_state():
            return VERSION_MINOR
        for m in self.methods:
            for v in m._values:
                if v.kind == TENSOR_LIST and any(m._values[i].kind == NONE for i in v.ids):
                    return 1
        return 0

    def has_state(self) -> bool:
        return any(m._states for m in self.methods)

    def write(self) -> bytes:
        # Intern every string and op first: the tables precede the methods.
        for m in self.methods:
            self.string(m.name)
            for ins in m.instructions:
                if ins.op not in self.ops:
                    self.ops[ins.op] = len(self.ops)
                self.string(ins.op)
            for v in m._values:
                if v.kind in (STRING, OBJECT):
                    self.string(v.scalar)
            for st in m._states:
                self.string(st.name)
        string_bytes = []
        for s in self.strings:
            string_bytes.append((self.put(f"{len(s.encode()) + 1}s", s.encode() + b"\0"), len(s.encode())))
        strings_offset = self.align(8)
        self.put("II", len(string_bytes), 0)
        for offset, length in string_bytes:
            self.put("QQ", offset, length)
        ops_offset = self.align(4)
        self.put("I", len(self.ops))
        for op in self.ops:
            self.put("I", self.strings[op])
        method_records = [self.write_method(m) for m in self.methods]
        state_tables = [self.write_states(m) for m in self.methods] if self.has_state() else []
        methods_offset = self.align(8)
        self.put("II", len(method_records), 0)
        for r in method_records:
            self.put("Q", r)
        for r in state_tables:  # format 1.2: after the method offsets, under HEADER_FLAG_STATE
            self.put("Q", r)
        data_offset = self.align(DATA_ALIGNMENT)
        self.buf.extend(self.data)
        _HEADER.pack_into(
            self.buf,
            0,
            MAGIC,
            VERSION_MAJOR,
            self.minor_version(),
            HEADER_SIZE,
            HEADER_FLAG_STATE if self.has_state() else 0,
            len(self.buf),
            strings_offset,
            ops_offset,
            methods_offset,
            data_offset,
            len(self.data),
        )
        return bytes(self.buf)

    def array(self, fmt: str, items: Iterable, align: int) -> int:
        items = list(items)
        if not items:
            return 0
        offset = self.align(align)
        self.buf.extend(struct.pack(f"<{len(items)}{fmt}", *items))
        return offset

    def write_states(self, m: MethodBuilder) -> int:
        """A method's state table (u32 count, u32 reserved, then u32 name,
        value, update, flags per state); 0 when it has none."""
        if not m._states:
            return 0
        offset = self.align(8)
        self.put("II", len(m._states), 0)
        for st in m._states:
            self.put("IIII", self.strings[st.name], st.value, st.update, STATE_FLAG_IN_PLACE if st.in_place else 0)
        return offset

    def write_method(self, m: MethodBuilder) -> int:
        records = []
        for v in m._values:
            fields = {}
            dtype = 0
            if v.kind == TENSOR:
                dtype = v.dtype
                if v.rank is None:
                    fields["rank"] = UNKNOWN_RANK
                else:
                    fields["rank"] = v.rank
                    fields["sizes_offset"] = self.array("q", v.sizes, 8)
                if v.constant:
                    fields["constant_data_offset"] = self.constant_data(v.data)
                    fields["constant_data_size"] = len(v.data)
            elif v.kind == INT and v.constant:
                fields["constant_value"] = v.scalar & 0xFFFFFFFFFFFFFFFF
            elif v.kind == DOUBLE and v.constant:
                fields["constant_bits"] = struct.unpack("<Q", struct.pack("<d", v.scalar))[0]
            elif v.kind == BOOL and v.constant:
                fields["constant_value"] = int(bool(v.scalar))
            elif v.kind == INT_LIST:
                fields["count"] = len(v.ints)
                fields["ints_offset"] = self.array("q", v.ints, 8)
                fields["refs_offset"] = self.array("I", v.refs, 4) if v.refs is not None else 0
            elif v.kind == DOUBLE_LIST:
                fields["count"] = len(v.doubles)
                fields["doubles_offset"] = self.array("d", v.doubles, 8)
            elif v.kind == STRING:
                fields["string"] = self.strings[v.scalar]
            elif v.kind == OBJECT:
                fields["class_name"] = self.strings[v.scalar]
            elif v.kind == TENSOR_LIST:
                fields["count"] = len(v.ids)
                fields["ids_offset"] = self.array("I", v.ids, 4)
            flags = FLAG_CONSTANT if v.constant else 0
            records.append((v.kind, dtype, flags, 0, *value_payload(v.kind, v.constant, **fields)))
        io_offset = self.array("I", m._inputs + m._outputs, 4)
        instructions = m.instructions
        args_offsets = [self.array("I", ins.inputs + ins.outputs, 4) for ins in instructions]
        for ins in instructions:
            if len(ins.inputs) > 0xFFFF or len(ins.outputs) > 0xFFFF:
                raise ProgramError(f"instruction {ins.op} has too many arguments")
        instructions_offset = self.align(8) if instructions else 0
        for ins, args_offset in zip(instructions, args_offsets):
            self.put("IHHQ", self.ops[ins.op], len(ins.inputs), len(ins.outputs), args_offset)
        values_offset = self.align(8) if records else 0
        for record in records:
            self.buf.extend(_VALUE_RECORD.pack(*record))
        record = self.align(8)
        self.put(
            "IIIIIIQQQ",
            self.strings[m.name],
            len(m._values),
            len(m._inputs),
            len(m._outputs),
            len(instructions),
            len(m._init),
            values_offset,
            io_offset,
            instructions_offset,
        )
        return record


# --------------------------------------------------------------------------
# Reading: pare/program_reader.py


def main(argv=None) -> int:
    """`python -m pare.program dump FILE`: 0 on success, 1 (with the error on stderr) for an unreadable file or one that is not a program."""
    parser = argparse.ArgumentParser(prog="python -m pare.program", description="Inspect Pare program files.")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="print a program's methods, values and instructions")
    d.add_argument("file")
    args = parser.parse_args(argv)
    try:
        with open(args.file, "rb") as f:
            dump(read(f.read()))
    except (OSError, ProgramError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
