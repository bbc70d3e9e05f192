"""Resolving manifests against the inventory: expansion, unknown names, warnings."""

from __future__ import annotations

import pytest
from codegen_testlib import MANIFESTS

import codegen
from codegen import Manifest, ManifestError, Operator


def resolve(inventory, text, **kw):
    return codegen.resolve(codegen.loads(text, source="m.yaml"), inventory, **kw)


def test_exact_names(inventory):
    sel = resolve(
        inventory,
        "operators:\n  aten::add.Tensor: {include_all_overloads: false}\n  aten::relu: {include_all_overloads: false}\n",
    )
    assert sel.operators == ("aten::add.Tensor", "aten::relu")


def test_overload_less_name_expands_to_runtime_overloads(inventory):
    # Missing include_all_overloads defaults to true (torchgen).
    sel = resolve(inventory, "operators:\n  aten::add: {}\n  aten::mean: {}\n")
    assert sel.operators == ("aten::add.Scalar", "aten::add.Tensor", "aten::mean", "aten::mean.dim")


def test_include_all_overloads_false_on_bare_name_is_the_default_overload(inventory):
    sel = resolve(inventory, "operators:\n  aten::mean: {include_all_overloads: false}\n")
    assert sel.operators == ("aten::mean",)


def test_bare_name_without_default_overload_and_no_expansion_is_an_error(inventory):
    with pytest.raises(ManifestError) as info:
        resolve(inventory, "operators:\n  aten::add: {include_all_overloads: false}\n")
    msg = str(info.value)
    assert (
        "aten::add (include_all_overloads is false and the runtime has no default overload; "
        "name one of aten::add.Scalar aten::add.Tensor or set include_all_overloads: true)" in msg
    )


def test_include_all_overloads_on_dotted_name_does_not_expand(inventory):
    sel = resolve(inventory, "operators:\n  aten::add.Tensor: {include_all_overloads: true}\n")
    assert sel.operators == ("aten::add.Tensor",)


def test_default_spelling_selects_default_overload(inventory):
    sel = resolve(inventory, "operators:\n  aten::mean.default: {}\n")
    assert sel.operators == ("aten::mean",)


def test_include_all_operators(inventory):
    sel = codegen.resolve(codegen.load(MANIFESTS / "include_all.yaml"), inventory)
    assert sel.include_all_operators and sel.operators == tuple(inventory.ops)
    assert sel.include_all_kernel_dtypes and sel.include_all_custom_classes and sel.include_all_build_features


def test_include_all_non_op_selectives(inventory):
    sel = codegen.resolve(codegen.load(MANIFESTS / "non_op_selectives.yaml"), inventory)
    assert not sel.include_all_operators
    assert sel.operators == ("aten::add.Tensor", "aten::convolution")
    assert sel.include_all_kernel_dtypes and sel.include_all_custom_classes and sel.include_all_build_features
    assert sel.is_kernel_dtype_selected("softmax_kernel", "Half")


def test_kernel_dtypes_are_manifest_and_runtime(inventory):
    sel = resolve(
        inventory,
        "kernel_metadata:\n  add_kernel: [Float, Long]\n  mul_kernel: []\n  sigmoid_kernel: [Float]\n",
    )
    assert dict(sel.kernel_dtypes) == {"add_kernel": ("Float", "Long"), "sigmoid_kernel": ("Float",)}
    # A runtime tag the manifest does not mention: nothing selected (torchgen).
    assert not sel.is_kernel_dtype_selected("relu_kernel", "Float")
    assert not sel.is_kernel_dtype_selected("add_kernel", "Int")


def test_unknown_ops_error_lists_all_and_the_fix(inventory):
    text = (
        "operators:\n  aten::addd.Tensor: {}\n  aten::add.Tensor: {}\n  aten::softmax: {}\n"
        "  prim::TupleConstruct: {}\ncustom_classes: [LinearPackedParamsBase, Nope]\n"
    )
    with pytest.raises(ManifestError) as info:
        resolve(inventory, text)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == (
        f"m.yaml: not provided by the runtime ({inventory.root}): "
        "3 operators aten::addd.Tensor (did you mean aten::add.Tensor?), aten::softmax (did you mean aten::_softmax?), "
        "prim::TupleConstruct; 2 custom classes LinearPackedParamsBase (did you mean LinearPackedParams?), Nope; "
        "remove them from the manifest, implement them in the runtime, "
        "or pass --allow-unknown-ops (allow_unknown_ops=True) to drop them"
    )


def test_allow_unknown_ops_drops_with_a_warning(inventory):
    m = codegen.load(MANIFESTS / "pytorch_foreign.yaml")
    sel = codegen.resolve(m, inventory, allow_unknown_ops=True)
    assert sel.operators == ("aten::add.Tensor",)
    assert sel.dropped_operators == ("aten::quantize_per_tensor", "prim::TupleConstruct")
    assert any("dropped, not provided by the runtime" in w and "prim::TupleConstruct" in w for w in sel.warnings)


def test_unknown_tags_dtypes_and_features_are_warnings(inventory):
    m = codegen.load(MANIFESTS / "pytorch_foreign.yaml")
    sel = codegen.resolve(m, inventory, allow_unknown_ops=True)
    text = "\n".join(sel.warnings)
    assert "ignored kernel tags the runtime does not have" in text and "quantize_tensor_per_tensor_affine_cpu" in text
    assert (
        "ignored dtypes that the runtime's add_kernel dispatch cannot reach: ComplexDouble (Pare kernels have no such dtype)"
        in text
    )
    assert "ignored build features the runtime does not have" in text and "quantized_ops" in text
    assert dict(sel.kernel_dtypes) == {"add_kernel": ("Float",)}


def test_dtype_the_tag_cannot_reach(inventory):
    sel = resolve(inventory, "kernel_metadata:\n  sigmoid_kernel: [Float, Int]\n")
    assert sel.warnings == ("m.yaml: ignored dtypes that the runtime's sigmoid_kernel dispatch cannot reach: Int",)
    assert dict(sel.kernel_dtypes) == {"sigmoid_kernel": ("Float",)}


def test_unknown_ops_still_checked_under_include_all(inventory):
    with pytest.raises(ManifestError, match="aten::nope"):
        resolve(inventory, "include_all_operators: true\noperators:\n  aten::nope: {}\n")


def test_clean_manifest_has_no_warnings(inventory):
    sel = codegen.resolve(codegen.load(MANIFESTS / "pytorch_tracer.yaml"), inventory)
    assert sel.warnings == () and sel.dropped_operators == ()


def test_code_built_manifest(inventory):
    m = Manifest(operators=[Operator("aten::relu", False, False, False)], kernel_metadata={"relu_kernel": ("Float",)})
    sel = codegen.resolve(m, inventory)
    assert sel.operators == ("aten::relu",)
    assert sel.is_operator_selected("aten::relu") and not sel.is_operator_selected("aten::relu_")
