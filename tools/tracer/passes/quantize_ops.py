"""The quantize pass's int8 ops besides the layers (docs/quantization.md,
"Int8 layers: the quantize pass"): an op whose tensor inputs are static
per-tensor dequantizes of int8 and whose only user (through an optional
relu / hardtanh / clamp, for add and mul) is a static quantize_per_tensor
to int8 runs on the int8 values:

* max_pool2d, cat and views, which commute with quantization when every
  input and the output share scale and zero point (and the output's range
  is int8's): their own aten kernels on the int8 tensors (Char), max
  pooling as aten::max_pool2d (without the indices no one reads); max
  pooling and cat between other quantizations too, each input whose
  quantization differs first mapped onto the output's by pare::qlut (they
  commute with any monotonic map);
* add and mul (broadcasting): pare::qadd / pare::qmul, requantizing;
* the mean over the last dims (mean.dim over H and W, adaptive average
  pooling to 1x1): pare::qmean;
* average pooling over windows (avg_pool2d, every argument; adaptive
  average pooling whose output sizes divide the input's):
  pare::qavg_pool2d, requantizing;
* a unary pointwise op (relu, hardtanh, clamp, hardswish, hardsigmoid,
  sigmoid, silu, gelu, tanh, ...): pare::qlut, a 256-entry table computed
  now by running torch's reference on every int8 value.

Anything else stays on the reference path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import LoweringState, argument, is_node
from tools.tracer.plans import Int8AtenPlan, Int8MaxPoolValues, Int8OpPlan, Int8Requantized, Plan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "quantize"


def plan(node: Node, lowering: LoweringState) -> Plan | None:
    import torch

    aten = torch.ops.aten
    target = node.target
    if target in (aten.add.Tensor, aten.mul.Tensor):
        return _binary_plan(node, lowering)
    if target is aten._adaptive_avg_pool2d.default and list(node.args[1]) != [1, 1]:
        return _adaptive_pool_plan(node, lowering)
    if target in (aten.mean.dim, aten._adaptive_avg_pool2d.default):
        return _mean_plan(node, lowering)
    if target is aten.avg_pool2d.default:
        return _avg_pool_plan(node, lowering)
    if target in (aten.max_pool2d_with_indices.default, aten.max_pool2d.default):
        return _max_pool_plan(node, lowering)
    if target is aten.cat.default:
        return _cat_plan(node, lowering)
    if target in _views():
        return _view_plan(node, lowering)
    if target in _unary():
        return _lut_plan(node, lowering)
    if getattr(target, "namespace", None) == "quantized_decomposed":
        return _round_trip_plan(node)
    return None


def _unary() -> frozenset:
    import torch

    aten = torch.ops.aten
    return frozenset(
        (
            aten.relu.default,
            aten.hardtanh.default,
            aten.clamp.default,
            aten.hardswish.default,
            aten.hardsigmoid.default,
            aten.sigmoid.default,
            aten.silu.default,
            aten.gelu.default,
            aten.tanh.default,
            aten.elu.default,
            aten.leaky_relu.default,
            aten.mish.default,
            aten.softplus.default,
            aten.neg.default,
            aten.abs.default,
        )
    )


def _views() -> frozenset:
    import torch

    aten = torch.ops.aten
    return frozenset((aten.view.default, aten._unsafe_view.default, aten.permute.default, aten.squeeze.dim))


def _input(x: Any) -> tuple[Node, tuple[float, int]] | None:
    """(the int8 tensor, (scale, zero point)) when x is a static per-tensor
    dequantize of int8 over its full range."""
    from tools.tracer.passes.quantize import _int8_input, _static_per_tensor

    if _int8_input(x) is None:
        return None
    scale, zero_point, _, _ = _static_per_tensor(x)
    return x.args[0], (scale, zero_point)


def _output(last: Node) -> tuple[Node, list[Node], tuple[float, int], tuple[int, int]] | None:
    """(the quantize, the nodes to fuse, its (scale, zero point), the
    output range) of quantize._int8_output, None when there is none."""
    from tools.tracer.passes.quantize import _int8_output, _static_per_tensor

    q, fused, output_range = _int8_output(last)
    if q is None:
        return None
    scale, zero_point, _, _ = _static_per_tensor(q)
    return q, fused, (scale, zero_point), output_range


def _fuse(node: Node, fused: list[Node], lowering: LoweringState) -> None:
    from tools.tracer.passes.quantize import _fuse_chain

    _fuse_chain(node, fused, lowering)


def _binary_plan(node: Node, lowering: LoweringState) -> Plan | None:
    if len(node.args) != 2 or any(v not in (None, 1) for k, v in node.kwargs.items() if k == "alpha"):
        return None
    a, b = (_input(x) for x in node.args)
    out = _output(node)
    if a is None or b is None or out is None:
        return None
    q, fused, (scale, zero_point), output_range = out
    _fuse(node, fused, lowering)
    op = "add" if "add" in str(node.target) else "mul"
    args = (a[0], b[0], *a[1], *b[1], scale, zero_point, *output_range)
    return Int8OpPlan(deps=(a[0], b[0]), op=f"pare::q{op}", args=args, counts=((NAME, op),))


def _mean_plan(node: Node, lowering: LoweringState) -> Plan | None:
    import torch

    x = _input(node.args[0])
    val = node.args[0].meta.get("val")
    if x is None or not isinstance(val, torch.Tensor):
        return None
    rank = val.dim()
    if node.target is torch.ops.aten._adaptive_avg_pool2d.default:
        if rank not in (3, 4) or list(node.args[1]) != [1, 1]:
            return None
        dims, keepdim = 2, True
    else:
        reduced = argument(node, 1, "dim")
        keepdim = bool(argument(node, 2, "keepdim", False))
        if reduced is None or node.kwargs.get("dtype") is not None or len(node.args) > 3 or rank == 0:
            return None
        reduced = sorted({int(d) % rank for d in reduced})
        dims = len(reduced)
        if not dims or reduced != list(range(rank - dims, rank)):
            return None
    out = _output(node)
    if out is None:
        return None
    q, fused, (scale, zero_point), output_range = out
    _fuse(node, fused, lowering)
    args = (x[0], dims, keepdim, *x[1], scale, zero_point, *output_range)
    return Int8OpPlan(deps=(x[0],), op="pare::qmean", args=args, counts=((NAME, "mean"),))


def _avg_pool_plan(node: Node, lowering: LoweringState) -> Plan | None:
    """avg_pool2d(input, kernel_size, stride=[], padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None): its arguments as given
    (the runtime checks them as aten::avg_pool2d does), then the
    quantizations. Counted with max pooling, as "pool"."""
    if any(is_node(v) for v in _flat((*node.args[1:], *node.kwargs.values()))):
        return None
    kernel = [int(k) for k in argument(node, 1, "kernel_size")]
    stride = [int(s) for s in argument(node, 2, "stride", None) or kernel]
    padding = [int(v) for v in argument(node, 3, "padding", [0, 0])]
    ceil_mode = bool(argument(node, 4, "ceil_mode", False))
    count_include_pad = bool(argument(node, 5, "count_include_pad", True))
    divisor = argument(node, 6, "divisor_override", None)
    pooling = (kernel, stride, padding, ceil_mode, count_include_pad, None if divisor is None else int(divisor))
    return _qavg_pool2d(node, pooling, lowering)


def _adaptive_pool_plan(node: Node, lowering: LoweringState) -> Plan | None:
    """Adaptive average pooling to other sizes than 1x1 (pare::qmean's),
    where each output size divides its input's: windows of input / output,
    at that stride (VGG's pool to 7x7, an identity on a 7x7 input, or
    2x2 windows on 14x14). Other sizes (windows that overlap unevenly)
    stay on the reference path."""
    import torch

    val = node.args[0].meta.get("val")
    out_size = list(node.args[1])
    if not isinstance(val, torch.Tensor) or val.dim() not in (3, 4) or len(out_size) != 2:
        return None
    in_size = [val.shape[-2], val.shape[-1]]
    if not all(isinstance(v, int) and v > 0 for v in (*in_size, *out_size)):
        return None
    if any(i % o for i, o in zip(in_size, out_size, strict=True)):
        return None
    kernel = [i // o for i, o in zip(in_size, out_size, strict=True)]
    return _qavg_pool2d(node, (kernel, kernel, [0, 0], False, True, None), lowering)


def _qavg_pool2d(node: Node, pooling: tuple, lowering: LoweringState) -> Plan | None:
    """pare::qavg_pool2d on the int8 input: `pooling` (aten::avg_pool2d's
    arguments after the input), then the quantizations."""
    x = _input(node.args[0])
    out = _output(node) if x is not None else None
    if out is None:
        return None
    q, fused, (scale, zero_point), output_range = out
    _fuse(node, fused, lowering)
    args = (x[0], *pooling, *x[1], scale, zero_point, *output_range)
    return Int8OpPlan(deps=(x[0],), op="pare::qavg_pool2d", args=args, counts=((NAME, "pool"),))


def _lut_plan(node: Node, lowering: LoweringState) -> Plan | None:
    import torch

    from tools.tracer.passes.quantize import _static_per_tensor

    x = _input(node.args[0])
    if x is None or any(is_node(v) for v in (*node.args[1:], *node.kwargs.values())):
        return None
    out = _output(node)
    if out is None:
        return None
    q, fused, _, (lo, hi) = out
    source = node.args[0]
    values = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)
    s_in, z_in, _, _ = _static_per_tensor(source)
    s_out, z_out, qmin, qmax = _static_per_tensor(q)
    with torch.no_grad():
        y = node.target(
            torch.ops.quantized_decomposed.dequantize_per_tensor(values, s_in, z_in, -128, 127, torch.int8),
            *node.args[1:],
            **node.kwargs,
        )
        table = torch.ops.quantized_decomposed.quantize_per_tensor(y, s_out, z_out, qmin, qmax, torch.int8)
    table = table.clamp(lo, hi).contiguous()
    _fuse(node, fused, lowering)
    return Int8OpPlan(deps=(x[0],), op="pare::qlut", args=(x[0], table), counts=((NAME, "lut"),))


def _same_output(node: Node, last: Node, qparams: tuple[float, int], lowering: LoweringState) -> bool:
    """Whether `last`'s only user is a quantize to the full int8 range with
    `qparams`: then the quantize is fused (passes `node`'s int8 value on)."""
    from tools.tracer.nodes import only_user
    from tools.tracer.passes.quantize import _calls, _static_per_tensor

    q = only_user(last)
    if not _calls(q, "quantize_per_tensor") or q.args[0] is not last:
        return False
    p = _static_per_tensor(q)
    if p is None or (p[0], p[1]) != qparams or (p[2], p[3]) != (-128, 127):
        return False
    lowering.fuse(q, last)
    return True


def _max_pool_plan(node: Node, lowering: LoweringState) -> Plan | None:
    """max_pool2d_with_indices whose values alone are read, or max_pool2d
    (which the exporter keeps, the runtime having its float kernel)."""
    import operator

    import torch

    x = _input(node.args[0])
    if x is None:
        return None
    values = node
    if node.target is torch.ops.aten.max_pool2d_with_indices.default:
        users = list(node.users)
        if len(users) != 1 or users[0].target is not operator.getitem or users[0].args[1] != 0:
            return None
        values = users[0]
    tables = () if _same_output(node, values, x[1], lowering) else _requantize(values, [x], lowering)
    if tables is None:
        return None
    kernel = [int(k) for k in argument(node, 1, "kernel_size")]
    stride = [int(s) for s in argument(node, 2, "stride", None) or kernel]
    padding = [int(v) for v in argument(node, 3, "padding", [0, 0])]
    dilation = [int(v) for v in argument(node, 4, "dilation", [1, 1])]
    ceil_mode = bool(argument(node, 5, "ceil_mode", False))
    args = (x[0], kernel, stride, padding, dilation, ceil_mode)
    if values is node:
        return _requantized(Int8AtenPlan(deps=(x[0],), args=args, kwargs={}, counts=((NAME, "pool"),)), tables)
    lowering.fuse(values, node)  # the values' getitem: aten::max_pool2d returns them alone
    return _requantized(Int8MaxPoolValues(deps=(x[0],), args=args, kwargs={}, counts=((NAME, "pool"),)), tables)


def _requantize(last: Node, inputs: list[tuple[Node, tuple[float, int]]], lowering: LoweringState):
    """When `last`'s only user (through a relu / clamp) is a quantize to
    int8 with another scale or zero point than some of `inputs` (or a
    narrower range): that quantize fused, and per such input (the int8
    tensor, the 256-entry table mapping its values onto the output's
    quantization, computed by torch's reference ops). None when no quantize
    to int8 follows, or when an input to map is a constant (lowering maps
    graph values only; the op stays on the reference path)."""
    import torch

    from tools.tracer.passes.quantize import _static_per_tensor

    out = _output(last)
    if out is None:
        return None
    q, fused, (scale, zero_point), (lo, hi) = out
    _, _, qmin, qmax = _static_per_tensor(q)
    values = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)
    tables = []
    for source, (s_in, z_in) in dict(inputs).items():  # a tensor cat with itself: mapped once
        if (s_in, z_in) == (scale, zero_point) and (lo, hi) == (-128, 127):
            continue
        if lowering.is_constant(source):
            return None
        x = torch.ops.quantized_decomposed.dequantize_per_tensor(values, s_in, z_in, -128, 127, torch.int8)
        table = torch.ops.quantized_decomposed.quantize_per_tensor(x, scale, zero_point, qmin, qmax, torch.int8)
        tables.append((source, table.clamp(lo, hi).contiguous()))
    _fuse(last, fused, lowering)
    return tuple(tables)


def _requantized(plan: Plan, tables: tuple) -> Plan:
    """plan, its inputs first mapped through `tables` (_requantize) if any."""
    if not tables:
        return plan
    counts = (*plan.counts, *[(NAME, "lut")] * len(tables))
    return Int8Requantized(deps=plan.deps, inner=plan, tables=tables, counts=counts)


def _cat_plan(node: Node, lowering: LoweringState) -> Plan | None:
    inputs = [_input(t) for t in node.args[0]]
    if not inputs or any(i is None for i in inputs) or len(dict(inputs)) != len(set(inputs)):
        return None  # (one int8 tensor dequantized twice, otherwise)
    if len({i[1] for i in inputs}) == 1 and _same_output(node, node, inputs[0][1], lowering):
        tables = ()
    elif (tables := _requantize(node, inputs, lowering)) is None:
        return None
    sources = [i[0] for i in inputs]
    plan = Int8AtenPlan(
        deps=tuple(sources), args=(sources, *node.args[1:]), kwargs=dict(node.kwargs), counts=((NAME, "cat"),)
    )
    return _requantized(plan, tables)


def _view_plan(node: Node, lowering: LoweringState) -> Plan | None:
    from tools.tracer.view_rewrites import infer_computed_size

    x = _input(node.args[0])
    if x is None or any(is_node(v) for v in _flat(node.args[1:])):
        return None
    if not _same_output(node, node, x[1], lowering):
        return None
    args = list(node.args)
    args[0] = x[0]
    if node.target in _views() and isinstance(args[1], (list, tuple)) and "view" in str(node.target):
        args[1] = infer_computed_size(args[1])
    return Int8AtenPlan(deps=(x[0],), args=tuple(args), kwargs=dict(node.kwargs), counts=((NAME, "view"),))


def _round_trip_plan(node: Node) -> Plan | None:
    """A quantize of a dequantize (through identities: dropout, clone,
    alias) with the same scale and zero point over the full int8 range
    gives back the int8 tensor: an alias of it."""
    import torch

    from tools.tracer.passes.quantize import _calls, _static_per_tensor
    from tools.tracer.plans import Alias

    if not _calls(node, "quantize_per_tensor") or not node.args:
        return None
    identities = (aten := torch.ops.aten).clone.default, aten.alias.default, aten.dropout.default, aten.detach.default
    x = node.args[0]
    while is_node(x) and x.target in identities and len(x.users) == 1 and x.args:
        if x.target is aten.dropout.default and argument(x, 2, "train", False):
            return None
        x = x.args[0]
    source = _input(x)
    if source is None or (p := _static_per_tensor(node)) is None or (p[0], p[1]) != source[1] or p[2:] != (-128, 127):
        return None
    return Alias(deps=(source[0],))


def _flat(xs: Any):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x
