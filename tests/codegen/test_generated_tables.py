"""runtime/core/dtypes.def is the one dtype table, runtime/core/errors.def the
one table of status codes and runtime/core/program_format.def the one table
of the program format's constants and value kinds: the Python copies, and
the regions of pare.h and DType.java, are generated from them and current;
the C++ side is made from them (the static_asserts in
runtime/core/scalar_type.h and runtime/c_api/pare.cc check the rest at
compile time); the SDK raises its own errors with the table's codes."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import codegen.dtypes
import pare._format_table
import pare._status_table
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


def _copy_sources(tmp_path, monkeypatch):
    """A checkout in tmp_path with the .def files and the files holding generated regions."""
    monkeypatch.setattr(tables, "REPO", tmp_path)
    for rel in (*tables.SOURCES, *tables.REGIONS):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO_ROOT / rel).read_text())
    for rel in tables.OUTPUTS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)


def test_check_names_a_stale_file(tmp_path, monkeypatch):
    _copy_sources(tmp_path, monkeypatch)
    for rel in tables.OUTPUTS:
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


def test_status_codes_follow_the_def():
    rows = tables.read_errors()
    assert pare._status_table.STATUS_CODES == {name: code for name, code, _, _ in rows}
    error_h = (REPO_ROOT / "runtime" / "core" / "error.h").read_text()
    assert error_h.count('#include "runtime/core/errors.def"') == 2  # the enumerators, to_string
    assert "InvalidArgument = 0x10" not in error_h and 'return "InvalidArgument"' not in error_h
    # The SDK's own errors take their codes from the table.
    runtime_py = (REPO_ROOT / "pare" / "runtime.py").read_text()
    assert not re.findall(r"PareError\([^)]*\b0x[0-9A-Fa-f]+", runtime_py, flags=re.S)


def _enum(text: str, name: str) -> list[tuple[str, int]]:
    body = text.split(f"typedef enum {name} {{", 1)[1].split(f"}} {name};", 1)[0]
    return [(c, int(v, 0)) for c, v in re.findall(r"^\s*(PARE_\w+) = (\w+)", body, flags=re.M)]


def test_pare_h_and_java_follow_the_defs():
    pare_h = (REPO_ROOT / "runtime" / "c_api" / "pare.h").read_text()
    assert _enum(pare_h, "pare_status") == [(c_name, code) for _, code, c_name, _ in tables.read_errors()]
    rows = tables.read_table()
    assert _enum(pare_h, "pare_dtype") == [(tables.c_dtype_name(name), code) for name, code, *_ in rows]
    assert [tables.c_dtype_name(n) for n in ("ComplexFloat", "BFloat16")] == [
        "PARE_DTYPE_COMPLEX_FLOAT",
        "PARE_DTYPE_BFLOAT16",
    ]
    sizes = dict(re.findall(r"case (PARE_DTYPE_\w+): return (\d+);", pare_h))
    assert sizes == {tables.c_dtype_name(name): str(size) for name, _, _, size, _ in rows}
    java = (REPO_ROOT / "runtime" / "jni" / "java" / "org" / "pare" / "DType.java").read_text()
    assert re.findall(r"^  ([A-Z0-9]+)\((\d+), (\d+)\)[,;]$", java, flags=re.M) == [
        (torch_name.upper(), str(code), str(size)) for _, code, _, size, torch_name in rows
    ]


def test_a_hand_edited_region_is_stale(tmp_path, monkeypatch, capsys):
    _copy_sources(tmp_path, monkeypatch)
    assert tables.main([]) == 0  # the generated .py files
    assert tables.main(["--check"]) == 0
    header = tmp_path / "runtime" / "c_api" / "pare.h"
    header.write_text(header.read_text().replace("PARE_ERROR_FILE = 0x32", "PARE_ERROR_FILE = 0x33"))
    assert tables.main(["--check"]) == 1
    assert "runtime/c_api/pare.h (from runtime/core/errors.def, runtime/core/dtypes.def)" in capsys.readouterr().err
    assert tables.main([]) == 0
    assert header.read_text() == (REPO_ROOT / "runtime" / "c_api" / "pare.h").read_text()


def test_a_missing_region_marker_is_named(tmp_path, monkeypatch, capsys):
    _copy_sources(tmp_path, monkeypatch)
    java = tmp_path / "runtime" / "jni" / "java" / "org" / "pare" / "DType.java"
    java.write_text(java.read_text().replace(tables.REGION_END, "end"))
    assert tables.main(["--check"]) == 2
    assert "DType.java: no line holding '@generated by python -m codegen.tables: end'" in capsys.readouterr().err


def test_malformed_status_entry_is_named(tmp_path):
    bad = tmp_path / "errors.def"
    bad.write_text("PARE_ERROR(Ok, 0x00, PARE_OK)\nPARE_ERROR(Internal, 1, PARE_ERROR_INTERNAL)\n")
    with pytest.raises(ValueError, match=r"errors.def:2: expected PARE_ERROR\(name, 0xNN code, PARE_ c_name\)"):
        tables.read_errors(bad)
    bad.write_text("PARE_ERROR(Ok, 0x00, PARE_OK)\nPARE_ERROR(Internal, 0x00, PARE_ERROR_INTERNAL)\n")
    with pytest.raises(ValueError, match=r"codes must rise from 0x00 without repeats"):
        tables.read_errors(bad)
