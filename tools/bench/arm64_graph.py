"""Counting a model's arm64 loop iterations from its exported graph, for
tools/bench/arm64_cost.py (its module doc: the costed loops, the counts and
the record): each convolution by its plan (the weight layouts the
exporter chose, read from the model's program), the int8 layers and
linears by their shapes, the other multiply-add ops and everything else as
uncosted."""

from __future__ import annotations

import math

from tools import REPO_ROOT
from tools.bench.arm64_cost import (
    Conv,
    CostError,
    Count,
    algorithm,
    conv_count,
    int8_conv_count,
    int8_dynamic_linear_count,
    int8_linear_count,
)

_VIEWS = {
    f"aten.{op}" for op in ("view.default", "_unsafe_view.default", "t.default", "transpose.int", "permute.default")
}


def _dequantized(node, static: bool = False) -> bool:
    """Whether `node` is a PT2E dequantize (static: of a per-tensor
    quantized activation or a weight, not a dynamic choose_qparams one),
    through views and transposes."""
    for _ in range(4):
        target = str(getattr(node, "target", ""))
        if "dequantize" in target:
            return not (static and target.endswith(".tensor"))
        if target not in _VIEWS or not getattr(node, "args", None):
            return False
        node = node.args[0]
    return False


# Ops with multiply-adds the costed loops do not run, by their multiply-adds.
def _matmul_macs(target: str, args: list, shapes: dict) -> int | None:
    def shape(a):
        return shapes.get(a)

    if target in ("aten.linear.default",):
        x, w = shape(args[0]), shape(args[1])
        return math.prod(x[:-1]) * w[0] * w[1] if x and w else 0
    if target in ("aten.addmm.default",):
        a, b = shape(args[1]), shape(args[2])
        return a[0] * a[1] * b[1] if a and b else 0
    if target in ("aten.mm.default",):
        a, b = shape(args[0]), shape(args[1])
        return a[0] * a[1] * b[1] if a and b else 0
    if target in ("aten.bmm.default",):
        a, b = shape(args[0]), shape(args[1])
        return a[0] * a[1] * a[2] * b[2] if a and b else 0
    return None


def _concrete(dims, subs: dict) -> tuple[int, ...]:
    # Not int(d) for a SymInt: that is its hint, the size torch.export saw
    # (a dynamic batch's other example), not the input's.
    return tuple(d if isinstance(d, int) else int(d.node.expr.subs(subs)) for d in dims)


