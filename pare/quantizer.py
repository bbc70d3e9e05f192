"""Pare's PT2E quantizer: a torchao `Quantizer` for `prepare_pt2e` /
`convert_pt2e`, so a model quantizes for Pare without an ExecuTorch install.

It is configured as ExecuTorch's `XNNPACKQuantizer` with
`get_symmetric_quantization_config(is_per_channel=True)` is:

* activations: int8 in [-128, 127] with a zero point (per-tensor affine),
  observed by a HistogramObserver (eps 2**-12); with `dynamic=True`,
  chosen at run time per tensor (`choose_qparams`) for linear layers only;
* weights of conv2d and linear: int8 in [-127, 127], symmetric, one scale
  per output channel (axis 0);
* bias: int32 at scale input_scale * weight_scale per channel (what an
  int8 GEMM accumulates in); `int32_bias=False` leaves it float, as
  XNNPACKQuantizer does (then the two configure conv / linear / add
  graphs identically).

It annotates conv2d and linear (each with a following relu, hardtanh
(relu6) or clamp fused into its output), add and mul of two tensors (with
a following relu), cat (its inputs and output sharing one quantization),
the pointwise activations of _UNARY after a quantized tensor (the input
shared, the output observed: they change the range), and lets relu,
hardtanh, pooling, upsampling, mean and shape ops share their input's
quantization. Which operators then run as int8 is the runtime's business
(docs/quantization.md: the tracer's quantize pass). Where this differs
from XNNPACKQuantizer (relu6 and clamps fused into the layer, the
pointwise activations and upsampling annotated): the table in
docs/quantization.md.

    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e, convert_pt2e
    from pare.quantizer import PareQuantizer

    m = torch.export.export(model.eval(), example).module()
    m = prepare_pt2e(m, PareQuantizer())
    for x in calibration: m(x)
    m = convert_pt2e(m)          # a model spec's build() may return it
"""

from __future__ import annotations

import torch
from torch.fx import Node
from torchao.quantization.pt2e import HistogramObserver, PerChannelMinMaxObserver, PlaceholderObserver
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

__all__ = ["PareQuantizer"]

aten = torch.ops.aten

_EPS = 2**-12  # XNNPACKQuantizer's observers' eps
_CONV = (aten.conv2d.default, aten.conv2d.padding)
_LINEAR = (aten.linear.default,)
_ADD = (aten.add.Tensor, aten.add_.Tensor)
_MUL = (aten.mul.Tensor, aten.mul_.Tensor)
_RELU = (aten.relu.default, aten.relu_.default)
# Activations a layer's output is observed after (the quantize pass fuses
# them into the int8 layer's output range), when their bounds are constants.
_CLAMPS = (*_RELU, aten.relu6.default, aten.hardtanh.default, aten.hardtanh_.default, aten.clamp.default)
# Pointwise ops that change the range: their input shares its producer's
# quantization, their output is observed (the quantize pass runs them as a
# 256-entry table, quantize_ops._unary()).
_UNARY = (
    aten.hardswish.default,
    aten.hardswish_.default,
    aten.hardsigmoid.default,
    aten.hardsigmoid_.default,
    aten.sigmoid.default,
    aten.sigmoid_.default,
    aten.silu.default,
    aten.silu_.default,
    aten.gelu.default,
    aten.tanh.default,
    aten.tanh_.default,
    aten.elu.default,
    aten.elu_.default,
    aten.leaky_relu.default,
    aten.leaky_relu_.default,
)
# Ops whose output is on their input's grid: they share its observer.
_SHARED = (
    *_RELU,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.max_pool2d.default,
    aten.adaptive_avg_pool2d.default,
    aten.avg_pool2d.default,
    # Interpolations, within their input's range as the average pools.
    aten.upsample_nearest2d.vec,
    aten.upsample_bilinear2d.vec,
    aten.mean.default,
    aten.mean.dim,
    aten.flatten.using_ints,
    aten.view.default,
    aten.reshape.default,
    aten.permute.default,
    aten.squeeze.dim,
    aten.dropout.default,
)


