"""Pare's manifest semantics checked against torchgen's SelectiveBuilder.

Every manifest Pare writes must load in `SelectiveBuilder.from_yaml_dict` and
answer is_operator_selected / is_kernel_dtype_selected exactly as Pare does;
merge must agree with combine_selective_builders.
"""

from __future__ import annotations

import functools
import itertools
import random
import re

import pytest
import yaml
from codegen_testlib import MANIFESTS, manifest_paths
from torchgen.selective_build.selector import SelectiveBuilder, combine_selective_builders  # torch's wheel

import codegen
from codegen import Manifest, Operator
from codegen.dtypes import PARE_DTYPE_NAMES


def torchgen_of(manifest: Manifest):
    return SelectiveBuilder.from_yaml_dict(yaml.safe_load(manifest.dump()))


def op_probes(manifest: Manifest, inventory) -> set[str]:
    names = set(inventory.ops) | set(manifest.operators)
    names |= {n.split(".")[0] for n in names}
    names |= {n + ".out" for n in list(names) if "." not in n}
    return names


def assert_same_answers(manifest: Manifest, sb, inventory) -> None:
    for name in sorted(op_probes(manifest, inventory)):
        assert manifest.is_operator_selected(name) == sb.is_operator_selected(name), name
    tags = set(inventory.tags) | set(manifest.kernel_metadata) | {"not_a_tag"}
    dtypes = set(PARE_DTYPE_NAMES) | {d for ds in manifest.kernel_metadata.values() for d in ds}
    for tag, dtype in itertools.product(sorted(tags), sorted(dtypes)):
        assert manifest.is_kernel_dtype_selected(tag, dtype) == sb.is_kernel_dtype_selected(tag, dtype), (
            tag,
            dtype,
        )
    assert set(manifest.custom_classes) == sb.custom_classes
    assert set(manifest.build_features) == sb.build_features
    assert manifest.include_all_operators == sb.include_all_operators
    assert manifest.include_all_non_op_selectives == sb.include_all_non_op_selectives
    for name, op in manifest.operators.items():
        theirs = sb.operators[name]
        assert (op.is_root_operator, op.is_used_for_training, op.include_all_overloads) == (
            theirs.is_root_operator,
            theirs.is_used_for_training,
            theirs.include_all_overloads,
        )
        # torchgen merges debug_info through a set, so compare as sets.
        assert (op.debug_info is None) == (theirs._debug_info is None)
        assert set(op.debug_info or ()) == set(theirs._debug_info or ())
    assert set(manifest.operators) == set(sb.operators)


def assert_selection_matches(manifest: Manifest, sb, inventory) -> None:
    sel = codegen.resolve(manifest, inventory, allow_unknown_ops=True)
    assert list(sel.operators) == [n for n in inventory.ops if sb.is_operator_selected(n)]
    for tag in inventory.tags.values():
        for dtype in tag.dtypes:
            assert sel.is_kernel_dtype_selected(tag.name, dtype) == sb.is_kernel_dtype_selected(tag.name, dtype)
    # The generated allowlist is exactly torchgen's answer over the runtime's ops.
    header = codegen.selected_ops_h(sel)
    listed = re.search(r'#define TORCH_OPERATOR_ALLOWLIST "([^"]*)"', header)
    if sb.include_all_operators:
        assert listed is None and "TORCH_OPERATOR_ALLOWLIST_ALL 1" in header
    else:
        assert listed.group(1).split(";")[:-1] == [n for n in inventory.ops if sb.is_operator_selected(n)]


@pytest.mark.parametrize("path", manifest_paths(), ids=lambda p: p.name)
def test_every_written_manifest_loads_in_torchgen_with_same_answers(path, inventory):
    m = codegen.load(path)
    sb = torchgen_of(m)
    assert_same_answers(m, sb, inventory)
    assert_selection_matches(m, sb, inventory)


@pytest.mark.parametrize(
    "name",
    ["pytorch_selected_operators.yaml", "include_all.yaml", "non_op_selectives.yaml", "pytorch_foreign.yaml"],
)
def test_inputs_torchgen_accepts_read_the_same(name, inventory):
    text = (MANIFESTS / name).read_text()
    assert_same_answers(codegen.loads(text), SelectiveBuilder.from_yaml_dict(yaml.safe_load(text)), inventory)


def test_pytorch_tracer_quirk_torchgen_rejects(inventory):
    # torchgen cannot read PyTorch's own tracer output when nothing was recorded.
    text = (MANIFESTS / "pytorch_tracer_empty.yaml").read_text()
    with pytest.raises(AssertionError, match="Expected 'kernel_metadata' to be dict"):
        SelectiveBuilder.from_yaml_dict(yaml.safe_load(text))
    fixed = yaml.safe_load(text)
    fixed["kernel_metadata"], fixed["custom_classes"] = {}, []
    assert_same_answers(codegen.loads(text), SelectiveBuilder.from_yaml_dict(fixed), inventory)


def test_legacy_list_reads_as_torchgens_legacy_allow_list(inventory):
    names = yaml.safe_load((MANIFESTS / "legacy_op_list.yaml").read_text())
    sb = SelectiveBuilder.from_legacy_op_registration_allow_list(set(names), True, False)
    assert_same_answers(codegen.load(MANIFESTS / "legacy_op_list.yaml"), sb, inventory)