def graph_count(ep, example: tuple, layouts: list[tuple[tuple[int, ...], int]], where: str) -> Count:
    """Counts every node of exported program `ep` run on `example` (its
    user inputs): convolutions by their plan (conv2d_prepack layouts
    paired in order, by weight shape), other multiply-add ops and the rest
    as uncosted."""
    import torch

    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user = [n for n in placeholders if n.name in set(ep.graph_signature.user_inputs)]
    tensors = [t for t in example if isinstance(t, torch.Tensor)]
    subs = {}
    for node, tensor in zip(user, tensors):
        for dim, size in zip(node.meta["val"].shape, tensor.shape):
            if not isinstance(dim, int):
                subs[dim.node.expr] = int(size)
    shapes = {}
    for n in ep.graph.nodes:
        val = n.meta.get("val")
        if hasattr(val, "shape"):
            shapes[n] = _concrete(val.shape, subs)
    total = Count()
    convs: list[Conv] = []
    pending = list(layouts)
    for n in ep.graph.nodes:
        if n.op != "call_function":
            continue
        target = str(n.target)
        if target == "aten.convolution.default":
            x, w = shapes[n.args[0]], shapes[n.args[1]]
            stride, padding, dilation, transposed, _, groups = n.args[3:9]
            if any(_dequantized(a) for a in n.args[:2]) and not transposed and len(w) == 4:
                # A PT2E int8 convolution (dequantize -> convolution -> quantize): pare::qconv2d_prepacked.
                window = (w[2], w[3]), tuple(stride), tuple(padding), tuple(dilation)
                total.add(int8_conv_count(Conv(x[0], x[1], w[0], groups, x[2], x[3], *window)))
                continue
            if transposed or len(w) != 4:
                # Each input element (transposed) or output element (1-d, 3-d) meets a weight slice.
                total.macs += math.prod(x if transposed else shapes[n]) * math.prod(w[1:])
                total.uncosted[f"{'transposed ' if transposed else ''}{len(w) - 2}-d convolution"] += 1
                continue
            layout = None
            if pending and pending[0][0] == tuple(w):
                layout = pending.pop(0)[1]
            window = (w[2], w[3]), tuple(stride), tuple(padding), tuple(dilation)
            convs.append(Conv(x[0], x[1], w[0], groups, x[2], x[3], *window, layout))
            continue
        macs = _matmul_macs(target, list(n.args), shapes)
        if target in ("aten.addmm.default", "aten.mm.default"):
            a, b = (n.args[1], n.args[2]) if target == "aten.addmm.default" else n.args[:2]
            if _dequantized(a, static=True) and _dequantized(b, static=True):
                # A PT2E int8 linear layer (dequantize -> addmm / mm -> quantize): pare::qlinear_prepacked.
                (rows, k), (_, features) = shapes[a], shapes[b]
                total.add(int8_linear_count(rows, k, features))
                continue
            if _dequantized(a) and _dequantized(b, static=True):
                # A dynamically quantized linear (choose_qparams -> dequantize.tensor -> addmm / mm): pare::qlinear_dynamic.
                (rows, k), (_, features) = shapes[a], shapes[b]
                total.add(int8_dynamic_linear_count(rows, k, features))
                continue
        if macs is not None:
            total.macs += macs
        if target.startswith("aten.sym_size") or target == "<built-in function getitem>":
            continue
        total.uncosted[target.removeprefix("aten.").removesuffix(".default")] += 1
    # A runtime that selects pixel_rows_kernel (a model with a pixel-rows
    # layer) runs the GEMMs' last 3 and 4 rows with few_rows_kernel too.
    few_rows = (1, 2, 3, 4) if any(algorithm(c) == "pixel_rows" for c in convs) else (1, 2)
    for c in convs:
        total.add(conv_count(c, few_rows))
    if pending:
        raise CostError(
            f"{where}: {len(pending)} conv2d_prepack weights (the first {list(pending[0][0])}) pair with no "
            "convolution of the exported graph; the prepack pass changed the order: pair them by another key"
        )
    return total


def prepack_layouts(program: bytes, method: str) -> list[tuple[tuple[int, ...], int]]:
    """(weight sizes, layout) of each pare::conv2d_prepack of `method`, in order."""
    from pare import program_reader

    info = program_reader.read(program)
    m = next(m for m in info.methods if m.name == method)
    out = []
    for ins in m.instructions:
        if ins.op == "pare::conv2d_prepack":
            sizes, layout = (m.values[v].payload for v in ins.inputs[6:8])
            out.append((tuple(sizes), int(layout)))
    return out


def model_count(name: str) -> tuple[Count, str]:
    """(the count of zoo model `name`'s first method on its first input, that input's shape)."""
    from tools.tracer.errors import TracerError
    from tools.tracer.exporter import export_model, group_inputs
    from tools.tracer.model_spec import load_model_spec

    path = REPO_ROOT / "models" / "zoo" / f"{name}.py"
    if not path.is_file():
        raise CostError(f"no zoo model {name!r} (models/zoo/{name}.py); see docs/model_zoo.md for the zoo's models")
    try:
        spec = load_model_spec(path)
        exported = export_model(spec)
    except TracerError as e:
        raise CostError(f"{name}: cannot export: {str(e).splitlines()[0]}") from None
    group = group_inputs(spec)[0]
    example = spec.inputs[group.indices[0]]
    count = graph_count(
        exported.exported[0], example, prepack_layouts(exported.program, group.name), f"models/zoo/{name}.py"
    )
    shape = "x".join(str(s) for s in example[0].shape) if example else "-"
    return count, shape
