"""The quantize pass (tools/tracer/passes/quantize.py, issue 44): which
PT2E patterns become int8 layers and which stay on the reference path
(read from the exported program, nothing run), the requantization the
pass writes simulated in numpy against torch eager of the converted module,
and a quantized CNN checked end to end on the full runtime."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torchao.quantization.pt2e import move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from tracer_testlib import MODELS, counts_of, spec_of

from codegen.inventory import InventoryOp
from pare import program as pp
from pare.quantizer import PareQuantizer
from tools.tracer import check_model, export_model, model_spec, paths, trace_model
from tools.tracer import passes as graph_passes
from tools.tracer.errors import TracerError

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed
INT8_OPS = ("pare::qconv2d_prepack", "pare::qconv2d_prepacked", "pare::qlinear_prepack", "pare::qlinear_prepacked")
INT8_OTHER_OPS = ("pare::qadd", "pare::qmul", "pare::qmean", "pare::qlut")
NO_OTHERS = dict.fromkeys(("add", "mul", "mean", "pool", "cat", "view", "lut"), 0)


def layer_counts(conv2d: int, linear: int, **others: int) -> dict[str, int]:
    """The quantize pass's counts: int8 layers, and the other int8 ops' families."""
    return {"conv2d": conv2d, "linear": linear, **NO_OTHERS, **others}


REFERENCE = graph_passes.resolve("default", skip="quantize")


class Layers(nn.Module):
    """conv + relu, a strided, padded, grouped conv, a dilated depthwise
    conv, a 1x1 conv without bias, a linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.down = nn.Conv2d(8, 12, 3, stride=2, padding=(1, 2), groups=4)
        self.dw = nn.Conv2d(12, 12, 3, padding=2, dilation=2, groups=12)
        self.pw = nn.Conv2d(12, 6, 1, bias=False)
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        y = F.relu(self.stem(x))
        y = self.pw(self.dw(self.down(y)))
        return self.fc(y.mean((2, 3)))


LAYERS = 4, 1  # conv2d, linear


def converted(quantizer=None, model=None, shape=(2, 3, 12, 10)) -> torch.fx.GraphModule:
    """`model` (by default Layers), calibrated and converted by convert_pt2e."""
    torch.manual_seed(0)
    model = (model or Layers()).eval()
    prepared = prepare_pt2e(torch.export.export(model, (torch.randn(*shape),)).module(), quantizer or PareQuantizer())
    for _ in range(4):
        prepared(torch.randn(*shape))
    converted = convert_pt2e(prepared)
    move_exported_model_to_eval(converted)
    return converted


def inputs(shape=(2, 3, 12, 10)) -> list[tuple[torch.Tensor]]:
    torch.manual_seed(1)
    return [(torch.randn(*shape),)]


def layer_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.target in (aten.conv2d.default, aten.linear.default)]


def quantize_after(node: torch.fx.Node) -> torch.fx.Node:
    """The quantize the layer `node` ends in (through its activation)."""
    while node.target is not qd.quantize_per_tensor.default:
        (node,) = node.users
    return node


