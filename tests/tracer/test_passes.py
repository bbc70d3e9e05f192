"""Graph passes (tools/tracer/passes/): batch-norm folding checked against
torch eager on awkward shapes (on the runtime and through the rewritten
ExportedProgram), the cases that must not fold, pass selection, what the
manifest records, and the --passes / --skip-passes flags."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from tracer_testlib import REPO, counts_of, spec_from

from pare import program as pp
from tools.tracer import TracerError, check_model, cli, export_model, trace_model
from tools.tracer import passes as graph_passes

BATCH_NORM = "aten::_native_batch_norm_legit_no_training"
FUSED_IN_DEMO = 2  # apps/demo: the relus after its stem and its pointwise convolution
DEMO = REPO / "apps" / "demo" / "model.py"


def trained(module: nn.Module, seed: int = 0) -> nn.Module:
    """`module` in eval mode with non-trivial batch-norm statistics and
    affine parameters, as a trained model has (fresh ones are 0/1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                    m.bias.copy_(torch.rand(m.num_features, generator=g) * 0.4 - 0.2)
    return module.eval()


def ops_of(program: bytes) -> list[str]:
    return [ins.op for m in pp.read(program).methods for ins in m.instructions]


# The folding passes alone: programs without prepack_weights' rewrite, so the
# ops they call can be compared with the unfolded program's.
FOLDS = "fold_conv_bn,fold_linear_bn"


def folded(exported) -> dict[str, int]:
    return {run.name: dict(run.changes)["folded"] for run in exported.passes if run.name.startswith("fold_")}


class Twice(nn.Module):
    """One conv module called twice (a shared weight); only the first call
    is followed by a batch norm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(self.conv(x)), self.conv(x)


class SharedChain(nn.Module):
    """One conv module (one weight) followed by a different batch norm each call."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1, self.bn2 = nn.BatchNorm2d(4), nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn2(self.conv(torch.relu(self.bn1(self.conv(x)))))


def seq(*layers):
    return nn.Sequential(*layers)


# name -> (module factory, inputs, folds by fold_conv_bn and fold_linear_bn)
FOLDING_CASES = {
    "odd_channels_stride2_no_bias_7x7_batch3": (
        lambda: seq(nn.Conv2d(3, 5, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(5), nn.ReLU()),
        [torch.rand(3, 3, 7, 7)],
        (1, 0),
    ),
    "grouped_5x5_padding2_on_1x1": (
        lambda: seq(nn.Conv2d(6, 9, 5, padding=2, groups=3), nn.BatchNorm2d(9)),
        [torch.rand(2, 6, 1, 1)],
        (1, 0),
    ),
    "depthwise_stride2_dilated": (
        lambda: seq(nn.Conv2d(7, 7, 3, stride=2, padding=2, dilation=2, groups=7, bias=False), nn.BatchNorm2d(7)),
        [torch.rand(2, 7, 7, 7)],
        (1, 0),
    ),
    "pointwise_1x1_on_1x1_affine_false": (
        lambda: seq(nn.Conv2d(5, 3, 1), nn.BatchNorm2d(3, affine=False)),
        [torch.rand(4, 5, 1, 1)],
        (1, 0),
    ),
    "conv1d_stride2": (
        lambda: seq(nn.Conv1d(5, 3, 3, stride=2, padding=1), nn.BatchNorm1d(3)),
        [torch.rand(2, 5, 9)],
        (1, 0),
    ),
    "conv3d": (
        lambda: seq(nn.Conv3d(2, 3, 3, padding=1, bias=False), nn.BatchNorm3d(3)),
        [torch.rand(2, 2, 3, 4, 5)],
        (1, 0),
    ),
    "transposed_grouped_stride2": (
        lambda: seq(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), nn.BatchNorm2d(6)),
        [torch.rand(2, 4, 5, 5)],
        (1, 0),
    ),
    "chain_with_dynamic_batch": (
        lambda: seq(
            nn.Conv2d(3, 8, 3, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.Hardswish(),
            nn.Conv2d(8, 8, 3, padding=1, groups=8),
            nn.BatchNorm2d(8),
            nn.ReLU(),
        ),
        [torch.rand(1, 3, 9, 9), torch.rand(3, 3, 9, 9)],
        (2, 0),
    ),
    "shared_weight_two_batch_norms": (SharedChain, [torch.rand(2, 4, 6, 6)], (2, 0)),
    "float64": (
        lambda: seq(nn.Conv2d(3, 5, 3, stride=2), nn.BatchNorm2d(5)).double(),
        [torch.rand(2, 3, 7, 7).double()],
        (1, 0),
    ),
    "linear_batch3": (lambda: seq(nn.Linear(7, 5), nn.BatchNorm1d(5), nn.ReLU()), [torch.rand(3, 7)], (0, 1)),
    "linear_no_bias_affine_false": (
        lambda: seq(nn.Linear(6, 9, bias=False), nn.BatchNorm1d(9, affine=False)),
        [torch.rand(4, 6)],
        (0, 1),
    ),
}


@pytest.mark.parametrize("case", sorted(FOLDING_CASES))
def test_folded_model_matches_torch_and_runs_no_batch_norm(case, full_lib):
    factory, inputs, expected = FOLDING_CASES[case]
    torch.manual_seed(0)
    module = trained(factory())
    before = {k: v.clone() for k, v in module.state_dict().items()}
    spec = spec_from(module, [(x,) for x in inputs])
    exported = export_model(spec)
    assert folded(exported) == dict(zip(graph_passes.names(), expected))
    assert BATCH_NORM not in ops_of(exported.program)
    # On the runtime, against torch eager, at the float32 (or float64) tolerance.
    checks = check_model(spec, full_lib, program=exported.program)
    assert all(c.ok for c in checks)
    # The rewritten ExportedProgram is still a valid one that computes the model.
    ep = exported.exported[0]
    ep.validate()
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(inputs[-1]), module(inputs[-1]), rtol=1e-5, atol=1e-5)
    # The module's own parameters and buffers are untouched.
    after = module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_the_weight_a_conv_without_batch_norm_reads_is_kept(full_lib):
    torch.manual_seed(0)
    spec = spec_from(trained(Twice()), [(torch.rand(2, 3, 5, 5),)])
    exported = export_model(spec, passes=FOLDS)
    assert folded(exported)["fold_conv_bn"] == 1
    (m,) = pp.read(exported.program).methods
    assert [ins.op for ins in m.instructions] == ["aten::convolution", "aten::convolution"]
    weights = [v for v in m.values if v.kind == pp.TENSOR and v.constant and v.sizes == [3, 3, 3, 3]]
    assert len(weights) == 2  # the folded copy, and the original the second conv reads
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))


