"""runtime/core/dtypes.def is the one dtype table: the Python copies are
generated from it and current, and the C++ side is made from it (the
static_asserts in runtime/core/scalar_type.h check the rest at compile time)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import codegen.dtypes
import pare.dtypes
from codegen import dtype_tables
from tests.conftest import REPO_ROOT


def test_generated_tables_are_current():
    proc = subprocess.run(
        [sys.executable, "-m", "codegen.dtype_tables", "--check"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_python_tables_follow_the_def():
    rows = dtype_tables.read_table()
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
    monkeypatch.setattr(dtype_tables, "REPO", tmp_path)
    (tmp_path / "runtime" / "core").mkdir(parents=True)
    (tmp_path / "runtime" / "core" / "dtypes.def").write_text((REPO_ROOT / dtype_tables.SOURCE).read_text())
    for rel in dtype_tables.OUTPUTS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("stale\n")
    assert dtype_tables.main(["--check"]) == 1
    assert dtype_tables.main([]) == 0
    assert dtype_tables.main(["--check"]) == 0


def test_malformed_entry_is_named(tmp_path):
    bad = tmp_path / "dtypes.def"
    bad.write_text("PARE_DTYPE(Float, six, float, 4, float32)\n")
    with pytest.raises(
        ValueError, match=r"dtypes.def:1: expected PARE_DTYPE\(name, code, cpp_type, bytes, torch_name\)"
    ):
        dtype_tables.read_table(bad)


def test_bfloat16_has_no_numpy_dtype():
    assert pare.dtypes.BY_NAME["BFloat16"].numpy is None
    assert pare.dtypes.BY_NAME["Bool"].numpy == np.dtype(np.bool_)
