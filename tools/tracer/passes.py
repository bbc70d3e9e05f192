"""AOT graph passes: named rewrites of the core-ATen graph, run by `export`
after torch.export's decompositions and before lowering (docs/tracer.md,
"Graph passes"). They do for torch.export graphs the job PyTorch's
`optimize_for_mobile` does for TorchScript.

Each pass has a name and a one-line description; `PASSES` holds them in the
order they run (the canonical order). A selection is `default` (every pass
in PASSES), `none`, or a comma list of names, minus a blocklist (like
optimize_for_mobile's optimization_blocklist); whatever order a list names
them in, they run in the canonical order. A pass rewrites one method's
ExportedProgram in place and returns what it changed (e.g. `{"folded": 2}`),
which the manifest's debug_info records. A pass that finds nothing to do
leaves the graph untouched, so the program is the same bytes as without it.

New constants (folded weights) are added to the ExportedProgram as lifted
tensor constants; the originals are never modified, since another node may
still read them (lowering stores a constant only if something uses it).

This module imports torch on first use, not at import: the tracer CLI's
parser lists the passes, and its merge and diff commands never import torch.
"""

from __future__ import annotations

import argparse
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pare.packing import CHANNELS_LAST_1X1_MAX_PIXELS, CHANNELS_LAST_DEPTHWISE_MAX_PIXELS
from tools.tracer.errors import TracerError

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram
    from torch.fx import Node

DEFAULT = "default"
NONE = "none"
PREPACK = "prepack_weights"  # applied by lowering, not on the graph
WINOGRAD = "winograd"  # applied by lowering, with prepack_weights
FUSE_ADD = "fuse_add"  # applied by lowering, with prepack_weights
FUSE_CLAMP = "fuse_clamp"  # applied by lowering, with prepack_weights
FUSE_ACTIVATION = "fuse_activation"  # applied by lowering, with prepack_weights
FUSIONS = (FUSE_ADD, FUSE_CLAMP, FUSE_ACTIVATION)
CHANNELS_LAST = "channels_last"  # applied by lowering, with prepack_weights


class UnknownPassError(TracerError):
    """A pass selection names a pass that does not exist."""


@dataclass(frozen=True)
class GraphPass:
    name: str
    description: str  # one line, shown by --help and docs/tracer.md
    # Rewrites the graph in place; returns counts of what it changed. None:
    # the pass is applied by lowering (tools/tracer/lowering.py), which
    # reports its counts (prepack_weights: the layers it packs).
    run: Callable[[PassContext], dict[str, int]] | None


@dataclass(frozen=True)
class PassRun:
    """What one pass changed over every method of a program."""

    name: str
    changes: tuple[tuple[str, int], ...]  # (what, count), e.g. (("folded", 2),)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **dict(self.changes)}

    def describe(self) -> str:
        return f"{self.name} ({', '.join(f'{n} {what}' for what, n in self.changes)})"


# -- selection ------------------------------------------------------------------


def names() -> tuple[str, ...]:
    """Every pass, in the order passes run."""
    return tuple(p.name for p in PASSES)


def _known(what: str = "--passes") -> str:
    alone = f" (or {DEFAULT} or {NONE} alone)" if what == "--passes" else ""
    return f"the passes are {', '.join(names())}{alone}"


