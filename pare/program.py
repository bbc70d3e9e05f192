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
    HEADER_SIZE,
    INSTRUCTION_RECORD_SIZE,
    INT,
    INT_LIST,
    KIND_NAMES,
    MAGIC,
    MAX_DIM,
    NO_VALUE,
    NONE,
    OBJECT,
    STRING,
    TENSOR,
    TENSOR_LIST,
    UNKNOWN_DTYPE,
    UNKNOWN_RANK,
    VALUE_RECORD_SIZE,
    VERSION_MAJOR,
    VERSION_MINOR,
)


class ProgramError(Exception):
    """A program could not be built or parsed."""


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
        Conv2dPackedParams object pare::conv2d_prepacked takes."""
        w = _packing.pack_conv2d_weight(
            weight,
            stride,
            dilation,
            groups,
            winograd=winograd,
            pixel_rows=pixel_rows,
            padding=padding,
            channels_last=channels_last,
        )
        sizes = [int(s) for s in np.shape(weight)]
        return self.init_op(
            "pare::conv2d_prepack",
            w,
            bias,
            list(stride),
            list(padding),
            list(dilation),
            int(groups),
            sizes,
            returns=ObjectOf("Conv2dPackedParams"),
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
        """The oldest minor version that reads the program: 1 (VERSION_MINOR)
        when a tensor list holds None (a Tensor?[] argument), else 0, so a
        program a 1.0 runtime can load says so."""
        for m in self.methods:
            for v in m._values:
                if v.kind == TENSOR_LIST and any(m._values[i].kind == NONE for i in v.ids):
                    return VERSION_MINOR
        return 0

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
        methods_offset = self.align(8)
        self.put("II", len(method_records), 0)
        for r in method_records:
            self.put("Q", r)
        data_offset = self.align(DATA_ALIGNMENT)
        self.buf.extend(self.data)
        struct.pack_into(
            "<4sHHIIQQQQQQ",
            self.buf,
            0,
            MAGIC,
            VERSION_MAJOR,
            self.minor_version(),
            HEADER_SIZE,
            0,
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

    def write_method(self, m: MethodBuilder) -> int:
        records = []
        for v in m._values:
            flags = FLAG_CONSTANT if v.constant else 0
            a = b = c = d = 0
            dtype = 0
            if v.kind == TENSOR:
                dtype = v.dtype
                if v.rank is None:
                    a = UNKNOWN_RANK
                else:
                    a = v.rank
                    b = self.array("q", v.sizes, 8)
                if v.constant:
                    c = self.constant_data(v.data)
                    d = len(v.data)
            elif v.kind == INT:
                b = (v.scalar & 0xFFFFFFFFFFFFFFFF) if v.constant else 0
            elif v.kind == DOUBLE:
                b = struct.unpack("<Q", struct.pack("<d", v.scalar))[0] if v.constant else 0
            elif v.kind == BOOL:
                a = int(bool(v.scalar)) if v.constant else 0
            elif v.kind == INT_LIST:
                a = len(v.ints)
                b = self.array("q", v.ints, 8)
                c = self.array("I", v.refs, 4) if v.refs is not None else 0
            elif v.kind == DOUBLE_LIST:
                a = len(v.doubles)
                b = self.array("d", v.doubles, 8)
            elif v.kind == STRING or v.kind == OBJECT:
                a = self.strings[v.scalar]
            elif v.kind == TENSOR_LIST:
                a = len(v.ids)
                b = self.array("I", v.ids, 4)
            records.append((v.kind, dtype, flags, a, b, c, d))
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
        for kind, dtype, flags, a, b, c, d in records:
            self.put("BBBBIQQQ", kind, dtype, flags, 0, a, b, c, d)
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
# Reading


@dataclasses.dataclass
class ValueInfo:
    kind: int
    constant: bool
    dtype: str | None = None
    sizes: list[int] | None = None  # None: unknown rank
    payload: Any = None  # scalar, list, string, class name, list of ids, or tensor ndarray

    def describe(self) -> str:
        """One line for `python -m pare.program dump`, e.g. "const Tensor Float[16, 8]"."""
        k = KIND_NAMES[self.kind]
        if self.kind == TENSOR:
            shape = "?" if self.sizes is None else "[" + ", ".join("?" if s < 0 else str(s) for s in self.sizes) + "]"
            return f"{'const ' if self.constant else ''}Tensor {self.dtype or '?'}{shape}"
        if self.kind == NONE:
            return "None"
        if self.kind == TENSOR_LIST:
            return "Tensor[](" + ", ".join(f"%{i}" for i in self.payload) + ")"
        if self.kind == OBJECT:
            return f"Object {self.payload}"
        if not self.constant:
            return k
        return f"{k} {self.payload!r}"


@dataclasses.dataclass
class InstructionInfo:
    op: str
    inputs: list[int]
    outputs: list[int]


@dataclasses.dataclass
class MethodInfo:
    name: str
    values: list[ValueInfo]
    inputs: list[int]
    outputs: list[int]
    instructions: list[InstructionInfo]
    num_init: int


@dataclasses.dataclass
class ProgramInfo:
    version: tuple[int, int]
    file_size: int
    strings: list[str]
    ops: list[str]
    methods: list[MethodInfo]
    data_offset: int
    data_size: int


def read(data: bytes) -> ProgramInfo:
    """Parses a program (trusting layout less than the C++ loader does not
    matter here: this is for inspection of files the writer made)."""
    try:
        return _read(memoryview(data))
    except (struct.error, IndexError, KeyError, ValueError, UnicodeDecodeError) as e:
        raise ProgramError(f"malformed program: {e}") from None


def _read(buf: memoryview) -> ProgramInfo:
    magic, major, minor, header_size, flags, file_size, s_off, o_off, m_off, d_off, d_size = struct.unpack_from(
        "<4sHHIIQQQQQQ", buf, 0
    )
    if magic != MAGIC:
        raise ProgramError("not a Pare program (bad magic)")
    if major != VERSION_MAJOR:
        raise ProgramError(f"unsupported format version {major}.{minor}")
    count, _ = struct.unpack_from("<II", buf, s_off)
    strings = []
    for i in range(count):
        off, length = struct.unpack_from("<QQ", buf, s_off + 8 + 16 * i)
        strings.append(bytes(buf[off : off + length]).decode())
    (n_ops,) = struct.unpack_from("<I", buf, o_off)
    ops = [strings[i] for i in struct.unpack_from(f"<{n_ops}I", buf, o_off + 4)]
    n_methods, _ = struct.unpack_from("<II", buf, m_off)
    methods = []
    for rec in struct.unpack_from(f"<{n_methods}Q", buf, m_off + 8):
        name, nv, ni, no, nins, ninit, v_off, io_off, ins_off = struct.unpack_from("<IIIIIIQQQ", buf, rec)
        values = []
        for i in range(nv):
            kind, dtype, flg, _, a, b, c, d = struct.unpack_from("<BBBBIQQQ", buf, v_off + VALUE_RECORD_SIZE * i)
            const = bool(flg & FLAG_CONSTANT)
            info = ValueInfo(kind, const)
            if kind == TENSOR:
                info.dtype = None if dtype == UNKNOWN_DTYPE else _dtypes.BY_CODE[dtype].name
                info.sizes = None if a == UNKNOWN_RANK else list(struct.unpack_from(f"<{a}q", buf, b)) if a else []
                if const:
                    dt = _dtypes.BY_CODE[dtype]
                    raw = bytes(buf[d_off + c : d_off + c + d])
                    arr = np.frombuffer(raw, dtype=dt.numpy if dt.numpy is not None else np.uint16)
                    info.payload = arr.reshape(info.sizes)
            elif kind == INT:
                info.payload = struct.unpack("<q", struct.pack("<Q", b))[0]
            elif kind == DOUBLE:
                info.payload = struct.unpack("<d", struct.pack("<Q", b))[0]
            elif kind == BOOL:
                info.payload = bool(a)
            elif kind == INT_LIST:
                ints = list(struct.unpack_from(f"<{a}q", buf, b)) if a else []
                if c:
                    refs = struct.unpack_from(f"<{a}I", buf, c)
                    ints = [f"%{r}" if r != NO_VALUE else v for v, r in zip(ints, refs)]
                info.payload = ints
            elif kind == DOUBLE_LIST:
                info.payload = list(struct.unpack_from(f"<{a}d", buf, b)) if a else []
            elif kind in (STRING, OBJECT):
                info.payload = strings[a]
            elif kind == TENSOR_LIST:
                info.payload = list(struct.unpack_from(f"<{a}I", buf, b)) if a else []
            values.append(info)
        io = list(struct.unpack_from(f"<{ni + no}I", buf, io_off)) if ni + no else []
        instructions = []
        for i in range(nins):
            op, n_in, n_out, args_off = struct.unpack_from("<IHHQ", buf, ins_off + INSTRUCTION_RECORD_SIZE * i)
            args = list(struct.unpack_from(f"<{n_in + n_out}I", buf, args_off)) if n_in + n_out else []
            instructions.append(InstructionInfo(ops[op], args[:n_in], args[n_in:]))
        methods.append(MethodInfo(strings[name], values, io[:ni], io[ni:], instructions, ninit))
    return ProgramInfo((major, minor), file_size, strings, ops, methods, d_off, d_size)


def dump(info: ProgramInfo, out=sys.stdout) -> None:
    """Prints a parsed program's methods, values and instructions (python -m pare.program dump FILE)."""
    print(
        f"Pare program v{info.version[0]}.{info.version[1]}, {info.file_size} bytes, "
        f"{info.data_size} bytes of constants",
        file=out,
    )
    for m in info.methods:
        print(
            f"method {m.name}({', '.join(f'%{i}' for i in m.inputs)}) -> ({', '.join(f'%{i}' for i in m.outputs)})",
            file=out,
        )
        for i, v in enumerate(m.values):
            print(f"  %{i}: {v.describe()}", file=out)
        for i, ins in enumerate(m.instructions):
            section = "init " if i < m.num_init else ""
            outs = ", ".join(f"%{o}" for o in ins.outputs)
            print(f"  [{i}] {section}{outs} = {ins.op}({', '.join(f'%{a}' for a in ins.inputs)})", file=out)


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