def with_clamps(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with a hardtanh (relu6's op) after its second convolution and a
    clamp after its linear, before their quantize: the bounds the pass
    narrows output_min / output_max to."""
    layers = layer_nodes(gm)
    for layer, (op, args) in (
        (layers[1], (aten.hardtanh.default, (-0.3, 0.4))),
        (layers[4], (aten.clamp.default, (None, 0.05))),
    ):
        q = quantize_after(layer)
        with gm.graph.inserting_before(q):
            clamp = gm.graph.call_function(op, (q.args[0], *args))
        q.replace_input_with(q.args[0], clamp)
    gm.recompile()
    return gm


def inventory_with_int8_ops():
    """The runtime's inventory, with the int8 layers' operators if the
    runtime does not list them yet: these tests export, they run nothing."""
    inventory = paths.load_inventory()
    ops = dict(inventory.ops)
    for name in INT8_OPS:
        ops.setdefault(name, InventoryOp(name, "not_run_here", "tests/tracer/test_quantize_pass.py"))
    return dataclasses.replace(inventory, ops=ops)


def export(module: nn.Module, passes="default", shape=(2, 3, 12, 10)):
    # A converted module refuses .eval(): no spec_from, whose ModelSpec calls it.
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(shape)))
    return export_model(spec, passes=passes, inventory=inventory_with_int8_ops())


def ops_of(program: bytes) -> list[str]:
    return [ins.op for m in pp.read(program).methods for ins in m.instructions]


# -- structure -------------------------------------------------------------------


@pytest.mark.parametrize(
    "quantizer", [PareQuantizer(), PareQuantizer(int32_bias=False)], ids=["int32_bias", "float_bias"]
)
def test_conv_and_linear_layers_become_int8_layers(quantizer):
    exported = export(converted(quantizer))
    ops = ops_of(exported.program)
    assert ops.count("pare::qconv2d_prepack") == ops.count("pare::qconv2d_prepacked") == LAYERS[0]
    assert ops.count("pare::qlinear_prepack") == ops.count("pare::qlinear_prepacked") == LAYERS[1]
    assert not {"aten::convolution", "aten::addmm", "aten::mm", "aten::relu"} & set(ops)
    assert "quantized_decomposed::dequantize_per_channel" not in ops  # the weights are the int8 layers' now
    # The input is quantized once, the output dequantized once: the mean runs on int8 (pare::qmean).
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert ops.count("quantized_decomposed::dequantize_per_tensor") == 1
    assert ops.count("pare::qmean") == 1
    counts = counts_of(exported)
    assert counts["quantize"] == layer_counts(*LAYERS, mean=1)
    assert counts["prepack_weights"] == {"conv2d": 0, "linear": 0}
    # What the manifest lists: the init and the body ops, as lowering reports them.
    assert {name: exported.op_counts[name] for name in INT8_OPS} == dict(zip(INT8_OPS, (4, 4, 1, 1)))
    (method,) = pp.read(exported.program).methods
    weights = sorted(tuple(v.sizes) for v in method.values if v.constant and v.dtype == "Char")
    assert weights == [(5, 6), (6, 12, 1, 1), (8, 3, 3, 3), (12, 1, 3, 3), (12, 2, 3, 3)]


def test_a_linear_layer_on_3d_inputs_runs_on_them():
    # nn.Linear on [2, 3, 6] decomposes to view, addmm, view: the int8
    # layer reads the 3-d int8 tensor and writes the 3-d output, no views.
    shape = (2, 3, 6)
    exported = export(converted(model=nn.Linear(6, 5), shape=shape), shape=shape)
    ops = ops_of(exported.program)
    assert ops.count("pare::qlinear_prepacked") == 1
    assert not {"aten::view", "aten::addmm", "aten::_unsafe_view"} & set(ops)
    assert counts_of(exported)["quantize"] == layer_counts(0, 1)


def test_blocklisted_the_pass_leaves_the_reference_path():
    module = converted()
    exported = export(module, passes=REFERENCE)
    assert exported.program == export(module, passes="none").program
    ops = ops_of(exported.program)
    assert ops.count("aten::convolution") == LAYERS[0] and ops.count("aten::addmm") == LAYERS[1]
    assert not {*INT8_OPS, *INT8_OTHER_OPS} & set(ops)
    assert counts_of(export(module, passes="quantize")) == {"quantize": layer_counts(*LAYERS, mean=1)}


def test_clamps_before_the_quantize_are_fused():
    exported = export(with_clamps(converted()))
    ops = ops_of(exported.program)
    assert not {"aten::hardtanh", "aten::clamp", "aten::convolution"} & set(ops)
    assert counts_of(exported)["quantize"] == layer_counts(*LAYERS, mean=1)


def _set_attr(gm: torch.fx.GraphModule, node: torch.fx.Node, value: torch.Tensor) -> None:
    setattr(gm, node.target, value)


def weight_dequantizes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [layer.args[1] for layer in layer_nodes(gm)]


def asymmetric(gm):
    w = weight_dequantizes(gm)[1]  # `down`: zero points 1, not symmetric
    _set_attr(gm, w.args[2], torch.ones_like(getattr(gm, w.args[2].target)))
    return gm


def four_bit(gm):
    w = weight_dequantizes(gm)[1]  # `down`: declared a 4-bit range
    w.args = (*w.args[:4], -8, 7, *w.args[6:])
    gm.recompile()
    return gm


def uint8_input(gm):
    q = quantize_after(layer_nodes(gm)[0])  # `stem`'s output quantized to uint8: `down` reads it
    q.args = (q.args[0], q.args[1], q.args[2] + 128, 0, 255, torch.uint8)
    for d in list(q.users):
        d.args = (q, d.args[1], d.args[2] + 128, 0, 255, torch.uint8)
    gm.recompile()
    return gm


def per_channel_input(gm):
    d = layer_nodes(gm)[1].args[0]  # `down` reads its input (8 channels) dequantized per channel
    c = 8
    with gm.graph.inserting_before(d):
        gm.register_buffer("c_scales", torch.full((c,), float(d.args[1])))
        gm.register_buffer("c_zero_points", torch.full((c,), int(d.args[2]), dtype=torch.int64))
        scales, zero_points = gm.graph.get_attr("c_scales"), gm.graph.get_attr("c_zero_points")
    d.target = qd.dequantize_per_channel.default
    d.args = (d.args[0], scales, zero_points, 1, *d.args[3:])
    gm.recompile()
    return gm


@pytest.mark.parametrize(
    "edit, scheme",
    [
        (asymmetric, "its weight is quantized asymmetrically (zero points other than 0)"),
        (four_bit, "its weight is quantized to int8 -8..7 (4-bit)"),
        (uint8_input, "its input is quantized to uint8 0..255"),
        (per_channel_input, "its input (an activation) is quantized per channel"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_scheme_the_int8_layers_do_not_run_fails_the_export_in_one_line(edit, scheme):
    # `down` asked for an int8 layer the runtime does not have: never run
    # dequantized to float in its place. The message names the layer, its
    # source line and module, the scheme, and the three ways out.
    module = edit(converted())
    with pytest.raises(TracerError) as info:
        export(module)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("aten::convolution at ") and "(down (Conv2d))" in message
    assert f": {scheme}; " in message
    assert "PareQuantizer" in message and "set_module_name('down', None)" in message
    assert "--skip-passes quantize" in message
    # The way out it names: the whole model on the reference path.
    assert ops_of(export(module, passes=REFERENCE).program).count("aten::convolution") == LAYERS[0]


class Blocks(nn.Module):
    """A ResNet-like block (conv + relu, max pool, conv + residual add +
    relu) and a MobileNetV3-like one (1x1 conv, hardswish, depthwise conv,
    global average pool, flatten, dropout, hardswish, linear)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Conv2d(8, 8, 3, padding=1)
        self.expand = nn.Conv2d(8, 12, 1)
        self.dw = nn.Conv2d(12, 12, 3, padding=1, groups=12)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        y = F.relu(self.body(y) + y)
        z = self.dw(F.hardswish(self.expand(y)))
        return self.fc(F.hardswish(self.drop(self.pool(z).flatten(1))))


BLOCKS_SHAPE = (2, 3, 13, 11)
BLOCKS_COUNTS = layer_counts(4, 1, add=1, pool=1, mean=1, view=1, lut=2)


def test_the_rest_of_an_int8_graph_runs_on_int8():
    exported = export(converted(PareQuantizer(int32_bias=False), Blocks(), BLOCKS_SHAPE), shape=BLOCKS_SHAPE)
    ops = ops_of(exported.program)
    # Only the model's input is quantized and its output dequantized: nothing runs in float
    # (the dropout's quantize of its dequantize, both with one scale and zero point, is the int8 tensor).
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert ops.count("quantized_decomposed::dequantize_per_tensor") == 1
    assert not {"aten::add.Tensor", "aten::relu", "aten::hardswish", "aten::mean.dim"} & set(ops)
    assert not {"aten::_adaptive_avg_pool2d", "aten::convolution", "aten::addmm"} & set(ops)
    assert [ops.count(op) for op in INT8_OTHER_OPS] == [1, 0, 1, 2]
    assert ops.count("aten::max_pool2d") == ops.count("aten::view") == 1
    assert "aten::max_pool2d_with_indices" not in ops  # its int64 indices had no user
    assert counts_of(exported)["quantize"] == BLOCKS_COUNTS
    (method,) = pp.read(exported.program).methods
    tables = [v for v in method.values if v.constant and v.dtype == "Char" and tuple(v.sizes) == (256,)]
    assert len(tables) == 2


def test_a_quantized_block_graph_matches_torch_end_to_end(full_lib):
    module = converted(PareQuantizer(int32_bias=False), Blocks(), BLOCKS_SHAPE)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(BLOCKS_SHAPE)))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]
    assert "quantized (step " in checks[0].outputs[0].line()
    assert counts_of(export_model(spec))["quantize"] == BLOCKS_COUNTS


