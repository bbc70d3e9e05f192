"""The Python writer/reader for the program format, the dump CLI, and the
.def inventory files the runtime and codegen share."""

import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from codegen.dtypes import QUANTIZED_STORAGE
from pare import dtypes
from pare.program import ProgramBuilder, ProgramError, TensorListOf, read

REPO = Path(__file__).absolute().parents[2]


def example():
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 3])
    s = m.op("aten::sym_size.int", x, 0, returns="int")
    v = m.op("aten::view", x, [s, 3])
    c = m.op("aten::_to_copy", v, torch.float16)
    m.output(c, m.constant(np.arange(5, dtype=np.int16)), m.constant(torch.ones(2, dtype=torch.bfloat16)))
    return pb


def test_roundtrip_through_reader():
    data = example().to_bytes()
    info = read(data)
    assert info.version == (1, 0) and info.file_size == len(data)
    (m,) = info.methods
    assert m.name == "forward" and len(m.inputs) == 1 and len(m.outputs) == 3
    assert [i.op for i in m.instructions] == ["aten::sym_size.int", "aten::view", "aten::_to_copy"]
    view_size = m.values[m.instructions[1].inputs[1]]
    assert view_size.payload == [f"%{m.instructions[0].outputs[0]}", 3]  # a symbolic element
    assert m.values[m.instructions[2].inputs[1]].payload == dtypes.Half.code
    const = m.values[m.outputs[1]]
    assert const.constant and const.dtype == "Short" and const.payload.tolist() == [0, 1, 2, 3, 4]
    assert m.values[m.outputs[2]].dtype == "BFloat16"


def test_layout_rules():
    data = example().to_bytes()
    magic, major, minor, header_size, flags, file_size, *offsets, data_offset, data_size = struct.unpack_from(
        "<4sHHIIQQQQQQ", data
    )
    assert magic == b"PARE" and header_size == 64 and flags == 0 and file_size == len(data)
    assert data_offset % 64 == 0 and data_offset + data_size == len(data)
    info = read(data)
    assert info.data_size >= 64 + 4  # two constants, each 64-byte aligned


def test_runs_on_the_runtime(runtime):
    method = runtime.load(example().to_bytes()).method()
    out, ints, bf = method.run(np.ones((4, 3), np.float32))
    assert out.dtype == np.float16 and out.shape == (4, 3)
    assert ints.tolist() == [0, 1, 2, 3, 4] and bf.tolist() == [1.0, 1.0]
    assert method.output_dtype(2) == "BFloat16"


def test_tensor_list_outputs_and_inputs_are_encoded():
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [4])
    parts = m.op("aten::split_with_sizes", x, [2, 2], 0, returns=TensorListOf(2))
    joined = m.op("aten::cat", parts, 0)
    m.output(joined)
    info = read(pb.to_bytes())
    split, cat = info.methods[0].instructions
    out_list = info.methods[0].values[split.outputs[0]]
    assert out_list.kind == 8 and out_list.payload == [p.id for p in parts]
    assert info.methods[0].values[cat.inputs[0]].payload == [p.id for p in parts]


def test_tensor_lists_with_none_are_format_1_1(runtime):
    # A Tensor?[] argument (index_put's indices) holds None elements: minor
    # version 1, which only such programs carry.
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 3])
    idx = m.input("Long", [1])
    m.output(m.op("aten::index_put", x, [None, idx], m.constant(np.float32(5.0) * np.ones(1, np.float32))))
    data = pb.to_bytes()
    info = read(data)
    assert info.version == (1, 1)
    (put,) = info.methods[0].instructions
    items = info.methods[0].values[put.inputs[1]].payload
    assert [info.methods[0].values[i].kind for i in items] == [0, 1]  # None, Tensor
    (out,) = runtime.load(data).method().run(np.zeros((2, 3), np.float32), np.array([2]))
    assert out.tolist() == [[0, 0, 5], [0, 0, 5]]
    # Only operators read such lists: a method output may not be one.
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2])
    m.output(m.constant([x, None]))
    with pytest.raises(Exception, match=r"output 0 \(value \d+\) is a Tensor\[\] with a None element"):
        runtime.load(pb.to_bytes())


