"""The core ATen coverage report (tools/zoo/coverage.py, docs/coverage.md):
the doc's table is current, its facts hold against the runtime's inventory
and torch, and `python -m tools.zoo --coverage` behaves as a CLI should."""

from __future__ import annotations

import json

import pytest
import torch

import codegen
from tests.conftest import REPO_ROOT
from tools.tracer.exporter import decomposition_table
from tools.tracer.lowering import op_name
from tools.zoo import coverage
from tools.zoo.__main__ import main
from tools.zoo.kernel_sources import op_kernel_tags
from tools.zoo.zoo import ZooError


@pytest.fixture(scope="module")
def inventory() -> codegen.Inventory:
    return codegen.load_inventory()


@pytest.fixture(scope="module")
def report(inventory) -> coverage.CoverageReport:
    return coverage.build_report(inventory)


def _op(report: coverage.CoverageReport, name: str) -> coverage.OpCoverage:
    return next(o for o in report.ops if o.name == name)


def test_the_doc_table_is_current(report):
    doc = (REPO_ROOT / "docs" / "coverage.md").read_text(encoding="utf-8")
    assert f"{coverage.BEGIN}\n{coverage.markdown(report)}\n{coverage.END}" in doc, (
        "docs/coverage.md is out of date: run python -m tools.zoo --coverage"
    )


def test_nearly_every_inference_core_operator_runs(report):
    assert len(report.ops) >= 143
    assert len(report.implemented) >= 140
    assert _op(report, "add").implemented and "Float" in _op(report, "add").overloads[0].dtypes
    assert {"convolution", "addmm", "_softmax", "native_layer_norm", "view"} <= {o.name for o in report.implemented}


def test_every_verdict_agrees_with_the_inventory(report, inventory):
    decomposed = decomposition_table(inventory)
    for op in report.ops:
        for o in op.overloads:
            overload = getattr(getattr(torch.ops.aten, op.name), o.overload)
            if o.how == coverage.MISSING:
                assert o.name not in inventory.ops and overload not in decomposed, o.name
            elif o.how == coverage.KERNEL:
                assert o.name in inventory.ops, o.name
            else:
                assert o.name not in inventory.ops and overload in decomposed, o.name
    missing = {n for o in report.missing for n in o.missing_overloads} | set(report.missing_overloads)
    assert not missing & set(inventory.ops)


def test_the_opset_leaves_out_what_no_inference_graph_holds(report):
    kept = {o.name for o in report.ops}
    left_out = {e.name: e.reason for e in report.excluded}
    assert not kept & set(left_out)
    assert {"convolution_backward", "native_dropout", "rand", "empty_strided", "sym_size"} <= set(left_out)
    assert not [n for n in kept if n.endswith("_backward") or n.startswith("sym_")]
    assert "aten::sym_size.int" in left_out["sym_size"]  # the runtime has it all the same
    # Every aten schema is read, not only the packets torch has loaded.
    assert "adaptive_avg_pool1d" in kept
    # Only functional overloads: atan2.out never reaches an exported graph.
    assert [o.overload for o in _op(report, "atan2").overloads] == ["default"]


def test_what_torch_export_decomposes_runs_on_pare(report, inventory):
    """The decomposed overloads, exported as the tracer exports them: what
    they become is in the runtime."""
    decomposed = {o.name for op in report.ops for o in op.overloads if o.how == coverage.DECOMPOSITION}
    assert decomposed == {"aten::adaptive_avg_pool1d", "aten::avg_pool1d", "aten::squeeze.dim", "aten::var.dim"}, (
        "a new decomposed overload: add it to the module below"
    )

    class Decomposed(torch.nn.Module):
        def forward(self, x):
            f = torch.nn.functional
            return f.avg_pool1d(x, 2), f.adaptive_avg_pool1d(x, 3), x.squeeze(1), torch.var(x, 2)

    ep = torch.export.export(Decomposed(), (torch.randn(2, 1, 8),))
    ep = ep.run_decompositions(decomposition_table(inventory))
    emitted = {op_name(n.target) for n in ep.graph.nodes if isinstance(n.target, torch._ops.OpOverload)}
    assert emitted and emitted <= set(inventory.ops)


def test_dtypes_come_from_the_kernel_tags(inventory):
    tags = op_kernel_tags(inventory)
    assert tags["aten::add.Tensor"] == ("add_kernel",)
    assert tags["aten::mul.Scalar"] == ("mul_kernel",)  # forwards to mul.Tensor
    assert tags["aten::amax"] == ("minmax_kernel",)  # through a helper of its file
    assert tags["aten::view"] == ()  # no dtype dispatch
    assert tags["aten::clone"] == ()  # its Float-only fast path does not limit it
    assert set(tags) == set(inventory.ops)
    assert all(t in inventory.tags for ts in tags.values() for t in ts)


def test_sqrt_computes_in_floating_dtypes(report):
    (sqrt,) = _op(report, "sqrt").overloads
    assert set(sqrt.dtypes) == {"Half", "BFloat16", "Float", "Double"}
    assert _op(report, "permute").overloads[0].dtypes is None


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys, report):
    out = tmp_path / "coverage.json"
    assert main(["--coverage", "--no-record", "--json", str(out)]) == 0
    assert capsys.readouterr().out.strip() == coverage.markdown(report)
    data = json.loads(out.read_text())
    assert data["summary"]["operators"] == len(report.ops)
    assert data["summary"]["implemented"] == len(report.implemented)
    add = next(o for o in data["operators"] if o["name"] == "add")
    assert add["implemented"] and "Float" in add["overloads"][0]["dtypes"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--coverage", "--only", "resnet18"], "--only cannot be used with --coverage"),
        (["--coverage", "--frozen", "--platforms", "linux_x86_64"], "--frozen, --platforms cannot be used"),
        (["--coverage", "--tables"], "unrecognized arguments: --tables"),
    ],
)
def test_cli_usage_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_doc_without_markers_is_an_error(tmp_path, report):
    doc = tmp_path / "coverage.md"
    doc.write_text("# no table\n")
    with pytest.raises(ZooError, match="markers .* are missing"):
        coverage.update_doc(doc, report)
    doc.write_text(f"head\n{coverage.BEGIN}\nold\n{coverage.END}\ntail\n")
    coverage.update_doc(doc, report)
    assert doc.read_text() == f"head\n{coverage.BEGIN}\n{coverage.markdown(report)}\n{coverage.END}\ntail\n"