class Relu6Block(nn.Module):
    """MobileNetV2's conv -> ReLU6 (hardtanh), and a conv -> clamp: PareQuantizer
    observes each conv's output after its activation, as after a relu."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pw = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = F.hardtanh(self.conv(x), 0.0, 6.0)  # nn.ReLU6, as torchvision writes it
        return self.pw(y).clamp(-1.0, 1.0)


def test_a_relu6_after_a_layer_is_observed_after_it_and_fused(full_lib):
    module = converted(PareQuantizer(int32_bias=False), Relu6Block())
    conv, pw = layer_nodes(module)
    for layer, op in ((conv, aten.hardtanh.default), (pw, aten.clamp.default)):
        (activation,) = layer.users
        assert activation.target is op and next(iter(activation.users)).target is qd.quantize_per_tensor.default
    exported = export(module)
    ops = ops_of(exported.program)
    assert not {"pare::qlut", "aten::hardtanh", "aten::clamp"} & set(ops)
    assert counts_of(exported)["quantize"] == layer_counts(2, 0)
    (_, _, first), (_, _, second) = int8_layers(exported.program)
    scale, zero_point = quantize_after(conv).args[1:3]
    assert tuple(first[2:]) == (zero_point, min(127, round(6.0 / scale) + zero_point))
    scale, zero_point = quantize_after(pw).args[1:3]
    assert tuple(second[2:]) == (max(-128, round(-1.0 / scale) + zero_point), min(127, round(1.0 / scale) + zero_point))
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    assert all(c.ok for c in check_model(spec, full_lib))


def test_a_shared_relu6_after_a_layer_narrows_its_output_range(full_lib):
    # XNNPACKQuantizer's relu6 shares the conv's quantization: quantize -> dequantize
    # -> hardtanh -> quantize with one scale and zero point, fused into the layer too.
    module = converted(PareQuantizer(int32_bias=False), Layers())
    q = quantize_after(layer_nodes(module)[1])  # the strided conv, no activation
    scale, zero_point = q.args[1:3]
    graph = module.graph
    users = list(q.users)
    with graph.inserting_after(q):
        dq = graph.call_function(qd.dequantize_per_tensor.default, (q, *q.args[1:]))
    with graph.inserting_after(dq):
        clamp = graph.call_function(aten.hardtanh.default, (dq, 0.0, 6.0))
    with graph.inserting_after(clamp):
        q2 = graph.call_function(qd.quantize_per_tensor.default, (clamp, *q.args[1:]))
    for user in users:
        user.replace_input_with(q, q2)
    module.recompile()
    exported = export(module)
    ops = ops_of(exported.program)
    assert "pare::qlut" not in ops and "aten::hardtanh" not in ops
    assert counts_of(exported)["quantize"] == layer_counts(*LAYERS, mean=1)
    body = int8_layers(exported.program)[1][2]
    assert tuple(body[2:]) == (zero_point, min(127, round(6.0 / scale) + zero_point))
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    assert all(c.ok for c in check_model(spec, full_lib))


class SqueezeExcitation(nn.Module):
    """MobileNetV3's and EfficientNet's blocks: conv -> hardswish (silu) ->
    squeeze-excitation (global average pool, conv + relu, conv, hardsigmoid
    (sigmoid)), its scale multiplied into the block's activation -> conv."""

    def __init__(self, activation=F.hardswish, gate=F.hardsigmoid):
        super().__init__()
        self.activation, self.gate = activation, gate
        self.expand = nn.Conv2d(3, 8, 3, padding=1)
        self.fc1 = nn.Conv2d(8, 4, 1)
        self.fc2 = nn.Conv2d(4, 8, 1)
        self.project = nn.Conv2d(8, 6, 1)

    def forward(self, x):
        y = self.activation(self.expand(x))
        scale = self.gate(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return self.project(scale * y)


SE_SHAPE = (2, 3, 9, 7)


@pytest.mark.parametrize(
    "activation, gate",
    [(F.hardswish, F.hardsigmoid), (F.silu, torch.sigmoid), (lambda x: F.hardswish(x, inplace=True), F.sigmoid)],
    ids=["mobilenet_v3", "efficientnet", "in_place"],
)
def test_a_squeeze_excitation_block_runs_on_int8_and_matches_torch(activation, gate, full_lib):
    module = converted(PareQuantizer(), SqueezeExcitation(activation, gate), SE_SHAPE)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(SE_SHAPE)))
    exported = export_model(spec)
    ops = ops_of(exported.program)
    # No float island: only the model's input is quantized and its output dequantized.
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert ops.count("quantized_decomposed::dequantize_per_tensor") == 1
    assert [ops.count(op) for op in INT8_OTHER_OPS] == [0, 1, 1, 2]
    assert counts_of(exported)["quantize"] == layer_counts(4, 0, mul=1, mean=1, lut=2)
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]


