"""Reading and writing manifests: PyTorch's formats and quirks, errors, round trip."""

from __future__ import annotations

import re

import pytest
from codegen_testlib import MANIFESTS, manifest_paths

import codegen
from codegen import Manifest, ManifestError, Operator
from codegen.dtypes import PARE_DTYPE_NAMES, PYTORCH_SCALAR_TYPE_NAMES, suggest_dtype


def test_pytorch_tracer_output_loads_with_its_quirks():
    m = codegen.load(MANIFESTS / "pytorch_tracer.yaml")
    assert list(m.operators) == ["aten::add.Tensor", "aten::relu", "aten::sigmoid"]
    assert m.operators["aten::sigmoid"] == Operator(
        "aten::sigmoid", is_root_operator=False, is_used_for_training=False, include_all_overloads=False
    )
    assert m.kernel_metadata == {
        "add_kernel": ("Float", "Long"),
        "relu_kernel": ("Float",),
        "sigmoid_kernel": ("Float",),
    }
    assert m.custom_classes == {"LinearPackedParams"}
    assert m.build_features == frozenset()
    assert not m.include_all_operators and not m.include_all_non_op_selectives


def test_tracer_empty_lists_are_empty():
    # tracer.cpp writes `kernel_metadata: []`, which torchgen's from_yaml_dict rejects.
    m = codegen.load(MANIFESTS / "pytorch_tracer_empty.yaml")
    assert m.kernel_metadata == {}
    assert m.custom_classes == frozenset()


def test_missing_fields_take_torchgen_defaults():
    m = codegen.loads("operators:\n  aten::add: {}\n  aten::mul:\n")
    for op in m.operators.values():
        assert (op.is_root_operator, op.is_used_for_training, op.include_all_overloads) == (True, True, True)
        assert op.debug_info is None
    assert m.debug_info is None
    assert not m.include_all_operators


def test_gen_oplist_output_loads_with_debug_info_and_et_metadata():
    m = codegen.load(MANIFESTS / "pytorch_selected_operators.yaml")
    assert m.debug_info == ('{"asset_info": {}, "is_new_style_rule": false}',)
    assert m.operators["aten::add.Tensor"].debug_info == ("model_a.ptl",)
    assert m.et_kernel_metadata == {}


def test_legacy_op_list_is_torchgens_legacy_allow_list():
    m = codegen.load(MANIFESTS / "legacy_op_list.yaml")
    assert m.include_all_non_op_selectives
    assert all(
        op.include_all_overloads and op.is_root_operator and not op.is_used_for_training for op in m.operators.values()
    )


def test_operators_as_list_of_names():
    m = codegen.load(MANIFESTS / "operators_as_list.yaml")
    assert m.operators["aten::gelu"] == Operator("aten::gelu")
    assert not m.include_all_non_op_selectives


def test_default_overload_spelling_is_normalised():
    m = codegen.loads("operators:\n  aten::relu.default: {}\n")
    # It named one overload: it must not grow into all overloads of relu.
    assert m.operators == {"aten::relu": Operator("aten::relu", include_all_overloads=False)}
    assert m.is_operator_selected("aten::relu.default")
    assert not m.is_operator_selected("aten::relu.out")


def test_default_and_bare_spelling_combine():
    m = codegen.loads(
        "operators:\n  aten::relu.default: {is_root_operator: false}\n  aten::relu: {include_all_overloads: false}\n"
    )
    assert m.operators["aten::relu"].is_root_operator is True


def test_null_values_read_as_defaults():
    m = codegen.loads(
        "operators:\n  aten::add.Tensor:\nkernel_metadata:\n  add_kernel:\ncustom_classes:\nbuild_features:\ndebug_info:\n"
    )
    assert m.kernel_metadata == {"add_kernel": ()}
    assert m.custom_classes == frozenset()


def test_et_kernel_metadata_is_preserved():
    text = "operators: {}\net_kernel_metadata:\n  aten::add.out:\n  - v1/6;0,1|6;0,1\n"
    m = codegen.loads(text)
    assert m.et_kernel_metadata == {"aten::add.out": ("v1/6;0,1|6;0,1",)}
    assert "et_kernel_metadata" in m.dump()
    assert codegen.loads(m.dump()) == m


@pytest.mark.parametrize("path", manifest_paths(), ids=lambda p: p.name)
def test_round_trip_is_a_fixed_point(path):
    m = codegen.load(path)
    text = m.dump()
    again = codegen.loads(text)
    assert again == m
    assert again.dump() == text