def test_folded_layers_are_prepacked_with_their_folded_weights(full_lib):
    torch.manual_seed(0)
    module = trained(
        seq(
            nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(6),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(6 * 16, 5, bias=False),
            nn.BatchNorm1d(5),
        )
    )
    spec = spec_from(module, [(torch.rand(1, 3, 8, 8),), (torch.rand(3, 3, 8, 8),)])
    exported = export_model(spec)
    assert folded(exported) == {"fold_conv_bn": 1, "fold_linear_bn": 1}
    # The relu is fused into the prepacked convolution (fuse_clamp).
    assert ops_of(exported.program) == [
        "pare::conv2d_prepack",
        "pare::linear_prepack",
        "aten::sym_size.int",
        "pare::conv2d_prepacked",
        "aten::view",
        "pare::linear_prepacked",
    ]
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))


class SecondUser(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y  # the residual needs y unnormalised


class StatsAsInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x, mean, var):
        return nn.functional.batch_norm(self.conv(x), mean, var, training=False)


class AfterAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(self.conv(x) + x)


class LinearOn3d(nn.Module):
    """Linear over [batch, time, features] then batch norm over time: the
    batch norm's channels are not the linear's outputs."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(5)

    def forward(self, x):
        return self.bn(self.linear(x))


@pytest.mark.parametrize(
    "module,inputs",
    [
        (SecondUser, (torch.rand(2, 3, 6, 6),)),
        (StatsAsInputs, (torch.rand(2, 3, 6, 6), torch.rand(4), torch.rand(4) + 0.5)),
        (AfterAdd, (torch.rand(2, 3, 4, 4),)),
        (LinearOn3d, (torch.rand(2, 5, 4),)),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_batch_norms_that_cannot_fold_are_left_alone(module, inputs, full_lib):
    torch.manual_seed(0)
    spec = spec_from(trained(module()), [inputs])
    exported = export_model(spec)
    assert set(folded(exported).values()) == {0}
    assert BATCH_NORM in ops_of(exported.program)
    assert export_model(spec, passes=FOLDS).program == export_model(spec, passes="none").program  # untouched
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))


def test_passes_none_keeps_the_batch_norm():
    torch.manual_seed(0)
    spec = spec_from(trained(seq(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))), [(torch.rand(1, 3, 5, 5),)])
    exported = export_model(spec, passes="none")
    assert exported.passes == ()
    assert ops_of(exported.program) == ["aten::convolution", BATCH_NORM]
    # Selecting only the other pass, or blocking this one, leaves it too.
    for passes in ("fold_linear_bn", graph_passes.resolve("default", skip="fold_conv_bn")):
        exported = export_model(spec, passes=passes)
        assert [run.name for run in exported.passes][:1] == ["fold_linear_bn"]
        assert BATCH_NORM in ops_of(exported.program)


def test_selection_resolves_to_the_canonical_order():
    assert graph_passes.names() == (
        "fold_conv_bn",
        "fold_linear_bn",
        "quantize",
        "prepack_weights",
        "fuse_attention",
        "fuse_norms",
        "winograd",
        "fuse_add",
        "fuse_clamp",
        "fuse_activation",
        "channels_last",
    )
    assert graph_passes.resolve() == graph_passes.resolve("default") == graph_passes.names()
    assert graph_passes.resolve("none") == ()
    assert (
        graph_passes.resolve(
            "channels_last,fuse_clamp,prepack_weights,fold_linear_bn, fold_conv_bn,fuse_activation,winograd,fuse_add,"
            "quantize,fuse_norms,fuse_attention"
        )
        == graph_passes.names()
    )
    assert graph_passes.resolve(["fold_linear_bn"]) == ("fold_linear_bn",)
    assert graph_passes.resolve("default", skip="fold_linear_bn,fuse_add") == (
        "fold_conv_bn",
        "quantize",
        "prepack_weights",
        "fuse_attention",
        "fuse_norms",
        "winograd",
        "fuse_clamp",
        "fuse_activation",
        "channels_last",
    )
    assert graph_passes.resolve("none", skip=["fold_conv_bn"]) == ()


@pytest.mark.parametrize(
    "passes,skip,message",
    [
        (
            "fold_bn",
            (),
            "--passes: unknown pass 'fold_bn'; the passes are fold_conv_bn, fold_linear_bn, quantize, "
            "prepack_weights, fuse_attention, fuse_norms, winograd, fuse_add, fuse_clamp, fuse_activation, channels_last",
        ),
        ("fold_conv_bn,,fold_linear_bn", (), "empty pass name"),
        ("default,fold_conv_bn", (), "unknown pass 'default'"),
        ("default", "none", "--skip-passes: unknown pass 'none'"),
    ],
)
def test_unknown_pass_names_are_user_errors(passes, skip, message):
    with pytest.raises(TracerError, match=message) as e:
        graph_passes.resolve(passes, skip)
    assert "\n" not in str(e.value)


def test_the_docs_describe_every_pass():
    doc = (REPO / "docs" / "tracer.md").read_text()
    section = doc[doc.index("## Graph passes") : doc.index("\n## ", doc.index("## Graph passes") + 1)]
    for name in graph_passes.names():
        assert f"| `{name}` |" in section, name


def test_nothing_to_fold_gives_the_same_program():
    torch.manual_seed(0)
    spec = spec_from(seq(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(36, 2)), [(torch.rand(2, 3, 5, 5),)])
    assert export_model(spec, passes=FOLDS).program == export_model(spec, passes="none").program


@pytest.fixture(scope="module")
def demo_traces(tracing_lib):
    from tools.tracer import load_model_spec

    spec = load_model_spec(DEMO)
    return {
        passes: trace_model(spec, runtime=tracing_lib, passes=passes).manifest for passes in ("default", FOLDS, "none")
    }


def test_manifest_of_a_folded_model_selects_no_batch_norm(demo_traces):
    default, folds, none = demo_traces["default"], demo_traces[FOLDS], demo_traces["none"]
    assert BATCH_NORM not in folds.operators and "batch_norm_kernel" not in folds.kernel_metadata
    assert BATCH_NORM in none.operators and none.kernel_metadata["batch_norm_kernel"] == ("Float",)
    assert set(none.operators) - set(folds.operators) == {BATCH_NORM}
    # With prepack_weights too, the layers run on the packed-weight classes:
    # no convolution or addmm kernel, no batch norm.
    assert BATCH_NORM not in default.operators
    assert not {"aten::convolution", "aten::addmm"} & set(default.operators)
    assert default.custom_classes == {"Conv2dPackedParams", "LinearPackedParams"}


def test_manifest_debug_info_records_the_passes(demo_traces):
    (info,) = demo_traces["default"].debug_info
    assert json.loads(info)["passes"] == [
        {"name": "fold_conv_bn", "folded": 2},
        {"name": "fold_linear_bn", "folded": 0},
        # the demo is a float model
        {
            "name": "quantize",
            "conv2d": 0,
            "linear": 0,
            **dict.fromkeys(("add", "mul", "mean", "pool", "cat", "view", "lut"), 0),
        },
        {"name": "prepack_weights", "conv2d": 3, "linear": 2},
        {"name": "fuse_attention", "fused": 0, "causal": 0},  # the demo has no attention
        {"name": "fuse_norms", "rms_norm": 0, "rope": 0},  # nor RMSNorm or rotary embeddings
        {"name": "winograd", "F(2x2,3x3)": 0, "F(4x4,3x3)": 0},  # the demo has no 3x3 stride-1 dense convolution
        {"name": "fuse_add", "fused": 0},
        {"name": "fuse_clamp", "fused": FUSED_IN_DEMO},
        {"name": "fuse_activation", "fused": 2},  # hardswish, gelu
        {"name": "channels_last", "layers": 0, "conversions": 0},  # the demo's planes are large
    ]
    (info,) = demo_traces["none"].debug_info
    assert json.loads(info)["passes"] == []


# -- the flags ------------------------------------------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["-q", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_export_flags(capsys, tmp_path):
    code, out, err = run_cli(capsys, "export", str(DEMO), "-o", str(tmp_path / "default.pare"))
    assert code == 0, err
    assert (
        "passes fold_conv_bn (2 folded), fold_linear_bn (0 folded), quantize (0 conv2d, 0 linear, 0 add, 0 mul, 0 mean, 0 pool, 0 cat, 0 view, 0 lut), "
        "prepack_weights (3 conv2d, 2 linear), fuse_attention (0 fused, 0 causal), fuse_norms (0 rms_norm, 0 rope), "
        f"winograd (0 F(2x2,3x3), 0 F(4x4,3x3)), fuse_add (0 fused), fuse_clamp ({FUSED_IN_DEMO} fused), fuse_activation (2 fused), "
        "channels_last (0 layers, 0 conversions)"
    ) in out
    code, out, err = run_cli(capsys, "export", str(DEMO), "-o", str(tmp_path / "none.pare"), "--passes=none")
    assert code == 0 and "no graph passes" in out, err
    code, out, err = run_cli(
        capsys,
        "export",
        str(DEMO),
        "-o",
        str(tmp_path / "skip.pare"),
        "--skip-passes",
        "fold_conv_bn,prepack_weights,fuse_add,fuse_clamp,fuse_activation",
    )
    assert code == 0 and "passes fold_linear_bn (0 folded)" in out, err
    assert BATCH_NORM not in ops_of((tmp_path / "default.pare").read_bytes())
    assert ops_of((tmp_path / "none.pare").read_bytes()).count(BATCH_NORM) == 2
    assert (tmp_path / "skip.pare").read_bytes() == (tmp_path / "none.pare").read_bytes()


def test_trace_and_check_flags(capsys, tmp_path, tracing_lib, full_lib):
    out_file = tmp_path / "manifest.yaml"
    code, out, err = run_cli(
        capsys, "trace", str(DEMO), "-o", str(out_file), "--runtime", str(tracing_lib), "--passes", "fold_linear_bn"
    )
    assert code == 0, err
    assert "passes fold_linear_bn (0 folded)" in out
    assert '"passes": [{"folded": 0, "name": "fold_linear_bn"}]' in out_file.read_text()
    assert BATCH_NORM in out_file.read_text()
    for passes in ("default", "none"):
        code, out, err = run_cli(capsys, "check", str(DEMO), "--runtime", str(full_lib), "--passes", passes)
        assert code == 0 and out.startswith("check passed: 2 inputs"), err


@pytest.mark.parametrize("command", ["export", "trace", "check"])
@pytest.mark.parametrize(
    "flag,value,message",
    [
        (
            "--passes",
            "fold_everything",
            (
                "argument --passes: unknown pass 'fold_everything'; the passes are "
                "fold_conv_bn, fold_linear_bn, quantize, prepack_weights, fuse_attention, fuse_norms, winograd, fuse_add, "
                "fuse_clamp, fuse_activation, channels_last (or default or none alone)"
            ),
        ),
        (
            "--skip-passes",
            "default",
            (
                "argument --skip-passes: unknown pass 'default'; the passes are fold_conv_bn, "
                "fold_linear_bn, quantize, prepack_weights, fuse_attention, fuse_norms, winograd, fuse_add, fuse_clamp, "
                "fuse_activation, channels_last"
            ),
        ),
    ],
)
def test_unknown_pass_flag_is_one_line_exit_2(capsys, tmp_path, command, flag, value, message):
    extra = {"export": ["-o", str(tmp_path / "x.pare")], "check": ["--runtime", str(tmp_path / "lib.so")]}
    code, out, err = run_cli(capsys, command, str(DEMO), *extra.get(command, []), flag, value)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {message}") and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.pare").exists()


def test_bench_takes_the_same_flags(capsys, full_lib):
    from tools.bench.__main__ import main as bench_main
    from tools.bench.models import bench_model, load_runtime

    assert bench_main([str(DEMO), "--passes", "fold_everything"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --passes: unknown pass 'fold_everything'") and len(err.splitlines()) == 1
    threads = torch.get_num_threads()
    try:
        result = bench_model(DEMO, load_runtime(full_lib), full_lib, rounds=1, threads=1, passes="none")
    finally:
        torch.set_num_threads(threads)
    assert result.passes == () and json.loads(json.dumps(result.to_json()))["passes"] == []


# -- fuse_clamp -------------------------------------------------------------------


class ClampAfterEach(nn.Module):
    """Every clamp form fuse_clamp takes, and two it must leave alone."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.dw = nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6)
        self.conv2 = nn.Conv2d(6, 5, 1)
        self.fc = nn.Linear(5 * 4 * 4, 7)
        self.fc2 = nn.Linear(7, 3)

    def forward(self, x):
        x = torch.relu(self.conv(x))  # relu: [0, inf]
        x = nn.functional.relu6(self.dw(x))  # hardtanh(0, 6)
        y = self.conv2(x)
        z = torch.clamp(y, min=-0.25)  # clamp, min only
        h = nn.functional.hardtanh(self.fc(z.flatten(1)), -0.5, 0.5)
        out = self.fc2(h)
        return torch.relu(out), out  # a second user: not fused


