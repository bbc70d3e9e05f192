"""The quantize pass: a PT2E model's `dequantize -> conv2d / linear [->
relu / relu6 / hardtanh / clamp] -> quantize` becomes one int8 layer,
pare::qconv2d_prepacked / pare::qlinear_prepacked, its requantization
(pare/quantized_packing.py) computed at export and its int8 weight written
into the program (docs/quantization.md, "Int8 layers: the quantize pass").

It plans at lowering time (base.GraphPass), before prepack_weights, so it
claims the int8 patterns first: the layer's plan (plans.QConv2dPrepack,
plans.QLinearPrepack) reads the int8 tensor before the input's dequantize,
and the activation and the quantize after the layer pass its int8 output
on (LoweringState.fuse).

A statically quantized layer (its weight a dequantized int8 constant, its
input a dequantize, its output quantized) in a scheme the int8 layers do
not run fails the export in one line (UnsupportedScheme): asymmetric,
4-bit or uint8 weights, a per-channel axis other than 0, per-channel or
uint8 activations. Nothing is dequantized to float where the model asked
for an int8 layer; `--skip-passes quantize` runs the whole model on the
reference path instead. A dynamically quantized linear (its input's
parameters computed at run time by choose_qparams.tensor, its weight a
symmetric int8 constant) becomes pare::qlinear_dynamic: the input quantized
at run time as the reference does it, the int8 product, a float output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import GraphPass, LoweringState, argument, is_node
from tools.tracer.passes.fuse_clamp import clamp_bounds
from tools.tracer.passes.prepack_weights import linear_operands, transposed_matrix, unflattened
from tools.tracer.plans import Int8Layer, Plan, QConv2dPrepack, QLinearPrepack

if TYPE_CHECKING:
    import torch
    from torch.fx import Node

NAME = "quantize"
QUANTIZED_NAMESPACE = "quantized_decomposed"

INT8_RANGE = (-128, 127)


class Quantize(GraphPass):
    name = NAME
    description = (
        "PT2E's dequantize -> conv2d / linear (addmm/mm) [-> relu, relu6 / hardtanh or clamp] -> "
        "quantize on int8 tensors, symmetric int8 weights (per channel or per tensor) -> "
        "pare::qconv2d_prepacked / pare::qlinear_prepacked (int8 weights and requantization "
        "computed at export); a dynamically quantized linear (choose_qparams) -> pare::qlinear_dynamic (its weight "
        "packed at export); add / mul (+ relu) -> pare::qadd / pare::qmul, global average pooling "
        "(mean over H and W) -> pare::qmean, average pooling -> pare::qavg_pool2d, views with shared quantization, max_pool2d / cat -> the "
        "aten op on int8 (inputs of other quantizations mapped by pare::qlut), a unary pointwise op -> pare::qlut (a 256-entry table computed at export)"
    )
    counters = ("conv2d", "linear", "add", "mul", "mean", "pool", "cat", "view", "lut")

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        import torch

        aten = torch.ops.aten
        if node.target in (aten.addmm.default, aten.mm.default):
            from tools.tracer.passes import weight_only

            return _linear_plan(node, lowering) or weight_only.linear_plan(node, lowering)
        if node.target is aten.convolution.default:
            return _conv2d_plan(node, lowering)
        from tools.tracer.passes import quantize_ops

        return quantize_ops.plan(node, lowering)


PASS = Quantize()


class UnsupportedScheme(Exception):
    """A quantized layer's scheme the int8 layers do not run; the message
    says which (reported with the layer's source line by _unsupported)."""


# What a user does about an UnsupportedScheme.
SCHEME_FIX = (
    "Pare's int8 layers take int8 activations quantized per tensor and symmetric int8 weights (per channel "
    "along the output channels, or per tensor): quantize with pare.quantizer.PareQuantizer (or XNNPACKQuantizer "
    "with get_symmetric_quantization_config), leave this layer float (quantizer.set_module_name(NAME, None)), "
    "or export with --skip-passes quantize to run the model on the reference path"
)


def _unsupported(node: Node, scheme: str, lowering: LoweringState) -> Exception:
    """The one-line export error (a TracerError) for the quantized layer `node`."""
    from tools.tracer.errors import TracerError
    from tools.tracer.sources import source_of

    use = source_of(node, lowering.model_file)
    where = use.location or node.name
    module = f" ({use.module})" if use.module else ""
    name = use.module.split(" ")[0] if use.module else "..."
    fix = SCHEME_FIX.replace("NAME", repr(name))
    return TracerError(f"{node.target._schema.name} at {where}{module}: {scheme}; {fix}")


def _conv2d_plan(node: Node, lowering: LoweringState) -> Plan | None:
    try:
        return _conv2d_plan_or_raise(node, lowering)
    except UnsupportedScheme as e:
        raise _unsupported(node, str(e), lowering) from None


def _linear_plan(node: Node, lowering: LoweringState) -> Plan | None:
    try:
        return _linear_plan_or_raise(node, lowering)
    except UnsupportedScheme as e:
        raise _unsupported(node, str(e), lowering) from None


def _conv2d_plan_or_raise(node: Node, lowering: LoweringState) -> Plan | None:
    x, w, bias, stride, padding, dilation, transposed, _, groups = node.args[:9]
    val = x.meta.get("val") if is_node(x) else None
    if (
        transposed
        or val is None
        or val.dim() != 4
        or any(is_node(v) for v in (*stride, *padding, *dilation, groups))
        or len(stride) != 2
    ):
        return None
    conv = {"stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation), "groups": int(groups)}
    matched = _int8_layer(x, w, 4, bias, node, lowering, **conv)
    if matched is None:
        return None
    source, layer, fused, output_range = matched
    _fuse_chain(node, fused, lowering)
    return QConv2dPrepack(deps=(source.args[0],), layer=layer, output_range=output_range, counts=((NAME, "conv2d"),))


def _linear_plan_or_raise(node: Node, lowering: LoweringState) -> Plan | None:

    operands = linear_operands(node)
    if operands is None:
        return None
    bias, x, mat2 = operands
    if not is_node(x):
        return None
    x, last = unflattened(x, node)  # nn.Linear on 3 or more dims: view, addmm, view back
    matched = _int8_layer(x, transposed_matrix(mat2), 2, bias, last, lowering)
    if matched is None:
        return _dynamic_linear_plan(node, x, transposed_matrix(mat2), bias, last, lowering)
    source, layer, fused, output_range = matched
    _fuse_chain(node, [last, *fused] if last is not node else fused, lowering)
    return QLinearPrepack(deps=(source.args[0],), layer=layer, output_range=output_range, counts=((NAME, "linear"),))


def _dynamic_linear_plan(node: Node, x: Any, w: Any, bias: Any, last: Node, lowering: LoweringState) -> Plan | None:
    """pare::qlinear_dynamic for a linear layer whose input is quantized at
    run time (choose_qparams.tensor -> quantize_per_tensor.tensor ->
    dequantize_per_tensor.tensor of one float tensor, to int8) and whose
    weight is a constant int8 tensor dequantized symmetrically; its output
    stays float. None for anything else."""
    import torch

    from tools.tracer.plans import Int8OpPlan

    source = _dynamic_int8_input(x)
    weight = _int8_weight(w, 2, lowering)
    if source is None or weight is None:
        return None
    _, q_weight, scales = weight
    out_features = q_weight.shape[0]
    ok, bias_value = _float_bias(bias, out_features, lowering)
    if not ok:
        return None
    if isinstance(scales, float):
        scales = torch.full((out_features,), scales, dtype=torch.float32)
    scales = scales.to(torch.float32).contiguous()
    if not bool((scales > 0).all()):
        return None
    x_float, qmin, qmax, eps = source
    from pare.quantized_packing import pack_dynamic_weight

    w_int8 = q_weight.contiguous()
    sums = w_int8.to(torch.int32).sum(dim=1, dtype=torch.int32)
    w_int8 = torch.from_numpy(pack_dynamic_weight(w_int8.numpy()))
    _fuse_chain(node, [last] if last is not node else [], lowering)
    args = (x_float, w_int8, sums, scales, bias_value, qmin, qmax, eps)
    return Int8OpPlan(deps=(x_float,), op="pare::qlinear_dynamic", args=args, counts=((NAME, "linear"),))


def _dynamic_int8_input(x: Any) -> tuple[Node, int, int, float] | None:
    """(the float tensor, quant_min, quant_max, eps) when `x` is
    dequantize_per_tensor.tensor(quantize_per_tensor.tensor(t, s, z), s, z)
    to int8 with (s, z) = choose_qparams.tensor(t) of the same range."""
    import operator

    import torch

    if not _calls(x, "dequantize_per_tensor", "tensor") or x.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    q, scale, zero_point, qmin, qmax, dtype = (argument(x, i, n) for i, n in enumerate(("input", *_QPARAMS)))
    if not _calls(q, "quantize_per_tensor", "tensor"):
        return None
    t, *q_params = (argument(q, i, n) for i, n in enumerate(("input", *_QPARAMS)))
    if q_params != [scale, zero_point, qmin, qmax, dtype] or dtype != torch.int8 or not is_node(t):
        return None
    if not all(is_node(v) and v.target is operator.getitem for v in (scale, zero_point)):
        return None
    chosen = scale.args[0]
    if zero_point.args[0] is not chosen or (scale.args[1], zero_point.args[1]) != (0, 1):
        return None
    if not _calls(chosen, "choose_qparams", "tensor"):
        return None
    names = ("input", "quant_min", "quant_max", "eps", "dtype")
    c_input, c_min, c_max, eps, c_dtype = (argument(chosen, i, n) for i, n in enumerate(names))
    if c_input is not t or (c_min, c_max, c_dtype) != (qmin, qmax, dtype) or any(is_node(v) for v in (qmin, qmax, eps)):
        return None
    if not (INT8_RANGE[0] <= qmin <= 0 <= qmax <= INT8_RANGE[1]) or qmin >= qmax:
        return None
    return t, int(qmin), int(qmax), float(eps)


def _int8_layer(x: Any, w: Any, dims: int, bias: Any, last: Node, lowering: LoweringState, **conv: Any):
    """(the input's dequantize, the Int8Layer, the nodes to fuse after
    `last`, the output range) when the layer reading `x` with weight `w`
    (`dims` dims) and `bias`, ending in `last`, is an int8 layer; None when
    it is not quantized; UnsupportedScheme when it is, in a scheme the int8
    layers do not run."""
    weight = _int8_weight(w, dims, lowering)
    source = _int8_input(x)
    if weight is None or source is None:
        _check_scheme(x, w, lowering)
        return None
    q, fused, output_range = _int8_output(last)
    if q is None:
        return None
    layer = _layer(weight, bias, source, q, lowering, **conv)
    return None if layer is None else (source, layer, fused, output_range)


def _fuse_chain(node: Node, fused: list[Node], lowering: LoweringState) -> None:
    """Each node of `fused` (the layer's activation and quantize, in order)
    passes on the value of the one before it, `node`'s first."""
    for before, after in zip([node, *fused], fused):
        lowering.fuse(after, before)


def _calls(node: Any, name: str, overload: str = "default") -> bool:
    """Whether `node` calls quantized_decomposed::<name>.<overload>. By name:
    torch.ops.quantized_decomposed has these ops only once torchao is
    imported, and a float model's export need not import it."""
    target = getattr(node, "target", None) if is_node(node) else None
    return (
        getattr(target, "namespace", None) == QUANTIZED_NAMESPACE
        and target._schema.name == f"{QUANTIZED_NAMESPACE}::{name}"
        and target._overloadname == overload
    )


def _static_per_tensor(node: Node) -> tuple[float, int, int, int] | None:
    """(scale, zero point, quant_min, quant_max) of a quantize_per_tensor /
    dequantize_per_tensor .default to or from int8 (or a sub-range), None
    for anything else."""
    import torch

    scale, zero_point, qmin, qmax, dtype = (argument(node, i, n) for i, n in enumerate(_QPARAMS, 1))
    if any(is_node(v) for v in (scale, zero_point, qmin, qmax)) or dtype != torch.int8:
        return None
    if node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    if not (INT8_RANGE[0] <= qmin <= qmax <= INT8_RANGE[1]):
        return None
    return float(scale), int(zero_point), int(qmin), int(qmax)


_QPARAMS = ("scale", "zero_point", "quant_min", "quant_max", "dtype")


def _int8_input(x: Any) -> Node | None:
    """x, when it is the static per-tensor dequantize of an int8 tensor."""

    if not _calls(x, "dequantize_per_tensor") or not is_node(x.args[0]):
        return None
    return x if _static_per_tensor(x) is not None else None


def _int8_output(last: Node) -> tuple[Node | None, list[Node], tuple[int, int]]:
    """(the quantize, the nodes to fuse after `last` up to it, (output_min,
    output_max)) when `last`'s only user, through an optional relu /
    hardtanh / clamp with constant bounds (each the only user of the node
    before), is a static quantize_per_tensor to int8. Else (None, [], ())."""

    from tools.tracer.nodes import only_user

    fused: list[Node] = []
    bounds = None
    user = only_user(last)
    if user is not None and (bounds := clamp_bounds(user, last)) is not None:
        fused.append(user)
        last, user = user, only_user(user)
    if not _calls(user, "quantize_per_tensor") or user.args[0] is not last:
        return None, [], ()
    qparams = _static_per_tensor(user)
    if qparams is None:
        return None, [], ()
    scale, zero_point, qmin, qmax = qparams
    lo, hi = qmin, qmax
    if bounds is None and (after := _requantized_clamp(user, qparams)) is not None:
        # quantize -> dequantize -> relu6 / clamp -> quantize, with one scale
        # and zero point (PareQuantizer's shared relu6): the clamp of the
        # int8 value, fused too (the nodes between are read by nothing else).
        bounds, chain = after
        fused.extend([user, *chain[:-1]])
        user = chain[-1]
    if bounds is not None:
        # Quantizing is monotonic, so clamping before it is clamping the
        # int8 result to the clamp bounds' own quantized values.
        lo = max(lo, _quantized(bounds[0], scale, zero_point, qmin, qmax))
        hi = min(hi, _quantized(bounds[1], scale, zero_point, qmin, qmax))
    return user, [*fused, user], (lo, hi)


def _requantized_clamp(q: Node, qparams: tuple) -> tuple[tuple[float, float], list[Node]] | None:
    """(the clamp's bounds, [dequantize, clamp, quantize]) when the quantize
    `q`'s only user is a dequantize with its parameters whose only user is
    a relu / hardtanh / clamp with constant bounds whose only user is a
    quantize with the same parameters; else None."""
    from tools.tracer.nodes import only_user

    dq = only_user(q)
    if not _calls(dq, "dequantize_per_tensor") or dq.args[0] is not q or _static_per_tensor(dq) != qparams:
        return None
    clamp = only_user(dq)
    bounds = clamp_bounds(clamp, dq) if clamp is not None else None
    if bounds is None:
        return None
    q2 = only_user(clamp)
    if not _calls(q2, "quantize_per_tensor") or q2.args[0] is not clamp or _static_per_tensor(q2) != qparams:
        return None
    return bounds, [dq, clamp, q2]


def _quantized(value: float, scale: float, zero_point: int, qmin: int, qmax: int) -> int:
    """`value` quantized by torch's reference quantize_per_tensor."""
    import torch

    q = torch.ops.quantized_decomposed.quantize_per_tensor(
        torch.tensor([value], dtype=torch.float32), scale, zero_point, qmin, qmax, torch.int8
    )
    return int(q[0])


def _int8_weight(w: Any, dims: int, lowering: LoweringState) -> tuple[Node, torch.Tensor, Any] | None:
    """(the dequantize, the int8 constant, its scales: a tensor of one per
    output channel or a float) when `w` dequantizes a constant int8 weight
    of `dims` dims symmetrically (zero points 0), per channel along axis 0
    or per tensor, with the int8 range (-127 or -128 to 127); else None."""
    import torch

    if not is_node(w) or not w.args or not lowering.is_constant(w.args[0]):
        return None
    q = lowering.constants[w.args[0]]
    if q.dtype != torch.int8 or q.dim() != dims:
        return None
    if _calls(w, "dequantize_per_channel"):
        scales, zero_points, axis, qmin, qmax, dtype = (
            argument(w, i, n) for i, n in enumerate(("scales", "zero_points", "axis", *_QPARAMS[2:]), 1)
        )
        if not (lowering.is_constant(scales) and (zero_points is None or lowering.is_constant(zero_points))):
            return None
        scales = lowering.constants[scales]
        if zero_points is not None and bool(lowering.constants[zero_points].ne(0).any()):
            return None
        if axis % dims != 0 or scales.numel() != q.shape[0]:
            return None
    elif _calls(w, "dequantize_per_tensor"):
        scales, zero_point, qmin, qmax, dtype = (argument(w, i, n) for i, n in enumerate(_QPARAMS, 1))
        if any(is_node(v) for v in (scales, zero_point)) or zero_point != 0:
            return None
        scales = float(scales)
    else:
        return None
    if dtype != torch.int8 or w.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    if is_node(qmin) or is_node(qmax) or qmin not in (-128, -127) or qmax != 127:
        return None
    return w, q, scales


def _check_scheme(x: Any, w: Any, lowering: LoweringState) -> None:
    """Raises UnsupportedScheme when the layer reading `x` and weight `w`
    is statically quantized (x a static dequantize, w the dequantize of a
    quantized constant) in a scheme _int8_input / _int8_weight refused.
    A layer that is not quantized, or whose input is quantized at run time
    (dynamic: dequantize_per_tensor.tensor), is no error."""
    import torch

    static_input = _calls(x, "dequantize_per_tensor") or _calls(x, "dequantize_per_channel")
    quantized_weight = (
        (_calls(w, "dequantize_per_tensor") or _calls(w, "dequantize_per_channel"))
        and is_node(w.args[0])
        and lowering.is_constant(w.args[0])
        and lowering.constants[w.args[0]].dtype in (torch.int8, torch.uint8)
    )
    if not (static_input and quantized_weight):
        return
    if _calls(x, "dequantize_per_channel"):
        raise UnsupportedScheme("its input (an activation) is quantized per channel")
    _, zero_point, qmin, qmax, dtype = (argument(x, i, n) for i, n in enumerate(_QPARAMS, 1))
    if dtype != torch.int8 or is_node(zero_point) or not (INT8_RANGE[0] <= qmin <= qmax <= INT8_RANGE[1]):
        raise UnsupportedScheme(f"its input is quantized to {str(dtype).removeprefix('torch.')} {qmin}..{qmax}")
    q = lowering.constants[w.args[0]]
    if _calls(w, "dequantize_per_channel"):
        scales, zero_points, axis, qmin, qmax, dtype = (
            argument(w, i, n) for i, n in enumerate(("scales", "zero_points", "axis", *_QPARAMS[2:]), 1)
        )
        if is_node(axis) or axis % q.dim() != 0:
            raise UnsupportedScheme(f"its weight is quantized per channel along dim {axis}, not the output channels")
        asymmetric = zero_points is not None and (
            not lowering.is_constant(zero_points) or bool(lowering.constants[zero_points].ne(0).any())
        )
    else:
        _, zero_point, qmin, qmax, dtype = (argument(w, i, n) for i, n in enumerate(_QPARAMS, 1))
        asymmetric = is_node(zero_point) or zero_point != 0
    if asymmetric:
        raise UnsupportedScheme("its weight is quantized asymmetrically (zero points other than 0)")
    if dtype != torch.int8 or q.dtype != torch.int8 or qmin not in (-128, -127) or qmax != 127:
        bits = " (4-bit)" if (qmin, qmax) in ((-8, 7), (0, 15)) else ""
        raise UnsupportedScheme(f"its weight is quantized to {str(dtype).removeprefix('torch.')} {qmin}..{qmax}{bits}")


def _float_bias(bias: Any, out_channels: int, lowering: LoweringState) -> tuple[bool, Any]:
    """(matches, the bias as a float32 tensor or None) for a layer's bias:
    None, a constant float32 [out_channels], or the dequantize of a
    constant int32 one (evaluated now as torch's reference does it)."""
    import torch

    from tools.tracer.nodes import nodes_in

    if bias is None:
        return True, None
    if not is_node(bias):
        return False, None
    if lowering.is_constant(bias):
        value = lowering.constants[bias]
    elif _calls(bias, "dequantize_per_channel") or _calls(bias, "dequantize_per_tensor"):
        inputs = list(nodes_in((bias.args, bias.kwargs)))
        if not all(lowering.is_constant(n) for n in inputs) or lowering.constants[bias.args[0]].dtype != torch.int32:
            return False, None

        def constant(v: Any) -> Any:
            return lowering.constants[v] if is_node(v) else v

        with torch.no_grad():
            value = bias.target(*map(constant, bias.args), **{k: constant(v) for k, v in bias.kwargs.items()})
    else:
        return False, None
    ok = value.dtype == torch.float32 and value.dim() == 1 and value.shape[0] == out_channels
    return ok, value if ok else None


def _layer(weight: tuple, bias: Any, source: Node, q: Node, lowering: LoweringState, **conv: Any) -> Int8Layer | None:
    """The int8 layer of `weight` (from _int8_weight), `bias`, the input's
    dequantize `source` and the output's quantize `q`, its requantization
    computed; None when the bias does not match."""
    from pare import quantized_packing
    from pare.packing import PackingError

    node, q_weight, scales = weight
    ok, bias_value = _float_bias(bias, q_weight.shape[0], lowering)
    if not ok:
        return None
    in_scale, in_zero_point, _, _ = _static_per_tensor(source)
    out_scale, out_zero_point, _, _ = _static_per_tensor(q)
    w = q_weight.contiguous().numpy()
    try:
        requantization = quantized_packing.requantization(
            w,
            scales if isinstance(scales, float) else scales.double().numpy(),
            None if bias_value is None else bias_value.double().numpy(),
            in_scale,
            in_zero_point,
            out_scale,
            out_zero_point,
        )
    except PackingError:  # a scale of 0, too deep a reduction, constants past float32: the reference path runs it
        return None
    return Int8Layer(
        weight=node,
        bias=bias,
        input_quantization=(in_scale, in_zero_point),
        output_quantization=(out_scale, out_zero_point),
        **conv,
        int8_weight=w,
        requantization=requantization,
    )
