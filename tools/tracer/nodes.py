"""Questions about torch.fx nodes that lowering (tools/tracer/lowering.py)
and the passes that plan at lowering time (tools/tracer/passes/) both ask."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node
from torch.fx.experimental.symbolic_shapes import statically_known_true

aten = torch.ops.aten

# Shape-only ops whose size list may hold one -1 for the size to infer.
VIEW_OPS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)


def nodes_in(x: Any):
    """The graph nodes in an argument (nested lists, tuples and dicts)."""
    if isinstance(x, Node):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from nodes_in(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from nodes_in(item)


def only_user(node: Node) -> Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def same_sizes(a: Node, b: Node) -> bool:
    """Whether two nodes' tensors are known to have the same sizes."""
    x, y = a.meta.get("val"), b.meta.get("val")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.dim() != y.dim():
        return False
    return all(statically_known_true(p == q) for p, q in zip(x.shape, y.shape))


def is_float_tensor(x: Any) -> bool:
    val = x.meta.get("val") if isinstance(x, Node) else None
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32