def test_fuse_clamp_folds_relu_hardtanh_and_clamp_into_the_prepacked_layer(full_lib):
    torch.manual_seed(0)
    spec = spec_from(ClampAfterEach(), [(torch.randn(1, 3, 8, 8),), (torch.randn(2, 3, 8, 8),)])
    exported = export_model(spec)
    ops = ops_of(exported.program)
    assert "aten::hardtanh" not in ops and "aten::clamp" not in ops
    assert ops.count("aten::relu") == 1  # only the one after fc2, whose output is also returned
    assert counts_of(exported)["fuse_clamp"] == {"fused": 4}
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))
    unfused = export_model(spec, passes=graph_passes.resolve("default", skip="fuse_clamp"))
    assert ops_of(unfused.program).count("aten::relu") == 2 and "aten::hardtanh" in ops_of(unfused.program)


# -- fuse_add, fuse_activation ---------------------------------------------------


class EpilogueAfterEach(nn.Module):
    """Every epilogue fuse_add and fuse_activation take, with the clamp after
    a fused add, and the cases they must leave alone."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.se = nn.Conv2d(8, 8, 1)
        self.late = nn.Conv2d(8, 8, 1)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 16)
        self.fc4 = nn.Linear(16, 5)

    def forward(self, x):
        x = nn.functional.hardswish(self.stem(x))  # conv -> hardswish
        x = torch.relu(self.dw(x) + x)  # ResNet: relu(conv + shortcut)
        x = x + self.pw(x)  # MobileNetV2: shortcut + conv, no activation
        s = torch.sigmoid(self.se(x.mean((2, 3), keepdim=True)))  # squeeze-and-excitation gate
        x = x * s
        y = self.late(x)
        z = x * 2.0  # computed after `late`: not its residual
        x = y + z
        x = x + torch.ones(8, 1, 1)  # a broadcast add: not a residual
        h = nn.functional.silu(self.fc1(x.mean((2, 3))))
        h = nn.functional.gelu(self.fc2(h), approximate="tanh")
        o = self.fc4(nn.functional.gelu(self.fc3(h)))
        return nn.functional.hardsigmoid(o), o  # o returned too: its hardsigmoid stays an op


def test_fuse_add_and_activation_into_the_prepacked_layer(full_lib):
    torch.manual_seed(0)
    spec = spec_from(EpilogueAfterEach(), [(torch.randn(1, 3, 6, 6),), (torch.randn(2, 3, 6, 6),)])
    exported = export_model(spec)
    counts = counts_of(exported)
    assert counts["fuse_add"] == {"fused": 2} and counts["fuse_clamp"] == {"fused": 1}
    assert counts["fuse_activation"] == {"fused": 5}  # hardswish, sigmoid, silu, gelu (tanh), gelu
    ops = ops_of(exported.program)
    assert not {"aten::hardswish", "aten::sigmoid", "aten::silu", "aten::gelu", "aten::relu"} & set(ops)
    assert ops.count("aten::hardsigmoid") == 1
    assert ops.count("aten::add.Tensor") == 2  # the late add (z comes after the conv) and the broadcast one
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))
    unfused = export_model(spec, passes=graph_passes.resolve("default", skip="fuse_add,fuse_activation"))
    assert ops_of(unfused.program).count("aten::add.Tensor") == 4 and "aten::hardswish" in ops_of(unfused.program)
    assert all(c.ok for c in check_model(spec, full_lib, program=unfused.program))


def test_prepacked_ops_take_output_min_and_max_together(full_lib):
    from pare.program import ProgramBuilder
    from pare.runtime import PareError, Runtime

    pb = ProgramBuilder()
    m = pb.method()
    packed = m.linear_prepack(torch.ones(2, 3).numpy(), None)
    m.output(m.op("pare::linear_prepacked", m.input("Float", [1, 3]), packed, 0.0))
    method = Runtime(full_lib).load(pb.to_bytes()).method()
    with pytest.raises(PareError, match="takes output_min and output_max together, got only one"):
        method.run(torch.ones(1, 3).numpy())


# -- linear layers on 3-d inputs -------------------------------------------------


class Projections(nn.Module):
    """Linear layers as attention and a transformer's feed-forward block
    decompose them: on a transposed 3-d input (bmm on the weight expanded
    over the batch, the bias added after), and on a contiguous 3-d input
    (flattened for addmm, its output viewed back), then a relu."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 20)
        self.ff = nn.Linear(20, 7)
        self.attn = nn.MultiheadAttention(12, 3, batch_first=True)

    def forward(self, x):  # [batch, seq, 12]
        h = self.proj(x.transpose(0, 1))  # [seq, batch, 20]
        a, _ = self.attn(x, x, x, need_weights=False)
        return torch.relu(self.ff(h)), a


