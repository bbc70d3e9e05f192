"""Reading Pare program files (pare.program's reading half: read, dump and
the parsed program's classes, all re-exported by pare.program)."""

from __future__ import annotations

import dataclasses
import struct
import sys
from typing import Any

import numpy as np

from pare import _format_table as fmt
from pare import dtypes as _dtypes
from pare._program_records import HEADER, VALUE_RECORD, ProgramError, value_fields


@dataclasses.dataclass
class ValueInfo:
    kind: int
    constant: bool
    dtype: str | None = None
    sizes: list[int] | None = None  # None: unknown rank
    payload: Any = None  # scalar, list, string, class name, list of ids, or tensor ndarray

    def describe(self) -> str:
        """One line for `python -m pare.program dump`, e.g. "const Tensor Float[16, 8]"."""
        k = fmt.KIND_NAMES[self.kind]
        if self.kind == fmt.TENSOR:
            shape = "?" if self.sizes is None else "[" + ", ".join("?" if s < 0 else str(s) for s in self.sizes) + "]"
            return f"{'const ' if self.constant else ''}Tensor {self.dtype or '?'}{shape}"
        if self.kind == fmt.NONE:
            return "None"
        if self.kind == fmt.TENSOR_LIST:
            return "Tensor[](" + ", ".join(f"%{i}" for i in self.payload) + ")"
        if self.kind == fmt.OBJECT:
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
    # Format 1.2: per state, (name, value id, update value id or None, in place).
    states: list[tuple[str, int, int | None, bool]] = dataclasses.field(default_factory=list)


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
    magic, major, minor, header_size, flags, file_size, s_off, o_off, m_off, d_off, d_size = HEADER.unpack_from(buf, 0)
    if magic != fmt.MAGIC:
        raise ProgramError("not a Pare program (bad magic)")
    if major != fmt.VERSION_MAJOR:
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
    records = struct.unpack_from(f"<{n_methods}Q", buf, m_off + 8)
    state_offsets = (
        struct.unpack_from(f"<{n_methods}Q", buf, m_off + 8 + 8 * n_methods)
        if flags & fmt.HEADER_FLAG_STATE
        else (0,) * n_methods
    )
    for rec, st_off in zip(records, state_offsets):
        name, nv, ni, no, nins, ninit, v_off, io_off, ins_off = struct.unpack_from("<IIIIIIQQQ", buf, rec)
        values = []
        for i in range(nv):
            kind, dtype, flg, _, *payload = VALUE_RECORD.unpack_from(buf, v_off + fmt.VALUE_RECORD_SIZE * i)
            const = bool(flg & fmt.FLAG_CONSTANT)
            info = ValueInfo(kind, const)
            f = value_fields(kind, tuple(payload))
            if kind == fmt.TENSOR:
                info.dtype = None if dtype == fmt.UNKNOWN_DTYPE else _dtypes.BY_CODE[dtype].name
                rank = f["rank"]
                info.sizes = (
                    None if rank == fmt.UNKNOWN_RANK else list(struct.unpack_from(f"<{rank}q", buf, f["sizes_offset"]))
                )
                if const:
                    dt = _dtypes.BY_CODE[dtype]
                    start = d_off + f["constant_data_offset"]
                    raw = bytes(buf[start : start + f["constant_data_size"]])
                    arr = np.frombuffer(raw, dtype=dt.numpy if dt.numpy is not None else np.uint16)
                    info.payload = arr.reshape(info.sizes)
            elif kind == fmt.INT:
                info.payload = struct.unpack("<q", struct.pack("<Q", f["constant_value"]))[0]
            elif kind == fmt.DOUBLE:
                info.payload = struct.unpack("<d", struct.pack("<Q", f["constant_bits"]))[0]
            elif kind == fmt.BOOL:
                info.payload = bool(f["constant_value"])
            elif kind == fmt.INT_LIST:
                n = f["count"]
                ints = list(struct.unpack_from(f"<{n}q", buf, f["ints_offset"])) if n else []
                if f["refs_offset"]:
                    refs = struct.unpack_from(f"<{n}I", buf, f["refs_offset"])
                    ints = [f"%{r}" if r != fmt.NO_VALUE else v for v, r in zip(ints, refs)]
                info.payload = ints
            elif kind == fmt.DOUBLE_LIST:
                n = f["count"]
                info.payload = list(struct.unpack_from(f"<{n}d", buf, f["doubles_offset"])) if n else []
            elif kind == fmt.STRING:
                info.payload = strings[f["string"]]
            elif kind == fmt.OBJECT:
                info.payload = strings[f["class_name"]]
            elif kind == fmt.TENSOR_LIST:
                n = f["count"]
                info.payload = list(struct.unpack_from(f"<{n}I", buf, f["ids_offset"])) if n else []
            values.append(info)
        io = list(struct.unpack_from(f"<{ni + no}I", buf, io_off)) if ni + no else []
        instructions = []
        for i in range(nins):
            op, n_in, n_out, args_off = struct.unpack_from("<IHHQ", buf, ins_off + fmt.INSTRUCTION_RECORD_SIZE * i)
            args = list(struct.unpack_from(f"<{n_in + n_out}I", buf, args_off)) if n_in + n_out else []
            instructions.append(InstructionInfo(ops[op], args[:n_in], args[n_in:]))
        states = []
        if st_off:
            (n_states,) = struct.unpack_from("<I", buf, st_off)
            for k in range(n_states):
                s_name, s_value, s_update, s_flags = struct.unpack_from("<IIII", buf, st_off + 8 + 16 * k)
                update = None if s_update == fmt.NO_VALUE else s_update
                states.append((strings[s_name], s_value, update, bool(s_flags & fmt.STATE_FLAG_IN_PLACE)))
        methods.append(MethodInfo(strings[name], values, io[:ni], io[ni:], instructions, ninit, states))
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
        for name, value, update, in_place in m.states:
            written = (
                "never written" if update is None else f"updated from %{update}" + (" in place" if in_place else "")
            )
            print(f"  state {name!r}: %{value}, {written}", file=out)
        for i, ins in enumerate(m.instructions):
            section = "init " if i < m.num_init else ""
            outs = ", ".join(f"%{o}" for o in ins.outputs)
            print(f"  [{i}] {section}{outs} = {ins.op}({', '.join(f'%{a}' for a in ins.inputs)})", file=out)
