"""The one interface every graph pass implements (GraphPass), what a pass
reports (PassRun), and what it works on: a method's graph under rewrite
(PassContext) or, for a pass that acts at lowering time, the lowering's
view of the method (LoweringState). The pass manager (manager.py) runs the
passes; each pass is a module of this package.

No torch at import: the tracer CLI's parser lists the passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    import torch
    from torch.export import ExportedProgram
    from torch.fx import Node

    from tools.tracer.plans import Plan


class GraphPass:
    """A named pass. A module of this package defines one subclass and one
    instance of it, listed in manager.PASSES in the order passes run.

    A pass acts in one or both of two stages, by overriding their hooks:

    * `rewrite`, on the graph: after torch.export's decompositions, before
      lowering; it rewrites one method's ExportedProgram in place (the batch
      norm folds) and returns what it changed.
    * `plan` and `refine`, at lowering time, for what only lowering can
      decide: which instructions, packed weights and activation layouts a
      node becomes. The prepacked ops have no torch operator to put in the
      graph, their weights are packed into the program as lowering writes
      it (shared by the layers that use the same weight), and a layout is a
      property of the program's values, not of the graph's nodes. `plan`
      claims a node with a plan of its own (prepack_weights); `refine`
      reshapes a plan another pass made (winograd and channels_last choose
      how a prepacked convolution runs, the fusions fuse the ops after a
      prepacked layer into its epilogue). A plan says what it counts for
      which pass (plans.PrepackedPlan.counts), so lowering only tallies.

    `requires`: passes this one builds on; without them selected it does
    not run (and reports nothing). `counters`: what it counts at lowering
    time, in the order its counts are reported.
    """

    name: str = ""
    description: str = ""  # one line, shown by --help and docs/tracer.md
    requires: tuple[str, ...] = ()
    counters: tuple[str, ...] = ()

    def rewrite(self, context: PassContext) -> dict[str, int] | None:
        """Rewrites the graph in place; returns counts of what it changed
        (None: the pass has no graph stage)."""
        return None

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        """A plan for `node`, or None to leave it to the next pass and then
        to lowering's own plan."""
        return None

    def refine(self, plan: Plan, node: Node, lowering: LoweringState) -> Plan:
        """`plan` (made for `node` by a pass's `plan`), changed or as it is."""
        return plan


class LoweringState(Protocol):
    """What a pass acting at lowering time sees of the method's lowering
    (tools/tracer/lowering.py, MethodLowering)."""

    constants: dict[Node, torch.Tensor]  # every node whose value is a constant, folded ones included
    model_file: Path | None  # the model spec's file, for the source line of an error (tools/tracer/sources.py)

    def is_constant(self, node: Any) -> bool: ...

    def comes_before(self, a: Node, b: Node) -> bool:
        """Whether node `a` is before node `b` in the graph."""
        ...

    def fuse(self, node: Node, into: Node) -> None:
        """`node` runs inside the layer `into` ends: it passes that value on."""
        ...


@dataclass(frozen=True)
class PassRun:
    """What one pass changed over every method of a program."""

    name: str
    changes: tuple[tuple[str, int], ...]  # (what, count), e.g. (("folded", 2),)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **dict(self.changes)}

    def describe(self) -> str:
        return f"{self.name} ({', '.join(f'{n} {what}' for what, n in self.changes)})"


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
        return self._constants.get(x) if is_node(x) else None

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


def is_node(x: Any) -> bool:
    from torch.fx import Node

    return isinstance(x, Node)


def argument(node: Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def calls(node: Any, *targets: Any) -> bool:
    """`node` is a call of one of `targets` (torch ops)."""
    return is_node(node) and node.op == "call_function" and node.target in targets


def shape_of(node: Any) -> tuple | None:
    """The shape of a node's value (sizes may be symbolic), or None."""
    val = node.meta.get("val") if is_node(node) else None
    return tuple(val.shape) if hasattr(val, "shape") else None


def dtype_of(node: Any) -> Any:
    """The dtype of a node's value, or None."""
    val = node.meta.get("val") if is_node(node) else None
    return getattr(val, "dtype", None)


def same_shape(a: tuple | None, b: tuple | None) -> bool:
    """Two shapes known to be equal (symbolic sizes too)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    if a is None or b is None or len(a) != len(b):
        return False
    return all(x is y or statically_known_true(x == y) for x, y in zip(a, b))