def test_linear_layers_on_3d_inputs_are_prepacked_with_bias_and_epilogue(full_lib):
    torch.manual_seed(0)
    spec = spec_from(Projections(), [(torch.randn(2, 5, 12),), (torch.randn(3, 4, 12),)])
    unpacked = ops_of(export_model(spec, passes="none").program)
    assert unpacked.count("aten::bmm") == 4 and unpacked.count("aten::relu") == 1  # two projections, q k^T, a v
    exported = export_model(spec)
    ops = ops_of(exported.program)
    # Each projection is one prepacked layer with its bias; only attention's
    # products of activations stay bmm, and the relu runs inside ff.
    assert counts_of(exported)["prepack_weights"] == {"conv2d": 0, "linear": 4}
    assert ops.count("aten::bmm") == 2 and "aten::relu" not in ops and "aten::add.Tensor" not in ops
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))


class NotLinear(nn.Module):
    """Look-alikes the linear rewrites must leave alone: a bmm whose expand
    stretches a size-1 dim of the matrix (not one weight repeated), a view
    back that reorders the leading sizes, a bias added with alpha 2, and a
    0-d input flattened to [1, 1]."""

    def __init__(self):
        super().__init__()
        self.register_buffer("column", torch.randn(6, 1))
        self.a = nn.Linear(6, 4)
        self.b = nn.Linear(6, 4, bias=False)
        self.register_buffer("bias", torch.randn(4))
        self.c = nn.Linear(1, 1)

    def forward(self, x, s):  # x: [2, 3, 6], s: []
        stretched = torch.bmm(x, self.column.expand(2, 6, 5))  # [2, 3, 5]
        reordered = self.a(x.reshape(6, 6)).reshape(3, 2, 4)
        scaled = torch.add(self.b(x), self.bias, alpha=2.0)
        return stretched, reordered, scaled, self.c(s.reshape(1, 1)).reshape(())