class UnaryChain(nn.Module):
    """A conv, then every pointwise activation PareQuantizer observes after
    (some in place), then a global average pool."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)

    def forward(self, x):
        y = F.hardsigmoid(F.hardswish(self.conv(x), inplace=True), inplace=True)
        y = F.elu(F.tanh(F.gelu(F.silu(torch.sigmoid(y)), approximate="tanh")), inplace=True)
        return F.leaky_relu(y, 0.2, inplace=True).mean((2, 3))


def test_pointwise_activations_after_a_quantized_tensor_become_lookup_tables(full_lib):
    module = converted(PareQuantizer(), UnaryChain())
    exported = export(module)
    ops = ops_of(exported.program)
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert ops.count("quantized_decomposed::dequantize_per_tensor") == 1
    assert ops.count("pare::qlut") == 8
    assert counts_of(exported)["quantize"] == layer_counts(1, 0, mean=1, lut=8)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]


class Shuffle(nn.Module):
    """ShuffleNet's cat of two branches (conv + relu, conv + relu6), then a
    conv, a cat of its output with a branch's, and a 1x1 conv."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 1)
        self.b = nn.Conv2d(3, 4, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 3, padding=1, groups=4)
        self.head = nn.Conv2d(8, 5, 1)

    def forward(self, x):
        a = F.relu(self.a(x))
        y = torch.cat([a, F.hardtanh(self.b(x), 0.0, 6.0)], 1)
        return self.head(torch.cat([self.c(y), a], 1))


