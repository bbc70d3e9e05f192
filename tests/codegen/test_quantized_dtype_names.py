"""PyTorch's quantized dtype names (QInt8, QUInt8, QInt32) in kernel tags:
a tag of int8 layers lists QInt8, dispatches on its storage (Char), and
manifests name its case QInt8, as PyTorch's quantized kernels record it
(runtime/core/dtypes.def, PARE_QUANTIZED_DTYPE)."""

from __future__ import annotations

from pathlib import Path

import pytest

import codegen
from codegen import InventoryError
from codegen.dtypes import QUANTIZED_STORAGE, storage_dtype

TAGS = "PARE_KERNEL_TAG(qconv_kernel, QInt8)\nPARE_KERNEL_TAG(requant_kernel, QInt32, Float, QUInt8)\n"
OPS = 'PARE_OP("pare::qconv", pare_qconv)\n'


def _inventory(tmp_path: Path, tags: str = TAGS) -> codegen.Inventory:
    (tmp_path / "q").mkdir(exist_ok=True)
    (tmp_path / "q" / "q.tags.def").write_text(tags)
    (tmp_path / "q" / "q.ops.def").write_text(OPS)
    return codegen.load_inventory(tmp_path)


def _resolve(inventory, metadata: str):
    text = f"operators:\n  pare::qconv: {{include_all_overloads: false}}\nkernel_metadata:\n{metadata}"
    return codegen.resolve(codegen.loads(text, source="m.yaml"), inventory)


def test_the_names_are_pytorchs_and_each_is_stored_as_a_pare_dtype():
    assert QUANTIZED_STORAGE == {"QInt8": "Char", "QUInt8": "Byte", "QInt32": "Int"}
    assert storage_dtype("QInt8").cpp_elf == "signed char" and storage_dtype("Float").name == "Float"


def test_a_tag_keeps_its_names_in_storage_order(tmp_path):
    inv = _inventory(tmp_path)
    assert inv.tags["qconv_kernel"].dtypes == ("QInt8",)
    assert inv.tags["requant_kernel"].dtypes == ("QUInt8", "QInt32", "Float")  # Byte, Int, Float
    # What a trace reports (the runtime's storage dtype) becomes the tag's name.
    assert inv.tags["qconv_kernel"].manifest_name("Char") == "QInt8"
    assert inv.tags["requant_kernel"].manifest_name("Float") == "Float"


def test_a_name_and_its_storage_in_one_tag_is_a_duplicate(tmp_path):
    with pytest.raises(InventoryError, match=r"lists a dtype twice \(stored as: QInt8 \(Char\)\)") as info:
        _inventory(tmp_path, "PARE_KERNEL_TAG(qconv_kernel, Char, QInt8)\n")
    assert "\n" not in str(info.value)


def test_the_generated_header_dispatches_on_the_storage_dtype(tmp_path):
    sel = _resolve(_inventory(tmp_path), "  qconv_kernel: [QInt8]\n")
    assert dict(sel.kernel_dtypes) == {"qconv_kernel": ("QInt8",)} and sel.warnings == ()
    header = codegen.selected_kernel_dtypes_h(sel)
    assert '(detail::str_eq(tag, "qconv_kernel") && (t == ScalarType::Char))' in header
    assert "QInt8" not in header
    symbols = {(e["tag"], e["dtype"]): e for e in codegen.expected_symbols(sel)["kernel_dtypes"]}
    assert symbols["qconv_kernel", "QInt8"]["cpp_type"] == {"elf": "signed char", "macho": "signed char"}
    assert symbols["qconv_kernel", "QInt8"]["expect"] == "present"


def test_a_manifest_naming_the_storage_is_told_the_tags_name(tmp_path):
    sel = _resolve(_inventory(tmp_path), "  qconv_kernel: [Char]\n")
    assert dict(sel.kernel_dtypes) == {}
    assert sel.warnings == (
        "m.yaml: ignored dtypes that the runtime's qconv_kernel dispatch cannot reach: Char "
        "(this tag records Char as QInt8, PyTorch's quantized name)",
    )
