"""Interop with PyTorch's selective build: every manifest the tracer writes
loads in torchgen's SelectiveBuilder (shipped in the torch wheel) with the
same answers as Pare's, and YAML written by PyTorch's own tracer loads in the
tracer's merge and diff."""

from __future__ import annotations

import itertools

import pytest
import yaml
from torchgen.selective_build.selector import SelectiveBuilder
from tracer_testlib import REPO, exported, spec_of

import codegen
from pare.runtime import OpUse, Trace
from tools.tracer import build_manifest, cli, trace_model
from tools.tracer.paths import load_inventory

FIXTURES = REPO / "tests" / "codegen" / "fixtures" / "manifests"
DTYPES = ["Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "Bool", "BFloat16", "ComplexFloat"]

# What PyTorch's model_tracer writes for a model where it recorded no kernel
# dtypes and no classes: `[]` for the empty maps (torchgen itself rejects
# kernel_metadata: []), fields it leaves out defaulting to true, JSON
# debug_info, and ops spelled with overloads.
PYTORCH_TRACER_YAML = """\
build_features: []
custom_classes: []
debug_info:
- '{"asset_info": {}, "is_new_style_rule": true, "model_name": "mobilenet.ptl", "model_version": ""}'
include_all_non_op_selectives: false
include_all_operators: false
kernel_metadata: []
operators:
  aten::_softmax:
    debug_info:
    - mobilenet.ptl
    is_root_operator: true
    is_used_for_training: false
  aten::add.Tensor:
    include_all_overloads: false
    is_root_operator: true
    is_used_for_training: false
  aten::conv2d: {}
"""


def probes(manifest: codegen.Manifest, inventory) -> tuple[list[str], list[tuple[str, str]]]:
    ops = set(inventory.ops) | set(manifest.operators) | {"aten::add.Scalar", "aten::relu.out", "aten::nope"}
    tags = set(inventory.tags) | set(manifest.kernel_metadata) | {"nope_kernel"}
    return sorted(ops), sorted(itertools.product(tags, DTYPES))


def assert_torchgen_agrees(manifest: codegen.Manifest, inventory) -> None:
    sb = SelectiveBuilder.from_yaml_dict(yaml.safe_load(manifest.dump()))
    ops, pairs = probes(manifest, inventory)
    for op in ops:
        assert sb.is_operator_selected(op) == manifest.is_operator_selected(op), op
        assert sb.is_root_operator(op) == (manifest.is_operator_selected(op) and _pare_root(manifest, op)), op
    for tag, dtype in pairs:
        assert sb.is_kernel_dtype_selected(tag, dtype) == manifest.is_kernel_dtype_selected(tag, dtype), (tag, dtype)
    assert set(sb.custom_classes) == set(manifest.custom_classes)
    assert set(sb.build_features) == set(manifest.build_features)
    assert sb.include_all_operators == manifest.include_all_operators
    assert sb.include_all_non_op_selectives == manifest.include_all_non_op_selectives


def _pare_root(manifest: codegen.Manifest, op: str) -> bool:
    if manifest.include_all_operators:
        return True
    entry = manifest.operators.get(op) or manifest.operators.get(op.split(".")[0])
    return entry is not None and entry.is_root_operator


def synthetic_manifest() -> codegen.Manifest:
    """build_manifest over a trace with root and non-root ops, dtypes, a class
    and a feature, over two methods (no runtime needed)."""
    spec = spec_of("multi_dtype")
    traces = {
        "forward": Trace(
            {
                "aten::add.Tensor": OpUse(True, False),
                "aten::relu": OpUse(True, False),
                "aten::_to_copy": OpUse(False, True),
            },
            {"add_kernel": ("Float",), "copy_kernel": ("Float", "Long")},
            ("LinearPackedParams",),
            ("op_profiling",),
        ),
        "forward_int64_int64": Trace(
            {"aten::add.Tensor": OpUse(True, False), "aten::mul.Tensor": OpUse(False, True)},
            {"add_kernel": ("Long",)},
            (),
            (),
        ),
    }
    return build_manifest(spec, exported("multi_dtype"), traces)


def test_build_manifest_roots_debug_info_and_defaults():
    m = synthetic_manifest()
    assert m.operators["aten::_to_copy"].is_root_operator is False
    assert m.operators["aten::mul.Tensor"].is_root_operator is False
    assert m.operators["aten::add.Tensor"].debug_info == (
        "tests/tracer/models/multi_dtype.py:forward",
        "tests/tracer/models/multi_dtype.py:forward_int64_int64",
    )
    assert all(not op.is_used_for_training and not op.include_all_overloads for op in m.operators.values())
    assert m.kernel_metadata == {"add_kernel": ("Float", "Long"), "copy_kernel": ("Float", "Long")}
    text = m.dump()
    assert "include_all_non_op_selectives: false" in text and "is_used_for_training: false" in text


def test_written_manifests_load_in_torchgen_with_the_same_answers():
    inventory = load_inventory()
    m = synthetic_manifest()
    assert_torchgen_agrees(m, inventory)
    pytorch = codegen.loads(PYTORCH_TRACER_YAML, source="pytorch.yaml")
    assert_torchgen_agrees(codegen.merge([m, pytorch]).manifest, inventory)
    for fixture in sorted(FIXTURES.glob("*.yaml")):
        assert_torchgen_agrees(codegen.merge([m, codegen.load(fixture)]).manifest, inventory)


def test_traced_manifest_loads_in_torchgen(tracing_lib):
    m = trace_model(spec_of("tiny_mlp"), runtime=tracing_lib).manifest
    assert_torchgen_agrees(m, load_inventory())


def test_pytorch_tracer_yaml_reads_as_torchgen_reads_it():
    pare = codegen.loads(PYTORCH_TRACER_YAML, source="pytorch.yaml")
    fixed = yaml.safe_load(PYTORCH_TRACER_YAML)
    fixed["kernel_metadata"] = {}  # the one quirk torchgen rejects
    sb = SelectiveBuilder.from_yaml_dict(fixed)
    for op in ("aten::_softmax", "aten::add.Tensor", "aten::add.Scalar", "aten::conv2d", "aten::conv2d.padding"):
        assert sb.is_operator_selected(op) == pare.is_operator_selected(op), op
    # Left-out fields default to true, as in torchgen: conv2d selects every overload.
    assert pare.operators["aten::conv2d"].include_all_overloads
    assert pare.operators["aten::_softmax"].is_root_operator


@pytest.mark.parametrize(
    "fixture",
    ["pytorch_tracer.yaml", "pytorch_tracer_empty.yaml", "legacy_op_list.yaml", "pytorch_selected_operators.yaml"],
)
def test_merge_and_diff_accept_pytorch_yaml(capsys, tmp_path, fixture):
    ours = tmp_path / "ours.yaml"
    ours.write_text(synthetic_manifest().dump())
    out = tmp_path / "merged.yaml"
    assert cli.main(["merge", str(ours), str(FIXTURES / fixture), "-o", str(out)]) == 0
    merged = codegen.load(out)
    theirs = codegen.load(FIXTURES / fixture)
    for name in set(theirs.operators) | set(codegen.load(ours).operators):
        assert merged.is_operator_selected(name)
    assert cli.main(["diff", str(out), str(FIXTURES / fixture)]) == 0
    capsys.readouterr()