def test_a_cat_shares_one_quantization_and_runs_on_int8(full_lib):
    module = converted(PareQuantizer(), Shuffle())
    cats = [n for n in module.graph.nodes if n.target is aten.cat.default]
    for cat in cats:
        quantizations = {tuple(t.args[1:]) for t in cat.args[0]} | {tuple(quantize_after(cat).args[1:])}
        assert len(quantizations) == 1
    exported = export(module)
    ops = ops_of(exported.program)
    assert ops.count("aten::cat") == 2
    # The branch read by both cats joins both groups into one quantization: nothing is requantized.
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert ops.count("quantized_decomposed::dequantize_per_tensor") == 1
    assert counts_of(exported)["quantize"] == layer_counts(4, 0, cat=2)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]


class Manual(nn.Module):
    """A hand-written PT2E-style graph: mul (broadcast over H and W, as a
    squeeze-excitation's), cat with shared quantization, cat with
    different quantization (stays on the reference path), sigmoid."""

    def forward(self, x):
        a = qd.quantize_per_tensor(x, 0.02, -3, -128, 127, torch.int8)
        b = qd.quantize_per_tensor(x.mean((2, 3), keepdim=True), 0.01, 127, -128, 127, torch.int8)
        fa = qd.dequantize_per_tensor(a, 0.02, -3, -128, 127, torch.int8)
        fb = qd.dequantize_per_tensor(b, 0.01, 127, -128, 127, torch.int8)
        m = qd.quantize_per_tensor(fa * fb, 0.03, 5, -128, 127, torch.int8)
        c = qd.quantize_per_tensor(torch.cat([fa, fa], 1), 0.02, -3, -128, 127, torch.int8)
        d = torch.cat([fa, qd.dequantize_per_tensor(m, 0.03, 5, -128, 127, torch.int8)], 1)
        s = qd.quantize_per_tensor(torch.sigmoid(fa), 1 / 256, -128, -128, 127, torch.int8)
        out = [
            qd.dequantize_per_tensor(t, sc, zp, -128, 127, torch.int8)
            for t, sc, zp in ((c, 0.02, -3), (s, 1 / 256, -128))
        ]
        return out[0], d, out[1]


