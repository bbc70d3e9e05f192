"""Lowering plans: what each graph node of a method becomes, decided for
every node before anything is emitted (so a node nothing needs drops out
with what only it reads). Each kind of plan is its own type; lowering
(tools/tracer/lowering.py) emits a plan through a table from plan type to
handler, and a pass that plans at lowering time (tools/tracer/passes/)
returns one of these. A new kind of instruction (an int8 op, a delegate
call) is a new plan type here and one handler in that table.

No torch at import: the passes package imports these types, and the tracer
CLI's parser imports the passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.fx import Node


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a node becomes. `deps`: the nodes it reads, lowered before it
    (only when something the outputs depend on needs it)."""

    deps: tuple[Node, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OpPlan(Plan):
    """One instruction calling the node's own operator, on `args` and
    `kwargs` (the graph's, with rewrites applied)."""

    args: tuple
    kwargs: dict


@dataclass(frozen=True, kw_only=True)
class MaxPoolValues(OpPlan):
    """max_pool2d_with_indices whose indices nothing reads, as
    aten::max_pool2d on the same arguments (a rewrite: lowering.REWRITES);
    its values' getitem passes the output on."""


@dataclass(frozen=True, kw_only=True)
class GetItem(Plan):
    """An output of the multi-output instruction `deps[0]` (the node's index)."""


@dataclass(frozen=True, kw_only=True)
class Alias(Plan):
    """The value of `deps[0]`, passed on: an identity op, or an op fused
    into the prepacked layer before it."""


@dataclass(frozen=True, kw_only=True)
class Constant(Plan):
    """A constant tensor (folded at export, or an identity of a constant),
    stored when first used."""


@dataclass(frozen=True, kw_only=True)
class IndexWithNone(Plan):
    """index.Tensor with None entries: permute by `order`, index.Tensor with
    `tensors`, permute by `after` (each permute left out when it is the
    identity). deps[0] is the indexed tensor."""

    order: list[int]
    tensors: tuple
    after: list[int]


@dataclass(frozen=True, kw_only=True)
class AsStridedViews(Plan):
    """as_strided re-viewing its input's elements: the slice / permute
    `steps` (tools/tracer/strided.py), then a view to `sizes`."""

    steps: tuple
    sizes: list


@dataclass(frozen=True, kw_only=True)
class AsStridedCopy(Plan):
    """The runtime's aten::as_strided copy over deps[0] with `sizes` (an
    InputSize entry is the input's size along a dim, read at run time) and
    `strides`."""

    sizes: list
    strides: list[int]


@dataclass(frozen=True)
class InputSize:
    """A size equal to the op's input's size along `dim` (dynamic: read at run time)."""

    dim: int


@dataclass(frozen=True, kw_only=True)
class DelegateCall(Plan):
    """A partition the partitioner gave a backend (tools/tracer/delegation.py):
    pare::delegate_init.<backend> in the init section, pare::delegate_call
    on `deps` (the partition's inputs), one output per getitem."""


@dataclass(frozen=True, kw_only=True)
class Unsupported(Plan):
    """A construct no runtime operator runs; `what` names it in the report."""

    what: str


@dataclass(frozen=True, kw_only=True)
class PrepackedPlan(Plan):
    """A layer on weights packed at export (the prepack_weights pass), with
    the epilogue the fusion passes fuse into it, applied in this order: a
    residual add's other operand, a clamp (output_min, output_max), an
    activation's name (the runtime's Activation: "hardswish", "gelu", ...).
    deps[0] is the layer's input.

    `last`: the layer's last node in the graph (the product, or a view or
    bias add that aliases it), where a fusion looks for the next op.
    `counts`: (pass, what) counted once per instruction emitted;
    `pack_counts`: once per weight packed. The passes that shape a plan say
    what it counts, so each pass reports its own counts."""

    residual: Node | None = None
    clamp: tuple[float, float] | None = None
    activation: str | None = None
    last: Any = None
    counts: tuple[tuple[str, str], ...] = ()
    pack_counts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class LinearPrepack(PrepackedPlan):
    """pare::linear_prepacked on `weight` ((cache key, [out, in] tensor))
    and `bias` (a constant's node, or None)."""

    weight: tuple
    bias: Any


@dataclass(frozen=True)
class ConvLayer:
    """A conv2d_prepack plan's layer: the weight and bias (graph nodes), the
    convolution's parameters, and how the passes run it. Layers that
    compare equal share one packed weight."""

    weight: Any
    bias: Any
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    winograd: int = 0  # the winograd pass's output tile (2 or 4), 0 for none
    pixel_rows: bool = False  # prepack_weights: a layer over few pixels, packed for pixel rows
    channels_last: bool = False  # the channels_last pass: the layer runs on NHWC activations


@dataclass(frozen=True, kw_only=True)
class Conv2dPrepack(PrepackedPlan):
    """pare::conv2d_prepacked running `layer`."""

    layer: ConvLayer


@dataclass(frozen=True)
class Int8Layer:
    """An int8 layer of the quantize pass: its weight's dequantize node (the
    int8 constant and its scales), its bias (None, a float32 constant's
    node, or the node dequantizing an int32 constant), the input's and
    output's (scale, zero point), and a convolution's parameters. Layers
    that compare equal share one packed object. `int8_weight` (numpy int8,
    out channels first) and `requantization` (correction, multiplier,
    offset: pare.quantized_packing.requantization) are what they pack."""

    weight: Any
    bias: Any
    input_quantization: tuple[float, int]
    output_quantization: tuple[float, int]
    stride: tuple[int, ...] = ()
    padding: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    groups: int = 1
    int8_weight: Any = field(default=None, compare=False)
    requantization: tuple = field(default=(), compare=False)


@dataclass(frozen=True, kw_only=True)
class Int8LayerPlan(Plan):
    """An int8 layer (the quantize pass) on deps[0], the int8 tensor its
    input dequantized: the quantize after it (and the clamp before that)
    pass its int8 output on. `output_range`: (output_min, output_max), the
    quantize's range narrowed by a fused clamp. `counts` as PrepackedPlan's."""

    layer: Int8Layer
    output_range: tuple[int, int]
    counts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class QConv2dPrepack(Int8LayerPlan):
    """pare::qconv2d_prepacked running `layer`."""


@dataclass(frozen=True, kw_only=True)
class QLinearPrepack(Int8LayerPlan):
    """pare::qlinear_prepacked running `layer`."""


@dataclass(frozen=True, kw_only=True)
class Int8AtenPlan(OpPlan):
    """The node's own aten operator on int8 values (the quantize pass): an
    op that commutes with quantization (max pooling, cat, views) between a
    dequantize and a quantize with the same scale and zero point, its
    dequantized inputs replaced in `args` by the int8 tensors before them.
    `counts` as PrepackedPlan's."""

    counts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Int8MaxPoolValues(Int8AtenPlan):
    """max_pool2d_with_indices whose values alone are read, on int8 values
    (the quantize pass): aten::max_pool2d on the int8 tensor, as
    MaxPoolValues on float."""


@dataclass(frozen=True, kw_only=True)
class Int8Requantized(Plan):
    """`inner` (an Int8AtenPlan: max pooling or cat) between int8 tensors
    whose quantizations differ (the quantize pass): each (input, table) of
    `tables` first mapped onto the output's quantization by pare::qlut, the
    256-entry table computed at export. Exact: the ops commute with any
    monotonic map. `counts` as PrepackedPlan's (inner's, and "lut" per
    table)."""

    inner: Plan
    tables: tuple[tuple[Node, Any], ...]
    counts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Int8OpPlan(Plan):
    """A pare:: int8 op of the quantize pass (pare::qadd, qmul, qmean, qlut)
    on `args`: graph nodes (their int8 values), torch tensors (stored as
    constants: a lookup table) and scalars. The quantize after it (and the
    clamp before that) pass its int8 output on. `counts` as PrepackedPlan's."""

    op: str
    args: tuple
    counts: tuple[tuple[str, str], ...] = ()
