"""Lowering one core-ATen ExportedProgram into a method of a Pare program.

Each `call_function` node the outputs depend on becomes one instruction,
its arguments passed positionally in schema order (keyword-only arguments
included, trailing defaults left out: kernels apply them). What is not an
operator call is resolved here instead:

* placeholders: user inputs become method inputs (a dynamic dim is declared
  as "any size"); parameters, buffers and lifted tensor constants become
  constant tensors, stored once per method and only if used;
* `getitem` on a multi-output op picks one of the instruction's outputs;
* `index.Tensor` with None entries becomes permute + index.Tensor + permute
  (so its programs stay format 1.0); `index_put`'s `Tensor?[]` indices keep
  their None entries (format 1.1 tensor lists);
* `device`, `layout` and `pin_memory` arguments are dropped (passed as None:
  Pare runs on the CPU with strided tensors), `dtype` becomes its ScalarType
  code, `memory_format` its c10::MemoryFormat code (tools/tracer/arguments.py);
* symbolic sizes come from `aten::sym_size.int` instructions ("int" values)
  and are passed as int-list elements; an int-list element computed by
  SymInt arithmetic (`s0 * 3`) has no runtime operator, so in a `view` it is
  replaced by -1 (the one size view infers) and anywhere else reported;
* buffers the model mutates (torch.export's BUFFER_MUTATION outputs:
  `self.k_cache.index_copy_(...)`, `index_put_`, `copy_`) become the
  method's state (program format 1.2): the buffer's value at export is the
  initial value, and the mutated value is written back after every call,
  in place (its producer, e.g. `index_put`, writes into the state's
  storage) when no later instruction reads the buffer or a view of it
  (tools/tracer/state_updates.py);
* torch.export's runtime assertions are dropped (nothing uses their results);
* `alias`/`detach`, and a `clone` or same-dtype `_to_copy` of a tensor that
  is already contiguous, are the identity in a functional graph: they pass
  their input on (a copy that makes a tensor contiguous is kept, since a
  `view` downstream may need it);
* an op whose tensor inputs are all constants is evaluated now in torch and
  becomes a constant (e.g. `permute` of a linear weight), unless its result
  is larger than its largest input (so folding never grows the program much)
  or the op draws random numbers.

Lowering plans every node first (a typed plan, tools/tracer/plans.py), so
what nothing needs drops out, then emits the plans the outputs need through
HANDLERS, a table from plan type to handler. The passes that act at
lowering time (tools/tracer/passes/: quantize, prepack_weights, winograd,
the fusions, channels_last) plan the nodes they claim; lowering emits their
plans as it does its own (the `pare::*_prepack` calls in the method's init
section, their weights packed by pare/packing.py), keeps each activation in
the layout its producer wrote, and tallies what the plans count for their
passes.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true

from pare import dtypes as pare_dtypes
from pare.program import DELEGATE_CALL, DELEGATE_INIT_PREFIX, MethodBuilder, ProgramError, Value
from tools.tracer import passes as graph_passes
from tools.tracer.arguments import (
    MEMORY_FORMAT_CODES,
    UnsupportedValue,
    encode_argument,
    encode_arguments,
    op_name,
    pare_dtype,
    returns_of,
    tensors_in,
)
from tools.tracer.delegation import META_KEY as DELEGATE_META_KEY
from tools.tracer.delegation import delegate_call
from tools.tracer.errors import OpUse, TracerError
from tools.tracer.lowering_int8 import lower_int8_layer, lower_int8_op, lower_int8_requantized
from tools.tracer.nodes import VIEW_OPS, nodes_in
from tools.tracer.plans import (
    Alias,
    AsStridedCopy,
    AsStridedViews,
    Constant,
    Conv2dPrepack,
    DelegateCall,
    GetItem,
    IndexWithNone,
    InputSize,
    Int8AtenPlan,
    Int8LayerPlan,
    Int8MaxPoolValues,
    Int8OpPlan,
    Int8Requantized,
    LinearPrepack,
    MaxPoolValues,
    OpPlan,
    Plan,
    PrepackedPlan,
    QConv2dPrepack,
    QLinearPrepack,
    Unsupported,
)
from tools.tracer.sources import source_of
from tools.tracer.state_updates import updates_in_place
from tools.tracer.strided import Slice
from tools.tracer.view_rewrites import (
    as_strided_plan,
    index_with_none_plan,
    infer_computed_size,
    max_pool_values_plan,
    unfold_plan,
)

__all__ = ["IDENTITY_OPS", "REWRITES", "VIEW_OPS", "LoweringReport", "MethodLowering", "op_name", "source_of"]

aten = torch.ops.aten

# Ops that can be the identity in a functional graph (_is_identity decides).
IDENTITY_OPS = (
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten._to_copy.default,
)
# What _plan turns these ops into before the runtime sees them
# (tools/tracer/view_rewrites.py; the coverage report, docs/coverage.md,
# shows it next to the op).
REWRITES = {
    aten.as_strided.default: "slice / permute / view where they re-view the input's elements "
    "(tools/tracer/strided.py), else the as_strided copy kernel on a contiguous input",
    aten.unfold.default: "the as_strided copy kernel",
    aten.index.Tensor: "with None entries: permute, index.Tensor without None, permute",
    aten.max_pool2d_with_indices.default: "aten::max_pool2d where nothing reads the indices",
}
# Symbolic-int arithmetic torch.export records as Python operators.
SYMINT_OPERATORS = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.truediv: "/",
    operator.neg: "neg",
    operator.pow: "**",
    torch.sym_max: "max",
    torch.sym_min: "min",
    torch.sym_float: "float",
    torch.sym_int: "int",
    torch.sym_sum: "sum",
}

# PT2E's quantize / dequantize operators (runtime/kernels/quantized/,
# docs/quantization.md): never folded into float constants at export.
QUANTIZED_NAMESPACE = "quantized_decomposed"

LINEAR_PREPACK = "pare::linear_prepack"
LINEAR_PREPACKED = "pare::linear_prepacked"
CONV2D_PREPACK = "pare::conv2d_prepack"
CONV2D_PREPACKED = "pare::conv2d_prepacked"


@dataclass
class LoweringReport:
    """Operators a lowered method calls (every use, with its source line) and
    constructs no runtime operator can run. (What each pass changed is the
    pass's own report: passes.MethodPasses.runs.)"""

    uses: dict[str, list[OpUse]] = field(default_factory=lambda: defaultdict(list))
    unsupported: dict[str, list[OpUse]] = field(default_factory=lambda: defaultdict(list))


class MethodLowering:
    """Lowers `ep` (core ATen, after run_decompositions) into `mb`, with the
    lowering-time hooks of `passes` (the selected passes' MethodPasses; by
    default none, or prepack_weights alone with `prepack=True`)."""

    def __init__(
        self,
        mb: MethodBuilder,
        ep: ExportedProgram,
        *,
        model_file: Path | None,
        report: LoweringReport,
        passes: graph_passes.MethodPasses | None = None,
        prepack: bool = False,
    ):
        self.mb = mb
        self.ep = ep
        if passes is None:
            passes = graph_passes.MethodPasses((graph_passes.PREPACK,) if prepack else ())
        self.passes = passes
        self.model_file = model_file
        self.report = report
        self.graph = ep.graph_module.graph
        self.constants: dict[Node, torch.Tensor] = {}
        self.states: dict[Node, tuple[str, torch.Tensor]] = {}  # mutated buffers: name, initial value
        self.user_inputs: list[Node] = []
        self.env: dict[Node, Any] = {}
        self._constant_values: dict[Node, Value] = {}
        self._canonical: dict[Node, Node] = {}  # alias of a constant -> that constant's node
        self._packed: dict[tuple, Value] = {}
        self._fused: dict[Node, Node] = {}  # a fused epilogue op -> the node before it (it aliases that)
        self._nhwc: dict[Node, Value] = {}  # a node whose value exists channels-last -> that value
        self._converted: dict[tuple[Value, int], Value] = {}  # (value, memory format) -> its conversion
        self._order = {n: i for i, n in enumerate(self.graph.nodes)}

    # -- entry point ----------------------------------------------------------

    def lower(self) -> None:
        self._classify_placeholders()
        output_node = next(n for n in self.graph.nodes if n.op == "output")
        self._check_outputs()
        plans = {n: self._plan(n) for n in self.graph.nodes if n.op == "call_function"}
        needed = self._needed(output_node, plans)
        for node in self.user_inputs:
            self.env[node] = self._declare_input(node)
        for node, (name, initial) in self.states.items():
            pare_dtype(initial.dtype, f"buffer {name!r}")
            self.env[node] = self.mb.state(name, initial.contiguous())
        for node in self.graph.nodes:
            if node.op == "call_function" and node in needed:
                self._lower_node(node, plans[node])
            elif node.op == "get_attr" and node in needed:
                raise TracerError(
                    f"the exported graph reads attribute {node.target!r} directly (get_attr), which "
                    "Pare cannot lower; keep tensors as parameters or buffers of the module"
                )
        if self.report.unsupported:
            return  # the caller reports them; nothing will run
        outputs = output_node.args[0]
        user_outputs = [
            o for o, spec in zip(outputs, self.ep.graph_signature.output_specs) if spec.kind == OutputKind.USER_OUTPUT
        ]
        for out in user_outputs:
            self.mb.output(self._value_of(out))
        by_target = {name: node for node, (name, _) in self.states.items()}
        for out, spec in zip(outputs, self.ep.graph_signature.output_specs):
            if spec.kind == OutputKind.BUFFER_MUTATION and out is not by_target[spec.target]:
                state = by_target[spec.target]
                in_place = updates_in_place(state, out, plans, set(self._nhwc), self.comes_before)
                self.mb.update_state(self.env[state], self._value_of(out), in_place)

    # -- graph inspection -----------------------------------------------------

    def _classify_placeholders(self) -> None:
        by_name = {n.name: n for n in self.graph.nodes if n.op == "placeholder"}
        mutated = {
            spec.target for spec in self.ep.graph_signature.output_specs if spec.kind == OutputKind.BUFFER_MUTATION
        }
        for spec in self.ep.graph_signature.input_specs:
            node = by_name[spec.arg.name]
            if spec.kind == InputKind.USER_INPUT:
                self.user_inputs.append(node)
            elif spec.kind == InputKind.BUFFER and spec.target in mutated:
                self.states[node] = (spec.target, self.ep.state_dict[spec.target].detach().clone())
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                value = self.ep.state_dict.get(spec.target)
                if value is None:
                    value = self.ep.constants.get(spec.target)
                if not isinstance(value, torch.Tensor):
                    raise TracerError(
                        f"constant {spec.target!r} of the exported program is not a tensor "
                        f"({type(value).__name__}); Pare programs hold tensor constants only"
                    )
                self.constants[node] = value.detach()
            else:
                raise TracerError(
                    f"the exported program takes a {spec.kind.name.lower()} input ({spec.target!r}); "
                    "Pare programs take tensors only (custom objects and effect tokens are not "
                    "supported)"
                )

    def _check_outputs(self) -> None:
        for spec in self.ep.graph_signature.output_specs:
            if spec.kind == OutputKind.USER_OUTPUT:
                continue
            if spec.kind == OutputKind.BUFFER_MUTATION:
                continue  # the method's state
            if spec.kind == OutputKind.USER_INPUT_MUTATION:
                raise TracerError(
                    f"the model mutates its input {spec.target!r} in place; Pare programs cannot "
                    "write to inputs: return a new tensor instead of an in-place op"
                )
            raise TracerError(
                f"the exported program has a {spec.kind.name.lower()} output, which Pare programs "
                "cannot express; make forward() side-effect free"
            )

    def is_constant(self, node: Any) -> bool:
        return isinstance(node, Node) and node in self.constants

    def comes_before(self, a: Node, b: Node) -> bool:
        return self._order.get(a, len(self._order)) < self._order[b]

    def fuse(self, node: Node, into: Node) -> None:
        self._fused[node] = into

    # -- planning (rewrites decided before lowering, so dead inputs drop out) --

    def _plan(self, node: Node) -> Plan:
        target = node.target
        if node in self._fused:  # it runs inside the prepacked layer before it, as its epilogue
            return Alias(deps=(self._fused[node],))
        if target is operator.getitem:
            return GetItem(deps=(node.args[0],))
        if target is delegate_call:
            return DelegateCall(deps=tuple(node.args))
        if isinstance(target, torch._ops.OpOverload):
            if target in IDENTITY_OPS and self._is_identity(node):
                source = node.args[0]
                if self.is_constant(source):
                    self.constants[node] = self.constants[source]
                    self._canonical[node] = self._canonical.get(source, source)
                    return Constant()
                return Alias(deps=(source,))
            if self._fold(node):
                return Constant()
            plan = self.passes.plan(node, self)
            if plan is not None:
                return plan
            if target is aten.index.Tensor and any(i is None for i in node.args[1]):
                return index_with_none_plan(node)
            if target is aten.as_strided.default:
                return as_strided_plan(node)
            if target is aten.unfold.default:
                return unfold_plan(node)
            if target is aten.max_pool2d_with_indices.default:
                plan = max_pool_values_plan(node, self.fuse)
                if plan is not None:
                    return plan
            args = list(node.args)
            if target in VIEW_OPS and len(args) > 1 and isinstance(args[1], (list, tuple)):
                args[1] = infer_computed_size(args[1])
            kwargs = dict(node.kwargs)
            deps = [n for n in nodes_in((args, kwargs))]
            return OpPlan(deps=tuple(deps), args=tuple(args), kwargs=kwargs)
        if target in SYMINT_OPERATORS:
            return Unsupported(
                what=f"SymInt arithmetic `{SYMINT_OPERATORS[target]}` "
                f"({_callable_name(target)}) on a dynamic size (no runtime operator computes sizes: keep "
                "that dim static, or do not return or pass on the computed size)",
            )
        return Unsupported(what=_callable_name(target))

    def _is_identity(self, node: Node) -> bool:
        if node.target in (aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default):
            return True
        source = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
        if not isinstance(source, torch.Tensor):
            return False
        if node.target is aten._to_copy.default and node.kwargs.get("dtype") not in (None, source.dtype):
            return False
        if node.kwargs.get("memory_format") not in (None, torch.contiguous_format, torch.preserve_format):
            return False
        # A copy of a tensor that is already contiguous changes nothing; a
        # copy that makes one contiguous matters to a view downstream.
        try:
            return bool(statically_known_true(source.is_contiguous()))
        except Exception:  # symbolic strides torch cannot decide
            return False

    def _fold(self, node: Node) -> bool:
        """Evaluates `node` now when every tensor it reads is a constant."""
        op = node.target
        inputs = list(nodes_in((node.args, node.kwargs)))
        if not inputs or not all(self.is_constant(n) for n in inputs) or torch.Tag.nondeterministic_seeded in op.tags:
            return False
        if op.namespace == QUANTIZED_NAMESPACE:
            # A PT2E weight stays int8 in the program, a quarter of the
            # float bytes, and is dequantized by the runtime's kernel.
            return False
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return False
        try:
            pare_dtypes.get(val.dtype)
        except (TypeError, ValueError):
            return False
        if val.numel() > max(self.constants[n].numel() for n in inputs):
            return False

        def substitute(x):
            if isinstance(x, Node):
                return self.constants[x]
            if isinstance(x, (list, tuple)):
                return type(x)(substitute(i) for i in x)
            return x

        try:
            with torch.no_grad():
                value = op(*substitute(node.args), **{k: substitute(v) for k, v in node.kwargs.items()})
        except Exception:  # leave it to the runtime, which reports its own errors
            return False
        if not isinstance(value, torch.Tensor):
            return False
        self.constants[node] = value.contiguous()
        return True

    def _in_layout(self, x: Node, channels_last: bool) -> Value:
        """x's value in the layout a reader takes: channels-last for a layer
        the channels_last pass runs channels-last, else as the program's other ops take
        it; a conversion (aten::clone with that memory format) is placed
        before its first reader that needs it, and shared."""
        if channels_last and x in self._nhwc:
            return self._nhwc[x]
        if not channels_last and x not in self._nhwc:
            return self._value_of(x)
        value = self._nhwc[x] if x in self._nhwc else self._value_of(x)
        fmt = MEMORY_FORMAT_CODES[torch.channels_last if channels_last else torch.contiguous_format]
        if (value, fmt) not in self._converted:
            self._converted[(value, fmt)] = self.mb.op("aten::clone", value, fmt)
            self.report.uses["aten::clone"].append(source_of(x, self.model_file))
            self.passes.count(graph_passes.CHANNELS_LAST, "conversions")
        return self._converted[(value, fmt)]

    def _needed(self, output_node: Node, plans: dict[Node, Plan]) -> set[Node]:
        needed: set[Node] = set()
        stack = list(nodes_in(output_node.args))
        while stack:
            node = stack.pop()
            if node in needed:
                continue
            needed.add(node)
            if node.op == "call_function":
                stack.extend(plans[node].deps)
        return needed

    # -- lowering -------------------------------------------------------------

    def _declare_input(self, node: Node) -> Value:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise TracerError(f"input {node.name!r} is a {type(val).__name__}; Pare programs take tensors only")
        shape = [int(s) if is_concrete_int(s) else None for s in val.shape]
        return self.mb.input(pare_dtype(val.dtype, f"input {node.name!r}"), shape)

    def _constant(self, node: Node) -> Value:
        node = self._canonical.get(node, node)
        if node not in self._constant_values:
            tensor = self.constants[node]
            pare_dtype(tensor.dtype, f"constant {node.name!r}")
            self._constant_values[node] = self.mb.constant(tensor)
        return self._constant_values[node]

    def _value_of(self, x: Any) -> Any:
        if isinstance(x, Node):
            if x in self.constants:
                return self._constant(x)
            if x in self._nhwc:  # read by an op that takes NCHW (the conversion is shared)
                return self._in_layout(x, channels_last=False)
            return self.env[x]
        return x

    def _lower_node(self, node: Node, plan: Plan) -> None:
        use = source_of(node, self.model_file)
        HANDLERS[type(plan)](self, node, plan, use)
        if isinstance(plan, (PrepackedPlan, Int8LayerPlan, Int8AtenPlan, Int8OpPlan, Int8Requantized)):
            for name, what in plan.counts:
                self.passes.count(name, what)

    def _lower_getitem(self, node: Node, plan: GetItem, use: OpUse) -> None:
        source = self.env[node.args[0]]
        self.env[node] = source if isinstance(source, UnsupportedValue) else source[node.args[1]]

    def _lower_constant(self, node: Node, plan: Constant, use: OpUse) -> None:
        pass  # made a constant Value when first used

    def _lower_index_with_none(self, node: Node, plan: IndexWithNone, use: OpUse) -> None:
        x = self._value_of(plan.deps[0])
        if plan.order != sorted(plan.order):
            x = self.mb.op("aten::permute", x, plan.order)
            self.report.uses["aten::permute"].append(use)
        y = self.mb.op("aten::index.Tensor", x, [self._value_of(t) for t in plan.tensors])
        self.report.uses["aten::index.Tensor"].append(use)
        if plan.after != sorted(plan.after):
            y = self.mb.op("aten::permute", y, plan.after)
            self.report.uses["aten::permute"].append(use)
        self.env[node] = y

    def _lower_as_strided_views(self, node: Node, plan: AsStridedViews, use: OpUse) -> None:
        x = self._value_of(plan.deps[0])
        for step in plan.steps:
            if isinstance(step, Slice):
                x = self.mb.op("aten::slice.Tensor", x, step.dim, step.start, step.end)
                self.report.uses["aten::slice.Tensor"].append(use)
            else:
                x = self.mb.op("aten::permute", x, list(step.order))
                self.report.uses["aten::permute"].append(use)
        self.env[node] = self.mb.op(
            "aten::view", x, [encode_argument(s, node, "size", self._value_of, self.model_file) for s in plan.sizes]
        )
        self.report.uses["aten::view"].append(use)

    def _lower_as_strided_copy(self, node: Node, plan: AsStridedCopy, use: OpUse) -> None:
        x = self._value_of(plan.deps[0])
        size_values = []
        for size in plan.sizes:
            if isinstance(size, InputSize):
                size = self.mb.op("aten::sym_size.int", x, size.dim, returns="int")
                self.report.uses["aten::sym_size.int"].append(use)
            size_values.append(size)
        self.env[node] = self.mb.op("aten::as_strided", x, size_values, plan.strides)
        self.report.uses["aten::as_strided"].append(use)

    def _lower_alias(self, node: Node, plan: Alias, use: OpUse) -> None:
        if plan.deps[0] in self._nhwc:  # stays channels-last until a reader needs it otherwise
            self._nhwc[node] = self._nhwc[plan.deps[0]]
        else:
            self.env[node] = self._value_of(plan.deps[0])

    def _lower_delegate_call(self, node: Node, plan: DelegateCall, use: OpUse) -> None:
        part = node.meta[DELEGATE_META_KEY]
        inputs = [self._value_of(x) for x in plan.deps]
        if any(isinstance(x, UnsupportedValue) for x in inputs):
            self.env[node] = UnsupportedValue("delegate call")
            return
        self.env[node] = self.mb.delegate_call(part.backend, part.blob, part.specs, inputs, part.num_outputs)
        self.report.uses[DELEGATE_INIT_PREFIX + part.backend].append(use)
        self.report.uses[DELEGATE_CALL].append(use)

    def _lower_unsupported(self, node: Node, plan: Unsupported, use: OpUse) -> None:
        self.report.unsupported[plan.what].append(use)
        self.env[node] = UnsupportedValue(plan.what)

    def _lower_linear_prepack(self, node: Node, plan: LinearPrepack, use: OpUse) -> None:
        key, weight = plan.weight
        cache_key = ("linear", key, plan.bias)
        if cache_key not in self._packed:
            b_value = None if plan.bias is None else self._constant(plan.bias)
            self._packed[cache_key] = self.mb.linear_prepack(weight, b_value)
            self.report.uses[LINEAR_PREPACK].append(use)
            self._count_packed(plan)
        self.env[node] = self.mb.op(
            LINEAR_PREPACKED, self._value_of(plan.deps[0]), self._packed[cache_key], *self._epilogue_args(plan)
        )
        self.report.uses[LINEAR_PREPACKED].append(use)

    def _lower_conv2d_prepack(self, node: Node, plan: Conv2dPrepack, use: OpUse) -> None:
        layer = plan.layer
        nhwc = layer.channels_last
        cache_key = ("conv2d", layer)
        if cache_key not in self._packed:
            self._packed[cache_key] = self.mb.conv2d_prepack(
                self.constants[self._canonical.get(layer.weight, layer.weight)],
                None if layer.bias is None else self._constant(layer.bias),
                layer.stride,
                layer.padding,
                layer.dilation,
                layer.groups,
                winograd=layer.winograd,
                pixel_rows=layer.pixel_rows and not nhwc,
                channels_last=nhwc,
            )
            self.report.uses[CONV2D_PREPACK].append(use)
            self._count_packed(plan)
        out = self.mb.op(
            CONV2D_PREPACKED,
            self._in_layout(plan.deps[0], nhwc),
            self._packed[cache_key],
            *self._epilogue_args(plan, channels_last=nhwc),
        )
        if nhwc:
            self._nhwc[node] = out
        else:
            self.env[node] = out
        self.report.uses[CONV2D_PREPACKED].append(use)

    def _count_packed(self, plan: PrepackedPlan) -> None:
        for name, what in plan.pack_counts:
            self.passes.count(name, what)

    def _epilogue_args(self, plan: PrepackedPlan, channels_last: bool = False) -> tuple:
        """The *_prepacked op's trailing arguments: output_min, output_max,
        activation, residual (in the layer's layout), as far as the epilogue
        needs them."""
        if plan.residual is not None:
            residual = self._in_layout(plan.residual, channels_last)
            return (*(plan.clamp or (-math.inf, math.inf)), plan.activation, residual)
        if plan.activation is not None:
            return (*(plan.clamp or (-math.inf, math.inf)), plan.activation)
        return plan.clamp or ()

    def _lower_op(self, node: Node, plan: OpPlan, use: OpUse, op: Any = None, returns: Any = None) -> None:
        """plan's instruction: the node's own operator, or `op` in its place
        (returning `returns`)."""
        op = op or node.target
        name = op_name(op)
        args, kwargs = plan.args, plan.kwargs
        for result in tensors_in(node.meta.get("val")):
            pare_dtype(result.dtype, f"{name} at {use.location or node.name} returns a tensor that")
        values = encode_arguments(node, op, args, kwargs, self._value_of, self.model_file)
        self.report.uses[name].append(use)
        try:
            self.env[node] = self.mb.op(name, *values, returns=returns or returns_of(node, op))
        except ProgramError as e:
            raise TracerError(f"{name} at {use.location or node.name}: {e}") from None

    def _lower_max_pool_values(self, node: Node, plan: MaxPoolValues | Int8MaxPoolValues, use: OpUse) -> None:
        self._lower_op(node, plan, use, op=aten.max_pool2d.default, returns="tensor")


# How each kind of plan is emitted: a new kind of plan (an int8 op, a
# delegate call) is a plan type in tools/tracer/plans.py and a row here.
HANDLERS: dict[type[Plan], Callable[[MethodLowering, Node, Any, OpUse], None]] = {
    OpPlan: MethodLowering._lower_op,
    MaxPoolValues: MethodLowering._lower_max_pool_values,
    GetItem: MethodLowering._lower_getitem,
    Alias: MethodLowering._lower_alias,
    Constant: MethodLowering._lower_constant,
    IndexWithNone: MethodLowering._lower_index_with_none,
    AsStridedViews: MethodLowering._lower_as_strided_views,
    AsStridedCopy: MethodLowering._lower_as_strided_copy,
    Unsupported: MethodLowering._lower_unsupported,
    DelegateCall: MethodLowering._lower_delegate_call,
    LinearPrepack: MethodLowering._lower_linear_prepack,
    Conv2dPrepack: MethodLowering._lower_conv2d_prepack,
    QLinearPrepack: lower_int8_layer,
    QConv2dPrepack: lower_int8_layer,
    Int8AtenPlan: MethodLowering._lower_op,
    Int8MaxPoolValues: MethodLowering._lower_max_pool_values,
    Int8OpPlan: lower_int8_op,
    Int8Requantized: lower_int8_requantized,
}


def _callable_name(target: Any) -> str:
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"torch.ops.higher_order.{target.name()}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"{module}.{name}".lstrip(".") if module not in ("builtins", "_operator") else f"operator.{name}"
