"""Delegation in the tracer (docs/delegates.md): the partitioner splits a
model into backend and CPU parts without cycles and reports what went
where, the delegated program matches torch on the runtime, `trace` selects
the backend in a manifest torchgen still loads (and, with
--delegate-fallback, the delegated operators' CPU kernels too), and the
CLI refuses an unknown backend or compile spec with one line."""

from __future__ import annotations

import pytest
import torch
import yaml
from torchgen.selective_build.selector import SelectiveBuilder  # torch's wheel
from tracer_testlib import MODELS, spec_from, spec_of

import codegen
from codegen.generate import DELEGATE_INIT_PREFIX as CODEGEN_DELEGATE_INIT_PREFIX
from pare import delegates
from pare.program import DELEGATE_INIT_PREFIX, read
from pare.runtime import PareError, Runtime
from tools.tracer import cli, delegation
from tools.tracer.exporter import export_group, export_model, group_inputs
from tools.tracer.tracing import check_model_report, eager_outputs, trace_model

MODEL = MODELS / "delegated_elementwise.py"
EXAMPLE = delegation.DelegateOptions(("example",))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_partitions_leave_the_cpu_operators_between_them():
    exported = export_model(spec_of("delegated_elementwise"), delegates=EXAMPLE)
    report = exported.delegation
    assert report.partitions == {"example": 3}
    assert report.delegated == {"example": {"aten::mul.Tensor": 2, "aten::add.Tensor": 3, "aten::relu": 2}}
    assert report.cpu == {"aten::mul.Tensor": 1, "aten::sigmoid": 1, "aten::tanh": 1}
    assert report.describe() == (
        "example: 7 ops in 3 partitions (aten::add.Tensor 3, aten::mul.Tensor 2, aten::relu 2); CPU: 3 ops"
    )
    (method,) = read(exported.program).methods
    ops = [i.op for i in method.instructions]
    # The partitions are built at method creation; at run time the CPU's
    # operators sit between the delegate calls.
    assert ops[:3] == ["pare::delegate_init.example"] * 3
    call = "pare::delegate_call"
    assert ops[3:] == [call, "aten::mul.Tensor", call, "aten::sigmoid", call, "aten::tanh"]


def test_partitions_are_convex_and_the_graph_stays_topological():
    spec = spec_of("delegated_elementwise")
    (group,) = group_inputs(spec)
    ep = export_group(spec, group)
    report = delegation.DelegationReport()
    delegation.partition(ep, EXAMPLE.resolve(), report)
    seen = set()
    for node in ep.graph.nodes:
        assert all(i in seen for i in node.all_input_nodes), node
        seen.add(node)
    calls = [n for n in ep.graph.nodes if n.target is delegation.delegate_call]
    # x, y; the CPU's mul and x; the CPU's sigmoid and the first partition's a.
    first, second, third = calls
    assert [a.op for a in first.args] == ["placeholder", "placeholder"]
    assert [a.target.__name__ for a in second.args[:1]] == ["mul.Tensor"] and second.args[1] is first.args[0]
    assert third.args[0].target.__name__ == "sigmoid.default" and third.args[1].args[0] is first


class _ReluOnly(delegates.Backend):
    name = "relu_only"
    spec_keys = frozenset({"precision"})

    def supports(self, node) -> bool:
        return node.target.__name__.startswith("relu")

    def preprocess(self, subgraph, compile_specs) -> bytes:
        return compile_specs.get("precision", "").encode()


def test_backends_take_what_they_support_in_the_order_given(monkeypatch):
    monkeypatch.setitem(delegates._REGISTRY, "relu_only", _ReluOnly())
    spec = spec_of("delegated_elementwise")
    (group,) = group_inputs(spec)
    for order, relus in ((("example", "relu_only"), {}), (("relu_only", "example"), {"aten::relu": 2})):
        ep = export_group(spec, group)
        report = delegation.DelegationReport()
        options = delegation.DelegateOptions(order, (("precision", "fp16"),))
        delegation.partition(ep, options.resolve(), report)
        assert dict(report.delegated.get("relu_only", {})) == relus
        parts = [n.meta[delegation.META_KEY] for n in ep.graph.nodes if n.target is delegation.delegate_call]
        assert {p.specs for p in parts if p.backend == "relu_only"} <= {(("precision", "fp16"),)}
        assert {p.blob for p in parts if p.backend == "relu_only"} <= {b"fp16"}
    # relu_only first: the two relus go to it, which splits example's parts around them.
    assert report.partitions == {"relu_only": 2, "example": 3}


def test_the_delegated_program_matches_torch(full_lib):
    checks, report = check_model_report(spec_of("delegated_elementwise"), full_lib, delegates=EXAMPLE)
    assert all(c.ok for c in checks) and len(checks) == 2
    assert report.delegated_ops("example") == 7


def test_check_reports_the_delegated_operator_count(capsys, full_lib):
    code, out, err = run_cli(capsys, "-q", "check", str(MODEL), "--runtime", str(full_lib), "--delegate", "example")
    assert code == 0, err
    assert "check passed: 2 inputs, 4 outputs match torch eager" in out
    assert "delegated: example: 7 ops in 3 partitions" in out and "CPU: 3 ops" in out