def parse_list(text: str, what: str = "--passes") -> tuple[str, ...]:
    """A comma list of pass names, checked (`default` and `none` are
    selections, only accepted alone, by resolve)."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise UnknownPassError(f"{what} {text!r}: empty pass name in the list; {_known(what)}")
    unknown = [item for item in items if item not in names()]
    if unknown:
        raise UnknownPassError(f"{what}: unknown pass {', '.join(map(repr, unknown))}; {_known(what)}")
    return tuple(items)


def resolve(passes: str | Iterable[str] = DEFAULT, skip: str | Iterable[str] = ()) -> tuple[str, ...]:
    """The names of the passes a selection runs, in canonical order.

    `passes`: "default", "none", a comma list ("fold_conv_bn,fold_linear_bn")
    or an iterable of names. `skip`: names (or a comma list) to leave out of
    it. Raises UnknownPassError for a name no pass has."""
    if isinstance(passes, str) and passes.strip() in (DEFAULT, NONE):
        chosen = names() if passes.strip() == DEFAULT else ()
    else:
        chosen = _listed(passes, "--passes")
    skipped = _listed(skip, "--skip-passes")
    return tuple(name for name in names() if name in chosen and name not in skipped)


def _listed(value: str | Iterable[str], what: str) -> tuple[str, ...]:
    text = value if isinstance(value, str) else ",".join(value)
    return parse_list(text, what) if text.strip() else ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--passes and --skip-passes, as `export`, `trace`, `check` and
    tools.bench take them. Read them back with `from_arguments`; `epilog()`
    describes the passes for the parser's help."""
    parser.add_argument(
        "--passes",
        default=DEFAULT,
        type=_selection_argument,
        metavar="LIST",
        help=f"graph passes to run on the exported graph before it is written: {DEFAULT} (every "
        f"pass, the default), {NONE}, or a comma list of {', '.join(names())} (they run in that "
        "order; see below)",
    )
    parser.add_argument(
        "--skip-passes",
        default=(),
        type=_skip_argument,
        metavar="LIST",
        help="comma list of passes to leave out (a blocklist, like optimize_for_mobile's optimization_blocklist)",
    )


def epilog() -> str:
    """The passes, one line each, for a --help epilog."""
    width = max(len(p.name) for p in PASSES)
    return "graph passes, in the order they run:\n" + "\n".join(f"  {p.name:<{width}}  {p.description}" for p in PASSES)


def from_arguments(args: argparse.Namespace) -> tuple[str, ...]:
    return resolve(args.passes, args.skip_passes)


def _selection_argument(text: str) -> str:
    if text.strip() not in (DEFAULT, NONE):
        _checked_argument(text, "--passes")
    return text


def _skip_argument(text: str) -> tuple[str, ...]:
    return _checked_argument(text, "--skip-passes")


def _checked_argument(text: str, flag: str) -> tuple[str, ...]:
    try:
        return parse_list(text, flag)
    except UnknownPassError as e:  # argparse words it "argument --passes: <message>"
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag}: ").removeprefix(f"{flag} ")) from None


# -- running --------------------------------------------------------------------


def run_passes(program: ExportedProgram, selected: Sequence[str]) -> tuple[PassRun, ...]:
    """Runs the selected passes (names from `resolve`) on one method's
    program, in canonical order; returns what each changed."""
    by_name = {p.name: p for p in PASSES}
    unknown = [n for n in selected if n not in by_name]
    if unknown:
        raise UnknownPassError(f"unknown pass {', '.join(map(repr, unknown))}; {_known()}")
    context = PassContext(program)
    runs = []
    for graph_pass in PASSES:
        if graph_pass.name in selected and graph_pass.run is not None:
            changes = graph_pass.run(context)
            runs.append(PassRun(graph_pass.name, tuple(changes.items())))
    if context.changed:
        program.graph.lint()
        program.graph_module.recompile()
    return tuple(runs)


def combine(per_method: Sequence[Sequence[PassRun]]) -> tuple[PassRun, ...]:
    """One PassRun per pass, its counts summed over the methods."""
    totals: dict[str, dict[str, int]] = {}
    for runs in per_method:
        for run in runs:
            counts = totals.setdefault(run.name, {})
            for what, n in run.changes:
                counts[what] = counts.get(what, 0) + n
    return tuple(PassRun(name, tuple(counts.items())) for name, counts in totals.items())