def test_builder_errors_are_clear():
    pb = ProgramBuilder()
    m = pb.method()
    other = pb.method("other")
    x = other.input("Float", [1])
    with pytest.raises(ProgramError, match="belongs to method 'other'"):
        m.op("aten::relu", x)
    with pytest.raises(ProgramError, match="cannot make a list value"):
        m.constant(["a", 1])
    with pytest.raises(ValueError, match="unknown dtype"):
        m.input("Floaty", [1])
    with pytest.raises(ProgramError, match="already exists"):
        pb.method("other")


def test_dump_cli(tmp_path):
    path = tmp_path / "p.pare"
    example().save(path)
    out = subprocess.run(
        [sys.executable, "-m", "pare.program", "dump", str(path)], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert "method forward(%0)" in out and "aten::view" in out and "const Tensor Short[5]" in out
    path.write_bytes(b"garbage")
    bad = subprocess.run(
        [sys.executable, "-m", "pare.program", "dump", str(path)], capture_output=True, text=True, cwd=REPO
    )
    assert bad.returncode == 1 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


# ---- .def files --------------------------------------------------------------

DEF_LINE = {
    ".ops.def": re.compile(r'^PARE_OP\("([a-z_]+::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?)", ([A-Za-z0-9_]+)\)$'),
    ".tags.def": re.compile(
        r"^PARE_KERNEL_TAG\(([a-z0-9_]+)((, (Byte|Char|Short|Int|Long|Half|Float|Double|ComplexFloat|Bool|BFloat16|QInt8|QUInt8|QInt32))+)\)$"
    ),
    "classes.def": re.compile(r"^PARE_CLASS\(([A-Za-z0-9_]+)\)$"),
    "features.def": re.compile(r"^PARE_BUILD_FEATURE\(([a-z0-9_]+)\)$"),
}


def def_entries(path: Path):
    pattern = next(p for suffix, p in DEF_LINE.items() if path.name.endswith(suffix))
    for line in path.read_text().splitlines():
        line = line.split("//")[0].strip()
        if line:
            match = pattern.match(line)
            assert match, f"{path.name}: malformed line {line!r}"
            yield match


def test_every_def_file_is_in_the_inventory():
    inc = (REPO / "runtime/inventory/inventory.inc").read_text()
    inventory = REPO / "runtime/inventory"
    for path in sorted(inventory.glob("**/*.def")):
        rel = path.relative_to(inventory).as_posix()
        assert f'#include "runtime/inventory/{rel}"' in inc, f"{rel} is missing from inventory.inc"
        list(def_entries(path))  # one entry per line, nothing else


def test_kernel_function_names_follow_the_convention():
    # "aten::add.Tensor" -> aten_add_Tensor: codegen and the verifier rely on it.
    for path in (REPO / "runtime/inventory").glob("*/*.ops.def"):
        for match in def_entries(path):
            assert match.group(3) == match.group(1).replace("::", "_").replace(".", "_"), match.group(0)


def test_c_api_inventory_matches_def_files(runtime):
    ops, tags, classes, features = [], {}, [], []
    inc = (REPO / "runtime/inventory/inventory.inc").read_text()
    for name in re.findall(r'#include "runtime/inventory/([^"]+\.def)"', inc):
        path = REPO / "runtime/inventory" / name
        for m in def_entries(path):
            if name.endswith(".ops.def"):
                ops.append(m.group(1))
            elif name.endswith(".tags.def"):
                # The runtime names a quantized dtype (QInt8) by its storage (Char).
                names = (d.strip() for d in m.group(2).split(",") if d.strip())
                tags[m.group(1)] = tuple(QUANTIZED_STORAGE.get(d, d) for d in names)
            elif name == "classes.def":
                classes.append(m.group(1))
            else:
                features.append(m.group(1))
    inventory = runtime.inventory()
    assert list(inventory.ops) == ops
    assert inventory.kernel_dtypes == tags
    assert list(inventory.classes) == classes and list(inventory.features) == features