def test_trace_selects_the_backend_in_a_manifest_torchgen_loads(tracing_lib):
    result = trace_model(spec_of("delegated_elementwise"), runtime=tracing_lib, delegates=EXAMPLE)
    manifest = result.manifest
    assert set(manifest.operators) == {
        "pare::delegate_init.example",
        "pare::delegate_call",
        "aten::mul.Tensor",
        "aten::sigmoid",
        "aten::tanh",
    }
    assert manifest.custom_classes == {"Delegate"}
    builder = SelectiveBuilder.from_yaml_dict(yaml.safe_load(manifest.dump()))
    assert builder.is_operator_selected("pare::delegate_init.example")
    assert not builder.is_operator_selected("aten::relu") and not builder.is_operator_selected("aten::add.Tensor")
    assert "Delegate" in builder.custom_classes
    assert '"delegates": {"delegated_ops": {"example": {' in manifest.debug_info[0]
    assert codegen.loads(manifest.dump()).operators.keys() == manifest.operators.keys()


def test_delegate_fallback_also_selects_the_cpu_kernels(tracing_lib):
    options = delegation.DelegateOptions(("example",), fallback=True)
    manifest = trace_model(spec_of("delegated_elementwise"), runtime=tracing_lib, delegates=options).manifest
    assert {"aten::add.Tensor", "aten::relu", "pare::delegate_init.example"} <= set(manifest.operators)
    assert {"add_kernel", "relu_kernel"} <= set(manifest.kernel_metadata)
    assert '"fallback": true' in manifest.debug_info[0]
    builder = SelectiveBuilder.from_yaml_dict(yaml.safe_load(manifest.dump()))
    assert builder.is_operator_selected("aten::relu") and builder.is_operator_selected("pare::delegate_call")


def test_a_device_without_the_backend_runs_the_cpu_fallback(full_lib, monkeypatch):
    spec = spec_of("delegated_elementwise")
    options = delegation.DelegateOptions(("example",), fallback=True)
    exported = export_model(spec, delegates=options)
    methods = {m.name: m for m in read(exported.program).methods}
    assert set(methods) == {"forward", "forward__cpu"}
    assert not any(i.op.startswith("pare::delegate") for i in methods["forward__cpu"].instructions)
    plain = export_model(spec, delegates=EXAMPLE).program
    runtime = Runtime(full_lib)
    monkeypatch.setenv("PARE_EXAMPLE_BACKEND", "unavailable")
    with pytest.raises(PareError) as e:
        runtime.load(plain).method("forward")
    assert e.value.status_name == "BackendUnavailable"
    method = runtime.load(exported.program).method("forward")  # forward__cpu, created in its place
    for index in range(len(spec.inputs)):
        actual = method.run(*(t.numpy() for t in spec.inputs[index]))
        for got, want in zip(actual, eager_outputs(spec, index)):
            torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-6, atol=1e-6)


def test_an_unknown_backend_or_spec_is_one_line(capsys, tmp_path):
    out = str(tmp_path / "m.pare")
    code, _, err = run_cli(capsys, "export", str(MODEL), "-o", out, "--delegate", "vulkan_nope")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --delegate vulkan_nope: no backend of that name; the backends are example, vulkan (pare/delegates.py; "
        "a new one is registered with pare.delegates.register)"
    ]
    code, _, err = run_cli(capsys, "export", str(MODEL), "-o", out, "--delegate", "example", "--delegate-spec", "x=1")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --delegate-spec x: backend example takes no compile spec of that name (its specs: none)"
    ]
    code, _, err = run_cli(capsys, "export", str(MODEL), "-o", out, "--delegate-spec", "novalue")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "KEY=VALUE" in err
    code, _, err = run_cli(capsys, "export", str(MODEL), "-o", out, "--delegate-fallback")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --delegate-fallback: give --delegate NAME too (nothing to fall back from)"
    ]
    assert not (tmp_path / "m.pare").exists()


def test_export_prints_what_went_where(capsys, tmp_path):
    code, out, err = run_cli(
        capsys, "-q", "export", str(MODEL), "-o", str(tmp_path / "m.pare"), "--delegate", "example"
    )
    assert code == 0, err
    assert "; delegated: example: 7 ops in 3 partitions" in out


def test_codegen_knows_the_delegate_operators_as_the_sdk_writes_them():
    assert CODEGEN_DELEGATE_INIT_PREFIX == DELEGATE_INIT_PREFIX


class _ReadsALaterPartition(torch.nn.Module):
    def forward(self, x):
        a = torch.relu(x)  # partition 1, with a + 1 below
        c = torch.sigmoid(a) * a  # sigmoid on the CPU; the mul is partition 2, reading a
        return c, a + 1.0


def test_a_partition_may_read_one_that_ends_after_it(full_lib):
    """Partition 2 (the mul) ends before partition 1 (relu, add) does in the
    graph, yet reads partition 1's relu: its call goes after partition 1's."""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(5))
    module = _ReadsALaterPartition()
    exported = export_model(spec_from(module, [(x,)]), delegates=EXAMPLE)
    assert exported.delegation.partitions == {"example": 2}
    c, d = Runtime(full_lib).load(exported.program).method().run(x.numpy())
    a = torch.relu(x.double())
    torch.testing.assert_close(torch.from_numpy(c).double(), torch.sigmoid(a) * a, rtol=0, atol=2 * 2.0**-24)
    torch.testing.assert_close(torch.from_numpy(d), torch.relu(x) + 1.0, rtol=0, atol=0)