@pytest.mark.parametrize("path", manifest_paths(), ids=lambda p: p.name)
def test_dump_is_deterministic(path):
    texts = {codegen.load(path).dump() for _ in range(3)}
    assert len(texts) == 1


def test_dump_does_not_depend_on_construction_order():
    ops = [Operator("aten::relu", False, False, False), Operator("aten::add.Tensor", True, False, False)]
    a = Manifest(operators=ops, kernel_metadata={"b": ("Long", "Float"), "a": ("Float",)}, custom_classes={"Y", "X"})
    b = Manifest(
        operators=list(reversed(ops)),
        kernel_metadata={"a": ("Float",), "b": ("Float", "Long", "Float")},
        custom_classes=["X", "Y"],
    )
    assert a.dump() == b.dump()


def test_dump_format():
    m = Manifest(
        operators=[Operator("aten::add.Tensor", True, False, False, ("m.py:3",))],
        kernel_metadata={"add_kernel": ("Long", "Float")},
    )
    assert m.dump() == (
        "include_all_operators: false\n"
        "include_all_non_op_selectives: false\n"
        "operators:\n"
        "  aten::add.Tensor:\n"
        "    is_root_operator: true\n"
        "    is_used_for_training: false\n"
        "    include_all_overloads: false\n"
        "    debug_info:\n"
        "    - m.py:3\n"
        "kernel_metadata:\n"
        "  add_kernel:\n"
        "  - Float\n"
        "  - Long\n"
        "custom_classes: []\n"
        "build_features: []\n"
    )


def test_long_debug_info_is_not_folded():
    info = "x" * 300 + " " + "y" * 300
    m = Manifest(debug_info=(info,))
    assert info in m.dump()


def test_sha256_of_source_bytes_and_of_dump():
    path = MANIFESTS / "pytorch_tracer.yaml"
    import hashlib

    m = codegen.load(path)
    assert m.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()
    fresh = codegen.loads(m.dump())
    assert fresh.sha256() == hashlib.sha256(m.dump().encode()).hexdigest()
    assert fresh == m  # the hash is not part of equality


# --- errors: one line naming the file, the problem and the fix ---


def _error(text: str, source: str = "m.yaml") -> str:
    with pytest.raises(ManifestError) as info:
        codegen.loads(text, source=source)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(source)
    return message


def test_malformed_yaml_names_the_line():
    msg = _error("operators:\n  aten::add.Tensor: {\n  aten::relu: {}\n kernel_metadata: x\n")
    assert re.match(r"m\.yaml:\d+: malformed YAML", msg)
    msg = _error("operators:\n  aten::add: [\n")
    assert "malformed YAML" in msg


def test_tab_indentation_error_has_line():
    msg = _error("operators:\n\taten::add: {}\n")
    assert msg.startswith("m.yaml:2: malformed YAML")


def test_empty_manifest():
    msg = _error("")
    assert "empty" in msg and "include_all_operators: true" in msg


def test_unknown_top_level_key_suggests():
    msg = _error("operators: {}\nkernel_metdata: {}\n")
    assert msg.startswith("m.yaml:2: unknown top-level key 'kernel_metdata' (did you mean 'kernel_metadata'?)")
    assert "valid keys:" in msg


def test_unknown_operator_field():
    msg = _error("operators:\n  aten::add.Tensor:\n    is_root: true\n")
    assert msg.startswith(
        "m.yaml:3: unknown field 'is_root' in operator aten::add.Tensor (did you mean 'is_root_operator'?)"
    )


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("include_all_operators: 1\n", 1, "include_all_operators must be true or false, got int 1"),
        ("include_all_operators: 'true'\n", 1, "got str 'true'"),
        (
            "operators:\n  aten::add.Tensor:\n    include_all_overloads: maybe\n",
            3,
            "aten::add.Tensor.include_all_overloads must be true or false",
        ),
        ("operators: 3\n", 1, "operators must map operator names to their fields"),
        ("operators:\n  aten::add.Tensor: true\n", 2, "operator aten::add.Tensor must be a mapping"),
        ("kernel_metadata: [Float]\n", 1, "kernel_metadata must map kernel tags to dtype lists"),
        ("kernel_metadata:\n  add_kernel: Float\n", 2, "kernel_metadata.add_kernel must be a list"),
        ("custom_classes: LinearPackedParams\n", 1, "custom_classes must be a list"),
        ("build_features: {a: 1}\n", 1, "build_features must be a list"),
        ("custom_classes: [[a]]\n", 1, "each entry of custom_classes must be a non-empty string"),
        ("debug_info: abc\n", 1, "debug_info must be a list"),
        ("et_kernel_metadata: []\n", 1, "et_kernel_metadata must map"),
        ("operators:\n  aten::add.Tensor: {name: aten::mul}\n", 2, "has name: 'aten::mul'"),
        ("operators:\n  1: {}\n", 2, "an operator name must be a non-empty string"),
        ("- aten::add\n- 3\n", 2, "each entry of the operator list must be a non-empty string"),
        ("just a string\n", 1, "the manifest must be a YAML mapping"),
    ],
)
def test_wrong_types(text, line, fragment):
    msg = _error(text)
    assert msg.startswith(f"m.yaml:{line}: "), msg
    assert fragment in msg