def test_look_alikes_of_linear_layers_keep_their_meaning(full_lib):
    torch.manual_seed(0)
    spec = spec_from(NotLinear(), [(torch.randn(2, 3, 6), torch.tensor(0.5))])
    exported = export_model(spec)
    ops = ops_of(exported.program)
    assert ops.count("aten::bmm") == 1 and ops.count("aten::add.Tensor") == 1
    assert counts_of(exported)["prepack_weights"] == {"conv2d": 0, "linear": 3}
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))


class WinogradCandidates(nn.Module):
    """Three 3x3 convolutions: one the winograd pass transforms (16 -> 24
    channels, stride 1, 8x8 output: 16 tiles), one with too few input
    channels (3) and one with stride 2, plus a relu the transformed layer
    fuses."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.wino = nn.Conv2d(16, 24, 3, padding=1)
        self.down = nn.Conv2d(24, 24, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.wino(self.stem(x))))


def test_winograd_transforms_the_3x3_layers_where_it_pays(full_lib, tracing_lib):
    torch.manual_seed(0)
    spec = spec_from(WinogradCandidates().eval(), [(torch.randn(1, 3, 8, 8),), (torch.randn(2, 3, 8, 8),)])
    exported = export_model(spec)
    counts = counts_of(exported)
    assert counts["prepack_weights"]["conv2d"] == 3 and counts["winograd"] == {"F(2x2,3x3)": 1, "F(4x4,3x3)": 0}
    assert counts["fuse_clamp"] == {"fused": 1}
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))
    # The manifest selects the Winograd kernel only when a layer runs it.
    manifest = trace_model(spec, runtime=tracing_lib).manifest
    assert manifest.kernel_metadata["conv2d_winograd_kernel"] == ("Float",)
    skipped = graph_passes.resolve("default", skip="winograd")
    plain = export_model(spec, passes=skipped)
    assert [run.name for run in plain.passes if run.name == "winograd"] == []
    assert all(c.ok for c in check_model(spec, full_lib, program=plain.program))
    assert (
        "conv2d_winograd_kernel" not in trace_model(spec, runtime=tracing_lib, passes=skipped).manifest.kernel_metadata
    )
    assert "conv2d_winograd4_kernel" not in manifest.kernel_metadata  # 8x8: 4 4x4 tiles, F(2x2, 3x3)
    # A 16x16 output has 16 4x4 tiles: F(4x4, 3x3), and only its kernel selected.
    large = spec_from(WinogradCandidates().eval(), [(torch.randn(1, 3, 16, 16),), (torch.randn(2, 3, 16, 16),)])
    exported = export_model(large)
    assert counts_of(exported)["winograd"] == {"F(2x2,3x3)": 0, "F(4x4,3x3)": 1}
    assert all(c.ok for c in check_model(large, full_lib, program=exported.program))
    manifest = trace_model(large, runtime=tracing_lib).manifest
    assert manifest.kernel_metadata["conv2d_winograd4_kernel"] == ("Float",)
    assert "conv2d_winograd_kernel" not in manifest.kernel_metadata
    # A 4x4 output (4 tiles) is too small to pay: the layer stays on im2col.
    small = spec_from(WinogradCandidates().eval(), [(torch.randn(1, 3, 4, 4),)])
    assert counts_of(export_model(small))["winograd"] == {
        "F(2x2,3x3)": 0,
        "F(4x4,3x3)": 0,
    }


class PixelRowsCandidates(nn.Module):
    """A 1x1 convolution prepack_weights packs for pixel rows (8 -> 12
    channels over a 3x4 map: 12 pixels) with a relu it fuses, and a strided
    1x1 convolution over 2x2 outputs it packs for pixel rows too (run on its
    im2col matrix)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.rows = nn.Conv2d(8, 12, 1)
        self.down = nn.Conv2d(12, 12, 1, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.rows(self.stem(x))))