def test_operators_list_reads_as_legacy_names_without_overload(inventory):
    sb = SelectiveBuilder.from_yaml_dict(
        {
            "operators": {"aten::add.Tensor": {}, "aten::gelu": {}},
            "kernel_metadata": {"add_kernel": ["Float"]},
        }
    )
    assert_same_answers(codegen.load(MANIFESTS / "operators_as_list.yaml"), sb, inventory)


# --- random manifests ---

OP_POOL = [
    "aten::add",
    "aten::add.Tensor",
    "aten::add.Scalar",
    "aten::relu",
    "aten::relu_",
    "aten::mean",
    "aten::mean.dim",
    "aten::mul",
    "aten::mul.Tensor",
    "aten::gelu",
    "pare::linear_prepacked",
    "aten::unknown",
    "aten::unknown.overload",
]
TAG_POOL = ["add_kernel", "mul_kernel", "relu_kernel", "conv_kernel", "foreign_tag"]
CLASS_POOL = ["LinearPackedParams", "Conv2dPackedParams"]


def random_manifest(rng: random.Random, source: str) -> Manifest:
    ops = [
        Operator(
            name,
            rng.random() < 0.5,
            rng.random() < 0.5,
            rng.random() < 0.5,
            tuple(rng.sample(["m1", "m2", "m3"], rng.randint(0, 2))) if rng.random() < 0.3 else None,
        )
        for name in rng.sample(OP_POOL, rng.randint(0, 6))
    ]
    kernel_metadata = {
        tag: tuple(rng.sample(PARE_DTYPE_NAMES, rng.randint(0, 3))) for tag in rng.sample(TAG_POOL, rng.randint(0, 3))
    }
    return Manifest(
        operators=ops,
        kernel_metadata=kernel_metadata,
        custom_classes=frozenset(rng.sample(CLASS_POOL, rng.randint(0, 2))),
        build_features=frozenset(rng.sample(["op_profiling", "other"], rng.randint(0, 1))),
        include_all_operators=rng.random() < 0.1,
        include_all_non_op_selectives=rng.random() < 0.15,
        debug_info=("d1",) if rng.random() < 0.3 else None,
        source=source,
    )


def canon(value):
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return sorted(canon(v) for v in value)
    return value


@pytest.mark.parametrize("seed", range(40))
def test_random_manifests_agree_with_torchgen(seed, inventory):
    m = random_manifest(random.Random(seed), "r.yaml")
    sb = torchgen_of(m)
    assert_same_answers(m, sb, inventory)
    assert_selection_matches(m, sb, inventory)
    assert codegen.loads(m.dump()).dump() == m.dump()


@pytest.mark.parametrize("seed", range(40))
def test_merge_is_combine_selective_builders(seed, inventory):
    rng = random.Random(1000 + seed)
    inputs = [random_manifest(rng, f"m{i}.yaml") for i in range(rng.randint(1, 4))]
    merged = codegen.merge(inputs).manifest
    theirs = functools.reduce(combine_selective_builders, [torchgen_of(m) for m in inputs])
    assert canon(torchgen_of(merged).to_dict()) == canon(theirs.to_dict())
    assert_same_answers(merged, theirs, inventory)
    # Deterministic, and the same selection whatever the input order.
    assert codegen.merge(inputs).manifest.dump() == merged.dump()
    shuffled = codegen.merge(list(reversed(inputs))).manifest
    assert canon(shuffled.to_dict()) == canon(merged.to_dict())


@pytest.mark.parametrize("seed", range(40))
def test_diff_is_what_a_selects_beyond_b(seed, inventory):
    rng = random.Random(2000 + seed)
    a, b = random_manifest(rng, "a.yaml"), random_manifest(rng, "b.yaml")
    sa, sb = torchgen_of(a), torchgen_of(b)
    d = codegen.diff(a, b, inventory)
    expected_ops = {n for n in inventory.ops if sa.is_operator_selected(n) and not sb.is_operator_selected(n)}
    unknown = {n for n, op in a.operators.items() if not inventory.ops_selected_by(op)}
    expected_ops |= {
        n
        for n in unknown
        if not b.is_operator_selected(n)
        or a.operators[n].selects_all_overloads
        and not (b.include_all_operators or (n in b.operators and b.operators[n].include_all_overloads))
    }
    assert set(d.operators) == expected_ops
    expected_dtypes = {
        (t.name, dt)
        for t in inventory.tags.values()
        for dt in t.dtypes
        if sa.is_kernel_dtype_selected(t.name, dt) and not sb.is_kernel_dtype_selected(t.name, dt)
    } | {(t, dt) for t, dts in a.kernel_metadata.items() for dt in dts if not sb.is_kernel_dtype_selected(t, dt)}
    assert {(t, dt) for t, dts in d.kernel_dtypes.items() for dt in dts} == expected_dtypes
    # Against the union, nothing is left over.
    assert codegen.diff(a, codegen.merge([a, b]).manifest, inventory).is_empty()
    assert codegen.diff(a, codegen.merge([a, b]).manifest).is_empty()