def test_duplicate_keys_are_errors():
    msg = _error("operators:\n  aten::add.Tensor: {}\n  aten::add.Tensor: {include_all_overloads: false}\n")
    assert msg.startswith("m.yaml:3: duplicate key 'aten::add.Tensor' (first at line 2)")


@pytest.mark.parametrize(
    "bad, suggestion",
    [
        ("float32", "Float"),
        ("float", "Float"),
        ("torch.int64", "Long"),
        ("Flaot", "Float"),
        ("bfloat16", "BFloat16"),
        ("kHalf", "Half"),
        ("uint8", "Byte"),
    ],
)
def test_bad_dtype_suggests_the_closest(bad, suggestion):
    msg = _error(f"kernel_metadata:\n  add_kernel:\n  - Float\n  - {bad}\n")
    assert msg.startswith(f"m.yaml:4: unknown dtype {bad!r} in kernel_metadata.add_kernel; did you mean {suggestion}?")
    assert "Byte Char Short Int Long Half Float Double ComplexFloat Bool BFloat16" in msg


def test_pytorch_only_dtypes_are_not_typos():
    # Valid PyTorch ScalarType names load; resolving against the runtime warns.
    m = codegen.loads("kernel_metadata:\n  q: [QUInt8, ComplexFloat, Float8_e4m3fn]\n")
    assert m.kernel_metadata["q"] == ("ComplexFloat", "Float8_e4m3fn", "QUInt8")


def test_bad_dtype_in_code_built_manifest():
    with pytest.raises(ManifestError, match=r"<manifest>: unknown dtype 'f32' in kernel_metadata.k"):
        Manifest(kernel_metadata={"k": ("f32",)})


def test_load_missing_file_and_non_utf8(tmp_path):
    with pytest.raises(ManifestError, match=r"nope.yaml: no such manifest file"):
        codegen.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"operators:\n  \xff\xfe: {}\n")
    with pytest.raises(ManifestError, match=r"bad.yaml: not UTF-8 text"):
        codegen.load(bad)


def test_suggest_dtype_gives_up_on_nonsense():
    assert suggest_dtype("zzzzzz") is None


def test_pytorch_scalar_type_list_matches_torch():
    # The hard-coded list must follow torch's ScalarType X-macro.
    from pathlib import Path

    import torch

    include = Path(torch.__file__).parent / "include"
    headers = list(include.glob("torch/headeronly/core/ScalarType.h")) + list(include.glob("c10/core/ScalarType.h"))
    names = set()
    for header in headers:
        text = header.read_text()
        start = text.find("#define AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(_)")
        if start < 0:
            continue
        block = text[start : text.find("\n\n", start)]
        names |= set(re.findall(r"_\([^,]+,\s*(\w+)\)", block))
    assert names, "ScalarType X-macro not found in torch's headers"
    assert names == set(PYTORCH_SCALAR_TYPE_NAMES)
    assert set(PARE_DTYPE_NAMES) <= names


def test_unsafe_yaml_tags_are_one_line_errors():
    msg = _error("operators: {}\ninclude_all_operators: !!python/name:os.system ''\n")
    assert msg.startswith("m.yaml:2: malformed YAML")


def test_several_documents_are_an_error():
    msg = _error("operators: {}\n---\noperators: {}\n")
    assert "malformed YAML" in msg and "single document" in msg


# --- merge and diff ---