class PareQuantizer(Quantizer):
    """Annotates a torch.export graph for PT2E (module doc).

    `dynamic`: quantize linear layers' inputs dynamically (per tensor, at
    run time) and nothing else, as XNNPACKQuantizer's dynamic config.
    `int32_bias`: quantize conv and linear biases to int32 (module doc)."""

    def __init__(self, *, dynamic: bool = False, int32_bias: bool = True) -> None:
        super().__init__()
        self.dynamic = dynamic
        self.int32_bias = int32_bias
        observer = PlaceholderObserver if dynamic else HistogramObserver
        self.activation = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-128,
            quant_max=127,
            qscheme=torch.per_tensor_affine,
            is_dynamic=dynamic,
            observer_or_fake_quant_ctr=observer.with_args(eps=_EPS),
        )
        self.weight = QuantizationSpec(
            dtype=torch.int8,
            quant_min=-127,
            quant_max=127,
            qscheme=torch.per_channel_symmetric,
            ch_axis=0,
            is_dynamic=False,
            observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=_EPS),
        )

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in list(model.graph.nodes):
            if node.op != "call_function":
                continue
            if node.target in _LINEAR or (node.target in _CONV and not self.dynamic):
                self._annotate_layer(node)
            elif self.dynamic:
                continue
            elif node.target in _ADD:
                self._annotate_binary(node, any_float=True)
            elif node.target in _MUL:
                self._annotate_binary(node, any_float=False)
        if not self.dynamic:
            self._propagate(model)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass

    # -- patterns --

    def _annotate_layer(self, layer: Node) -> None:
        """conv2d / linear, its output observed after a relu, hardtanh or
        clamp (constant bounds) that is its only user (relu only, dynamic)."""
        act, weight = layer.args[0], layer.args[1]
        bias = layer.args[2] if len(layer.args) > 2 else None
        if _annotated(layer) or not isinstance(act, Node) or not isinstance(weight, Node):
            return
        inputs = {act: self.activation, weight: self.weight}
        if isinstance(bias, Node) and self.int32_bias and not self.dynamic:
            inputs[bias] = _int32_bias_spec(act, weight, layer)
        relu = _only_user(layer, _RELU if self.dynamic else _CLAMPS)
        output = None if self.dynamic else self.activation
        if relu is not None and output is not None:
            _annotate(layer, inputs, None)
            _annotate(relu, {}, output)
        else:
            _annotate(layer, inputs, output)

    def _annotate_binary(self, node: Node, *, any_float: bool) -> None:
        """add (`any_float`: one float tensor operand is enough) or mul (both
        operands float tensors), observed after a relu that is its only user."""
        operands = [a for a in node.args[:2] if _is_float_tensor(a)]
        if _annotated(node) or not operands or (not any_float and len(operands) < 2):
            return
        inputs = dict.fromkeys(operands, self.activation)
        relu = _only_user(node, _RELU)
        if relu is not None:
            _annotate(node, inputs, None)
            _annotate(relu, {}, self.activation)
        else:
            _annotate(node, inputs, self.activation)

    def _propagate(self, model: torch.fx.GraphModule) -> None:
        """In graph order (after the layers and binary ops), so that each sees
        its inputs' annotations: cat, and ops whose input is quantized: those
        of _SHARED share its quantization, those of _UNARY share it on their
        input and observe their output."""
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node):
                continue
            if node.target is aten.cat.default:
                self._annotate_cat(node)
                continue
            if node.target not in (*_SHARED, *_UNARY):
                continue
            source = node.args[0]
            if not isinstance(source, Node) or not _quantized_output(source):
                continue
            shared = SharedQuantizationSpec(source)
            if node.target in _SHARED:
                _annotate(node, {source: shared}, shared)
            elif _is_float_tensor(node) and not any(
                isinstance(a, Node) for a in (*node.args[1:], *node.kwargs.values())
            ):
                _annotate(node, {source: shared}, self.activation)

    def _annotate_cat(self, cat: Node) -> None:
        """cat: its inputs and output share one quantization, observed on the
        first input whose producer's output is quantized (or the first), as
        XNNPACKQuantizer: the quantize pass runs it on the int8 values."""
        tensors = cat.args[0] if cat.args else None
        if _annotated(cat) or not isinstance(tensors, (list, tuple)) or not tensors:
            return
        if not all(isinstance(t, Node) and _is_float_tensor(t) for t in tensors):
            return
        source = next((t for t in tensors if _quantized_output(t)), tensors[0])
        shared = SharedQuantizationSpec((source, cat))
        inputs = {t: shared for t in tensors}
        inputs[source] = self.activation
        _annotate(cat, inputs, shared)


def _int32_bias_spec(act: Node, weight: Node, layer: Node) -> DerivedQuantizationSpec:
    def derive(observers):
        act_obs, weight_obs = observers
        act_scale, _ = act_obs.calculate_qparams()
        weight_scale, _ = weight_obs.calculate_qparams()
        scale = (act_scale * weight_scale).to(torch.float32)
        return scale, torch.zeros_like(scale, dtype=torch.int64)

    return DerivedQuantizationSpec(
        derived_from=[(act, layer), (weight, layer)],
        derive_qparams_fn=derive,
        dtype=torch.int32,
        quant_min=-(2**31),
        quant_max=2**31 - 1,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


def _annotated(node: Node) -> bool:
    annotation = node.meta.get(Q_ANNOTATION_KEY)
    return annotation is not None and annotation._annotated


def _annotate(node: Node, inputs: dict, output) -> None:
    node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(input_qspec_map=inputs, output_qspec=output, _annotated=True)


def _only_user(node: Node, targets: tuple) -> Node | None:
    """`node`'s only user when it calls one of `targets` on it with constant
    other arguments (a clamp's bounds)."""
    users = list(node.users)
    if len(users) != 1 or users[0].op != "call_function" or users[0].target not in targets:
        return None
    user = users[0]
    if user.args[0] is not node or any(isinstance(a, Node) for a in (*user.args[1:], *user.kwargs.values())):
        return None
    return user


def _quantized_output(node: Node) -> bool:
    annotation = node.meta.get(Q_ANNOTATION_KEY)
    return annotation is not None and annotation._annotated and annotation.output_qspec is not None


def _is_float_tensor(x) -> bool:
    val = x.meta.get("val") if isinstance(x, Node) else None
    return isinstance(val, torch.Tensor) and val.dtype.is_floating_point
