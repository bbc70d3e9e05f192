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
  code, `memory_format` its c10::MemoryFormat code;
* symbolic sizes come from `aten::sym_size.int` instructions ("int" values)
  and are passed as int-list elements; an int-list element computed by
  SymInt arithmetic (`s0 * 3`) has no runtime operator, so in a `view` it is
  replaced by -1 (the one size view infers) and anywhere else reported;
* torch.export's runtime assertions are dropped (nothing uses their results);
* `alias`/`detach`, and a `clone` or same-dtype `_to_copy` of a tensor that
  is already contiguous, are the identity in a functional graph: they pass
  their input on (a copy that makes a tensor contiguous is kept, since a
  `view` downstream may need it);
* an op whose tensor inputs are all constants is evaluated now in torch and
  becomes a constant (e.g. `permute` of a linear weight), unless its result
  is larger than its largest input (so folding never grows the program much)
  or the op draws random numbers.

`prepack=True` (the prepack_weights pass, on by default: tools/tracer/passes.py)
rewrites `addmm`/`mm` on a constant weight (transposed by `permute`, as
linear decomposes) and 2-d `convolution` on a constant weight
onto `pare::linear_prepacked` / `pare::conv2d_prepacked`, with the weights
packed now (pare/packing.py) into the program's constants and the
`*_prepack` call in the method's init section (at method creation it wraps
the packed constants, used in place).
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true

from pare import dtypes as pare_dtypes
from pare import packing as pare_packing
from pare.program import MethodBuilder, ProgramError, TensorListOf, Value
from tools.tracer.errors import OpUse, TracerError
from tools.tracer.strided import NoViewRewrite, Slice, as_strided_views

aten = torch.ops.aten

