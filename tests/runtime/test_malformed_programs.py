"""Corrupt program files: each is built from a valid program by breaking one
field, and must fail to load with one line naming the structure, the value or
instruction, the offending number and, where there is one, the fix (issue 13,
part 4). test_loader_robustness.py fuzzes for crashes; this file pins the
messages a user sees.

Messages are matched in full; numbers that only depend on where the writer
happened to put a table (offsets, the file size) are matched as \\d+.
"""

import re
import struct

import numpy as np
import pytest

from pare.program import ProgramBuilder, TensorListOf, read
from pare.runtime import PareError

HEADER = struct.Struct("<4sHHIIQQQQQQ")
VALUE_RECORD = 32
INSTRUCTION_RECORD = 16


def valid_program() -> bytes:
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 4])  # %0
    packed = m.linear_prepack(
        np.arange(12, dtype=np.float32).reshape(3, 4), np.ones(3, np.float32)
    )  # %1 %2 %3 %4 -> %5
    s0 = m.op("aten::sym_size.int", x, 0, returns="int")  # %6 -> %7
    y = m.op("pare::linear_prepacked", x, packed)  # %8
    z = m.op("aten::add.Tensor", y, np.ones((1, 3), np.float32), 2)  # %9 %10 -> %11
    r = m.op("aten::relu", z)  # %12
    v = m.op("aten::view", r, [s0, 3])  # %13 -> %14
    parts = m.op("aten::split_with_sizes", v, [1, 2], 1, returns=TensorListOf(2))  # %15 %16 -> %17 %18 %19
    c = m.op("aten::cat", parts, 1)  # %20 %16 -> %21
    m.output(c, s0)
    m2 = pb.method("second")
    a = m2.input("Long", [2])
    m2.output(m2.op("aten::relu", a))
    return pb.to_bytes()


