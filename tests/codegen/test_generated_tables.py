"""runtime/core/dtypes.def is the one dtype table and runtime/core/program_format.def
the one table of the program format's constants and value kinds: the Python
copies are generated from them and current, and the C++ side is made from
them (the static_asserts in runtime/core/scalar_type.h check the rest at
compile time)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import codegen.dtypes
import pare._format_table
import pare.dtypes
import pare.program
from codegen import tables
from tests.conftest import REPO_ROOT


def test_generated_tables_are_current():
    proc = subprocess.run(
        [sys.executable, "-m", "codegen.tables", "--check"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_python_tables_follow_the_def():
    rows = tables.read_table()
    assert [(d.name, d.code, d.itemsize, d.torch_name) for d in pare.dtypes.ALL] == [
        (name, code, size, torch_name) for name, code, _, size, torch_name in rows
    ]
    assert [(d.name, d.value) for d in codegen.dtypes.PARE_DTYPES] == [(name, code) for name, code, *_ in rows]
    for d in pare.dtypes.ALL:
        if d.numpy is not None:
            assert d.numpy.itemsize == d.itemsize, d.name


def test_scalar_type_h_is_made_from_the_def():
    text = (REPO_ROOT / "runtime" / "core" / "scalar_type.h").read_text()
    enum = text.split("enum class ScalarType : int8_t {", 1)[1].split("};", 1)[0]
    # The enumerators come from the .def; only Undefined is written here.
    assert '#include "runtime/core/dtypes.def"' in enum
    assert [line.strip() for line in enum.splitlines() if "=" in line and not line.startswith("#")] == [
        "Undefined = -1,"
    ]
    # to_string, C++ type <-> ScalarType, and the compile-time checks.
    assert text.count('#include "runtime/core/dtypes.def"') == 5


def test_check_names_a_stale_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "REPO", tmp_path)
    (tmp_path / "runtime" / "core").mkdir(parents=True)
    for source in (tables.DTYPES, tables.FORMAT):
        (tmp_path / source).write_text((REPO_ROOT / source).read_text())
    for rel in tables.OUTPUTS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("stale\n")
    assert tables.main(["--check"]) == 1
    assert tables.main([]) == 0
    assert tables.main(["--check"]) == 0


def test_malformed_entry_is_named(tmp_path):
    bad = tmp_path / "dtypes.def"
    bad.write_text("PARE_DTYPE(Float, six, float, 4, float32)\n")
    with pytest.raises(
        ValueError, match=r"dtypes.def:1: expected PARE_DTYPE\(name, code, cpp_type, bytes, torch_name\)"
    ):
        tables.read_table(bad)


def test_the_format_table_makes_python_and_cpp():
    constants, kinds = tables.read_format()
    for name, value in constants:
        assert getattr(pare._format_table, name) == int(value, 0), name
        if hasattr(pare.program, name):  # the builder and reader take them from the table
            assert getattr(pare.program, name) is getattr(pare._format_table, name), name
    assert pare.program.KIND_NAMES == [show for _, _, show in kinds]
    assert [getattr(pare.program, name) for name, _, _ in kinds] == list(range(len(kinds)))
    core = REPO_ROOT / "runtime" / "core"
    value_h = (core / "value.h").read_text()
    assert value_h.count('#include "runtime/core/program_format.def"') == 4  # enumerators, count, its check, to_string
    assert "None = 0" not in value_h and 'return "Tensor"' not in value_h
    program_cc = (REPO_ROOT / "runtime" / "executor" / "program.cc").read_text()
    for cpp_name in ("kHeaderSize", "kValueRecordSize", "kDataAlignment", "kUnknownDtypeCode"):
        assert f"constexpr uint64_t {cpp_name}" not in program_cc and f"constexpr size_t {cpp_name}" not in program_cc
    assert "constexpr size_t kMaxDim" not in (core / "tensor.h").read_text()


def test_value_kind_codes_must_be_dense(tmp_path):
    bad = tmp_path / "program_format.def"
    bad.write_text(
        "PARE_FORMAT_CONSTANT(kMaxDim, MAX_DIM, size_t, 8)\n"
        'PARE_VALUE_KIND(None, NONE, 0, "None")\nPARE_VALUE_KIND(Int, INT, 2, "int")\n'
    )
    with pytest.raises(ValueError, match=r"value kind codes must be 0, 1, 2, ... in order, got \[0, 2\]"):
        tables.read_format(bad)


def test_bfloat16_has_no_numpy_dtype():
    assert pare.dtypes.BY_NAME["BFloat16"].numpy is None
    assert pare.dtypes.BY_NAME["Bool"].numpy == np.dtype(np.bool_)
