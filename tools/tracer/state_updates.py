"""Whether a state's update may be written in place (docs/program_format.md,
"State").

A buffer the model mutates (torch.export's BUFFER_MUTATION output) is the
method's state; lowering writes the mutated value back after every call.
The instruction that produces it may write it straight into the state's
storage (no copy of a KV cache per call) only when nothing after it reads
the old value: no later instruction reads the buffer or a view or alias of
it, no output returns one, and the producer itself reads the state only
where it overwrites it (a scatter's `self`, or a pointwise op's own
element). The runtime's loader checks the claim again.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.fx import Node

from tools.tracer.nodes import VIEW_OPS, nodes_in
from tools.tracer.plans import Alias, GetItem, Plan

aten = torch.ops.aten


def updates_in_place(
    buffer: Node, update: Node, plans: dict[Node, Plan], nhwc: set[Node], comes_before: Callable[[Node, Node], bool]
) -> bool:
    """Whether the instruction producing `update` may write it into the
    state's storage: only when no instruction after it reads `buffer`,
    or a view or alias of it, and no output returns one."""
    producer = update
    while isinstance(plans.get(producer), Alias):
        producer = plans[producer].deps[0]
    if not isinstance(producer, Node) or producer.op != "call_function" or producer in nhwc:
        return False
    aliases, stack = {buffer}, [buffer]
    while stack:
        for user in stack.pop().users:
            if user not in aliases and (isinstance(plans.get(user), (Alias, GetItem)) or _is_view(user)):
                aliases.add(user)
                stack.append(user)
    read = [a for a in nodes_in((producer.args, producer.kwargs)) if a in aliases]
    if read and not _writes_over(producer, read, buffer):
        return False  # it would read the state while writing it
    for alias in aliases:
        for reader in alias.users:
            late = reader is not producer and reader not in aliases and not comes_before(reader, producer)
            if reader.op == "output" or late:
                return False
    return True


def _is_view(node: Node) -> bool:
    """Whether `node` may return a view of an input: its schema's return has
    an alias annotation, or it is one of the runtime's view kernels
    (`_unsafe_view` has no annotation but is a view there)."""
    op = node.target
    if op in VIEW_OPS:
        return True
    return isinstance(op, torch._ops.OpOverload) and any(r.alias_info is not None for r in op._schema.returns)


# Ops whose output may be the memory of their `self` (argument 0): each
# output element is self's element or a value read from another argument.
_SCATTERS = (
    aten.index_put.default,
    aten.slice_scatter.default,
    aten.select_scatter.default,
    aten.copy.default,
)


def _writes_over(producer: Node, read: list[Node], buffer: Node) -> bool:
    """Whether `producer`, which reads the state (`read`: the arguments that
    are the state or alias it), may write its output over the state: a
    scatter that reads it only as `self`, or a pointwise op that reads it
    only as itself with the output's shape."""
    if any(a is not buffer for a in read):
        return False
    if producer.target in _SCATTERS:
        return (
            producer.args[0] is buffer
            and sum(1 for a in nodes_in((producer.args, producer.kwargs)) if a is buffer) == 1
        )
    out, state = producer.meta.get("val"), buffer.meta.get("val")
    return (
        isinstance(producer.target, torch._ops.OpOverload)
        and torch.Tag.pointwise in producer.target.tags
        and isinstance(out, torch.Tensor)
        and isinstance(state, torch.Tensor)
        and out.shape == state.shape
        and out.dtype == state.dtype
    )