class Layout:
    """Where each field of a valid program is, so a case can corrupt exactly one."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        (_, _, _, _, _, self.file_size, self.strings, self.ops, self.methods, self.data_offset, self.data_size) = (
            HEADER.unpack_from(data)
        )
        self.num_strings = self.u32(self.strings)
        self.method_records = [self.u64(self.methods + 8 + 8 * i) for i in range(self.u32(self.methods))]
        self.record = rec = self.method_records[0]  # "forward"
        self.num_instructions = self.u32(rec + 16)
        self.values, self.io, self.instructions = struct.unpack_from("<3Q", data, rec + 24)

    def u32(self, at):
        return struct.unpack_from("<I", self.data, at)[0]

    def u64(self, at):
        return struct.unpack_from("<Q", self.data, at)[0]

    def put(self, fmt, at, *values) -> "Layout":
        struct.pack_into("<" + fmt, self.data, at, *values)
        return self

    def string_entry(self, i):
        return self.strings + 8 + 16 * i

    def string_index(self, text):
        for i in range(self.num_strings):
            off, n = struct.unpack_from("<QQ", self.data, self.string_entry(i))
            if bytes(self.data[off : off + n]) == text.encode():
                return i
        raise KeyError(text)

    def string_bytes(self, text):
        off, _ = struct.unpack_from("<QQ", self.data, self.string_entry(self.string_index(text)))
        return off

    def value(self, i):
        return self.values + VALUE_RECORD * i

    def instruction(self, i):
        return self.instructions + INSTRUCTION_RECORD * i

    def args(self, i):
        return self.u64(self.instruction(i) + 8)

    def rename(self, old, new) -> "Layout":
        assert len(old) == len(new)
        at = self.string_bytes(old)
        self.data[at : at + len(new)] = new.encode()
        return self

    def bytes(self) -> bytes:
        return bytes(self.data)


def past_end(L, align=64):
    """An offset past the end of the file that is still aligned, so only the range is wrong."""
    return (L.file_size + align) // align * align


# (id, corruption of a Layout, status name, regex of the whole message)
CORRUPTIONS = [
    (
        "bad_magic",
        lambda L: L.put("4s", 0, b"PK\x03\x04"),
        "InvalidProgram",
        'invalid program: bad magic: this is not a Pare program \\(expected "PARE"\\)',
    ),
    (
        "future_major_version",
        lambda L: L.put("HH", 4, 2, 0),
        "InvalidProgram",
        "unsupported program format version 2\\.0: this runtime reads version 1\\.x; re-export the model with a matching exporter",
    ),
    ("header_size", lambda L: L.put("I", 8, 128), "InvalidProgram", "invalid program: header_size is 128, expected 64"),
    (
        "header_flags",
        lambda L: L.put("I", 12, 4),
        "InvalidProgram",
        "invalid program: header flags 0x4 set; version 1\\.2 defines only 0x1 \\(state\\)",
    ),
    (
        "file_size_beyond_buffer",
        lambda L: L.put("Q", 16, L.file_size + 1),
        "InvalidProgram",
        "invalid program: file_size is \\d+ but only \\d+ bytes were given: the file is truncated; copy it again",
    ),
    (
        "file_size_smaller_than_header",
        lambda L: L.put("Q", 16, 32),
        "InvalidProgram",
        "invalid program: file_size 32 is smaller than the 64-byte header",
    ),
    (
        "truncated_header",
        lambda L: L.data.__delitem__(slice(40, None)) or L,
        "InvalidProgram",
        "invalid program: the buffer is 40 bytes; a program has a 64-byte header",
    ),
    (
        "truncated_body",
        lambda L: L.data.__delitem__(slice(L.file_size - 100, None)) or L,
        "InvalidProgram",
        "invalid program: file_size is \\d+ but only \\d+ bytes were given: the file is truncated; copy it again",
    ),
    (
        "data_segment_misaligned",
        lambda L: L.put("Q", 48, L.data_offset + 8),
        "InvalidProgram",
        "invalid program: constant data segment at offset \\d+ is not 64-byte aligned",
    ),
    (
        "data_segment_past_end",
        lambda L: L.put("Q", 56, L.data_size + 64),
        "InvalidProgram",
        "invalid program: constant data segment at offset \\d+ \\(\\d+ x 1 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "string_table_past_end",
        lambda L: L.put("Q", 24, past_end(L)),
        "InvalidProgram",
        "invalid program: string table at offset \\d+ \\(8 x 1 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "string_table_misaligned",
        lambda L: L.put("Q", 24, L.strings + 4),
        "InvalidProgram",
        "invalid program: string table at offset \\d+ is not 8-byte aligned",
    ),
    (
        "string_table_reserved",
        lambda L: L.put("I", L.strings + 4, 1),
        "InvalidProgram",
        "invalid program: string table reserved field is not zero",
    ),
    (
        "string_count_huge",
        lambda L: L.put("I", L.strings, 0xFFFFFFFF),
        "InvalidProgram",
        "invalid program: string table entries at offset \\d+ \\(4294967295 x 16 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "string_offset_past_end",
        lambda L: L.put("Q", L.string_entry(0), past_end(L)),
        "InvalidProgram",
        "invalid program: string 0 \\(offset \\d+, length 7\\) is outside the file",
    ),
    (
        "string_length_past_end",
        lambda L: L.put("Q", L.string_entry(0) + 8, 1 << 40),
        "InvalidProgram",
        "invalid program: string 0 \\(offset 64, length 1099511627776\\) is outside the file",
    ),
    (
        "string_not_nul_terminated",
        lambda L: L.put("B", L.string_bytes("forward") + 7, ord("x")),
        "InvalidProgram",
        "invalid program: string 0 is not NUL-terminated",
    ),
    (
        "operator_table_past_end",
        lambda L: L.put("Q", 32, 1 << 62),
        "InvalidProgram",
        "invalid program: operator table at offset 4611686018427387904 \\(4 x 1 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "operator_table_misaligned",
        lambda L: L.put("Q", 32, L.ops + 1),
        "InvalidProgram",
        "invalid program: operator table at offset \\d+ is not 4-byte aligned",
    ),
    (
        "operator_count_huge",
        lambda L: L.put("I", L.ops, 0x10000000),
        "InvalidProgram",
        "invalid program: operator table entries at offset \\d+ \\(268435456 x 4 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "operator_name_index_out_of_range",
        lambda L: L.put("I", L.ops + 4, 999),
        "InvalidProgram",
        "invalid program: operator 0 names string 999; the program has 11 strings",
    ),
    (
        "operator_unknown",
        lambda L: L.rename("aten::relu", "aten::relx"),
        "OperatorNotFound",
        "operator aten::relx is not implemented by this runtime \\(no kernel in runtime/inventory/\\*/\\*\\.ops\\.def\\); "
        "export the model with supported ops or add a kernel",
    ),
    (
        "method_table_past_end",
        lambda L: L.put("Q", 40, past_end(L)),
        "InvalidProgram",
        "invalid program: method table at offset \\d+ \\(8 x 1 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "method_count_zero",
        lambda L: L.put("I", L.methods, 0),
        "InvalidProgram",
        "invalid program: the program has no methods",
    ),
    (
        "method_count_huge",
        lambda L: L.put("I", L.methods, 5000),
        "LimitExceeded",
        "the program has 5000 methods; this runtime supports up to 4096",
    ),
    (
        "method_table_reserved",
        lambda L: L.put("I", L.methods + 4, 7),
        "InvalidProgram",
        "invalid program: method table reserved field is not zero",
    ),
    (
        "method_record_misaligned",
        lambda L: L.put("Q", L.methods + 8, L.record + 4),
        "InvalidProgram",
        "invalid program: method record at offset \\d+ is not 8-byte aligned",
    ),
    (
        "method_record_past_end",
        lambda L: L.put("Q", L.methods + 8, past_end(L) - 64),
        "InvalidProgram",
        "invalid program: method record at offset \\d+ \\(1 x 48 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "method_name_index_out_of_range",
        lambda L: L.put("I", L.record, 1000),
        "InvalidProgram",
        "invalid program: method 0 names string 1000; the program has 11 strings",
    ),
    (
        "method_names_duplicate",
        lambda L: L.put("I", L.method_records[1], L.string_index("forward")),
        "InvalidProgram",
        "invalid program: two methods are named 'forward'",
    ),
    (
        "method_records_shared",
        lambda L: L.put("Q", L.methods + 16, L.record),
        "InvalidProgram",
        "invalid program: two methods are named 'forward'",
    ),
    (
        "init_count_exceeds_instructions",
        lambda L: L.put("I", L.record + 20, L.num_instructions + 1),
        "InvalidProgram",
        "invalid program: method 'forward' has 9 init instructions but only 8 instructions",
    ),
    (
        "value_table_past_end",
        lambda L: L.put("I", L.record + 4, 100000),
        "InvalidProgram",
        "invalid program: value table at offset \\d+ \\(100000 x 32 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "value_table_misaligned",
        lambda L: L.put("Q", L.record + 24, L.values + 4),
        "InvalidProgram",
        "invalid program: value table at offset \\d+ is not 8-byte aligned",
    ),
    (
        "value_kind_unknown",
        lambda L: L.put("B", L.value(4), 42),
        "InvalidProgram",
        "invalid program: method 'forward' value 4 has unknown kind 42",
    ),
    (
        "value_reserved_bits",
        lambda L: L.put("B", L.value(4) + 2, 0x81),
        "InvalidProgram",
        "invalid program: method 'forward' value 4 has reserved bits set",
    ),
    (
        "value_non_tensor_with_dtype",
        lambda L: L.put("B", L.value(4) + 1, 6),
        "InvalidProgram",
        "invalid program: method 'forward' value 4 \\(int\\) has a dtype",
    ),
    (
        "value_must_be_constant",
        lambda L: L.put("B", L.value(13) + 2, 0),
        "InvalidProgram",
        "invalid program: method 'forward' value 13 \\(int\\[\\]\\) must be constant \\(flags bit 0\\)",
    ),
    (
        "value_object_constant",
        lambda L: L.put("B", L.value(5) + 2, 1),
        "InvalidProgram",
        "invalid program: method 'forward' value 5 \\(Object\\) cannot be constant \\(flags bit 0\\)",
    ),
    (
        "tensor_dtype_code_invalid",
        lambda L: L.put("B", L.value(2) + 1, 10),  # ComplexDouble
        "InvalidProgram",
        "invalid program: method 'forward' value 2 has unsupported dtype code 10",
    ),
    (
        "tensor_rank_too_big",
        lambda L: L.put("I", L.value(2) + 4, 9),
        "LimitExceeded",
        "method 'forward' value 2 has rank 9; this runtime supports up to 8 dims",
    ),
    (
        "tensor_negative_size",
        lambda L: L.put("q", L.u64(L.value(1) + 8), -3),
        "InvalidProgram",
        "invalid program: method 'forward' value 1 has size -3 in dim 0",
    ),
    (
        "tensor_input_size_below_minus_one",
        lambda L: L.put("q", L.u64(L.value(0) + 8), -2),
        "InvalidProgram",
        "invalid program: method 'forward' value 0 has size -2 in dim 0",
    ),
    (
        "tensor_numel_overflow",
        lambda L: L.put("qq", L.u64(L.value(9) + 8), 1 << 40, 1 << 40),
        "InvalidProgram",
        "invalid program: method 'forward' value 9: constant tensor size overflows",
    ),
    (
        "tensor_sizes_past_end",
        lambda L: L.put("Q", L.value(2) + 8, past_end(L)),
        "InvalidProgram",
        "invalid program: tensor sizes at offset \\d+ \\(1 x 8 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "tensor_sizes_misaligned",
        lambda L: L.put("Q", L.value(2) + 8, L.u64(L.value(2) + 8) + 4),
        "InvalidProgram",
        "invalid program: tensor sizes at offset \\d+ is not 8-byte aligned",
    ),
    (
        "tensor_0dim_with_sizes",
        lambda L: L.put("I", L.value(2) + 4, 0),
        "InvalidProgram",
        "invalid program: method 'forward' value 2 \\(0-dim Tensor\\) has a sizes offset",
    ),
    (
        "constant_data_past_segment",
        lambda L: L.put("Q", L.value(2) + 16, L.data_size // 64 * 64 + 64),
        "InvalidProgram",
        "invalid program: method 'forward' value 2: constant data \\(offset \\d+, 12 bytes\\) extends past the \\d+-byte data segment",
    ),
    (
        "constant_data_misaligned",
        lambda L: L.put("Q", L.value(2) + 16, L.u64(L.value(2) + 16) + 4),
        "InvalidProgram",
        "invalid program: method 'forward' value 2: constant data offset \\d+ is not 64-byte aligned",
    ),
    (
        "constant_data_wrong_byte_size",
        lambda L: L.put("Q", L.value(2) + 24, 8),
        "InvalidProgram",
        "invalid program: method 'forward' value 2: constant data is 8 bytes but its sizes and dtype need 12",
    ),
    (
        "non_constant_tensor_with_data",
        lambda L: L.put("Q", L.value(8) + 24, 64),
        "InvalidProgram",
        "invalid program: method 'forward' value 8 \\(Tensor\\) has unused fields set",
    ),
    (
        "bool_not_0_or_1",
        lambda L: L.put("BBBBI", L.value(10), 4, 0, 1, 0, 2),
        "InvalidProgram",
        "invalid program: method 'forward' value 10 \\(bool\\) has payload 2 \\(must be 0 or 1\\) or unused fields set",
    ),
    (
        "int_list_reference_not_int",
        lambda L: L.put("I", L.u64(L.value(13) + 16), 0),
        "InvalidProgram",
        "invalid program: method 'forward' value 13 \\(int\\[\\]\\) element 0 refers to value 0, which is not an int value",
    ),
    (
        "int_list_past_end",
        lambda L: L.put("Q", L.value(15) + 8, past_end(L)),
        "InvalidProgram",
        "invalid program: int list at offset \\d+ \\(2 x 8 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "tensor_list_element_not_tensor",
        lambda L: L.put("I", L.u64(L.value(19) + 8), 6),
        "InvalidProgram",
        "invalid program: method 'forward' value 19 \\(Tensor\\[\\]\\) element 0 refers to value 6, which is not a tensor value",
    ),
    (
        "object_unknown_class",
        lambda L: L.rename("LinearPackedParams", "LinearPackedParamz"),
        "InvalidProgram",
        "invalid program: method 'forward' value 5 has unknown custom class 'LinearPackedParamz'",
    ),
    (
        "method_input_index_out_of_range",
        lambda L: L.put("I", L.io, 500),
        "InvalidProgram",
        "invalid program: method 'forward' input 0 refers to value \\d+; the method has 22 values",
    ),
    (
        "method_output_index_out_of_range",
        lambda L: L.put("I", L.io + 4, 22),
        "InvalidProgram",
        "invalid program: method 'forward' output 0 refers to value 22; the method has 22 values",
    ),
    (
        "method_input_is_constant",
        lambda L: L.put("I", L.io, 1),
        "InvalidProgram",
        "invalid program: method 'forward' input 0 \\(value 1\\) must be a non-constant Tensor value",
    ),
    (
        "method_output_never_defined",
        lambda L: L.put("I", L.record + 16, L.num_instructions - 1),
        "InvalidProgram",
        "invalid program: method 'forward' output 0 \\(value 21\\) is never defined",
    ),
    (
        "instruction_op_index_out_of_range",
        lambda L: L.put("I", L.instruction(4), 77),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 4 uses operator 77; the program has 8 operators",
    ),
    (
        "instruction_args_past_end",
        lambda L: L.put("Q", L.instruction(4) + 8, past_end(L)),
        "InvalidProgram",
        "invalid program: instruction arguments at offset \\d+ \\(2 x 4 bytes\\) extends past the end of the \\d+-byte file",
    ),
    (
        "instruction_arg_index_out_of_range",
        lambda L: L.put("I", L.args(4), 22),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 4 \\(aten::relu\\) argument 0 refers to value 22; the method has 22 values",
    ),
    (
        "instruction_reads_undefined_value",
        lambda L: L.put("I", L.args(4), 14),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 4 \\(aten::relu\\) reads value 14 before it is defined",
    ),
    (
        "instruction_output_defined_twice",
        lambda L: L.put("I", L.args(4) + 4, 11),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 4 \\(aten::relu\\) output 0 \\(value 11, Tensor\\) is already defined \\(values are assigned once\\)",
    ),
    (
        "instruction_output_is_constant",
        lambda L: L.put("I", L.args(4) + 4, 9),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 4 \\(aten::relu\\) output 0 \\(value 9, Tensor\\) is a constant",
    ),
    (
        "init_section_reads_input",
        lambda L: L.put("I", L.record + 20, 2),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 1 \\(aten::sym_size\\.int\\) reads value 0 before it is defined \\(init instructions cannot read method inputs\\)",
    ),
    (
        "object_created_outside_init",
        lambda L: L.put("I", L.record + 20, 0),
        "InvalidProgram",
        "invalid program: method 'forward' instruction 0 \\(pare::linear_prepack\\) creates an object outside the init section",
    ),
]


@pytest.fixture(scope="module")
def valid():
    return valid_program()


def test_the_valid_program_loads_and_runs(runtime, valid):
    # Value ids the cases refer to; if the writer renumbers them, fix the table.
    kinds = [v.describe() for v in read(valid).methods[0].values]
    assert kinds[0] == "Tensor Float[?, 4]" and kinds[5] == "Object LinearPackedParams"
    assert kinds[2] == "const Tensor Float[3]" and kinds[9] == "const Tensor Float[1, 3]"
    assert kinds[10] == "int 2" and kinds[13] == "int[] ['%7', 3]" and kinds[19] == "Tensor[](%17, %18)"
    out, s0 = runtime.load(valid).method("forward").run(np.ones((2, 4), np.float32))
    assert out.shape == (2, 3) and s0 == 2


@pytest.mark.parametrize("corrupt, status, message", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_corrupt_program_message(runtime, valid, corrupt, status, message):
    data = corrupt(Layout(valid)).bytes()
    assert data != valid
    with pytest.raises(PareError) as info:
        runtime.load(data)
    assert info.value.status_name == status
    assert "\n" not in str(info.value)
    assert re.fullmatch(message, str(info.value)), str(info.value)


def test_cases_are_distinct():
    assert len({c[0] for c in CORRUPTIONS}) == len(CORRUPTIONS)
    assert len({c[3] for c in CORRUPTIONS}) >= 50  # distinct messages, not one catch-all


def test_operator_not_selected(selective_runtime):
    # aten::add.Tensor exists in Pare but this build's manifest leaves it out.
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [2])
    m.output(m.op("aten::add.Tensor", x, x, 1))
    with pytest.raises(PareError) as info:
        selective_runtime.load(pb.to_bytes())
    assert info.value.status_name == "OperatorNotSelected"
    assert re.fullmatch(
        r"the manifest \(.+\) does not select aten::add\.Tensor: re-trace the model or add it "
        r"to the manifest \(this build's runtime was compiled without it\)",
        str(info.value),
    )


def test_custom_class_not_selected(selective_runtime):
    # Conv2dPackedParams is a Pare class this build's manifest leaves out
    # (same length as LinearPackedParams, so the string is renamed in place).
    layout = Layout(selective_program())
    data = layout.rename("LinearPackedParams", "Conv2dPackedParams").bytes()
    with pytest.raises(PareError) as info:
        selective_runtime.load(data)
    assert info.value.status_name == "ClassNotSelected"
    assert str(info.value) == (
        "the manifest does not select custom class Conv2dPackedParams: re-trace the model "
        "or add it to custom_classes in the manifest"
    )


def selective_program() -> bytes:
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 4])
    m.output(m.op("pare::linear_prepacked", x, m.linear_prepack(np.ones((3, 4), np.float32), np.ones(3, np.float32))))
    return pb.to_bytes()


def test_value_of_the_wrong_kind_fails_at_run_time(runtime, valid):
    # The format does not carry schemas, so relu reading an int value loads
    # and fails when the kernel checks its argument.
    layout = Layout(valid)
    layout.put("I", layout.args(4), 10)  # relu(%11) -> relu(%10), the constant int 2
    method = runtime.load(layout.bytes()).method("forward")
    with pytest.raises(PareError) as info:
        method.run(np.ones((2, 4), np.float32))
    assert info.value.status_name == "InvalidArgument"
    assert str(info.value) == (
        "aten::relu: argument 'self' (#0) must be Tensor, got int (method 'forward', instruction 4)"
    )