# Arguments Pare drops: the CPU and strided tensors are all it has.
DROPPED_ARGUMENTS = frozenset({"device", "layout", "pin_memory"})
# c10::MemoryFormat, as the program passes memory_format arguments.
MEMORY_FORMAT_CODES = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}
# Ops that can be the identity in a functional graph (_is_identity decides).
IDENTITY_OPS = (
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten._to_copy.default,
)
# What _plan turns these ops into before the runtime sees them (the coverage
# report, docs/coverage.md, shows it next to the op).
REWRITES = {
    aten.as_strided.default: "slice / permute / view where they re-view the input's elements "
    "(tools/tracer/strided.py), else the as_strided copy kernel on a contiguous input",
    aten.unfold.default: "the as_strided copy kernel",
    aten.index.Tensor: "with None entries: permute, index.Tensor without None, permute",
}
# Shape-only ops whose size list may hold one -1 for the size to infer.
VIEW_OPS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
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

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n[ \t]*([^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def op_name(op: torch._ops.OpOverload) -> str:
    """PyTorch's full operator name, the default overload without a dot."""
    schema = op._schema
    return schema.name + (f".{schema.overload_name}" if schema.overload_name else "")


def source_of(node: Node, model_file: Path | None) -> OpUse:
    """The model source line a node came from: the last frame of its stack
    trace in the model's file, else the last frame outside torch."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    chosen = None
    if model_file is not None:
        for path, line, code in frames:
            if _same_file(path, model_file):
                chosen = (path, line, code)
    if chosen is None:
        outside = [f for f in frames if not _is_torch_frame(f[0])]
        chosen = outside[-1] if outside else None
    module = _innermost_module(node)
    if chosen is None:
        return OpUse(None, None, module)
    path, line, code = chosen
    return OpUse(f"{_display_path(path)}:{line}", code.strip() or None, module)


def _innermost_module(node: Node) -> str | None:
    stack = node.meta.get("nn_module_stack") or {}
    for path, kind in reversed(list(stack.values())):
        if path and isinstance(path, str) and not path.startswith("_"):
            name = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
            return f"{path} ({name.rsplit('.', 1)[-1]})"
    return None


def _same_file(path: str, model_file: Path) -> bool:
    try:
        return Path(path).resolve() == model_file.resolve()
    except OSError:
        return False


def _is_torch_frame(path: str) -> bool:
    return not os.path.isabs(path) or path.startswith(_TORCH_DIR) or "site-packages" in path


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass
class LoweringReport:
    """Operators a lowered method calls (every use, with its source line) and
    constructs no runtime operator can run."""

    uses: dict[str, list[OpUse]] = field(default_factory=lambda: defaultdict(list))
    unsupported: dict[str, list[OpUse]] = field(default_factory=lambda: defaultdict(list))
    prepacked: dict[str, int] = field(default_factory=lambda: {"linear": 0, "conv2d": 0})  # layers packed
    # Of the conv2d layers, those packed for Winograd (the winograd pass),
    # per output tile: F(2x2, 3x3) and F(4x4, 3x3).
    winograd: dict[str, int] = field(default_factory=lambda: {"F(2x2,3x3)": 0, "F(4x4,3x3)": 0})
    # The channels_last pass: conv2d layers run channels-last, and the
    # layout conversions (aten::clone) it placed.
    channels_last: dict[str, int] = field(default_factory=lambda: {"layers": 0, "conversions": 0})
    # Epilogues fused into them, per pass (fuse_add, fuse_clamp, fuse_activation).
    fused: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass(frozen=True)
class _Plan:
    kind: str  # "op", "getitem", "alias", "constant", "index_none", "linear_prepack", "conv2d_prepack", ...
    deps: tuple[Node, ...]
    args: tuple = ()  # "op": the arguments (with rewrites applied)
    detail: Any = None
    # *_prepack: the fused epilogue, applied in this order: a residual add's
    # other operand, a relu / hardtanh / clamp (output_min, output_max), an
    # activation's name (the runtime's Activation: "hardswish", "gelu", ...).
    residual: Node | None = None
    clamp: tuple[float, float] | None = None
    activation: str | None = None


@dataclass(frozen=True)
class _ConvLayer:
    """A conv2d_prepack plan's layer (its plan's detail): the weight and bias
    (graph nodes or constant names), the convolution's parameters, and how
    the passes run it. Layers that compare equal share one packed weight."""

    weight: Any
    bias: Any
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    winograd: int = 0  # the winograd pass's output tile (2 or 4), 0 for none
    pixel_rows: bool = False  # prepack_weights: a 1x1 layer over few pixels, packed for pixel rows
    channels_last: bool = False  # the channels_last pass: the layer runs on NHWC activations


class MethodLowering:
    """Lowers `ep` (core ATen, after run_decompositions) into `mb`."""

    def __init__(
        self,
        mb: MethodBuilder,
        ep: ExportedProgram,
        *,
        prepack: bool,
        model_file: Path | None,
        report: LoweringReport,
        fuse: frozenset[str] = frozenset(),
        winograd: bool = False,
        channels_last: bool = False,
    ):
        self.mb = mb
        self.ep = ep
        self.prepack = prepack
        # The winograd pass: prepacked 3x3 convolutions where it pays get
        # their filters transformed for the output tile that pays best
        # (pare.packing.winograd_tile).
        self.winograd = winograd
        # The channels_last pass: prepacked convolutions that pay run
        # channels-last (their plan's _ConvLayer says so).
        self.channels_last = channels_last
        self._nhwc: dict[Node, Value] = {}  # a node whose value exists channels-last -> that value
        self._converted: dict[tuple[Value, int], Value] = {}  # (value, memory format) -> its conversion
        # The fusion passes that run (fuse_add, fuse_clamp, fuse_activation):
        # epilogues fused into a prepacked op.
        self.fuse = fuse
        self.model_file = model_file
        self.report = report
        self.graph = ep.graph_module.graph
        self.constants: dict[Node, torch.Tensor] = {}
        self.user_inputs: list[Node] = []
        self.env: dict[Node, Any] = {}
        self._constant_values: dict[Node, Value] = {}
        self._canonical: dict[Node, Node] = {}  # alias of a constant -> that constant's node
        self._packed: dict[tuple, Value] = {}
        self._fused: dict[Node, Node] = {}  # a fused epilogue op -> the node before it (it aliases that)
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

    # -- graph inspection -----------------------------------------------------

    def _classify_placeholders(self) -> None:
        by_name = {n.name: n for n in self.graph.nodes if n.op == "placeholder"}
        for spec in self.ep.graph_signature.input_specs:
            node = by_name[spec.arg.name]
            if spec.kind == InputKind.USER_INPUT:
                self.user_inputs.append(node)
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
                raise TracerError(
                    f"the model updates buffer {spec.target!r} in forward(); Pare programs are "
                    "functional: call module.eval() in build() (batch norm) or stop mutating state"
                )
            if spec.kind == OutputKind.USER_INPUT_MUTATION:
                raise TracerError(
                    f"the model mutates its input {spec.target!r} in place; Pare programs cannot "
                    "write to inputs: return a new tensor instead of an in-place op"
                )
            raise TracerError(
                f"the exported program has a {spec.kind.name.lower()} output, which Pare programs "
                "cannot express; make forward() side-effect free"
            )

    def _is_constant(self, node: Any) -> bool:
        return isinstance(node, Node) and node in self.constants

    # -- planning (rewrites decided before lowering, so dead inputs drop out) --

    def _plan(self, node: Node) -> _Plan:
        target = node.target
        if node in self._fused:  # it runs inside the prepacked layer before it, as its epilogue
            return _Plan("alias", (self._fused[node],))
        if target is operator.getitem:
            return _Plan("getitem", (node.args[0],))
        if isinstance(target, torch._ops.OpOverload):
            if target in IDENTITY_OPS and self._is_identity(node):
                source = node.args[0]
                if self._is_constant(source):
                    self.constants[node] = self.constants[source]
                    self._canonical[node] = self._canonical.get(source, source)
                    return _Plan("constant", ())
                return _Plan("alias", (source,))
            if self._fold(node):
                return _Plan("constant", ())
            if self.prepack:
                plan = self._prepack_plan(node)
                if plan is not None:
                    return plan
            if target is aten.index.Tensor and any(i is None for i in node.args[1]):
                return self._index_with_none_plan(node)
            if target is aten.as_strided.default:
                return self._as_strided_plan(node)
            if target is aten.unfold.default:
                return self._unfold_plan(node)
            args = list(node.args)
            if target in VIEW_OPS and len(args) > 1 and isinstance(args[1], (list, tuple)):
                args[1] = self._infer_computed_size(args[1])
            kwargs = dict(node.kwargs)
            deps = [n for n in _nodes_in((args, kwargs))]
            return _Plan("op", tuple(deps), (tuple(args), kwargs))
        if target in SYMINT_OPERATORS:
            return _Plan(
                "unsupported",
                (),
                detail=f"SymInt arithmetic `{SYMINT_OPERATORS[target]}` "
                f"({_callable_name(target)}) on a dynamic size (no runtime operator computes sizes: keep "
                "that dim static, or do not return or pass on the computed size)",
            )
        return _Plan("unsupported", (), detail=_callable_name(target))

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
        inputs = list(_nodes_in((node.args, node.kwargs)))
        if not inputs or not all(self._is_constant(n) for n in inputs) or torch.Tag.nondeterministic_seeded in op.tags:
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

    def _index_with_none_plan(self, node: Node) -> _Plan:
        """x[:, i, j] is index.Tensor(x, [None, i, j]); the program format has
        no None inside a tensor list, so it becomes permute (indexed dims
        first), index.Tensor without None, and a permute putting the index
        dims where torch puts them (at the first indexed dim when the indexed
        dims are adjacent, else first)."""
        x, indices = node.args[0], list(node.args[1])
        rank = x.meta["val"].dim()
        indexed = [d for d, i in enumerate(indices) if i is not None]
        rest = [d for d in range(rank) if d not in indexed]
        index_rank = max(i.meta["val"].dim() if isinstance(i, Node) else 0 for i in indices if i is not None)
        before = indexed[0] if indexed == list(range(indexed[0], indexed[-1] + 1)) else 0
        after = (
            [index_rank + d for d in range(before)]
            + list(range(index_rank))
            + list(range(index_rank + before, index_rank + len(rest)))
        )
        tensors = tuple(i for i in indices if i is not None)
        return _Plan(
            "index_none", (x, *[t for t in tensors if isinstance(t, Node)]), detail=(indexed + rest, tensors, after)
        )

    def _as_strided_plan(self, node: Node) -> _Plan:
        """as_strided re-viewing its input's elements becomes slice, permute
        and view (tools/tracer/strided.py). Any other pattern (overlapping
        windows, as unfold makes; repeated elements) over an input that is
        contiguous in torch runs as the runtime's aten::as_strided, a copy of
        the window, whose storage is its input's elements in row-major order
        (runtime/kernels/indexing/as_strided.cc): torch's storage from the
        input's first element on. Over any other input the pattern is
        reported as unsupported, naming it."""
        x = node.args[0]
        source, result = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
        if not isinstance(source, torch.Tensor) or not isinstance(result, torch.Tensor):
            return _Plan("unsupported", (), detail="aten::as_strided on a value without shape metadata")
        try:
            steps = as_strided_views(
                source.shape,
                source.stride(),
                source.storage_offset(),
                result.shape,
                result.stride(),
                result.storage_offset(),
            )
        except NoViewRewrite as e:
            why = _as_strided_copy_refused(source, result)
            if why is None:
                return self._as_strided_copy_plan(node, source, result)
            return _Plan(
                "unsupported",
                (),
                detail=(
                    f"aten::as_strided (size {_shape_text(result.shape)}, stride {_shape_text(result.stride())}, "
                    f"offset {result.storage_offset()} over an input of size {_shape_text(source.shape)}, stride "
                    f"{_shape_text(source.stride())}): {e}, so it is no slice/permute/view of its input, and "
                    f"{why}, so Pare cannot run it as a copy either; express it with view, permute, narrow or "
                    "select in the model, or make its input contiguous (.contiguous())"
                ),
            )
        sizes = self._infer_computed_size(node.args[1])
        return _Plan("as_strided", (x, *_nodes_in(sizes)), detail=(steps, sizes))

    def _as_strided_copy_plan(self, node: Node, source: torch.Tensor, result: torch.Tensor) -> _Plan:
        """aten::as_strided as the runtime's copy kernel: the graph's sizes and
        strides, the storage offset made relative to the input's first element
        (torch's is absolute; None means the input's own)."""
        x, sizes, strides = node.args[0], node.args[1], node.args[2]
        offset = int(result.storage_offset()) - int(source.storage_offset())
        args = (x, list(sizes), list(strides)) + ((offset,) if offset else ())
        return _Plan("op", tuple(_nodes_in(args)), (args, {}))

    def _unfold_plan(self, node: Node) -> _Plan:
        """x.unfold(dim, size, step) (sliding windows, a core ATen view the
        runtime has no kernel for) runs as the runtime's aten::as_strided
        copy with the window's sizes and strides from the graph's metadata,
        when its input is contiguous. A dynamic dim other than the unfolded
        one keeps its size, read from the input with sym_size.int."""
        x, dimension = node.args[0], node.args[1]
        source, result = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
        if not isinstance(source, torch.Tensor) or not isinstance(result, torch.Tensor):
            return _Plan("unsupported", (), detail="aten::unfold on a value without shape metadata")
        rank = source.dim()
        unfolded = dimension % rank if rank else 0
        why = _as_strided_copy_refused(source, result)
        sizes: list = []
        for i, n in enumerate(result.shape):
            if is_concrete_int(n):
                sizes.append(int(n))
            elif i < rank and i != unfolded:
                sizes.append(_InputSize(i))
            else:
                why = why or f"the number of windows along dim {unfolded} is dynamic"
        if why is None and not all(is_concrete_int(st) for st in result.stride()):
            why = "its strides are dynamic"
        if why is not None:
            return _Plan(
                "unsupported",
                (),
                detail=(
                    f"aten::unfold (dim {dimension}, size {node.args[2]}, step {node.args[3]} over an input of "
                    f"size {_shape_text(source.shape)}, stride {_shape_text(source.stride())}): {why}, so Pare "
                    "cannot run it as a copy of the windows; make its input contiguous (.contiguous()) or keep "
                    "that dim static"
                ),
            )
        return _Plan("as_strided_copy", (x,), detail=(sizes, [int(st) for st in result.stride()]))

    def _infer_computed_size(self, sizes) -> list:
        computed = [i for i, s in enumerate(sizes) if isinstance(s, Node) and s.target is not aten.sym_size.int]
        if len(computed) == 1 and not any(isinstance(s, int) and s == -1 for s in sizes):
            sizes = list(sizes)
            sizes[computed[0]] = -1
        return list(sizes)

    def _prepack_plan(self, node: Node) -> _Plan | None:
        target = node.target
        if target in (aten.addmm.default, aten.mm.default, aten.bmm.default):
            if target is aten.addmm.default:
                if len(node.args) < 3 or not _is_one(node, 3, "beta") or not _is_one(node, 4, "alpha"):
                    return None
                bias, x, mat2 = node.args[:3]
            else:
                bias, (x, mat2) = None, node.args[:2]
            if target is aten.bmm.default:
                # A linear layer on a 3-d input that is not contiguous (attention's
                # in-projection on a transposed sequence) decomposes to bmm with
                # the weight expanded over the batch: one weight, packed once.
                mat2 = _expanded_matrix(mat2)
            weight = self._linear_weight(mat2)
            if weight is None or not _is_float_tensor(x):
                return None
            if bias is not None and not self._is_bias(bias, weight[1].shape[0]):
                return None
            x, last = self._unflattened(x, node)
            if bias is None:
                bias, last = self._bias_add_after(last, weight[1].shape[0])
            return self._with_epilogue(node, _Plan("linear_prepack", (x,), detail=(weight, bias)), last)
        if target is aten.convolution.default:
            x, w, bias, stride, padding, dilation, transposed, output_padding, groups = node.args[:9]
            w_tensor = self.constants.get(w) if isinstance(w, Node) else None
            if (
                w_tensor is None
                or w_tensor.dtype != torch.float32
                or w_tensor.dim() != 4
                or transposed
                or not _is_float_tensor(x)
                or any(isinstance(v, Node) for v in (*stride, *padding, *dilation))
            ):
                return None
            if bias is not None and not self._is_bias(bias, w_tensor.shape[0]):
                return None
            out_hw = _output_hw(node)
            sizes = tuple(w_tensor.shape)
            winograd = pare_packing.winograd_tile(sizes, stride, dilation, int(groups), out_hw) if self.winograd else 0
            layer = _ConvLayer(
                w,
                bias,
                tuple(stride),
                tuple(padding),
                tuple(dilation),
                int(groups),
                # The winograd pass: the output tile it runs with (0: none).
                winograd=winograd,
                # prepack_weights lays a convolution over few pixels out for
                # pixel rows (the runtime's fastest product for it).
                pixel_rows=not winograd
                and pare_packing.pixel_rows_pays(sizes, stride, padding, dilation, int(groups), out_hw),
                # The channels_last pass: the layer runs on NHWC activations.
                channels_last=self.channels_last
                and pare_packing.channels_last_pays(sizes, stride, padding, dilation, int(groups), out_hw),
            )
            return self._with_epilogue(node, _Plan("conv2d_prepack", (x,), detail=layer))
        return None

    def _is_bias(self, bias: Any, out_features: int) -> bool:
        b = self.constants.get(bias) if isinstance(bias, Node) else None
        return b is not None and b.dtype == torch.float32 and b.dim() == 1 and b.shape[0] == out_features

    def _unflattened(self, x: Node, node: Node) -> tuple[Node, Node]:
        """(x0, the view after `node`) when the linear layer `node` reads x =
        x0 viewed as [-1, in_features] and its only user views its output
        back to x0's leading sizes, as F.linear on an input of 3 or more
        dims decomposes: the layer then runs on x0 itself (the prepacked op
        takes any leading dims) and that view aliases its output, so what
        follows the view can fuse into the layer. Else (x, node)."""
        user = _only_user(node)
        if not (
            x.target in VIEW_OPS
            and isinstance(x.args[0], Node)
            and _is_float_tensor(x.args[0])
            and user is not None
            and user.target in VIEW_OPS
        ):
            return x, node
        source, flat, out = x.args[0].meta["val"], x.meta["val"], user.meta["val"]
        if flat.dim() != 2 or source.dim() < 1 or out.dim() != source.dim():
            return x, node
        if not statically_known_true(flat.shape[1] == source.shape[-1]):
            return x, node
        if not all(statically_known_true(a == b) for a, b in zip(out.shape[:-1], source.shape[:-1])):
            return x, node
        self._fused[user] = node
        return x.args[0], user

    def _bias_add_after(self, node: Node, out_features: int) -> tuple[Node | None, Node]:
        """(bias, the add) when the only user of a linear layer without a
        bias (its output `node`), through views that keep its sizes, adds a
        constant float32 [out_features] (alpha 1): that constant is the
        layer's bias, and the views and the add alias the layer's output.
        Else (None, node)."""
        chain: dict[Node, Node] = {}
        last = node
        user = _only_user(last)
        while user is not None and user.target in VIEW_OPS and _same_sizes(user, last):
            chain[user], last = last, user
            user = _only_user(last)
        if (
            user is None
            or user.target is not aten.add.Tensor
            or len(user.args) != 2
            or user.kwargs.get("alpha", 1) != 1
        ):
            return None, node
        a, b = user.args
        bias = b if a is last else a if b is last else None
        if bias is last or not self._is_bias(bias, out_features) or not _same_sizes(user, last):
            return None, node
        chain[user] = last
        self._fused.update(chain)
        return bias, user

    def _with_epilogue(self, node: Node, plan: _Plan, last: Node | None = None) -> _Plan:
        """`plan` with the ops after it fused in as its epilogue, each the
        only user of the one before (from `last`, the layer's last node, by
        default `node`): a residual add (fuse_add), then a relu, hardtanh or
        clamp with constant bounds (fuse_clamp) or an activation
        (fuse_activation)."""
        last = node if last is None else last
        fused: dict[Node, Node] = {}
        if "fuse_add" in self.fuse and (user := _only_user(last)) is not None:
            residual = self._residual_of(user, last, node)
            if residual is not None:
                plan = dataclasses.replace(plan, residual=residual, deps=plan.deps + (residual,))
                fused[user], last = last, user
        if (user := _only_user(last)) is not None:
            bounds = _clamp_bounds(user, last) if "fuse_clamp" in self.fuse else None
            activation = _activation_of(user, last) if "fuse_activation" in self.fuse else None
            if bounds is not None:
                plan = dataclasses.replace(plan, clamp=bounds)
                fused[user] = last
            elif activation is not None:
                plan = dataclasses.replace(plan, activation=activation)
                fused[user] = last
        self._fused.update(fused)
        return plan

    def _residual_of(self, add: Node, source: Node, layer: Node) -> Node | None:
        """The other operand of `add` when it is `source + other` (either
        order, alpha 1) with other a float32 tensor of the same sizes,
        computed before `layer` (so the layer can read it)."""
        if add.target is not aten.add.Tensor or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
            return None
        a, b = add.args
        other = b if a is source else a if b is source else None
        if not isinstance(other, Node) or other is source or self._is_constant(other) or not _is_float_tensor(other):
            return None
        if self._order.get(other, len(self._order)) >= self._order[layer]:
            return None
        return other if _same_sizes(source, other) else None

    def _linear_weight(self, mat2: Any) -> tuple[tuple, torch.Tensor] | None:
        """(cache key, [out, in] weight) when mat2 is a constant weight,
        transposed by permute/t as F.linear decomposes, or a constant [in, out]."""
        if not isinstance(mat2, Node):
            return None
        if mat2.target in (aten.permute.default, aten.t.default) and self._is_constant(mat2.args[0]):
            if mat2.target is aten.permute.default and list(mat2.args[1]) not in ([1, 0], [-1, -2], [1, -2], [-1, 0]):
                return None
            w = self.constants[mat2.args[0]]
            key = (mat2.args[0], "as_is")
        elif self._is_constant(mat2):
            w = self.constants[mat2].t()
            key = (mat2, "transposed")
        else:
            return None
        if w.dim() != 2 or w.dtype != torch.float32:
            return None
        return key, w

    def _in_layout(self, x: Node, channels_last: bool) -> Value:
        """x's value in the layout a reader takes: channels-last for a layer
        the channels_last pass chose, else as the program's other ops take
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
            self.report.channels_last["conversions"] += 1
        return self._converted[(value, fmt)]

    def _needed(self, output_node: Node, plans: dict[Node, _Plan]) -> set[Node]:
        needed: set[Node] = set()
        stack = list(_nodes_in(output_node.args))
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
        return self.mb.input(_pare_dtype(val.dtype, f"input {node.name!r}"), shape)

    def _constant(self, node: Node) -> Value:
        node = self._canonical.get(node, node)
        if node not in self._constant_values:
            tensor = self.constants[node]
            _pare_dtype(tensor.dtype, f"constant {node.name!r}")
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

    def _lower_node(self, node: Node, plan: _Plan) -> None:
        use = source_of(node, self.model_file)
        if plan.kind == "getitem":
            source = self.env[node.args[0]]
            self.env[node] = source if isinstance(source, _Unsupported) else source[node.args[1]]
        elif plan.kind == "constant":
            pass  # made a constant Value when first used
        elif plan.kind == "index_none":
            order, tensors, after = plan.detail
            x = self._value_of(plan.deps[0])
            if order != sorted(order):
                x = self.mb.op("aten::permute", x, order)
                self.report.uses["aten::permute"].append(use)
            y = self.mb.op("aten::index.Tensor", x, [self._value_of(t) for t in tensors])
            self.report.uses["aten::index.Tensor"].append(use)
            if after != sorted(after):
                y = self.mb.op("aten::permute", y, after)
                self.report.uses["aten::permute"].append(use)
            self.env[node] = y
        elif plan.kind == "as_strided":
            steps, sizes = plan.detail
            x = self._value_of(plan.deps[0])
            for step in steps:
                if isinstance(step, Slice):
                    x = self.mb.op("aten::slice.Tensor", x, step.dim, step.start, step.end)
                    self.report.uses["aten::slice.Tensor"].append(use)
                else:
                    x = self.mb.op("aten::permute", x, list(step.order))
                    self.report.uses["aten::permute"].append(use)
            self.env[node] = self.mb.op("aten::view", x, [self._argument(s, node, "size") for s in sizes])
            self.report.uses["aten::view"].append(use)
        elif plan.kind == "as_strided_copy":
            sizes, strides = plan.detail
            x = self._value_of(plan.deps[0])
            size_values = []
            for size in sizes:
                if isinstance(size, _InputSize):
                    size = self.mb.op("aten::sym_size.int", x, size.dim, returns="int")
                    self.report.uses["aten::sym_size.int"].append(use)
                size_values.append(size)
            self.env[node] = self.mb.op("aten::as_strided", x, size_values, strides)
            self.report.uses["aten::as_strided"].append(use)
        elif plan.kind == "alias":
            if plan.deps[0] in self._nhwc:  # stays channels-last until a reader needs it otherwise
                self._nhwc[node] = self._nhwc[plan.deps[0]]
            else:
                self.env[node] = self._value_of(plan.deps[0])
        elif plan.kind == "unsupported":
            self.report.unsupported[plan.detail].append(use)
            self.env[node] = _Unsupported(plan.detail)
        elif plan.kind == "linear_prepack":
            (key, weight), bias = plan.detail
            cache_key = ("linear", key, bias)
            if cache_key not in self._packed:
                b_value = None if bias is None else self._constant(bias)
                self._packed[cache_key] = self.mb.linear_prepack(weight, b_value)
                self.report.uses[LINEAR_PREPACK].append(use)
            self.env[node] = self.mb.op(
                LINEAR_PREPACKED, self._value_of(plan.deps[0]), self._packed[cache_key], *self._epilogue_args(plan)
            )
            self.report.uses[LINEAR_PREPACKED].append(use)
            self.report.prepacked["linear"] += 1
        elif plan.kind == "conv2d_prepack":
            layer = plan.detail
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
                if layer.winograd:
                    self.report.winograd[f"F({layer.winograd}x{layer.winograd},3x3)"] += 1
            out = self.mb.op(
                CONV2D_PREPACKED,
                self._in_layout(plan.deps[0], nhwc),
                self._packed[cache_key],
                *self._epilogue_args(plan, channels_last=nhwc),
            )
            if nhwc:
                self._nhwc[node] = out
                self.report.channels_last["layers"] += 1
            else:
                self.env[node] = out
            self.report.uses[CONV2D_PREPACKED].append(use)
            self.report.prepacked["conv2d"] += 1
        else:
            self._lower_op(node, plan, use)

    def _epilogue_args(self, plan: _Plan, channels_last: bool = False) -> tuple:
        """The *_prepacked op's trailing arguments: output_min, output_max,
        activation, residual (in the layer's layout), as far as the epilogue
        needs them."""
        for name, present in (
            ("fuse_add", plan.residual),
            ("fuse_clamp", plan.clamp),
            ("fuse_activation", plan.activation),
        ):
            if present is not None:
                self.report.fused[name] += 1
        if plan.residual is not None:
            residual = self._in_layout(plan.residual, channels_last)
            return (*(plan.clamp or (-math.inf, math.inf)), plan.activation, residual)
        if plan.activation is not None:
            return (*(plan.clamp or (-math.inf, math.inf)), plan.activation)
        return plan.clamp or ()

    def _lower_op(self, node: Node, plan: _Plan, use: OpUse) -> None:
        op = node.target
        name = op_name(op)
        args, kwargs = plan.args
        for result in _tensors_in(node.meta.get("val")):
            _pare_dtype(result.dtype, f"{name} at {use.location or node.name} returns a tensor that")
        values = self._arguments(node, op, args, kwargs)
        self.report.uses[name].append(use)
        try:
            self.env[node] = self.mb.op(name, *values, returns=self._returns(node, op))
        except ProgramError as e:
            raise TracerError(f"{name} at {use.location or node.name}: {e}") from None

    def _arguments(self, node: Node, op, args: tuple, kwargs: dict) -> list:
        schema_args = op._schema.arguments
        values: list = []
        last_given = -1
        for i, arg in enumerate(schema_args):
            if i < len(args) and not arg.kwarg_only:
                given, value = True, args[i]
            elif arg.name in kwargs:
                given, value = True, kwargs[arg.name]
            elif arg.has_default_value():
                given, value = False, arg.default_value
            else:
                raise TracerError(
                    f"{op_name(op)} ({node.name}): required argument {arg.name!r} is missing from the exported graph"
                )
            if arg.name in DROPPED_ARGUMENTS:
                value = None
            values.append(
                self._argument(value, node, arg.name, optional_items=str(arg.type) == "List[Optional[Tensor]]")
            )
            if (given and value is not None) or not arg.has_default_value():
                last_given = i
        # Trailing defaults are left to the kernel, so programs do not depend
        # on how many optional arguments a given PyTorch version spells out.
        # An argument without a default is always written, None included:
        # `float[]? scale_factors` of upsample_*.vec is required though
        # optional, and the kernel counts on it.
        return values[: last_given + 1]

    def _argument(self, value: Any, node: Node, name: str, optional_items: bool = False) -> Any:
        if isinstance(value, Node):
            resolved = self._value_of(value)
            if isinstance(resolved, _Unsupported):
                return 0  # already reported; the export fails before anything runs
            if isinstance(resolved, (list, tuple)):
                raise TracerError(
                    f"{node.name}: argument {name!r} is a whole multi-output value; Pare passes single values"
                )
            return resolved
        if isinstance(value, (list, tuple)):
            items = [self._argument(v, node, name) for v in value]
            # A Tensor?[] (index_put's indices) may hold None: program format 1.1.
            if any(v is None for v in items) and not optional_items:
                raise TracerError(
                    f"{op_name(node.target)} ({source_of(node, self.model_file).location or node.name})"
                    f": argument {name!r} is a list with None entries, which the Pare program "
                    "format cannot express"
                )
            return items
        if isinstance(value, torch.dtype):
            return _pare_dtype(value, f"argument {name!r} of {node.name}")
        if isinstance(value, torch.memory_format):
            return MEMORY_FORMAT_CODES[value]
        if isinstance(value, (torch.device, torch.layout)):
            return None
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        raise TracerError(
            f"{op_name(node.target)} ({node.name}): argument {name!r} is a {type(value).__name__}, "
            "which the Pare program format cannot express"
        )

    def _returns(self, node: Node, op) -> Any:
        returns = op._schema.returns
        val = node.meta.get("val")
        if len(returns) == 1:
            if str(returns[0].type).startswith("List["):
                return TensorListOf(len(val))
            return _kind(val)
        if not isinstance(val, (list, tuple)) or len(val) != len(returns):
            raise TracerError(f"{op_name(op)} ({node.name}): cannot tell its {len(returns)} outputs apart")
        return tuple(_kind(v) for v in val)


@dataclass(frozen=True)
class _Unsupported:
    what: str


@dataclass(frozen=True)
class _InputSize:
    """A size equal to the op's input's size along `dim` (dynamic: read at run time)."""

    dim: int


def _kind(val: Any) -> str:
    if isinstance(val, (torch.SymBool, bool)):
        return "bool"
    if isinstance(val, (torch.SymInt, int)):
        return "int"
    if isinstance(val, (torch.SymFloat, float)):
        return "float"
    return "tensor"


def _tensors_in(x: Any):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from _tensors_in(item)


def _nodes_in(x: Any):
    if isinstance(x, Node):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from _nodes_in(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _nodes_in(item)


def _is_one(node: Node, index: int, name: str) -> bool:
    value = node.args[index] if len(node.args) > index else node.kwargs.get(name, 1)
    return not isinstance(value, Node) and value == 1


def _same_sizes(a: Node, b: Node) -> bool:
    """Whether two nodes' tensors are known to have the same sizes."""
    x, y = a.meta.get("val"), b.meta.get("val")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.dim() != y.dim():
        return False
    return all(statically_known_true(p == q) for p, q in zip(x.shape, y.shape))


def _expanded_matrix(mat2: Any) -> Any:
    """The 2-d node a bmm's `mat2` repeats over the batch (expand, then a
    view that keeps the sizes, as matmul decomposes), else None."""
    if isinstance(mat2, Node) and mat2.target in VIEW_OPS and isinstance(mat2.args[0], Node):
        if _same_sizes(mat2, mat2.args[0]):
            mat2 = mat2.args[0]
    if not isinstance(mat2, Node) or mat2.target is not aten.expand.default or not isinstance(mat2.args[0], Node):
        return None
    source, expanded = mat2.args[0].meta.get("val"), mat2.meta.get("val")
    if not isinstance(source, torch.Tensor) or not isinstance(expanded, torch.Tensor):
        return None
    # Only a new leading dim: an expand that also stretches a size-1 dim of
    # the matrix is not one weight matrix repeated.
    if source.dim() != 2 or expanded.dim() != 3:
        return None
    if not all(statically_known_true(a == b) for a, b in zip(source.shape, expanded.shape[1:])):
        return None
    return mat2.args[0]


def _only_user(node: Node) -> Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


# Activations a prepacked op applies itself (the fuse_activation pass), by
# the name the runtime's epilogue takes (runtime/kernels/prepacked/).
_ACTIVATIONS = {
    aten.hardswish.default: "hardswish",
    aten.hardsigmoid.default: "hardsigmoid",
    aten.sigmoid.default: "sigmoid",
    aten.silu.default: "silu",
}


def _activation_of(user: Node, source: Node) -> str | None:
    """The runtime's name for `user` when it is a fusable activation of `source`."""
    if not user.args or user.args[0] is not source or len(user.args) > 1 and user.target is not aten.gelu.default:
        return None
    if user.target is aten.gelu.default:
        approximate = user.kwargs.get("approximate", user.args[1] if len(user.args) > 1 else "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    return _ACTIVATIONS.get(user.target)


def _clamp_bounds(user: Node, source: Node) -> tuple[float, float] | None:
    """(min, max) when `user` is relu, hardtanh or clamp of `source` with
    constant bounds (None: not such a clamp)."""
    if not user.args or user.args[0] is not source:
        return None

    def bound(index: int, name: str, default: Any, absent: float) -> float | None:
        """The bound as a float (`absent` when the argument is None), None
        when it varies at run time or is NaN (left to the clamp operator)."""
        value = user.args[index] if len(user.args) > index else user.kwargs.get(name, default)
        if isinstance(value, Node):
            return None
        value = absent if value is None else float(value)
        return None if math.isnan(value) else value

    if user.target is aten.relu.default:
        return (0.0, math.inf)
    if user.target is aten.hardtanh.default:
        lo, hi = bound(1, "min_val", -1.0, -math.inf), bound(2, "max_val", 1.0, math.inf)
    elif user.target is aten.clamp.default:
        lo, hi = bound(1, "min", None, -math.inf), bound(2, "max", None, math.inf)
    else:
        return None
    if lo is None or hi is None or (lo == -math.inf and hi == math.inf):
        return None
    return (lo, hi)


def _output_hw(node: Node) -> tuple[int, int]:
    """A convolution node's traced output (height, width); a dynamic size
    counts as large (for pare.packing.winograd_pays, which then decides by
    channels, and pixel_rows_pays)."""
    sizes = node.meta["val"].shape[-2:]
    return tuple(int(d) if is_concrete_int(d) else 1 << 30 for d in sizes)


def _is_float_tensor(x: Any) -> bool:
    val = x.meta.get("val") if isinstance(x, Node) else None
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32


def _as_strided_copy_refused(source: torch.Tensor, result: torch.Tensor) -> str | None:
    """Why the runtime's as_strided (a copy over its input's elements in
    row-major order) would not read what torch's reads, or None when it
    would: the input must be contiguous, and the window must start at or
    after its first element and end before its last (torch may read the
    storage around a view; the runtime has only the view's elements)."""
    try:
        contiguous = bool(statically_known_true(source.is_contiguous()))
    except Exception:  # symbolic strides torch cannot decide
        contiguous = False
    if not contiguous:
        return "its input is not contiguous"
    if not (is_concrete_int(result.storage_offset()) and is_concrete_int(source.storage_offset())):
        return "its storage offset is symbolic"
    offset = int(result.storage_offset()) - int(source.storage_offset())
    if offset < 0:
        return "it starts before its input's first element"
    values = (*result.shape, *result.stride(), *source.shape)
    if all(is_concrete_int(v) for v in values) and all(int(n) > 0 for n in result.shape):
        last = offset + sum((int(n) - 1) * int(s) for n, s in zip(result.shape, result.stride()))
        if last >= source.numel():
            return "it reads past its input's last element"
    # Dynamic sizes: the runtime checks the bounds on every run.
    return None


def _shape_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _callable_name(target: Any) -> str:
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"torch.ops.higher_order.{target.name()}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"{module}.{name}".lstrip(".") if module not in ("builtins", "_operator") else f"operator.{name}"


def _pare_dtype(dtype: torch.dtype, what: str):
    try:
        return pare_dtypes.get(dtype)
    except (ValueError, TypeError):
        supported = ", ".join(d.torch_name for d in pare_dtypes.ALL)
        raise TracerError(
            f"{what} has dtype {str(dtype).removeprefix('torch.')}, which Pare does not support; use one of {supported}"
        ) from None