def test_merge_diagnoses_conflicts():
    a = codegen.loads("operators:\n  aten::add: {include_all_overloads: false}\n  aten::relu: {}\n", source="a.yaml")
    b = codegen.loads(
        "include_all_non_op_selectives: true\noperators:\n  aten::add: {include_all_overloads: true}\n"
        "  aten::relu.out: {}\n",
        source="b.yaml",
    )
    c = codegen.loads("include_all_operators: true\n", source="c.yaml")
    result = codegen.merge([a, b, c])
    assert result.manifest.include_all_operators and result.manifest.include_all_non_op_selectives
    assert result.manifest.operators["aten::add"].include_all_overloads
    assert result.diagnostics == (
        "c.yaml set include_all_operators: true, so in the merge every operator (and every dtype, class and feature) "
        "is selected; the narrower lists of a.yaml, b.yaml no longer restrict it",
        "b.yaml set include_all_non_op_selectives: true, so in the merge every kernel dtype, custom class and build "
        "feature is selected; the narrower lists of a.yaml, c.yaml no longer restrict it",
        "aten::add: include_all_overloads is true in b.yaml but false in a.yaml; merged as true, selecting every "
        "overload of aten::add",
        "aten::relu selects all its overloads (include_all_overloads: true), which subsumes aten::relu.out",
    )


def test_merge_of_agreeing_inputs_is_quiet_and_unions():
    a = codegen.load(MANIFESTS / "pytorch_tracer.yaml")
    b = codegen.loads(
        "operators:\n  aten::mul.Tensor: {is_root_operator: true, is_used_for_training: false, "
        "include_all_overloads: false}\nkernel_metadata:\n  add_kernel: [Int]\ncustom_classes: [X]\n"
    )
    result = codegen.merge([a, b])
    assert result.diagnostics == ()
    m = result.manifest
    assert list(m.operators) == ["aten::add.Tensor", "aten::mul.Tensor", "aten::relu", "aten::sigmoid"]
    assert m.kernel_metadata["add_kernel"] == ("Float", "Int", "Long")
    assert m.custom_classes == {"LinearPackedParams", "X"}
    assert codegen.merge([b, a]).manifest.dump() == m.dump()


def test_merge_of_nothing_selects_nothing():
    assert codegen.merge([]).manifest == Manifest()


def test_merge_root_and_training_flags_or_together():
    a = codegen.loads("operators:\n  aten::relu: {is_root_operator: false, is_used_for_training: false}\n")
    b = codegen.loads(
        "operators:\n  aten::relu: {is_root_operator: true, is_used_for_training: false, debug_info: [b]}\n"
    )
    op = codegen.merge([a, b]).manifest.operators["aten::relu"]
    assert op.is_root_operator and not op.is_used_for_training and op.debug_info == ("b",)


def test_diff_without_inventory_is_by_name():
    a = codegen.loads(
        "operators:\n  aten::add: {}\n  aten::relu: {include_all_overloads: false}\n"
        "kernel_metadata:\n  add_kernel: [Float, Long]\ncustom_classes: [A]\nbuild_features: [f]\n"
        "include_all_non_op_selectives: true\n"
    )
    b = codegen.loads("operators:\n  aten::add.Tensor: {}\n  aten::relu: {}\nkernel_metadata:\n  add_kernel: [Float]\n")
    d = codegen.diff(a, b)
    assert d.flags == ("include_all_non_op_selectives",)
    assert d.operators == ("aten::add",)  # all of add's overloads, of which b has one
    assert dict(d.kernel_dtypes) == {"add_kernel": ("Long",)}
    assert d.custom_classes == ("A",) and d.build_features == ("f",)
    assert d.to_text() == (
        "+ include_all_non_op_selectives: true\n+ operator aten::add\n+ kernel dtype add_kernel: Long\n"
        "+ custom class A\n+ build feature f\n"
    )
    assert codegen.diff(b, a).operators == ("aten::relu",)  # b has every relu overload, a the default one
    assert codegen.diff(a, a).is_empty()


def test_diff_with_inventory_expands(inventory):
    a = codegen.loads("operators:\n  aten::add: {}\n  aten::nope.x: {}\ninclude_all_non_op_selectives: true\n")
    b = codegen.loads("operators:\n  aten::add.Tensor: {}\nkernel_metadata:\n  sigmoid_kernel: [Float]\n")
    d = codegen.diff(a, b, inventory)
    assert d.operators == ("aten::add.Scalar", "aten::nope.x")
    assert dict(d.kernel_dtypes)["sigmoid_kernel"] == ("Double",)
    assert d.custom_classes == ("Conv2dPackedParams", "LinearPackedParams")
    assert d.to_dict()["build_features"] == ["op_profiling"]
