"""The runtime inventory: parsing the `.def` X-macro files, and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from codegen_testlib import REPO_ROOT

import codegen
from codegen import InventoryError


def test_fixture_inventory(inventory):
    assert inventory.ops["aten::add.Tensor"].function == "aten_add_Tensor"
    assert inventory.ops["aten::add.Tensor"].location == "core/binary.ops.def:2"
    assert inventory.ops["aten::mul.Scalar"].function == "aten_mul_Scalar"  # spaces inside the macro
    assert inventory.ops["pare::linear_prepacked"].location == "quantized/prepacked.ops.def:1"
    assert list(inventory.ops) == sorted(inventory.ops)
    assert inventory.overloads_of("aten::add") == ("aten::add.Scalar", "aten::add.Tensor")
    assert inventory.overloads_of("aten::relu") == ("aten::relu",)  # relu_ is another base name
    # Dtypes in pare::ScalarType order whatever the .def order.
    assert inventory.tags["relu_kernel"].dtypes == ("Int", "Long", "Half", "Float", "Double", "BFloat16")
    assert list(inventory.classes) == ["Conv2dPackedParams", "LinearPackedParams"]
    assert list(inventory.build_features) == ["op_profiling"]


def test_block_comments_spanning_lines(inventory):
    # unary.ops.def opens with a two-line /* */ comment.
    assert inventory.ops["aten::relu"].location == "core/unary.ops.def:3"


def _inventory_with(tmp_path: Path, files: dict[str, str]) -> codegen.Inventory:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return codegen.load_inventory(tmp_path)


def _error(tmp_path: Path, files: dict[str, str]) -> str:
    with pytest.raises(InventoryError) as info:
        _inventory_with(tmp_path, files)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "rel, text, location, fragment",
    [
        (
            "a.ops.def",
            'PARE_OP("aten::add.Tensor", aten_add_Tensor);\n',
            "a.ops.def:1",
            "expected one PARE_OP(...) entry",
        ),
        ("a.ops.def", "// ok\n\nPARE_OP(aten::add, f)\n", "a.ops.def:3", "expected one PARE_OP(...) entry"),
        (
            "a.ops.def",
            'PARE_OP("aten::add.Tensor", f) PARE_OP("aten::mul.Tensor", g)\n',
            "a.ops.def:1",
            "expected one PARE_OP",
        ),
        (
            "a.ops.def",
            "PARE_KERNEL_TAG(add_kernel, Float)\n",
            "a.ops.def:1",
            "PARE_KERNEL_TAG does not belong in this file",
        ),
        ("a.ops.def", 'PARE_OP("aten::relu.default", aten_relu)\n', "a.ops.def:1", "write 'aten::relu'"),
        ("a.ops.def", 'PARE_OP("relu", aten_relu)\n', "a.ops.def:1", "is not a full operator name"),
        (
            "a.ops.def",
            'PARE_OP("aten::a", f)\nPARE_OP("aten::b", f)\n',
            "a.ops.def:2",
            "kernel function f is already used by",
        ),
        (
            "a.tags.def",
            "PARE_KERNEL_TAG(add_kernel)\n",
            "a.tags.def:1",
            "expected one PARE_KERNEL_TAG(...) entry",
        ),
        (
            "a.tags.def",
            "PARE_KERNEL_TAG(add_kernel, Float, float32)\n",
            "a.tags.def:1",
            "unknown dtype 'float32' in kernel tag add_kernel; did you mean Float?",
        ),
        (
            "a.tags.def",
            "PARE_KERNEL_TAG(add_kernel, Float, ComplexDouble)\n",
            "a.tags.def:1",
            "unknown dtype 'ComplexDouble'",
        ),
        ("a.tags.def", "PARE_KERNEL_TAG(add_kernel, Float, Float)\n", "a.tags.def:1", "lists a dtype twice"),
        ("classes.def", "PARE_CLASS(Linear Packed)\n", "classes.def:1", "expected one PARE_CLASS(...) entry"),
        ("features.def", "#pragma once\n", "features.def:1", "expected one PARE_BUILD_FEATURE(...) entry"),
    ],
)
def test_format_errors_name_file_and_line(tmp_path, rel, text, location, fragment):
    msg = _error(tmp_path, {rel: text})
    assert msg.startswith(f"{tmp_path}/{location}: "), msg
    assert fragment in msg


def test_duplicates_across_files_name_both(tmp_path):
    msg = _error(
        tmp_path,
        {"a.ops.def": 'PARE_OP("aten::add.Tensor", f)\n', "b/c.ops.def": 'PARE_OP("aten::add.Tensor", g)\n'},
    )
    assert (
        msg
        == f"{tmp_path}/b/c.ops.def:1: operator aten::add.Tensor is already declared at {tmp_path}/a.ops.def:1; keep one declaration"
    )
    msg = _error(tmp_path / "t", {"a.tags.def": "PARE_KERNEL_TAG(k, Float)\nPARE_KERNEL_TAG(k, Long)\n"})
    assert "kernel tag k is already declared" in msg


def test_missing_or_empty_directory(tmp_path):
    with pytest.raises(InventoryError, match="inventory directory does not exist; pass --inventory"):
        codegen.load_inventory(tmp_path / "absent")
    (tmp_path / "README.md").write_text("no defs")
    with pytest.raises(InventoryError, match=r"no \*\.ops\.def, \*\.tags\.def, classes\.def or features\.def files"):
        codegen.load_inventory(tmp_path)


def test_other_files_are_ignored(tmp_path):
    inv = _inventory_with(
        tmp_path, {"a.ops.def": 'PARE_OP("aten::a", f)\n', "kernels.cc": "int x;\n", "x.def": "junk\n"}
    )
    assert list(inv.ops) == ["aten::a"]


def test_default_directory_is_the_repo_runtime():
    assert codegen.DEFAULT_INVENTORY_DIR == REPO_ROOT / "runtime" / "inventory"


def test_real_runtime_inventory_parses():
    # The runtime's own .def files must follow docs/selection.md.
    inv = codegen.load_inventory()
    assert inv.ops
    for op in inv.ops.values():
        assert not op.name.endswith(".default")