def test_mul_cat_and_lookup_tables_of_a_hand_written_graph(full_lib):
    shape = (2, 3, 5, 7)
    torch.manual_seed(0)
    module = torch.export.export(Manual(), (torch.randn(*shape),)).module()
    exported = export(module, shape=shape)
    ops = ops_of(exported.program)
    assert ops.count("pare::qmul") == ops.count("pare::qlut") == 1
    assert ops.count("aten::cat") == 2  # one on int8, one (different scales) on the reference path
    assert counts_of(exported)["quantize"] == layer_counts(0, 0, mul=1, cat=1, lut=1)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(shape)))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]


class Pooled(nn.Module):
    """Inception's pooling branch (conv + relu, a 3x3 average pool at stride
    1 that counts its padding, a 1x1 conv), an adaptive average pool to
    half the size (2x2 windows) and a 3x3 one at stride 2, ceil mode,
    without the padding in its divisor."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.branch = nn.Conv2d(6, 4, 1)
        self.head = nn.Conv2d(4, 5, 1)

    def forward(self, x):
        y = self.branch(F.avg_pool2d(F.relu(self.conv(x)), 3, 1, 1))
        y = F.adaptive_avg_pool2d(y, (6, 5))
        return self.head(F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False))


class PooledRequantized(nn.Module):
    """A hand-written graph: an average pool between a dequantize and a
    quantize of another scale and zero point, a relu between, as a
    quantizer that observes the pool's output would write it."""

    def forward(self, x):
        a = qd.quantize_per_tensor(x, 0.02, -3, -128, 127, torch.int8)
        y = F.relu(F.avg_pool2d(qd.dequantize_per_tensor(a, 0.02, -3, -128, 127, torch.int8), 2, 2, 0, True))
        return qd.dequantize_per_tensor(
            qd.quantize_per_tensor(y, 0.01, -100, -128, 127, torch.int8), 0.01, -100, -128, 127, torch.int8
        )


def test_average_pools_run_on_int8_and_match_torch(full_lib):
    module = converted(PareQuantizer(), Pooled())
    exported = export(module)
    ops = ops_of(exported.program)
    assert ops.count("pare::qavg_pool2d") == 3 and not {"aten::avg_pool2d", "aten::_adaptive_avg_pool2d"} & set(ops)
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 1
    assert counts_of(exported)["quantize"] == layer_counts(3, 0, pool=3)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]

    shape = (2, 3, 9, 7)
    module = torch.export.export(PooledRequantized(), (torch.randn(*shape),)).module()
    exported = export(module, shape=shape)
    ops = ops_of(exported.program)
    assert ops.count("pare::qavg_pool2d") == 1 and not {"aten::avg_pool2d", "aten::relu"} & set(ops)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(shape)))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]


class Requantizing(nn.Module):
    """A hand-written graph whose max pool and cats change quantization (a
    quantizer that observes their outputs would write them): a max pool
    then a relu, quantized to another scale and zero point; a cat of two
    tensors of different quantizations; a cat of one tensor with itself,
    clamped; max_pool2d_with_indices' values, requantized; a cat with a
    constant int8 tensor of another quantization (the reference path: no
    table is made for a constant)."""

    def __init__(self):
        super().__init__()
        self.register_buffer(
            "c", torch.randint(-128, 128, (2, 3, 9, 7), generator=torch.Generator().manual_seed(0)).to(torch.int8)
        )

    def forward(self, x):
        a = qd.quantize_per_tensor(x, 0.02, -3, -128, 127, torch.int8)
        b = qd.quantize_per_tensor(x * 2.0, 0.05, 10, -128, 127, torch.int8)
        fa = qd.dequantize_per_tensor(a, 0.02, -3, -128, 127, torch.int8)
        fb = qd.dequantize_per_tensor(b, 0.05, 10, -128, 127, torch.int8)
        p = qd.quantize_per_tensor(F.relu(F.max_pool2d(fa, 3, 2, 1)), 0.01, -100, -128, 127, torch.int8)
        c = qd.quantize_per_tensor(torch.cat([fa, fb], 1), 0.04, 0, -128, 127, torch.int8)
        d = qd.quantize_per_tensor(torch.cat([fb, fb], 1).clamp(-1.0, 1.0), 0.05, 10, -128, 127, torch.int8)
        values = torch.ops.aten.max_pool2d_with_indices(fb, [2, 2], [2, 2])[0]  # as PT2E's graphs hold it
        e = qd.quantize_per_tensor(values, 0.1, 127, -128, 127, torch.int8)
        fc = qd.dequantize_per_tensor(self.c, 0.03, 1, -128, 127, torch.int8)
        f = qd.quantize_per_tensor(torch.cat([fa, fc], 1), 0.04, 0, -128, 127, torch.int8)
        return tuple(
            qd.dequantize_per_tensor(t, sc, zp, -128, 127, torch.int8)
            for t, sc, zp in ((p, 0.01, -100), (c, 0.04, 0), (d, 0.05, 10), (e, 0.1, 127), (f, 0.04, 0))
        )