def test_prepack_packs_small_1x1_convolutions_for_pixel_rows(full_lib, tracing_lib):
    torch.manual_seed(0)
    spec = spec_from(PixelRowsCandidates().eval(), [(torch.randn(1, 3, 6, 8),), (torch.randn(2, 3, 6, 8),)])
    exported = export_model(spec)
    counts = counts_of(exported)
    assert counts["prepack_weights"]["conv2d"] == 3 and counts["fuse_clamp"] == {"fused": 1}
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))
    # The manifest selects the pixel-rows kernel because a layer runs it...
    assert trace_model(spec, runtime=tracing_lib).manifest.kernel_metadata["pixel_rows_kernel"] == ("Float",)
    # ...and larger maps (8x8 and 4x4 outputs) keep the pixels as the GEMM's columns.
    larger = spec_from(PixelRowsCandidates().eval(), [(torch.randn(1, 3, 16, 16),)])
    assert all(c.ok for c in check_model(larger, full_lib))
    assert "pixel_rows_kernel" not in trace_model(larger, runtime=tracing_lib).manifest.kernel_metadata


class ChannelsLastCandidates(nn.Module):
    """A MobileNetV2 block over a 4x4 map (batch-norm folded): a 1x1
    expansion (16 output pixels: NCHW), a depthwise layer (channels-last),
    a 1x1 projection with the shortcut fused (NCHW again), then a stride-2
    depthwise layer down to 2x2 and two 1x1 layers over 4 pixels (all
    channels-last) before a mean that reads NCHW."""

    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(12, 36, 1, bias=False), nn.BatchNorm2d(36), nn.ReLU6())
        self.depthwise = nn.Sequential(nn.Conv2d(36, 36, 3, padding=1, groups=36), nn.ReLU6())
        self.project = nn.Conv2d(36, 12, 1)
        self.down = nn.Conv2d(12, 12, 3, stride=2, padding=1, groups=12)
        self.tail = nn.Sequential(nn.Conv2d(12, 20, 1), nn.Hardswish(), nn.Conv2d(20, 9, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + self.project(self.depthwise(self.expand(x)))
        return self.tail(self.down(y)).mean((2, 3))


def test_channels_last_runs_small_depthwise_and_1x1_layers_nhwc(full_lib, tracing_lib):
    torch.manual_seed(0)
    module = trained(ChannelsLastCandidates())
    spec = spec_from(module, [(torch.randn(1, 12, 4, 4),), (torch.randn(2, 12, 4, 4),)])
    exported = export_model(spec)
    counts = counts_of(exported)
    # depthwise, down, and the tail's two 1x1 layers; conversions: into the
    # depthwise layer, out of it, into down, out of the tail for the mean.
    assert counts["channels_last"] == {"layers": 4, "conversions": 4}
    assert ops_of(exported.program).count("aten::clone") == 4
    assert all(c.ok for c in check_model(spec, full_lib, program=exported.program))
    manifest = trace_model(spec, runtime=tracing_lib).manifest
    assert manifest.kernel_metadata["conv2d_channels_last_kernel"] == ("Float",)
    assert manifest.kernel_metadata["channels_last_transpose_kernel"] == ("Float",)
    # The tail's weights are packed for pixel rows, which a runtime must
    # select to load them, though no layer runs pixel rows NCHW here.
    assert manifest.kernel_metadata["pixel_rows_kernel"] == ("Float",)
    assert "aten::clone" in manifest.operators
    # Skipped, the same layers run NCHW, and the manifest selects none of it.
    skipped = graph_passes.resolve("default", skip="channels_last")
    plain = export_model(spec, passes=skipped)
    assert "aten::clone" not in ops_of(plain.program)
    assert all(c.ok for c in check_model(spec, full_lib, program=plain.program))
    manifest = trace_model(spec, runtime=tracing_lib, passes=skipped).manifest
    assert "conv2d_channels_last_kernel" not in manifest.kernel_metadata and "aten::clone" not in manifest.operators
    # On an 8x8 map only down's 4x4 output is small enough: one layer
    # channels-last, converted into and out of.
    large = spec_from(module, [(torch.randn(1, 12, 8, 8),)])
    assert counts_of(export_model(large))["channels_last"] == {
        "layers": 1,
        "conversions": 2,
    }