class PassContext:
    """One method's ExportedProgram under rewrite: its constant tensors
    (parameters, buffers, lifted constants) and a way to add new ones."""

    def __init__(self, program: ExportedProgram):
        from torch.export.graph_signature import InputKind

        self.program = program
        self.graph = program.graph
        self.changed = False
        self._constants: dict[Node, torch.Tensor] = {}
        placeholders = {n.name: n for n in self.graph.nodes if n.op == "placeholder"}
        for spec in program.graph_signature.input_specs:
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                value = program.state_dict.get(spec.target)
                if value is None:
                    value = program.constants.get(spec.target)
                if hasattr(value, "detach"):
                    self._constants[placeholders[spec.arg.name]] = value.detach()

    def constant(self, x: Any) -> torch.Tensor | None:
        """The tensor a graph argument always holds, or None if it varies."""
        return self._constants.get(x) if _is_node(x) else None

    def add_constant(self, tensor: torch.Tensor, hint: str) -> Node:
        """A new lifted tensor constant holding `tensor`, as a placeholder
        placed (in the graph and the signature) before the user inputs."""
        from torch._guards import detect_fake_mode
        from torch.export.graph_signature import InputKind, InputSpec, TensorArgument

        program = self.program
        specs = program.graph_signature.input_specs
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        user_index = next((i for i, s in enumerate(specs) if s.kind == InputKind.USER_INPUT), len(specs))
        if user_index < len(placeholders):
            where = self.graph.inserting_before(placeholders[user_index])
        elif placeholders:
            where = self.graph.inserting_after(placeholders[-1])
        else:
            where = self.graph.inserting_before(next(iter(self.graph.nodes)))
        with where:  # the graph makes the name unique among its nodes; the signature's target must be too
            node = self.graph.placeholder(f"c_pare_{hint}")
            while node.name in program.state_dict or node.name in program.constants:
                self.graph.erase_node(node)
                node = self.graph.placeholder(f"c_pare_{hint}")
        node.target = node.name  # a placeholder's target is its argument name in the generated code
        fake_mode = detect_fake_mode([n.meta.get("val") for n in placeholders])
        node.meta["val"] = fake_mode.from_tensor(tensor, static_shapes=True) if fake_mode else tensor
        specs.insert(user_index, InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name), node.name))
        program.constants[node.name] = tensor
        self._constants[node] = tensor
        self.changed = True
        return node

    def rename_output(self, old: str, new: str) -> None:
        """The signature names outputs by node: after `old`'s uses moved to
        `new`, an output that was `old` is `new`."""
        from torch.export.graph_signature import TensorArgument

        for spec in self.program.graph_signature.output_specs:
            if isinstance(spec.arg, TensorArgument) and spec.arg.name == old:
                spec.arg = TensorArgument(new)


def _is_node(x: Any) -> bool:
    from torch.fx import Node

    return isinstance(x, Node)