def test_a_max_pool_or_cat_that_changes_quantization_maps_its_inputs_by_tables(full_lib):
    shape = (2, 3, 9, 7)
    module = torch.export.export(Requantizing(), (torch.randn(*shape),)).module()
    exported = export(module, shape=shape)
    ops = ops_of(exported.program)
    # a's values for the pool, a's and b's for the first cat, b's (clamped) for the second, b's for the last pool.
    assert ops.count("pare::qlut") == 5
    assert ops.count("aten::max_pool2d") == 2 and ops.count("aten::cat") == 3  # one on the reference path
    assert "aten::max_pool2d_with_indices" not in ops
    assert not {"aten::relu", "aten::clamp"} & set(ops)
    # The model's two inputs' quantizations, and the reference path's cat's.
    assert ops.count("quantized_decomposed::quantize_per_tensor") == 3
    assert counts_of(exported)["quantize"] == layer_counts(0, 0, pool=2, cat=2, lut=5)
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs(shape)))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]
    # Exact: the tables are torch's own quantization of every int8 value, and max and cat commute with them.
    lines = [o.line() for c in checks for o in c.outputs]
    assert len(lines) == 5 and all("max 0 steps apart" in line for line in lines), lines


class Upsampled(nn.Module):
    """A segmentation head's end: conv + relu, conv, bilinear upsampling."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.classifier = nn.Conv2d(6, 4, 1)

    def forward(self, x):
        return F.interpolate(self.classifier(F.relu(self.conv(x))), scale_factor=2, mode="bilinear")


def test_an_upsampling_shares_its_input_quantization(full_lib):
    module = converted(PareQuantizer(), Upsampled())
    (upsample,) = [n for n in module.graph.nodes if n.target is aten.upsample_bilinear2d.vec]
    (q,) = upsample.users
    assert tuple(q.args[1:]) == tuple(upsample.args[0].args[1:])
    # The model's output comes out of a quantize: checked in quantization steps.
    spec = model_spec.ModelSpec(MODELS / "inline.py", module, tuple(inputs()))
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks), [o.line() for c in checks for o in c.outputs]
    assert "quantized (step " in checks[0].outputs[0].line()


# -- the arithmetic ----------------------------------------------------------------


class Recorder(torch.fx.Interpreter):
    """Runs a converted module in torch eager, keeping every node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values: dict[torch.fx.Node, object] = {}

    def run_node(self, n):
        self.values[n] = super().run_node(n)
        return self.values[n]


def int8_layers(program: bytes) -> list[tuple[str, list, list]]:
    """(op, init op arguments, body op arguments) of each int8 layer, in
    program order, constants as their values."""
    (method,) = pp.read(program).methods
    init = [i for i in method.instructions[: method.num_init] if i.op in INT8_OPS]
    body = [i for i in method.instructions[method.num_init :] if i.op in INT8_OPS]
    assert len(init) == len(body)

    def values(ins):
        return [method.values[i].payload for i in ins.inputs]

    return [(i.op, values(i), values(b)) for i, b in zip(init, body)]


def simulate_conv(qx, w, correction, multiplier, offset, stride, padding, dilation, groups, zx):
    """The int32 accumulator of an int8 convolution: padding reads zx."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    x = np.pad(qx.astype(np.int64), ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=zx)
    n, _, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    og = cout // groups
    acc = np.zeros((n, cout, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw]
            for g in range(groups):
                taps = w[g * og : (g + 1) * og, :, i, j].astype(np.int64)
                acc[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch[:, g * cg : (g + 1) * cg], taps)
    return acc + correction.astype(np.int64)[None, :, None, None], (1, -1, 1, 1)


def requantized(acc, multiplier, offset, shape, lo, hi):
    """What the kernels do after the product: float32 multiply, then add,
    round half to even, clamp."""
    assert np.abs(acc).max() < 2**31  # the int32 accumulator does not overflow
    y = acc.astype(np.int32).astype(np.float32) * multiplier.reshape(shape) + offset.reshape(shape)
    assert y.dtype == np.float32
    return np.clip(np.rint(y), lo, hi).astype(np.int64)


@pytest.mark.parametrize(
    "quantizer", [PareQuantizer(), PareQuantizer(int32_bias=False)], ids=["int32_bias", "float_bias"]
)
def test_int8_layers_compute_what_torch_eager_does(quantizer):
    gm = with_clamps(converted(quantizer))
    exported = export(gm)
    (x,) = inputs()[0]
    recorder = Recorder(gm)
    recorder.run(x)
    layers = layer_nodes(gm)
    written = int8_layers(exported.program)
    assert [op for op, _, _ in written] == ["pare::qconv2d_prepack"] * LAYERS[0] + ["pare::qlinear_prepack"] * LAYERS[1]
    ranges = []
    for layer, (op, init, body) in zip(layers, written):
        qx = recorder.values[layer.args[0].args[0]].numpy()  # the int8 tensor the layer's dequantize reads
        expected = recorder.values[quantize_after(layer)].numpy().astype(np.int64)
        _, packed, lo, hi = body
        ranges.append((lo, hi))
        w, correction, multiplier, offset = init[:4]
        if op == "pare::qconv2d_prepack":
            stride, padding, dilation, groups, _, zx = init[4:]
            acc, shape = simulate_conv(qx, w, correction, multiplier, offset, stride, padding, dilation, groups, zx)
        else:
            acc = qx.astype(np.int64) @ w.astype(np.int64).T + correction.astype(np.int64)
            shape = (1, -1)
        got = requantized(acc, multiplier, offset, shape, lo, hi)
        diff = np.abs(got - expected)
        assert diff.max() <= 1, (layer.name, diff.max())
        # A step off only where the two formulas round a value within float
        # error of a half step: a wrong scale or zero point moves many.
        assert (diff != 0).sum() <= max(1, diff.size // 100), (layer.name, (diff != 0).sum())
    # The clamps narrowed the output range: relu at the output zero point,
    # hardtanh(-0.3, 0.4) and clamp(max=0.05) at their quantized bounds.
    (lo0, _), (lo1, hi1), _, _, (lo4, hi4) = ranges
    for (lo, hi), layer in zip(ranges, layers):
        scale, zero_point, qmin, qmax = quantize_after(layer).args[1:5]
        if layer is layers[0]:
            assert (lo, hi) == (max(qmin, zero_point), qmax)
        elif layer is layers[1]:
            assert (lo, hi) == (
                max(qmin, round(-0.3 / scale) + zero_point),
                min(qmax, round(0.4 / scale) + zero_point),
            )
            assert qmin < lo < hi < qmax
        elif layer is layers[4]:
            assert (lo, hi) == (qmin, round(0.05 / scale) + zero_point) and hi < qmax
        else:
            assert (lo, hi) == (qmin, qmax)


# -- end to end ----------------------------------------------------------------------


def test_a_quantized_cnn_runs_int8_layers_and_matches_torch(full_lib):
    # Needs the runtime's int8 kernels (pare::qconv2d_prepacked, ...).
    spec = spec_of("quantized_cnn")
    checks = check_model(spec, full_lib)
    line = checks[0].outputs[0].line()
    assert line.startswith("output 0 Float[2, 10]: ok, quantized (step ") and "within 3 steps" in line
    assert all(c.ok for c in checks)
    exported = export_model(spec)
    assert counts_of(exported)["quantize"] == layer_counts(2, 1, add=1, mean=1)
    assert not {"aten::convolution", "aten::addmm"} & set(ops_of(exported.program))


def test_a_trace_records_the_int8_layers_kernels_as_pytorch_names_them(tracing_lib):
    # The runtime dispatches them on Char; PyTorch's quantized kernels record QInt8,
    # and torchgen loads the manifest as it loads its own.
    manifest = trace_model(spec_of("quantized_cnn"), runtime=tracing_lib).manifest
    assert manifest.kernel_metadata["qconv2d_kernel"] == ("QInt8",)
    assert manifest.kernel_metadata["qlinear_kernel"] == ("QInt8",)
    assert {"QConv2dPackedParams", "QLinearPackedParams"} <= manifest.custom_classes
    from torchgen.selective_build.selector import SelectiveBuilder

    selector = SelectiveBuilder.from_yaml_str(manifest.dump())
    assert selector.kernel_metadata["qconv2d_kernel"] == ["QInt8"]