def _argument(node: Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


# -- batch-norm folding ---------------------------------------------------------
#
# Eval batch norm is y = (x - mean) / sqrt(var + eps) * gamma + beta per
# channel: an affine map per output channel of the conv or linear before it,
# which moves into that layer's weight (scale) and bias (scale and shift).
# The folded weights are computed in float64 and cast back once to the
# weight's dtype: eager rounds the layer's output and then each step of the
# normalisation, the folded layer rounds only its scaled weights, and doing
# that scaling in float32 would add roundings of its own; in float64 the
# folded model stays within the float32 tolerance of torch eager.


@dataclass(frozen=True)
class _Affine:
    """A batch norm as a per-channel scale and shift (float64)."""

    scale: torch.Tensor
    shift: torch.Tensor
    users: tuple[Node, ...]  # the getitems of its output 0: what reads the normalised tensor


def _batch_norms(context: PassContext):
    """(batch norm, the node it normalises) for every eval batch norm."""
    import torch

    target = torch.ops.aten._native_batch_norm_legit_no_training.default
    for bn in list(context.graph.nodes):
        if bn.op == "call_function" and bn.target is target and _is_node(bn.args[0]):
            yield bn, bn.args[0]


def _foldable_affine(context: PassContext, bn: Node, layer: Node) -> _Affine | None:
    """The scale and shift of a batch norm that can fold into `layer`, the
    node before it: nothing else reads the layer's output (it needs it
    unnormalised), only the batch norm's output 0 is read, its statistics
    and affine parameters are constants, and it keeps the layer's dtype."""
    import torch

    if len(layer.users) != 1:
        return None
    weight, bias = _argument(bn, 1, "weight"), _argument(bn, 2, "bias")
    mean, var = context.constant(_argument(bn, 3, "running_mean")), context.constant(_argument(bn, 4, "running_var"))
    eps = _argument(bn, 6, "eps")
    gamma = context.constant(weight) if weight is not None else None
    beta = context.constant(bias) if bias is not None else None
    if (
        mean is None
        or var is None
        or (weight is not None and gamma is None)
        or (bias is not None and beta is None)
        or not isinstance(eps, (int, float))
    ):
        return None
    tensors = [t for t in (mean, var, gamma, beta) if t is not None]
    if not all(t.is_floating_point() and t.dim() == 1 and t.numel() == mean.numel() for t in tensors):
        return None
    users = tuple(bn.users)
    if not users or not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
        return None
    dtypes = {getattr(n.meta.get("val"), "dtype", None) for n in (layer, *users)}
    if len(dtypes) != 1 or None in dtypes:
        return None
    scale = torch.rsqrt(var.double() + float(eps))
    if gamma is not None:
        scale = scale * gamma.double()
    shift = -mean.double() * scale
    if beta is not None:
        shift = shift + beta.double()
    return _Affine(scale, shift, users)


def _replace_batch_norm(context: PassContext, bn: Node, affine: _Affine, result: Node) -> None:
    for getitem in affine.users:
        getitem.replace_all_uses_with(result)
        context.rename_output(getitem.name, result.name)
        context.graph.erase_node(getitem)
    context.graph.erase_node(bn)
    context.changed = True


def _fold_conv_bn(context: PassContext) -> dict[str, int]:
    """convolution (1-3d; grouped, depthwise, transposed) -> batch norm."""
    import torch

    folded = 0
    for bn, conv in _batch_norms(context):
        if conv.target is not torch.ops.aten.convolution.default:
            continue
        affine = _foldable_affine(context, bn, conv)
        weight, bias = context.constant(_argument(conv, 1, "weight")), _argument(conv, 2, "bias")
        bias_value = context.constant(bias) if bias is not None else None
        transposed, groups = _argument(conv, 6, "transposed"), _argument(conv, 8, "groups")
        if (
            affine is None
            or weight is None
            or not weight.is_floating_point()
            or weight.dim() < 3
            or (bias is not None and (bias_value is None or not bias_value.is_floating_point()))
            or not isinstance(groups, int)
            or not isinstance(transposed, bool)
        ):
            continue
        # A weight element's output channel: dim 0 of [out, in/groups, k...];
        # transposed, the weight is [in, out/groups, k...] and its rows of
        # group g (g*in/groups onwards) feed outputs g*out/groups + dim 1.
        out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
        if out_channels != affine.scale.numel():
            continue
        kernel = [1] * (weight.dim() - 2)
        w64 = weight.double()
        if transposed:
            grouped = w64.reshape(groups, weight.shape[0] // groups, *weight.shape[1:])
            w64 = (grouped * affine.scale.reshape(groups, 1, weight.shape[1], *kernel)).reshape(weight.shape)
        else:
            w64 = w64 * affine.scale.reshape(-1, 1, *kernel)
        b64 = affine.shift if bias_value is None else bias_value.double() * affine.scale + affine.shift
        new_weight = context.add_constant(w64.to(weight.dtype).contiguous(), "conv_bn_weight")
        new_bias = context.add_constant(
            b64.to(weight.dtype if bias_value is None else bias_value.dtype), "conv_bn_bias"
        )
        args = list(conv.args)
        args[1:3] = [new_weight, new_bias]
        conv.args = tuple(args)
        _replace_batch_norm(context, bn, affine, conv)
        folded += 1
    return {"folded": folded}


def _fold_linear_bn(context: PassContext) -> dict[str, int]:
    """addmm / mm on a constant weight (as nn.Linear lowers) -> batch norm 1d
    (a 2-d [batch, features] tensor: the features are its channels)."""
    import torch

    aten = torch.ops.aten
    folded = 0
    for bn, linear in _batch_norms(context):
        if linear.target not in (aten.addmm.default, aten.mm.default):
            continue
        affine = _foldable_affine(context, bn, linear)
        if affine is None:
            continue
        if linear.target is aten.addmm.default:
            if _argument(linear, 3, "beta", 1) != 1 or _argument(linear, 4, "alpha", 1) != 1:
                continue
            bias, x, mat2 = linear.args[:3]
            bias_value = context.constant(bias)
            if bias_value is None or not bias_value.is_floating_point() or bias_value.dim() != 1:
                continue
        else:
            (x, mat2), bias_value = linear.args[:2], None
        matrix = _constant_matrix(context, mat2)  # [in, out]
        if (
            matrix is None
            or matrix.shape[1] != affine.scale.numel()
            or (bias_value is not None and bias_value.numel() != matrix.shape[1])
        ):
            continue
        m64 = matrix.double() * affine.scale.reshape(1, -1)
        b64 = affine.shift if bias_value is None else bias_value.double() * affine.scale + affine.shift
        new_matrix = context.add_constant(m64.to(matrix.dtype).contiguous(), "linear_bn_weight")
        new_bias = context.add_constant(
            b64.to(matrix.dtype if bias_value is None else bias_value.dtype), "linear_bn_bias"
        )
        if linear.target is aten.addmm.default:
            linear.args = (new_bias, x, new_matrix, *linear.args[3:])
            result = linear
        else:  # mm has no bias: addmm adds the folded one
            with context.graph.inserting_before(linear):
                result = context.graph.call_function(aten.addmm.default, (new_bias, x, new_matrix))
            result.meta = dict(linear.meta)
        _replace_batch_norm(context, bn, affine, result)
        if result is not linear:
            context.graph.erase_node(linear)
        if _is_node(mat2) and not mat2.users and mat2.op == "call_function":
            context.graph.erase_node(mat2)  # the transposition of the original weight
        folded += 1
    return {"folded": folded}


def _constant_matrix(context: PassContext, mat2: Any) -> torch.Tensor | None:
    """The [in, out] matrix `mat2` always holds: a constant, or a
    transposition of a 2-d constant (nn.Linear's weight.t())."""
    import torch

    aten = torch.ops.aten
    value = context.constant(mat2)
    if value is None and _is_node(mat2) and mat2.args:
        source = context.constant(mat2.args[0])
        transposes = (
            source is not None
            and source.dim() == 2
            and (
                mat2.target is aten.t.default
                or (mat2.target is aten.transpose.int and {d % 2 for d in mat2.args[1:3]} == {0, 1})
                or (mat2.target is aten.permute.default and [d % 2 for d in mat2.args[1]] == [1, 0])
            )
        )
        if transposes:
            value = source.t()
    if value is None or value.dim() != 2 or not value.is_floating_point():
        return None
    return value


PASSES: tuple[GraphPass, ...] = (
    GraphPass(
        "fold_conv_bn",
        "eval batch norm after a convolution with a constant weight -> that convolution's weight and bias",
        _fold_conv_bn,
    ),
    GraphPass(
        "fold_linear_bn",
        "eval batch norm 1d after a linear (addmm/mm) with a constant weight -> that linear's weight and bias",
        _fold_linear_bn,
    ),
    GraphPass(
        PREPACK,
        "linear (addmm/mm, bmm on a weight expanded over the batch, a constant bias add after "
        "it) and conv2d with constant float32 weights -> pare::linear_prepacked / pare::conv2d_prepacked "
        "(weights packed at export, used in place)",
        None,
    ),
    GraphPass(
        WINOGRAD,
        "prepacked 3x3 conv2d with stride 1, no dilation, at least 8 input channels per group "
        "and 9 2x2 output tiles -> its filters transformed for Winograd F(2x2, 3x3), or "
        "F(4x4, 3x3) from 9 4x4 output tiles (fewer multiplies; needs prepack_weights)",
        None,
    ),
    GraphPass(
        FUSE_ADD,
        "add of a prepacked linear or conv2d's output (its only user) and an earlier tensor of "
        "the same sizes -> that op's residual (needs prepack_weights)",
        None,
    ),
    GraphPass(
        FUSE_CLAMP,
        "relu, relu6 / hardtanh or clamp with constant bounds, the only user of a prepacked "
        "linear or conv2d (or of its fused add) -> that op's output_min / output_max (needs "
        "prepack_weights)",
        None,
    ),
    GraphPass(
        FUSE_ACTIVATION,
        "hardswish, hardsigmoid, sigmoid, silu or gelu, the only user of a prepacked linear "
        "or conv2d (or of its fused add) -> that op's activation (needs prepack_weights)",
        None,
    ),
    GraphPass(
        CHANNELS_LAST,
        "prepacked depthwise conv2d over 2 to "
        f"{CHANNELS_LAST_DEPTHWISE_MAX_PIXELS} output pixels and 1x1 conv2d over 2 to "
        f"{CHANNELS_LAST_1X1_MAX_PIXELS} -> run "
        "on channels-last (NHWC) activations, with an aten::clone layout conversion wherever NHWC and "
        "NCHW activations meet (needs prepack_weights)",
        None,
    ),
)
